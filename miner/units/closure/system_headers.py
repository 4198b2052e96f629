"""System and CUDA-library headers whose declarations the closure names: the unit includes them as the project does.

A unit keeps a project file's `#include <...>` only for standard and toolkit headers (closure.text._includes); a
POSIX or C-library header (`<execinfo.h>`, `<cxxabi.h>`) or a CUDA library's (`<cusparse_v2.h>` of a wheel) was
dropped even where a kept declaration uses it: a host error helper that prints a stack trace through `backtrace`
and `abi::__cxa_demangle` ("identifier backtrace is undefined"). The parse resolved those names to the system's
files: the header the project's own `#include` brought them through, up the include chain, is the one the unit
includes, as the name relative to the system (or wheel) include folder that holds it.
"""

from __future__ import annotations

import functools
import os

import clang.cindex as ci

from miner.frontends.config import libcuxx_stand_in
from miner.units.closure.context import TUContext
from miner.units.closure.usings import _include_parents
from miner.units.headers import FRAMEWORK, is_toolkit_header


@functools.cache
def _roots() -> tuple[str, ...]:
    """The host compiler's include folders and the CUDA library wheels', longest first (`/usr/include/c++/12`
    before `/usr/include`)."""
    from miner.cuda_libs import wheel_include_dirs
    from miner.source.missing_headers import system_include_dirs

    dirs = {os.path.realpath(d) for d in (*system_include_dirs(), *wheel_include_dirs())}
    return tuple(sorted(dirs, key=len, reverse=True))


def _system_name(path: str) -> str | None:
    """`string.h` for `/usr/include/string.h`: the name relative to the system (or wheel) include folder that
    holds the file, else None."""
    real = os.path.realpath(path)
    root = next((r for r in _roots() if real.startswith(r + os.sep)), None)
    return None if root is None else real[len(root) + 1:]


def included_header(ctx: TUContext, path: str) -> str | None:
    """`execinfo.h` for a declaration of `/usr/include/execinfo.h` that a project file's `#include <execinfo.h>`
    brought in (directly or through the headers it includes): the header a unit naming that declaration needs.
    None for a file no project file reaches through system headers, a toolkit header (the unit keeps those
    already), or a framework's."""
    parents = ctx.memo("_include_parents", lambda: _include_parents(ctx))
    libcuxx = ctx.memo("_libcuxx_stand_ins", lambda: {n for f in ctx.files if (n := libcuxx_stand_in(f))})
    seen: set[str] = set()
    while path not in seen:
        seen.add(path)
        if libcuxx and f"cuda/std/{_system_name(path)}" in libcuxx:
            # `cuda::std::array` where a project header includes `<cuda/std/array>`, which the parse reads through a
            # stand-in holding the host's `<array>` (frontends.config.framework_overlay): the declaration is the
            # host's, and the unit includes the real libcu++ header. The project header may give the unit nothing
            # else, so its own include line is not kept, and the host's `<array>` alone leaves `cuda::std`
            # undeclared. (The host header may have come first through another, `<functional>`: the stand-in is
            # matched by the header's name, not by the include chain.)
            return f"cuda/std/{_system_name(path)}"
        parent = parents.get(path)
        if parent is None or parent == path:
            return None
        if parent in ctx.inputs:
            break
        path = parent
    else:
        return None
    name = _system_name(path)
    if name is None or is_toolkit_header(name) or FRAMEWORK.search(name):
        return None
    # A standard header counts too: the unit keeps the `#include <cstring>` lines of the files it takes pieces
    # from, but `std::strncpy` in a kept class may come from a project header that gives the unit nothing else.
    return name


def std_counterpart(use: ci.Cursor, path: str) -> str | None:
    """`cstring` for `std::strncpy` whose declaration the parse found in the C library's `string.h`.

    The C header may have been entered first through the toolkit's headers (our parse shim of `<cuda.h>` includes
    `<string.h>`), so its include chain names no project header, and `<cuda_runtime.h>`, which the unit has,
    declares only `::strncpy`. A name written with `std::` needs the C++ header that puts it in `std`: the `<cX>`
    of that `X.h`, where the host compiler has one."""
    if use.kind != ci.CursorKind.DECL_REF_EXPR:
        return None
    qualifier = next(use.get_children(), None)
    if qualifier is None or qualifier.kind != ci.CursorKind.NAMESPACE_REF or qualifier.spelling != "std":
        return None
    name = _system_name(path)
    if name is None or os.sep in name or not name.endswith(".h"):
        return None
    counterpart = "c" + name[:-2]
    return counterpart if any(os.path.isfile(os.path.join(r, counterpart)) for r in _roots()) else None
