"""Pull one JSON object or one code block out of a model answer that may wrap it in fences and prose."""

from __future__ import annotations

import json
import re
from typing import Any

from miner import lazy_re

_FENCE = lazy_re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[^\n]*\n(.*?)(?:```|\Z)", re.S)
# Deeper than this is no analysis or description, and would exhaust the recursion of json and jsonschema.
MAX_DEPTH = 32


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


def _depth_ok(text: str) -> bool:
    depth = 0
    for ch in text:  # a bracket inside a string counts too: an over-estimate, never an under-estimate
        if ch in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return False
        elif ch in "]}":
            depth -= 1
    return True


def _clean(value: Any) -> Any:
    """Lone surrogates (from `\\ud800` escapes) replaced: they cannot be written as UTF-8."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    if isinstance(value, dict):
        return {_clean(k): _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def extract_one_json(text: str) -> dict[str, Any]:
    """The answer's one JSON object; an answer holding two different objects is refused (which one
    would the model mean?), as is one nested deeper than MAX_DEPTH."""
    first = extract_json(text)
    found = []
    for cand in _balanced_objects(text):
        if not _depth_ok(cand):
            continue
        try:
            obj = json.loads(cand)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict) and _clean(obj) not in found:
            found.append(_clean(obj))
    if len(found) > 1:
        raise ExtractError(f"the answer holds {len(found)} different JSON objects; send exactly one")
    return first


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
        if not _depth_ok(cand):
            last_error = f"JSON nested deeper than {MAX_DEPTH} levels"
            continue
        try:
            obj = json.loads(cand)
        except json.JSONDecodeError as exc:
            if cand.count("{") > cand.count("}"):
                truncated = True
            last_error = f"invalid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            continue
        if isinstance(obj, dict):
            return _clean(obj)
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
