"""Deterministic renderings of the model's structured description.

`complete_docstring` prints the model's fields as a doc comment above the signature; `instruct_prompt`
derives the instruction-style task from the same fields by fixed rules (BigCodeBench's method), so
the two texts can never disagree on a fact: neither adds anything the fields do not hold.
"""

from __future__ import annotations

import re
from typing import Any


def _sentence(text: str) -> str:
    text = " ".join(str(text).split())
    return text if not text or text.endswith((".", "!", "?")) else text + "."


def _lower_first(text: str) -> str:
    # Keep acronyms and identifiers as written: "CUDA ...", "LayerNorm ..." and `x` start unchanged.
    if len(text) > 1 and text[0].isupper() and not text[1].isupper() and text[1] != "_":
        return text[0].lower() + text[1:]
    return text


def _param_line(p: dict[str, Any]) -> str:
    return f"{p['name']} ({p.get('role', '?')}; {p.get('dtype', '?')}; shape {p.get('shape', '?')})"


def _launch_text(launch: dict[str, Any]) -> str:
    smem = str(launch.get("dynamic_shared_memory") or "0")
    text = f"grid {launch.get('grid', '?')}, block {launch.get('block', '?')}, dynamic shared memory {smem}"
    notes = str(launch.get("notes") or "").strip()
    return f"{text}. {_sentence(notes)}" if notes else f"{text}."


def complete_docstring(desc: dict[str, Any], signature: str) -> str:
    lines = [_sentence(desc["summary"]), ""]
    if desc.get("details"):
        lines += [_sentence(desc["details"]), ""]
    for p in desc["parameters"]:
        lines.append(f"@param {_param_line(p)}: {_sentence(p.get('description', ''))}")
    lines.append(f"@return {_sentence(desc['returns'])}")
    lines += ["", f"Launch: {_launch_text(desc['launch'])}"]
    example = str(desc.get("example") or "").strip("\n")
    if example:
        lines += ["", "Example:", *[f"    {ln}" if ln else "" for ln in example.splitlines()]]
    body = "\n".join(f" * {ln}".rstrip() for ln in lines)
    return f"/**\n{body}\n */\n{signature.strip()}\n"


def instruct_prompt(desc: dict[str, Any], signature: str) -> str:
    summary = _sentence(desc["summary"])
    task = _lower_first(summary[:-1] if summary.endswith(".") else summary)
    # "Computes the sum" -> "Write a CUDA kernel that computes the sum."
    out = [f"Write a CUDA kernel that {task}."]
    if desc.get("details"):
        out.append(_sentence(desc["details"]))
    out.append("")
    out.append("The kernel takes these parameters, in this order:")
    out += [f"- {_param_line(p)}: {_sentence(p.get('description', ''))}" for p in desc["parameters"]]
    out.append("")
    out.append(f"When it finishes, {_lower_first(_sentence(desc['returns']))}")
    out.append(f"It is launched with {_launch_text(desc['launch'])}")
    out.append("")
    out.append("You should write self-contained CUDA code starting with:")
    out.append("```cuda")
    out.append(re.sub(r"\s*\{\s*$", "", signature.strip()))
    out.append("```")
    return "\n".join(out) + "\n"
