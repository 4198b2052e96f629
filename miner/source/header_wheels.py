"""Which translation units include a header-only library that the tree lacks and a wheel ships (CUTLASS/CuTe,
miner.cuda_libs.HEADER_LIBRARIES): `#include "cutlass/cutlass.h"` from a git submodule a plain checkout does not
have. Those units are parsed with the installed wheel's include dir (`-isystem`, after every project dir: the
project's own copy, where the tree has one, wins), so their declarations and types are complete; the closure
keeps the library as `#include`s (units.closure.vendored) and the build finds it the same way (miner.cuda_libs).
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from miner import cuda_libs
from miner.cuda_libs import HeaderLibrary, header_library_of
from miner.source.discover import SourceFile
from miner.source.include_graph import INCLUDE, IncludeGraph, resolve


def lacking(files: Iterable[SourceFile], include_dirs: list[str]) -> dict[str, list[HeaderLibrary]]:
    """Per file, the wheel libraries it includes with a spelling no project file or include dir answers."""
    files = list(files)
    tails: set[str] | None = None
    out: dict[str, list[HeaderLibrary]] = {}
    for f in files:
        if b"cutlass/" not in f.data and b"cute/" not in f.data:
            continue  # (every library of HEADER_LIBRARIES: a cheap test before the directives)
        here = os.path.dirname(f.path)
        for m in INCLUDE.finditer(f.data):
            spelled = m.group(2).decode("utf-8", "replace").strip()
            lib = header_library_of(spelled)
            if lib is None or lib in out.get(f.path, ()):
                continue
            search = ([here] if m.group(1) == b'"' else []) + include_dirs
            if any(resolve(d, spelled) for d in search):
                continue  # the project's own copy
            if tails is None:
                tails = {p for g in files for p in _tails(g.path)}
            if spelled.lstrip("./") in tails:
                continue  # found by path tail, as the include graph does
            out.setdefault(f.path, []).append(lib)
    return out


def _tails(path: str) -> list[str]:
    parts = path.split(os.sep)
    return ["/".join(parts[i:]) for i in range(max(1, len(parts) - 6), len(parts))]


def per_translation_unit(files: list[SourceFile], graph: IncludeGraph, include_dirs: list[str]
                         ) -> tuple[dict[str, list[str]], dict[str, list[HeaderLibrary]]]:
    """({source: the installed wheels' include dirs its translation unit needs}, {source: the libraries it needs
    whose wheel is not installed}), for every source whose reach includes such a library."""
    per_file = lacking(files, include_dirs)
    if not per_file:
        return {}, {}
    dirs: dict[str, list[str]] = {}
    missing: dict[str, list[HeaderLibrary]] = {}
    for f in files:
        libs = list(dict.fromkeys(lib for p in sorted({f.path} | graph.closure(f.path)) for lib in per_file.get(p, ())))
        for lib in libs:
            d = cuda_libs.header_library_dir(lib)
            if d is not None:
                dirs.setdefault(f.path, []).append(d)
            else:
                missing.setdefault(f.path, []).append(lib)
    return dirs, missing
