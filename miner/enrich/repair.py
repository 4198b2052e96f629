"""The repair loop's pieces: ask the model to fix a failing test, and guess who is wrong."""

from __future__ import annotations

import re
from typing import Any

from miner import lazy_re
from miner.enrich.json_extract import ExtractError, extract_code, extract_json
from miner.enrich.prompts import Prompt

# Outcomes that say nothing against the kernel: the test file itself is broken.
_TEST_SIDE = ("SyntaxError", "IndentationError", "ImportError", "ModuleNotFoundError", "NameError",
              "AttributeError", "TypeError", "fixture", "takes", "kernel arguments")


MAX_REFLECTION_CHARS = 600


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
    # Only the three fields we asked for, bounded: nothing else the model writes reaches a later prompt.
    blame = str(reflection.get("blame", "")).lower()
    confidence = reflection.get("confidence")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not 0 <= confidence <= 1:
        confidence = None
    text = " ".join(str(reflection.get("reflection", "")).split())
    return {"reflection": text[:MAX_REFLECTION_CHARS], "blame": blame if blame in ("test", "kernel") else "unknown",
            "confidence": confidence}, code


def repair_messages(prompt: Prompt, *, kernel: dict[str, Any], code: str, test_code: str, outcome: str,
                    error: str, history: list[dict[str, Any]], attempt: int, max_attempts: int,
                    min_cases: int, facts: dict[str, Any]) -> list[dict[str, str]]:
    compact = [{"attempt": h["attempt"], "outcome": h["outcome"], "error_summary": h["error_summary"],
                "reflection": h.get("reflection", "")} for h in history]
    return prompt.messages(kernel=kernel, code=code, test_code=test_code, outcome=outcome, error=error,
                           history=compact, attempt=attempt, max_attempts=max_attempts, min_cases=min_cases,
                           facts=facts)


_VARYING = [
    (lazy_re.compile(r"\b(in|after|took) \d+(\.\d+)?s\b"), r"\1 <t>s"),         # "1 failed in 2.31s"
    (lazy_re.compile(r"\(\d+:\d\d:\d\d(\.\d+)?\)"), "(<t>)"),                 # "(0:00:02)"
    (lazy_re.compile(r"\b\d+(\.\d+)?(s|ms) (call|setup|teardown)\b"), r"<t>\2 \3"),  # --durations lines
    (lazy_re.compile(r"0x[0-9a-fA-F]{6,}"), "0x<addr>"),                            # object and device addresses
    (lazy_re.compile(r"/tmp/[^\s/:'\"]+"), "/tmp/<tmp>"),                          # temp folders
    (lazy_re.compile(r"\b(pid|PID) \d+"), r"\1 <pid>"),
]


def normalize_output(text: str) -> str:
    """Test output with what changes from run to run (timings, addresses, temp paths) masked."""
    for pattern, repl in _VARYING:
        text = pattern.sub(repl, text)
    return text
