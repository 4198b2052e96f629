"""Concrete template arguments per kernel: launches, dispatch, explicit instantiations, defaults."""

from __future__ import annotations

import re
from typing import Any

from miner.frontends.common import split_top, substitute  # noqa: F401 - re-exported for render

_EXPLICIT = re.compile(r"\btemplate\s+(?:__global__\s+)?(?:void\s+)?(?:[\w:]+::)?(\w+)\s*<([^;{]*?)>\s*\(", re.S)
DEFAULT_TYPE = "float"  # a type parameter with no instantiation anywhere becomes float (marked inferred)


def explicit_in(text: str) -> dict[str, list[list[str]]]:
    """`template __global__ void k<float, 64>(...)` lines, by kernel name."""
    out: dict[str, list[list[str]]] = {}
    for m in _EXPLICIT.finditer(text):
        out.setdefault(m.group(1), []).append(split_top(m.group(2)))
    return out


def _default(tp: dict[str, Any]) -> str:
    if tp.get("default"):
        return tp["default"]
    if tp["kind"] == "type":
        # Index-like type parameters are used as integers (array subscripts, shifts).
        return "int" if re.search(r"(?i)index|idx|^I$|int", tp["name"]) else DEFAULT_TYPE
    t = (tp.get("type") or "").strip()
    return "false" if t == "bool" else "128"


def plan(meta: dict[str, Any], launches: list[dict[str, Any]], explicit: list[list[str]],
         host_calls: dict[str, list[list[str]]]) -> list[dict[str, Any]]:
    """Distinct instantiations with their origin; nothing found gives one `inferred` default."""
    tparams = meta["template_params"]
    names = [t["name"] for t in tparams]
    found: dict[tuple[str, ...], str] = {}
    if meta["is_specialization"] or not tparams:
        return [{"args": [], "template_args": {}, "origin": "specialization" if meta["is_specialization"]
                 else "none"}]
    for launch in launches:
        args = launch.get("template_args")
        if args and len(args) == len(names):
            found.setdefault(tuple(args), "dispatch" if launch.get("in_lambda") else "call_site")
        elif launch.get("host_template_args"):
            for concrete in launch["host_template_args"]:
                if len(concrete) == len(names):
                    found.setdefault(tuple(concrete), "host_template")
    for args in explicit:
        if len(args) == len(names):
            found.setdefault(tuple(a.strip() for a in args), "explicit")
    if not found:
        found[tuple(_default(t) for t in tparams)] = "inferred"
    return [{"args": list(a), "template_args": dict(zip(names, a, strict=False)), "origin": o}
            for a, o in found.items()]


def inst_id(args: list[str]) -> str:
    if not args:
        return "default"
    text = "_".join(a.replace("c10::Half", "half").replace("at::Half", "half")
                    .replace("c10::BFloat16", "bf16").replace("at::BFloat16", "bf16") for a in args)
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")[:60] or "default"
