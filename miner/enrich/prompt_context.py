"""What the tests and repair prompts tell the model beyond the code, from the kernel's metadata alone.

Everything here is deterministic (no times, no temp paths), so a rerun renders the same prompt and
hits the response cache. The facts: the recorded launches with their evaluated numbers and the host
expressions that fed each argument (how the host lays out its inputs), which parameters the kernel
writes, the analysis' contract and shape relations, every instantiation's id, template arguments and
build status, whether the unit shown is complete (it built) and the names the closure left unresolved.
"""

from __future__ import annotations

from typing import Any

from miner.dataset.folder import UNITS

MAX_LAUNCHES = 4
MAX_DEFINITION_CHARS = 400
MAX_UNRESOLVED = 20


def _first_line(text: Any, limit: int = 200) -> str:
    lines = str(text or "").strip().splitlines()
    return lines[0][:limit] if lines else ""


def launches(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded launches, compact: where, configuration text and numbers, argument expressions.
    A site dispatched over several types is shown once, with every template argument list it launches."""
    out: list[dict[str, Any]] = []
    for launch in metadata.get("launches") or []:
        if not isinstance(launch, dict):
            continue
        defs = {k: str(v)[:MAX_DEFINITION_CHARS] for k, v in sorted((launch.get("definitions") or {}).items())}
        entry = {
            "at": f"{launch.get('launcher', '?')} ({launch.get('path', '?')}:{launch.get('line', '?')})",
            "config": launch.get("config") or {k: launch.get(k) for k in ("grid", "block", "smem") if k in launch},
            "values": launch.get("values") or {},
            "template_args": [launch.get("template_args") or []],
            "args": [f"{a.get('param')} = {a.get('expr')}" for a in launch.get("args") or [] if isinstance(a, dict)],
            "definitions": defs,
        }
        same = next((e for e in out if {k: v for k, v in e.items() if k != "template_args"}
                     == {k: v for k, v in entry.items() if k != "template_args"}), None)
        if same is not None:
            same["template_args"] += entry["template_args"]
        elif len(out) < MAX_LAUNCHES:
            out.append(entry)
    return out


def instantiations(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for inst in metadata.get("instantiations") or []:
        if not isinstance(inst, dict):
            continue
        build = inst.get("build") or {}
        out.append({"id": inst.get("id", "default"), "template_args": inst.get("template_args") or [],
                    "params": [{k: p.get(k) for k in ("name", "type", "ctype")}
                               for p in (inst.get("launcher") or {}).get("params", []) if isinstance(p, dict)],
                    "build": build.get("status", "not built"),
                    "build_error": _first_line(build.get("error")) if build.get("status") not in (None, "ok") else ""})
    return out


def writes_through(param: dict[str, Any]) -> bool:
    """Whether the kernel may write through this parameter: a pointer whose pointee is not const, or a tensor
    accessor passed by value that is not declared const (torch kernels write through `PackedTensorAccessor`
    parameters). The one definition for the prompt's outputs and the static check's writable positions: when
    they disagreed, the prompt named an accessor as the output and the check rejected every test reading it."""
    if param.get("pointer"):
        return not param.get("const")
    ptype = str(param.get("type") or "")
    return "Accessor" in ptype and not param.get("const") and not ptype.lstrip().startswith("const ")


def outputs(metadata: dict[str, Any]) -> list[str]:
    """Names of the parameters the kernel may write (`writes_through`)."""
    return [str(p.get("name")) for p in metadata.get("params") or [] if isinstance(p, dict) and writes_through(p)]


def unit_status(metadata: dict[str, Any], code_source: str) -> dict[str, Any]:
    """Whether the code shown is a complete unit: it built, it failed to build, or it was never built."""
    insts = instantiations(metadata)
    unresolved = [f"{u.get('symbol')} ({u.get('reason')})" for u in (metadata.get("unresolved") or [])
                  if isinstance(u, dict)][:MAX_UNRESOLVED]
    if not code_source.startswith(f"{UNITS}/"):
        state = "not a unit: the kernel's definition alone (what it calls is not shown)"
    elif any(i["build"] == "ok" for i in insts):
        state = "complete: the unit builds"
    elif any(i["build"] in ("failed", "timeout") for i in insts):
        first = next(i for i in insts if i["build"] in ("failed", "timeout"))
        state = f"incomplete: the unit does not build ({first['build_error'] or first['build']})"
    else:
        state = "not built yet: it may be incomplete"
    return {"state": state, "complete": state.startswith("complete"), "unresolved": unresolved}


def test_context(metadata: dict[str, Any], analysis: dict[str, Any], code_source: str) -> dict[str, Any]:
    """Everything the tests and repair prompts show besides the code and the test."""
    return {"launches": launches(metadata), "instantiations": instantiations(metadata),
            "outputs": outputs(metadata), "contract": str(analysis.get("contract", "")),
            "shape_relations": [str(r) for r in analysis.get("shape_relations") or []],
            "assumptions": [str(r) for r in analysis.get("assumptions") or []],
            "unit": unit_status(metadata, code_source)}
