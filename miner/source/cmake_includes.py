"""The include folders a CMake project gives the sources of a folder: `include_directories(...)` of every
CMakeLists.txt from the project's top down to that folder (CMake's directory property, inherited by every
subdirectory, the parent's first), then the `target_include_directories(...)` those files write.

Context discovery (source.context) answers an include the inputs lack from the project's files. A library vendored
twice (`3rd_party/log/log.h` and its newer layout `3rd_party/log/include/log/log.h`) answers `"log/log.h"` by its
tail from both copies, and the first by name was not the one `include_directories(3rd_party)` makes the compiler
include: the closure then lacked that copy's declarations ("namespace has no member"). Only folders that exist
and lie in the project are given; an entry built from a variable other than the project's own folders
(`${CUDNN_INCLUDE_DIRS}`) says nothing here.
"""

from __future__ import annotations

import functools
import os
import re

from miner import lazy_re
from miner.source.flag_spelling import uncommented

_COMMAND = lazy_re.compile(r"\b(include_directories|target_include_directories)\s*\(([^()]*)\)", re.I)
_KEYWORDS = {"SYSTEM", "BEFORE", "AFTER", "PRIVATE", "PUBLIC", "INTERFACE"}
_HERE = lazy_re.compile(r"\$\{(?:CMAKE_CURRENT_SOURCE_DIR|CMAKE_CURRENT_LIST_DIR)\}")
_TOP = lazy_re.compile(r"\$\{(?:CMAKE_SOURCE_DIR|PROJECT_SOURCE_DIR|\w+_SOURCE_DIR)\}")
_MAX_BYTES = 1 << 20
_MAX_UP = 8


@functools.lru_cache(maxsize=256)
def _folders_of(path: str, top: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(include_directories, target_include_directories) of one CMakeLists.txt, as existing absolute folders."""
    try:
        if os.path.getsize(path) > _MAX_BYTES:
            return (), ()
        with open(path, encoding="utf-8", errors="replace") as fh:
            code = uncommented(fh.read())
    except OSError:
        return (), ()
    here = os.path.dirname(path)
    found: dict[bool, list[str]] = {False: [], True: []}
    for m in _COMMAND.finditer(code):
        target = m.group(1).lower() == "target_include_directories"
        words = m.group(2).replace('"', " ").split()
        for w in words[1:] if target else words:
            if w.upper() in _KEYWORDS or w.startswith("$<"):
                continue
            w = _TOP.sub(lambda _m: top, _HERE.sub(lambda _m: here, w))
            if "${" in w:
                continue
            d = os.path.realpath(os.path.join(here, w))
            if os.path.isdir(d) and (d == top or d.startswith(top + os.sep)) and d not in found[target]:
                found[target].append(d)
    return tuple(found[False]), tuple(found[True])


@functools.lru_cache(maxsize=1024)
def _outermost(folder: str) -> str | None:
    """The outermost folder above `folder` (itself included) holding a CMakeLists.txt, up to a git checkout's top
    and at most _MAX_UP folders up: the top of the CMake build a project without --project or .git is."""
    best, d = None, folder
    for _ in range(_MAX_UP):
        if os.path.isfile(os.path.join(d, "CMakeLists.txt")):
            best = d
        if os.path.exists(os.path.join(d, ".git")) or os.path.dirname(d) == d:
            break
        d = os.path.dirname(d)
    return best


@functools.lru_cache(maxsize=4096)
def include_folders(folder: str, top: str | None = None) -> tuple[str, ...]:
    """The include folders CMake gives sources in `folder` of the project at `top` (default: the outermost
    CMakeLists.txt above it), in the order they are searched; () where no CMakeLists.txt on the way says any.
    Cached: asked once per include the inputs do not answer, of every file of a folder."""
    folder = os.path.realpath(folder)
    top = os.path.realpath(top) if top else _outermost(folder)
    if top is None:
        return ()
    if not (folder == top or folder.startswith(top + os.sep)):
        return ()
    chain: list[str] = []
    d = folder
    while True:
        chain.append(d)
        if d == top:
            break
        d = os.path.dirname(d)
    directory: list[str] = []
    targets: list[str] = []
    for d in reversed(chain):
        path = os.path.join(d, "CMakeLists.txt")
        if os.path.isfile(path):
            own, target = _folders_of(path, top)
            directory += [x for x in own if x not in directory]
            targets += [x for x in target if x not in targets]
    return (*directory, *(x for x in targets if x not in directory))
