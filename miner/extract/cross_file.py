"""The extract stage that brings in definitions from other files of a separately compiled project
(`-rdc=true`): each kernel's closure lists the external device functions and variables its TU only declares
(`ClosureRecord.externals`); the project's files that define such a name (units.definition_index: a word
search, then tree-sitter) are parsed with libclang, through the parse cache, with an analysis that closes over
each definition in its own TU (units.cross_file); the definitions' closures go into the kernel's
(units.cross_merge). What those definitions reach in turn is looked up the same way, a few rounds deep.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from miner.extract.unit_data import UnitData
from miner.frontends import clang_frontend, pch
from miner.frontends.config import ParseConfig, clang_args
from miner.frontends.parse_cache import ParseCache
from miner.source import configured_headers, include_graph
from miner.source.discover import SOURCE_SUFFIXES
from miner.units import cross_merge, definition_index
from miner.units.cross_file import DefinitionAnalysis
from miner.units.records import ClosureRecord

_ROUNDS = 4  # a definition's closure reaching the definition of a third file, and so on
_MAX_PROJECT_FILES = 20000  # (a monorepo's checkout is not read to its end)
# The discovered source suffixes, plus C files (a definition may sit in a `.c` the build compiles), without the
# HIP sources (a CUDA declaration is not defined by one).
_SUFFIXES = (SOURCE_SUFFIXES | {".c"}) - {".hip"}

Parse = Callable[[str, set[str]], list[dict[str, Any]]]


def parser(config: ParseConfig, inputs: set[str], graph: include_graph.IncludeGraph | None,
           data: dict[str, bytes], cache: ParseCache | None) -> Parse:
    """A parse of one file for the definitions of some USRs (their records), through the parse cache."""
    plain = pch.without(config)

    def parse(path: str, usrs: set[str]) -> list[dict[str, Any]]:
        key = None
        if cache is not None:
            reach = graph.closure(path) | {path} if graph is not None else {path}
            # (the USRs asked for are part of what the analysis gives)
            key = cache.key(path, [*clang_args(plain, path), "--km-definitions", *sorted(usrs)], True, reach, data,
                            inputs, plain.context)
        res = cache.load(key) if cache is not None and key is not None else None
        if res is None:
            res = clang_frontend.parse(path, plain, inputs, analyse=DefinitionAnalysis(usrs))
            if cache is not None and key is not None:
                cache.store_result(key, res)
        if res.error or res.analysis is None:
            return []
        return list(res.analysis.get("definitions", []))
    return parse


def project_sources(roots: list[str], known: dict[str, bytes], inputs: set[str]) -> dict[str, bytes]:
    """The project's source files under `roots` that the run has not read (a definition outside the mined folder,
    in `--project`'s tree): read, added to `known` and `inputs` (the parse's project files), and returned."""
    out: dict[str, bytes] = {}
    for d, names in configured_headers.project_folders(roots, _MAX_PROJECT_FILES):
        for n in names:
            p = os.path.realpath(os.path.join(d, n))
            if p in known or not _source(p):
                continue
            try:
                with open(p, "rb") as fh:
                    out[p] = fh.read()
            except OSError:
                continue
    known.update(out)
    inputs.update(out)
    return out


def resolve(units: UnitData, files: dict[str, bytes], parse: Parse, notes: list[str] | None = None,
            more: Callable[[], dict[str, bytes]] | None = None) -> int:
    """Merge into every closure of `units` the definitions of its externals; the number of closures changed.
    `more` gives further files to search (the project's beyond the run's), read only when some closure needs it."""
    wanted: dict[str, dict[str, Any]] = {}
    scopes: dict[str, set[str]] = {}  # usr -> the folders its kernels may take a definition from (_merged)
    for rec in units.closures.values():
        for e in rec.externals:
            wanted.setdefault(e["usr"], e)
            scopes.setdefault(e["usr"], set()).add(_scope(rec.kernel_path, e["path"]))
    if not wanted:
        return 0
    extra = more() if more is not None else {}
    sources = [(p, d) for p, d in sorted({**files, **extra}.items()) if _source(p)]
    found: dict[str, list[dict[str, Any]]] = {}
    outside: dict[str, set[str]] = {}  # usr -> files defining that name outside every scope that wants it
    sited: dict[str, set[str]] = {}  # usr -> the files parsed for it (the index saw a definition of its name)
    todo = set(wanted)
    for _ in range(_ROUNDS):
        if not todo:
            break
        index = definition_index.sites(sources, {wanted[u]["name"] for u in todo})
        per_file: dict[str, set[str]] = {}
        for u in sorted(todo):
            for site in index.get(wanted[u]["name"], []):
                if site.internal or site.kind != wanted[u]["kind"]:
                    continue
                if u not in scopes or any(site.path.startswith(sc + os.sep) for sc in scopes[u]):
                    per_file.setdefault(site.path, set()).add(u)
                    sited.setdefault(u, set()).add(site.path)
                else:
                    outside.setdefault(u, set()).add(site.path)
        new: set[str] = set()
        for path in sorted(per_file):
            for d in parse(path, per_file[path]):
                if all(d["path"] != o["path"] or d["line"] != o["line"] for o in found.get(d["usr"], [])):
                    found.setdefault(d["usr"], []).append(d)
                for e in d["closure"].get("externals", []):
                    if e["usr"] not in wanted:
                        wanted[e["usr"]] = e
                        new.add(e["usr"])
        todo = new
    changed = 0
    for key, rec in list(units.closures.items()):
        if not rec.externals:
            continue
        try:
            units.closures[key] = _merged(rec, found, outside, sited)
            changed += 1
        except Exception as exc:  # noqa: BLE001 - one closure's merge failing must not stop the run
            if notes is not None:
                notes.append(f"{key[0]}: definitions of other files not merged: {type(exc).__name__}: {exc}")
    if notes is not None and found:
        notes.append(f"{sum(len(v) for v in found.values())} device definitions of other files (separate "
                     f"compilation) brought into {changed} kernels' units")
    return changed


def _source(path: str) -> bool:
    return os.path.splitext(path)[1].lower() in _SUFFIXES


def _merged(rec: ClosureRecord, found: dict[str, list[dict[str, Any]]], outside: dict[str, set[str]],
            sited: dict[str, set[str]]) -> ClosureRecord:
    """The kernel's closure with the definitions of its externals, and of theirs, in the order reached."""
    picked: list[dict[str, Any]] = []
    missing: list[dict[str, str]] = []
    seen: set[str] = set()
    queue = list(rec.externals)
    while queue:
        e = queue.pop(0)
        if e["usr"] in seen:
            continue
        seen.add(e["usr"])
        everywhere = found.get(e["usr"], [])
        # Only a definition under the folder that holds both the kernel's file and the declaration it saw: a
        # collection of programs (`chapter1/`, `chapter2/`, each with its own `utils.cu` defining `bfe`) defines
        # one name in each, and another program's definition is no part of this one's build.
        scope = _scope(rec.kernel_path, e["path"])
        defs = [d for d in everywhere if d["path"].startswith(scope + os.sep)]
        others = sorted({d["path"] for d in everywhere if d not in defs} | outside.get(e["usr"], set()))
        if others and not defs:
            missing.append({"symbol": e.get("symbol") or "::".join([*e["namespaces"], e["name"]]),
                            "where": f"{os.path.basename(e['path'])}:{e['line']}",
                            "reason": "declared only: defined only in files outside the folder of the kernel and "
                                      "its declaration (another program of the project: "
                                      f"{', '.join(os.path.basename(p) for p in others[:3])})"})
            continue
        if not defs and (tried := sorted(p for p in sited.get(e["usr"], ()) if p.startswith(scope + os.sep))):
            # The text holds a definition of that name, the parse none of these parameters: one under an `#if` the
            # configuration mined leaves off, an overload of other parameters, or a file libclang could not parse.
            missing.append({"symbol": e.get("symbol") or "::".join([*e["namespaces"], e["name"]]),
                            "where": f"{os.path.basename(e['path'])}:{e['line']}",
                            "reason": "declared only: the project's definitions of that name (" +
                                      ", ".join(os.path.basename(p) for p in tried[:3]) + ") are none of this one "
                                      "in the configuration mined (an #if branch it leaves off, other parameters, "
                                      "or a file libclang could not parse)"})
            continue
        if not defs:
            what = "device function" if e["kind"] == "function" else "device variable"
            missing.append({"symbol": e.get("symbol") or "::".join([*e["namespaces"], e["name"]]),
                            "where": f"{os.path.basename(e['path'])}:{e['line']}",
                            "reason": f"declared only: a {what} of external linkage that no project file defines "
                                      "(separate compilation: another library or a generated source)"})
            continue
        d = dict(_nearest(defs, rec.kernel_path))
        if len(defs) > 1:
            d["candidates"] = len(defs)
        picked.append(d)
        queue += [x for x in d["closure"].get("externals", []) if x["usr"] not in seen]
    return cross_merge.merge(rec, picked, missing)


def _scope(kernel_path: str, declared_in: str) -> str:
    """The folder that holds both the kernel's file and the declaration its TU saw."""
    return os.path.commonpath([os.path.dirname(kernel_path), os.path.dirname(declared_in)])


def _nearest(defs: list[dict[str, Any]], kernel_path: str) -> dict[str, Any]:
    """Of several definitions (one function built into two programs of the project), the one nearest the kernel:
    the longest common folder, then the first path."""
    def common(p: str) -> int:
        return len(os.path.commonpath([os.path.dirname(p), os.path.dirname(kernel_path)]))
    return sorted(defs, key=lambda d: (-common(d["path"]), d["path"], d["line"]))[0]
