"""A precompiled parse prefix (stub + torch shim) for translation units that include torch headers.

The torch shim brings the C++ standard library a torch extension sees; parsing it again for every
file was most of the extract time on torch repos. It is built once per run with the run's flags.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import replace

from miner import lazy_re
from miner.frontends import prefix_view
from miner.frontends.config import ParseConfig, clang_args, stub_dir

_TORCH_INCLUDE = lazy_re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"](ATen|torch|c10|THC)/', re.M)
# Files each prefix built in this process was read from (the stub, the shims, the C++ headers they pull in).
_PREFIX_FILES: dict[str, tuple[str, ...]] = {}
_PREFIX_PARENTS: dict[str, dict[str, str]] = {}
# What the build of each prefix that holds project headers saw (`prefix_view`): its parses are shown the plain
# parse's diagnostics, inclusions and top level.
_PREFIX_VIEWS: dict[str, prefix_view.Record] = {}


def includes_torch(data: bytes) -> bool:
    return _TORCH_INCLUDE.search(data) is not None


def build(config: ParseConfig, folder: str) -> str | None:
    """Write the precompiled prefix under `folder`; None when libclang cannot (the plain parse is used)."""
    try:
        import clang.cindex as ci
    except ImportError:
        return None
    prefix = os.path.join(folder, "km_prefix.h")
    with open(prefix, "w", encoding="utf-8") as fh:
        fh.write(f'#include "{stub_dir() / "km_cuda_parse.h"}"\n#include <km_torch_parse.h>\n')
    out = os.path.join(folder, "km_prefix.pch")
    try:
        tu = ci.Index.create().parse(prefix, args=clang_args(config, prefix, prefix=False),
                                     # KeepGoing | ForSerialization | DetailedPreprocessingRecord: the units'
                                     # parses ask for the record, and under -std=c++20 libclang 18 refuses
                                     # a prefix saved without it ("Error parsing translation unit").
                                     options=0x200 | 0x10 | 0x1)
        if any(d.severity >= ci.Diagnostic.Error for d in tu.diagnostics):
            return None
        files = {prefix} | {inc.include.name for inc in tu.get_includes()}
        tu.save(out)
    except (ci.TranslationUnitLoadError, ci.TranslationUnitSaveError, OSError):
        return None
    register(out, files)
    return out


def register(pch: str, files: set[str], parents: dict[str, str] | None = None,
             view: prefix_view.Record | None = None) -> None:
    """Record the files the prefix `pch` was built from (for `with_defines`) and, where its files come in the
    order of the plain parse (a prelude), the file whose #include first brought each one in: a parse through
    the prefix does not enter them, and `closure.usings` walks that chain up to a standard header."""
    _PREFIX_FILES[pch] = tuple(sorted(files))
    if parents is not None:
        _PREFIX_PARENTS[pch] = parents
    if view is not None:
        _PREFIX_VIEWS[pch] = view


def view_of(args: list[str]) -> prefix_view.Record | None:
    """The build record of the prefix a parse with `args` reads, where it holds project headers."""
    for i, a in enumerate(args[:-1]):
        if a == "-include-pch":
            return _PREFIX_VIEWS.get(args[i + 1])
    return None


def parents_of(args: list[str]) -> dict[str, str]:
    """The include parents of the prefix a parse with `args` reads (empty: none, or not in the plain order)."""
    for i, a in enumerate(args[:-1]):
        if a == "-include-pch":
            return _PREFIX_PARENTS.get(args[i + 1], {})
    return {}


def with_defines(config: ParseConfig, defines: list[str], only: str | None = None) -> ParseConfig:
    """`config` with `defines` added (a kernel's inactive #if branch, a project's HIP guards), keeping the
    precompiled prefix where it would come out the same: no file it was built from names one of them.
    Those parses used to go without the prefix, each paying the whole torch shim again. A unit's prelude is
    chosen again where an added define may change which headers it includes first (`prelude.replan`; `only`:
    the unit this configuration will parse, the others' choices that would need a new walk are dropped)."""
    from miner.frontends import prelude

    names = sorted({d.partition("=")[0] for d in defines})
    keep = bool(config.torch_pch) and not any(_prefix_names(config.torch_pch, name) for name in names)
    named: dict[str, bool] = {}

    def names_one(p: str) -> bool:
        if p not in named:
            named[p] = any(_prefix_names(p, name) for name in names)
        return named[p]

    return replace(config, defines=[*config.defines, *defines], torch_pch=config.torch_pch if keep else None,
                   prelude_of=prelude.replan(config, defines, names_one, only))


def without(config: ParseConfig) -> ParseConfig:
    """`config` without precompiled prefixes: what a parse gives does not depend on them."""
    return replace(config, torch_pch=None, prelude_of={})


@functools.cache
def _prefix_names(pch: str, name: str) -> bool:
    """Whether `name` occurs as a word in a file the prefix `pch` was built from (True when unknown)."""
    files = _PREFIX_FILES.get(pch)
    if files is None or not name:
        return True
    word = re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(name.encode()) + rb"(?![A-Za-z0-9_])")
    for f in files:
        try:
            with open(f, "rb") as fh:
                data = fh.read()
        except OSError:
            return True
        if name.encode() in data and word.search(data):
            return True
    return False
