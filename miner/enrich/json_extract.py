"""Pull one JSON object or one code block out of a model answer that may wrap it in fences and prose."""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)


class ExtractError(ValueError):
    """The answer holds no usable JSON object or code block (malformed or truncated)."""


def _balanced_objects(text: str) -> list[str]:
    """Every top-level `{...}` span, honouring strings and escapes, in order of appearance."""
    spans: list[str] = []
    depth = 0
    start = -1
    in_str = False
    esc = False
    for i, ch in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"' and depth > 0:
            in_str = True
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    if depth > 0:
        spans.append(text[start:])  # unterminated: kept so the error can say "truncated"
    return spans


def extract_json(text: str) -> dict[str, Any]:
    """The first JSON object in `text`: fenced ```json blocks first, then any balanced braces."""
    if not text or not text.strip():
        raise ExtractError("empty answer")
    candidates: list[str] = []
    for lang, body in _FENCE.findall(text):
        if lang.lower() in ("json", "", "javascript", "js"):
            candidates.extend(_balanced_objects(body))
    candidates.extend(_balanced_objects(text))
    truncated = False
    last_error = "no JSON object found"
    for cand in candidates:
        try:
            obj = json.loads(cand)
        except json.JSONDecodeError as exc:
            if cand.count("{") > cand.count("}"):
                truncated = True
            last_error = f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            continue
        if isinstance(obj, dict):
            return obj
    if truncated:
        raise ExtractError("truncated JSON: the answer ends inside an object")
    raise ExtractError(last_error)


def extract_code(text: str, lang: str = "python") -> str:
    """The longest fenced block tagged `lang` (or untagged); an unterminated fence is an error."""
    blocks: list[tuple[str, str, bool]] = []
    for m in _FENCE.finditer(text or ""):
        closed = m.group(0).rstrip().endswith("```") and len(m.group(0).rstrip()) > 3
        blocks.append((m.group(1).lower(), m.group(2), closed))
    wanted = [b for b in blocks if b[0] in (lang, "py" if lang == "python" else lang, "")]
    if not wanted:
        raise ExtractError(f"no ```{lang} code block in the answer")
    tag, body, closed = max(wanted, key=lambda b: len(b[1]))
    if not closed:
        raise ExtractError(f"truncated answer: the ```{lang} block is not closed")
    return body.rstrip() + "\n"
