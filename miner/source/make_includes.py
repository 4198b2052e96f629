"""The include folders a Makefile gives the sources it compiles (`CPPFLAGS = -I. -I../utils -I../fem`), in order.

A mini-app keeps two versions of one program side by side (`basic/` the serial one, `cuda/` the GPU one, each with
its own `driver.hpp`, `Vector_functions.hpp`, ...), and the GPU version's `main.cu` includes `<driver.hpp>` by
angle brackets: only its Makefile's `-I.` says which copy. Guessed by file name, the other version's folder came
first for some header both hold, the parse of `main.cu` took the serial `driver.hpp`, and every kernel header of the
GPU version was parsed alone, without its launches. Make runs in the Makefile's folder, so its `-I` folders are
relative to it; the Makefile read is the one in the source's folder, else the nearest above (up to the project's
top). Variables are expanded as make would (miner.source.make_vars); a folder written with a variable make's
command line or the environment fills (`-I$(MPI_HOME)/include`) says nothing, nor does one outside the project.
"""

from __future__ import annotations

import functools
import os
import re

from miner import lazy_re
from miner.source import make_command_line, make_vars

_MAKEFILES = ("GNUmakefile", "makefile", "Makefile")
_INCLUDE_FLAG = lazy_re.compile(r"(?<!\S)-I\s*(\S+)")
# Variables whose value goes to the compiler's command line (`CPPFLAGS`, `NVCCFLAGS`, `INCLUDES`, `INC_DIRS`).
_FLAG_VARIABLE = lazy_re.compile(r"FLAGS|^INC|INCLUDE", re.I)


@functools.lru_cache(maxsize=256)
def _folders_of(makefile: str, top: str) -> tuple[str, ...]:
    """The `-I` folders of one Makefile's flag variables and recipe lines, as existing absolute folders in `top`."""
    here = os.path.dirname(makefile)
    variables: dict[str, str] = {}
    words: list[str] = []
    recipes = make_vars.Recipes()
    for line in make_vars.lines(makefile, make_command_line._read, variables):
        if recipes.is_recipe(line):
            words += [m.group(1) for m in _INCLUDE_FLAG.finditer(make_vars.expand(line, variables))]
            continue
        make_vars.assign(line.lstrip(), variables)
    for name, value in variables.items():
        if _FLAG_VARIABLE.search(name):
            words += [m.group(1) for m in _INCLUDE_FLAG.finditer(make_vars.expand(value, variables))]
    out: list[str] = []
    for w in words:
        w = w.strip("'\"")
        if "$" in w:
            continue
        d = os.path.realpath(os.path.join(here, w))
        if os.path.isdir(d) and (d == top or d.startswith(top + os.sep)) and d not in out:
            out.append(d)
    return tuple(out)


@functools.lru_cache(maxsize=4096)
def include_folders(folder: str, top: str | None) -> tuple[str, ...]:
    """The include folders the Makefile of `folder` (or of the nearest folder above it, up to `top`) passes, in the
    order the compiler searches them; () where none says any. Without a project top (no --project, no git
    checkout), the Makefile of `folder` or of its parent, and folders below that Makefile's parent."""
    folder = os.path.realpath(folder)
    stop = os.path.realpath(top) if top else os.path.dirname(folder)
    d = folder
    while d == stop or d.startswith(stop + os.sep):
        for name in _MAKEFILES:
            path = os.path.join(d, name)
            if os.path.isfile(path):
                return _folders_of(path, os.path.realpath(top) if top else os.path.dirname(d))
        if d == stop:
            break
        d = os.path.dirname(d)
    return ()
