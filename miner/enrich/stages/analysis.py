"""Stage 1: what the kernel computes, as schema-checked JSON (enrich/analysis.json)."""

from __future__ import annotations

from typing import Any

from miner.enrich.prompt_context import unit_status
from miner.enrich.prompts import load_prompt
from miner.enrich.records import KernelInput, now
from miner.enrich.schema import check_analysis
from miner.enrich.stages.base import CallLog, RunContext, ask_json, write_stage_json


def kernel_param_names(kin: KernelInput) -> list[str]:
    return [p["name"] for p in kin.metadata.get("params", []) if isinstance(p, dict) and p.get("name")]


def run_analysis(ctx: RunContext, kin: KernelInput) -> tuple[dict[str, Any], dict[str, Any]]:
    prompt = load_prompt("analysis", kin.metadata.get("language"))
    log = CallLog(prompt, ctx.cfg.model)
    messages = prompt.messages(kernel=kin.prompt_kernel(), code=kin.code,
                               unit_state=unit_status(kin.metadata, kin.code_source)["state"],
                               instantiations=kin.instantiations, launches=kin.launches)
    names = kernel_param_names(kin)
    analysis = ask_json(ctx, log, messages, lambda obj: check_analysis(obj, names))
    meta = {**log.meta(), "code_source": kin.code_source, "created": now()}
    write_stage_json(kin.enrich_dir / "analysis.json", {"analysis": analysis, "meta": meta}, ctx.redact)
    return analysis, meta
