"""Kernels whose text stops at an `#error` the build system's define would have skipped.

A kernel may choose its loop by a build option and refuse to compile without one: `#if defined(GRID_STRIDE) ...
#elif defined(BLOCK_STRIDE) ... #else #error Must pick a loop #endif`, the option given by CMake alone
(`-DGRID_STRIDE`). The parse, which reads no build system, takes the `#else`: libclang reports the `#error`, and a
unit carrying that text does not compile either. The `#error` is taken as active when every branch before it needs a
feature name that no project source defines and the configuration leaves undefined; such a kernel is parsed again
through its translation unit with the defines that turn on the chain's first branch (the one the project lists
first, usually its default); the unit carries them,
as for a kernel in an inactive branch (extract.parse._variant_parses). So is every kernel of a translation unit whose
own text stops at such an `#error` (the chain choosing which header defines the type its kernels' headers use).
"""

from __future__ import annotations

import re

from miner import lazy_re
from miner.frontends import treesitter_frontend
from miner.frontends.model import Kernel
from miner.source.feature_guards import is_feature_name

_ERROR = lazy_re.compile(rb"^[ \t]*#[ \t]*error\b", re.M)


def error_branches(kernels: list[Kernel], tu_of: dict[str, str], data: dict[str, bytes], defined: list[str],
                   project: set[str]) -> dict[tuple[str, tuple[str, ...]], list[Kernel]]:
    """(translation unit, defines) -> the kernels an active `#error` of their own text stops, for the defines of
    the first branch of that `#if` chain. `defined`: the configuration's defines; `project`: the names the
    project's files define (switched.project_defines)."""
    have = {d.partition("=")[0] for d in defined}
    groups: dict[tuple[str, tuple[str, ...]], list[Kernel]] = {}
    chosen: dict[str, list[str] | None] = {}  # translation unit -> the defines its own active `#error` chain needs
    for k in kernels:
        text = data.get(k.path, b"")
        if k.frontend != "clang" or not text:
            continue
        tu = tu_of.get(k.path, k.path)
        for m in _ERROR.finditer(text, k.start_offset, k.end_offset):
            first = _first_branch(text, m.start(), have, project)
            if first is not None:
                groups.setdefault((tu, tuple(first)), []).append(k)
                break
        else:
            # The translation unit's own chain (`#if defined(FEATURE_A) #include "field_a.hpp" #elif ... #else
            # #error "no FEATURE" #endif`, the consumer's build choosing the type its kernels' headers use): the
            # parse took the `#error`, and every kernel of the unit lacks the chosen header's names.
            if tu != k.path and tu not in chosen:
                tu_text = data.get(tu, b"")
                chosen[tu] = next((first for m in _ERROR.finditer(tu_text)
                                   if (first := _first_branch(tu_text, m.start(), have, project)) is not None), None)
            if tu != k.path and chosen[tu] is not None:
                groups.setdefault((tu, tuple(chosen[tu])), []).append(k)
    return groups


def _first_branch(text: bytes, at: int, have: set[str], project: set[str]) -> list[str] | None:
    """The defines that turn on the first branch of the `#if` chain whose later branch holds the `#error` at `at`,
    where that `#error` is active: every earlier branch needs a switch nothing here turns on; else None."""
    earlier = [treesitter_frontend.activating_defines(text, b)
               for b in treesitter_frontend.earlier_branches(text, at)]
    if earlier and all(ds and all(is_feature_name(n) and n not in have and n not in project
                                  for n in (d.partition("=")[0] for d in ds)) for ds in earlier):
        return earlier[0]
    return None
