"""Turn one kernel's closure, launches and instantiations into metadata blocks and rendered units."""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Any

from miner import lazy_re
from miner.frontends.model import Kernel
from miner.units import driver_api, generated, instantiations, render, vendor_copy, weak_args
from miner.units.headers import STD_HEADERS, is_toolkit_header
from miner.units.launch_unread import config_unread
from miner.units.mentions import Mentions, launch_missing
from miner.units.records import Analyses, ClosureRecord, Launch, PieceText
from miner.units.skipped_branch import skipped_branch
from miner.units.unparsed_launchers import unparsed_call, unparsed_launcher

_TYPE_KINDS = {"STRUCT_DECL", "CLASS_DECL", "UNION_DECL", "ENUM_DECL", "TYPEDEF_DECL", "TYPE_ALIAS_DECL",
               "TYPE_ALIAS_TEMPLATE_DECL", "CLASS_TEMPLATE", "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION",
               "CONCEPT_DECL"}
_FUNC_KINDS = {"FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR", "CONVERSION_FUNCTION"}


def _rel(path: str, root: str) -> str:
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else os.path.basename(path)


def _launch_json(launch: Launch, root: str, kernel_params: list[dict[str, Any]]) -> dict[str, Any]:
    args = launch.args
    return {
        "kind": launch.kind, "launcher": launch.launcher, "path": _rel(launch.path, root),
        "line": launch.line, "config": launch.config, "values": launch.values,
        "formula": launch.formula or {},
        "definitions": launch.definitions,
        "template_args": launch.template_args or launch.template_args_text or [],
        "args": [{"param": p["name"], "expr": args[i] if i < len(args) else None}
                 for i, p in enumerate(kernel_params)] if len(args) == len(kernel_params) else
                [{"param": None, "expr": a} for a in args],
        # A launch through a re-declaration in another translation unit: where that declaration is.
        **({"declaration": f"{_rel(d.path, root)}:{d.line}"} if (d := launch.declared) else {}),
        # Why its grid or block cannot be read, where it cannot (a launch of a kernel only: a reference has none).
        **({"config_unread": why} if launch.kind != "reference"
           and (why := config_unread(launch.config, launch.values, launch.formula or {})) else {}),
    }


_DIRECTIVE = lazy_re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif|include)\b[ \t]*(?:[<\"]([^>\"\n]+)[>\"])?", re.M)


def _file_includes(path: str, offset: int) -> list[str]:
    """The standard and toolkit headers a file includes unconditionally before `offset`: what a kernel without an
    AST closure (tree-sitter saw it in a branch no define turns on, `#if 0`) needs of its file at least
    (`thrust::count_if(thrust::device, ...)` with `<thrust/count.h>` and `<thrust/execution_policy.h>`)."""
    try:
        with open(path, "rb") as f:
            text = f.read()[:offset].decode("utf-8", "replace")
    except OSError:
        return []
    depth, out = 0, []
    for m in _DIRECTIVE.finditer(text):
        word, name = m.group(1), m.group(2)
        if word.startswith("if"):
            depth += 1
        elif word == "endif":
            depth = max(0, depth - 1)
        elif depth == 0 and name and (name in STD_HEADERS or is_toolkit_header(name)) and name not in out:
            out.append(name)
    return out


def _skipped_uses(k: Kernel, uses: list[tuple[str, int]], root: str) -> list[str]:
    """`path:line under `DIRECTIVE`` of each use, where every one lies in a branch the preprocessor skipped in the
    kernel's translation unit file (clang_frontend: `_skipped` of its diagnostics); else []."""
    ranges = (k.diagnostics or {}).get("_skipped") or {}
    out: list[str] = []
    for path, line in uses:
        hit = next((r for r in ranges.get(path, ()) if r[0] <= line <= r[1]), None)
        if hit is None:
            return []
        out.append(f"{_rel(path, root)}:{line} under `{hit[2].strip()}`")
    return out


def _skipped_branch(k: Kernel, mentions: Mentions, root: str) -> str | None:
    """The `no_ast` detail of a kernel in a branch the parse skipped (units.skipped_branch): which `#if`, and
    whether its macros come from outside the project."""
    data = mentions.files.get(k.path)
    found = skipped_branch(data, k.start_offset, mentions.files.values()) if data else None
    if found is None:
        return None
    shown, line, undefined = found
    why = (f", whose condition names {', '.join(undefined)}, which no file of the project defines: a header from "
           "outside the project (a dependency's) would, and no header the parse reached does, so the original "
           "translation unit compiled here skips the kernel too" if undefined
           else ": the configuration mined does not take that branch")
    return (f"{k.name} was found by the {k.frontend} frontend only: it lies in a branch the parse's preprocessor "
            f"skipped (`{shown}`, {_rel(k.path, root)}:{line}){why}; launches are read from the AST")


def attach(out_dir: str, meta: dict[str, Any], k: Kernel, text: str, data: Analyses, root: str,
           mentions: Mentions | None = None) -> None:
    """Add instantiations, launches, closure and unresolved to `meta`; write the units. A kernel without a
    launch gets `launch_missing`: why, from where else its name is written (`mentions`)."""
    key = (k.path, k.start_offset)
    unit = data.closures.get(key)
    unresolved: list[dict[str, str]] = []
    if unit is None:
        unit = ClosureRecord(k.path, includes=_file_includes(os.path.join(root, k.path), k.start_offset))
        unresolved.append({"symbol": "*", "reason": f"no AST closure: kernel came from the {k.frontend} frontend",
                           "where": f"{_rel(k.path, root)}:{k.start_line}"})
    records = data.launches.get(key, [])
    if mentions is not None and not any(lc.kind != "reference" for lc in records) \
            and (loads := mentions.loaded_by_name(k.name)) \
            and not mentions.uses(k.name, (k.path, k.start_offset, k.end_offset), c_linkage=k.c_linkage):
        records = [*records, *driver_api.launches(k.name, loads, mentions.files)]
    omitted: list[dict[str, Any]] = []
    insts = instantiations.plan(meta, records, data.explicit.get(k.name, []), omitted=omitted,
                                 kernel_text=text, class_args=unit.class_args)
    for inst in insts:
        if inst.get("origin_tu"):
            inst["origin_tu"] = _rel(inst["origin_tu"], root)
    launches = [lc for lc in records if lc.kind != "reference"]
    meta["launches"] = [_launch_json(lc, root, meta["params"]) for lc in launches]
    meta["references"] = [_launch_json(lc, root, meta["params"]) for lc in records if lc.kind == "reference"]
    unparsed: dict[str, str] | None = None
    if not launches and mentions is not None:
        uses = mentions.uses(k.name, (k.path, k.start_offset, k.end_offset), c_linkage=k.c_linkage)
        other = weak_args.other_definition(uses, weak_args.launch_sites(data, key), mentions) if uses else False
        namesakes = [u for u in uses if mentions.namesake_call(k.name, *u)]
        rest = [u for u in uses if u not in namesakes]
        skipped = _skipped_uses(k, rest, root) if rest and not any(mentions.disabled(*u) for u in rest) else []
        meta["launch_missing"] = launch_missing(k.name, uses, len(meta["references"]), k.frontend,
                                                lambda p: _rel(p, root), other,
                                                bool(uses) and all(mentions.disabled(p, ln) or (p, ln) in namesakes
                                                                   for p, ln in uses), namesakes, skipped)
        if meta["launch_missing"]["reason"] == "no_ast" and (why := _skipped_branch(k, mentions, root)):
            meta["launch_missing"]["detail"] = why
        if not uses and k.frontend == "clang" and (found := generated.writers(meta, root)):
            meta["launch_missing"] = generated.launch_missing(k.name, found)
        elif not uses and (loads := mentions.loaded_by_name(k.name)):
            meta["launch_missing"] = driver_api.launch_missing(k.name, loads, mentions.files, lambda p: _rel(p, root))
        if meta["launch_missing"]["reason"] == "unresolved" and (unparsed := unparsed_launcher(
                k.name, k.path, uses, mentions.text(k.path), (k.diagnostics or {}).get("_error_lines"),
                _rel(k.path, root))):
            meta["launch_missing"]["detail"] += (
                f": the function holding the launch at {unparsed['launch']} was not parsed as one (its head, "
                f"{unparsed['head']}: {unparsed['error']}), so its body and the launch are not in the AST")
        elif meta["launch_missing"]["reason"] == "unresolved" and (call := unparsed_call(
                k.name, k.path, uses, mentions.text(k.path), int((k.diagnostics or {}).get("errors") or 0),
                _rel(k.path, root))):
            first = ((k.diagnostics or {}).get("messages") or ["?"])[0]
            meta["launch_missing"] = {
                "reason": "call_unparsed", "mentions": meta["launch_missing"]["mentions"],
                "detail": f"{k.name} is passed to `{call['callee']}(...)` ({call['call']}), a call the parse could not "
                          f"type: its translation unit has {(k.diagnostics or {}).get('errors')} parse errors (first: "
                          f"{first}), a library the parse shims cannot read; the call is no call in the AST, so no "
                          "launch or configuration is read from it"}
    # Template arguments that are only defaults: why, where the sources hold none (else the miner's miss).
    why = weak_args.reason(meta, insts, records, weak_args.launcher_uses(records, mentions) if mentions else None,
                           instantiations.class_types(meta, text) if text else frozenset())
    if why is None and unparsed is not None and meta.get("template_params") and insts \
            and all(i.get("origin") in weak_args.WEAK for i in insts):
        why = {"reason": "launcher_unparsed",
               "detail": f"{k.name}'s launch ({unparsed['launch']}) sits in a function the parse could not read "
                         f"({unparsed['head']}: {unparsed['error']}; a library type the parse stands in for, or "
                         "lacks): its template arguments, which that function's callers fix, were never seen"}
    if why is not None:
        meta["args_missing"] = why
    # Functor structs made where the launch was seen, when the kernel's closure was taken in another TU.
    have = {p.name for p in unit.pieces if p.functor}
    more = {f["name"]: PieceText(**f) for lc in records for f in lc.functors if f["name"] not in have}
    if more:
        unit = replace(unit, pieces=[*unit.pieces, *more.values()])
    pieces = unit.pieces
    meta["closure"] = {
        "functions": [p.name for p in pieces if p.kind in _FUNC_KINDS],
        "macros": [p.name for p in pieces if p.kind == "MACRO"],
        "types": [p.name for p in pieces if p.kind in _TYPE_KINDS],
        "globals": [p.name for p in pieces if p.kind in ("VAR_DECL", "UNEXPOSED_DECL")],
        "includes": unit.includes,
        "shims": unit.shims,
        "frameworks": unit.frameworks,
        "chosen_defines": meta["parse_context"]["defines"],
        "sources": sorted({_rel(p.path, root) for p in pieces}),
    }
    if unit.cross_file:
        # Definitions of another file of a separately compiled project (`-rdc`) the unit holds (extract.cross_file):
        # where each came from (relative to the root, with `..` for a file of the project outside the mined folder);
        # verify compiles those files with the original TU.
        meta["closure"]["cross_file"] = [
            {"symbol": c["symbol"], "kind": c["kind"], "from": f"{os.path.relpath(c['path'], root)}:{c['line']}",
             **({"candidates": c["candidates"]} if "candidates" in c else {})} for c in unit.cross_file]
    if unit.vendored:
        # Libraries the unit #includes instead of inlining, copied into the dataset for the build.
        meta["closure"]["vendored"] = vendor_copy.metadata(out_dir, unit.vendored, lambda p: _rel(p, root))
    unresolved += [{"symbol": f"{k.name}<{', '.join(o['args'])}>", "where": f"{_rel(k.path, root)}:{k.start_line}",
                    "reason": f"{o['origin']} instantiation not rendered: its arguments name what only the "
                              "template's own scope declares" if o.get("why") == "unresolved" else
                              f"{o['origin']} instantiation not rendered: a scalar given to a parameter the kernel "
                              "names members through" if o.get("why") == "scalar_for_class" else
                              f"instantiation limit reached ({instantiations.MAX_INSTANTIATIONS}): "
                              f"{o['origin']} instantiation not rendered"} for o in omitted]
    meta["unresolved"] = unresolved + unit.unresolved
    first = next((lc for lc in launches if lc.kind == "<<<>>>"), launches[0] if launches else None)
    meta["instantiations"] = render.render(out_dir, meta, text, unit, insts, first)
