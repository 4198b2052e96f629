"""What every stage shares: the run context, one JSON-answer request with a format retry, metadata."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from miner.enrich.client import Completion, LLMClient
from miner.enrich.config import EnrichConfig
from miner.enrich.json_extract import ExtractError, extract_one_json
from miner.enrich.prompts import Prompt
from miner.enrich.redact import Redactor
from miner.errors import StageFailure

T = TypeVar("T")

FORMAT_RETRY = ("Your answer could not be used: {error}. Answer again with the complete result in the "
                "requested format only, with nothing cut off.")


@dataclass
class RunContext:
    cfg: EnrichConfig
    client: LLMClient
    redact: Redactor
    log: Callable[[str], None] = print


@dataclass
class CallLog:
    """Prompt version, model and token counts of every call a stage made, for its record."""

    prompt: Prompt
    model: str
    calls: list[dict[str, Any]] = field(default_factory=list)

    def add(self, comp: Completion, prompt: Prompt | None = None) -> None:
        p = prompt or self.prompt
        self.calls.append({"prompt": p.name, "prompt_version": p.version, **comp.meta()})

    def meta(self) -> dict[str, Any]:
        return {"prompt": self.prompt.name, "prompt_version": self.prompt.version, "model": self.model,
                "prompt_tokens": sum(c["prompt_tokens"] for c in self.calls),
                "completion_tokens": sum(c["completion_tokens"] for c in self.calls),
                "calls": self.calls}


def ask_until_usable(ctx: RunContext, log: CallLog, messages: list[dict[str, str]], parse: Callable[[str], T],
                     truncated: str = "truncated answer (finish_reason=length)") -> T:
    """Ask; if `parse` refuses the answer (a ValueError), say why once in the same conversation (the follow-up
    docs/enrich.md promises) and ask again; a StageFailure when the second answer is unusable too."""
    error = ""
    for round_ in range(2):
        comp = ctx.client.chat(messages)
        log.add(comp)
        try:
            if comp.finish_reason == "length":
                raise ExtractError(truncated)
            return parse(comp.content)
        except ValueError as exc:  # ExtractError is one
            error = str(exc)
            if comp.finish_reason == "length" or round_ == 1:
                break
            messages = [*messages, {"role": "assistant", "content": comp.content},
                        {"role": "user", "content": FORMAT_RETRY.format(error=error)}]
    raise StageFailure(ctx.redact.text(f"unusable answer: {error}"), log.meta())


def ask_json(ctx: RunContext, log: CallLog, messages: list[dict[str, str]],
             check: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Ask for exactly one JSON object that `check` accepts."""
    def parse(content: str) -> dict[str, Any]:
        obj = extract_one_json(content)
        check(obj)
        return obj

    return ask_until_usable(ctx, log, messages, parse,
                            "truncated answer (finish_reason=length); raise completion_tokens")


def write_stage_json(path: Path, obj: dict[str, Any], redact: Redactor) -> None:
    from miner.dataset.atomic import write_json

    write_json(path, redact.obj(obj))


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data, dict) else None
