"""A kernel's closure with the definitions another file of a separately compiled project holds
(units.cross_file): each definition's own closure, made in its TU, merged in so that the unit compiles with
nvcc alone (whole-program mode, no `-rdc`).

Where each block goes: a variable's definition where the unit first declared it `extern` (whole-program nvcc
refuses `extern __device__ int n;` beside `__device__ int n = 0;`, "redefinition", so every `extern` twin goes
and the definition must precede each use); a function's just before the kernel (its prototype stays where it
was, and what the definition needs of the unit's pieces is all before it). A piece both closures hold (the
shared header's types) is emitted once: at the earlier place.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from miner import lazy_re
from miner.units.records import ClosureRecord, PieceText

_EXTERN = lazy_re.compile(r"^\s*extern\b(?!\s*\")", re.M)


def _ident(entry: dict[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, default=str)


def _key(p: PieceText) -> tuple[Any, ...]:
    return p.path, p.line, p.kind, p.name, tuple(p.namespaces)


def _block(defs: list[dict[str, Any]]) -> list[PieceText]:
    out: dict[tuple[Any, ...], PieceText] = {}
    for d in defs:
        for p in d["closure"]["pieces"]:
            pt = PieceText(**p)
            out.setdefault(_key(pt), replace(pt, after=False))
    return list(out.values())


def _insert(pieces: list[PieceText], at: int, block: list[PieceText]) -> list[PieceText]:
    """`block` at `at`, without what `pieces` holds before `at`; what it holds after `at` moves into the block."""
    before = {_key(p) for p in pieces[:at]}
    block = [p for p in block if _key(p) not in before]
    moved = {_key(p) for p in block}
    return [*pieces[:at], *block, *(p for p in pieces[at:] if _key(p) not in moved)]


def merge(rec: ClosureRecord, defs: list[dict[str, Any]], unresolved: list[dict[str, str]]) -> ClosureRecord:
    """`rec` with the definitions `defs` (units.cross_file.DefinitionAnalysis records) merged in, and
    `unresolved` entries for the externals no project file defines."""
    if not defs:
        return replace(rec, unresolved=[*rec.unresolved, *unresolved]) if unresolved else rec
    variables = [d for d in defs if d["kind"] == "variable"]
    functions = [d for d in defs if d["kind"] != "variable"]
    var_names = {(d["name"], tuple(d["namespaces"])) for d in variables}

    def extern_twin(p: PieceText) -> bool:
        return p.kind == "VAR_DECL" and (p.name, tuple(p.namespaces)) in var_names and bool(_EXTERN.search(p.text))

    pieces = list(rec.pieces)
    kernel_at = next((i for i, p in enumerate(pieces) if p.after), len(pieces))
    if variables:
        at = next((i for i, p in enumerate(pieces) if extern_twin(p)), kernel_at)
        pieces = _insert(pieces, at, _block(variables))
    if functions:
        pieces = _insert(pieces, next((i for i, p in enumerate(pieces) if p.after), len(pieces)), _block(functions))
    pieces = [p for p in pieces if not extern_twin(p)]
    closures = [ClosureRecord.from_dict(d["closure"]) for d in defs]
    seen_unresolved = {_ident(u) for u in rec.unresolved}
    more = [u for c in closures for u in c.unresolved if _ident(u) not in seen_unresolved]
    vendored = {v["include_dir"]: v for v in rec.vendored}
    for c in closures:
        for v in c.vendored:
            vendored.setdefault(v["include_dir"], v)
    return replace(
        rec, pieces=pieces,
        includes=list(dict.fromkeys([*rec.includes, *(i for c in closures for i in c.includes)])),
        shims=sorted({*rec.shims, *(s for c in closures for s in c.shims)}),
        frameworks=sorted({*rec.frameworks, *(f for c in closures for f in c.frameworks)}),
        unresolved=[*rec.unresolved, *list({_ident(u): u for u in more}.values()), *unresolved],
        vendored=list(vendored.values()),
        lacking=list(dict.fromkeys([*rec.lacking, *(h for c in closures for h in c.lacking)])),
        cross_file=[{"symbol": d.get("symbol") or "::".join([*d["namespaces"], d["name"]]), "kind": d["kind"],
                     "path": d["path"], "line": d["line"],
                     **({"candidates": d["candidates"]} if d.get("candidates", 1) > 1 else {})}
                    for d in defs])
