"""The repair loop's pieces: ask the model to fix a failing test, and guess who is wrong."""

from __future__ import annotations

import re
from typing import Any

from miner.enrich.json_extract import ExtractError, extract_code, extract_json
from miner.enrich.prompts import Prompt

# Outcomes that say nothing against the kernel: the test file itself is broken.
_TEST_SIDE = ("SyntaxError", "IndentationError", "ImportError", "ModuleNotFoundError", "NameError",
              "AttributeError", "TypeError", "fixture", "takes", "kernel arguments")


def blame_heuristic(outcome: str, message: str) -> str:
    """'test', 'kernel' or 'unknown', from the outcome alone (the model's view is recorded beside it)."""
    if outcome in ("rejected", "no_code"):
        return "test"
    if outcome == "build_failed":
        return "kernel"
    if outcome == "error":
        return "test" if any(m in message for m in _TEST_SIDE) else "unknown"
    # An assertion, a crash or an illegal address can come from a wrong reference or a wrong launch as
    # much as from a wrong kernel: only the model's reading of both can tell.
    return "unknown"


def error_summary(message: str, limit: int = 300) -> str:
    """The most telling line of a failure, for the compact history shown in later prompts."""
    lines = [ln.strip() for ln in message.splitlines() if ln.strip()]
    for pat in (r"^E\s+\S*(Error|Exception)\b", r"(Error|Exception):", r"^E\s+", r"assert"):
        for ln in lines:
            if re.search(pat, ln):
                return ln[:limit]
    return (lines[-1] if lines else "")[:limit]


def parse_repair_answer(text: str) -> tuple[dict[str, Any], str]:
    """(reflection object, code); the reflection may be missing, the code may not."""
    code = extract_code(text, "python")
    head = text.split("```python", 1)[0]
    reflection: dict[str, Any] = {}
    for part in (head, text):
        try:
            reflection = extract_json(part)
            break
        except ExtractError:
            continue
    blame = str(reflection.get("blame", "")).lower()
    reflection["blame"] = blame if blame in ("test", "kernel") else "unknown"
    return reflection, code


def repair_messages(prompt: Prompt, *, kernel: dict[str, Any], code: str, test_code: str, outcome: str,
                    error: str, history: list[dict[str, Any]], attempt: int,
                    max_attempts: int) -> list[dict[str, str]]:
    compact = [{"attempt": h["attempt"], "outcome": h["outcome"], "error_summary": h["error_summary"],
                "reflection": h.get("reflection", "")} for h in history]
    return prompt.messages(kernel=kernel, code=code, test_code=test_code, outcome=outcome, error=error,
                           history=compact, attempt=attempt, max_attempts=max_attempts)
