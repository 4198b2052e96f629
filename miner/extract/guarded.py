"""Kernel headers that a translation unit includes only under an `#ifdef` the mined configuration leaves off.

`optimizer.cu` writes `#ifdef WITH_EXTRA #include "extra.h" #endif`, the build system defines WITH_EXTRA
where a dependency is found, and the parse (which reads no build system) does not: no translation unit reaches
`extra.h`, so it is parsed alone. A header that relies on what its includer brought before it (a device helper
from another header) then leaves its kernels with undefined names, and its launches unseen. Such a header's
kernels are parsed instead through that includer with the guard's names defined (the kernel records them in
`defines`, and its unit defines them too), as kernels in a file's own inactive `#if` branch are.
"""

from __future__ import annotations

import os

from miner.frontends import treesitter_frontend
from miner.frontends.model import Kernel
from miner.source.include_graph import INCLUDE, TU_SUFFIXES, IncludeGraph, include_tail


def guarded_includers(kernels: list[Kernel], tu_of: dict[str, str], graph: IncludeGraph,
                      data: dict[str, bytes]) -> dict[tuple[str, tuple[str, ...]], list[Kernel]]:
    """(includer, defines) -> the kernels of headers parsed alone that this includer reaches under `defines`."""
    alone = sorted({k.path for k in kernels if k.frontend == "clang" and tu_of.get(k.path, k.path) == k.path
                    and os.path.splitext(k.path)[1].lower() not in TU_SUFFIXES})
    groups: dict[tuple[str, tuple[str, ...]], list[Kernel]] = {}
    for header in alone:
        for src in sorted(graph.edges):
            if header not in graph.edges[src] or os.path.splitext(src)[1].lower() not in TU_SUFFIXES:
                continue
            defines = _guard(data.get(src, b""), src, header)
            if defines:
                groups.setdefault((src, tuple(defines)), []).extend(k for k in kernels if k.path == header)
                break
    return groups


def _guard(text: bytes, src: str, header: str) -> list[str]:
    """The names whose definition turns on the `#include` of `header` in `src` (none: not guarded)."""
    for m in INCLUDE.finditer(text):
        name = m.group(2).decode("utf-8", "replace").strip()
        local = os.path.normpath(os.path.join(os.path.dirname(src), name))
        if local == header or header.endswith(include_tail(name)):
            return treesitter_frontend.activating_defines(text, m.start())
    return []
