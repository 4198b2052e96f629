"""Kernels whose text stops at an `#error` the build system's define would have skipped.

A kernel may choose its loop by a build option and refuse to compile without one: `#if defined(GRID_STRIDE) ...
#elif defined(BLOCK_STRIDE) ... #else #error Must pick a loop #endif`, the option given by CMake alone
(`-DGRID_STRIDE`). The parse, which reads no build system, takes the `#else`: libclang reports the `#error`, and a
unit carrying that text does not compile either. The `#error` is taken as active when every branch before it needs a
feature name that no project source defines and the configuration leaves undefined; such a kernel is parsed again
through its translation unit with the defines that turn on the chain's first branch (the one the project lists
first, usually its default); the unit carries them,
as for a kernel in an inactive branch (extract.parse._variant_parses).
"""

from __future__ import annotations

import re

from miner.frontends import treesitter_frontend
from miner.frontends.model import Kernel
from miner.source.feature_guards import is_feature_name

_ERROR = re.compile(rb"^[ \t]*#[ \t]*error\b", re.M)


def error_branches(kernels: list[Kernel], tu_of: dict[str, str], data: dict[str, bytes], defined: list[str],
                   project: set[str]) -> dict[tuple[str, tuple[str, ...]], list[Kernel]]:
    """(translation unit, defines) -> the kernels an active `#error` of their own text stops, for the defines of
    the first branch of that `#if` chain. `defined`: the configuration's defines; `project`: the names the
    project's files define (switched.project_defines)."""
    have = {d.partition("=")[0] for d in defined}
    groups: dict[tuple[str, tuple[str, ...]], list[Kernel]] = {}
    for k in kernels:
        text = data.get(k.path, b"")
        if k.frontend != "clang" or not text:
            continue
        for m in _ERROR.finditer(text, k.start_offset, k.end_offset):
            # Active only where every earlier branch needs a switch nothing here turns on.
            earlier = [treesitter_frontend.activating_defines(text, at)
                       for at in treesitter_frontend.earlier_branches(text, m.start())]
            if earlier and all(ds and all(is_feature_name(n) and n not in have and n not in project
                                          for n in (d.partition("=")[0] for d in ds)) for ds in earlier):
                groups.setdefault((tu_of.get(k.path, k.path), tuple(earlier[0])), []).append(k)
                break
    return groups
