"""Stage 3: a complete structured description from the model and an instruct one derived by rules."""

from __future__ import annotations

from typing import Any

from miner.enrich.docstring import complete_docstring, instruct_prompt
from miner.enrich.prompts import load_prompt
from miner.enrich.records import KernelInput, now
from miner.enrich.schema import check_description
from miner.enrich.stages.analysis import kernel_param_names
from miner.enrich.stages.base import CallLog, RunContext, ask_json, write_stage_json


def run_describe(ctx: RunContext, kin: KernelInput, analysis: dict[str, Any]) -> dict[str, Any]:
    prompt = load_prompt("describe", kin.metadata.get("language"))
    log = CallLog(prompt, ctx.cfg.model)
    messages = prompt.messages(kernel=kin.prompt_kernel(), code=kin.code, analysis=analysis,
                               launches=kin.launches)
    names = kernel_param_names(kin)
    desc = ask_json(ctx, log, messages, lambda obj: check_description(obj, names))
    signature = kin.metadata.get("signature") or kin.prompt_kernel()["name"]
    meta = {**log.meta(), "created": now(), "instruct_rules": "docstring.instruct_prompt/1"}
    record = {"structured": desc, "complete": complete_docstring(desc, signature),
              "instruct": instruct_prompt(desc, signature), "meta": meta}
    write_stage_json(kin.enrich_dir / "description.json", record, ctx.redact)
    return meta
