"""Which input files include which, so kernels in headers are parsed with their real includer."""

from __future__ import annotations

import os
import re
from collections import defaultdict
from dataclasses import dataclass, field

from miner import lazy_re
from miner.source import cmake_includes, make_includes
from miner.source.discover import SourceFile
from miner.units.headers import STD_HEADERS, SYSTEM_HEADERS, is_toolkit_header, toolkit_lacks

INCLUDE = lazy_re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
TU_SUFFIXES = {".cu", ".hip", ".cpp", ".cc", ".cxx"}


def resolve(directory: str, name: str) -> str | None:
    """Real path of `name` looked up in `directory`, None when no file is there. Most lookups miss, and a
    stat is far cheaper than realpath's lstat per path component (a warm MMCV rerun spent a second here);
    a path the kernel cannot open cannot be the real path of an existing input either."""
    path = os.path.join(directory, name)
    return os.path.realpath(path) if os.path.exists(path) else None


def include_tail(name: str) -> str:
    """`/dir/file.h` for `#include "../dir/file.h"`: what a file found by path tail must end with."""
    return "/" + name.lstrip("./")


def tail_match(path: str, tail: str, roots: frozenset[str] = frozenset()) -> bool:
    """Whether the file `path` answers an include whose tail is `tail`: it ends with it, and the include dir that
    match implies is not above the project root holding the file. A checkout folder named like the project's
    include prefix (`<proj>/core/types.hpp` answering `#include <proj/core/types.hpp>`, whose real file is
    `<proj>/include/proj/core/types.hpp`) matched through the checkout's own name: the wrong header was taken,
    and its folder's parent became an include dir."""
    if not path.endswith(tail):
        return False
    inc_dir = path[: len(path) - len(tail)]
    return not any(path.startswith(r + os.sep) and len(inc_dir) < len(r) for r in roots)


@dataclass
class IncludeGraph:
    edges: dict[str, set[str]] = field(default_factory=dict)  # file -> input files it includes
    auto_include_dirs: list[str] = field(default_factory=list)
    # file -> the auto dirs its own includes were found in (the nearest of several same-named headers)
    dirs_of: dict[str, list[str]] = field(default_factory=dict)
    chose: set[str] = field(default_factory=set)  # files with an include that several same-named headers answer

    def include_dirs_of(self, path: str) -> list[str]:
        """The auto dirs the translation unit rooted at `path` needs, its own file's first: passed before the
        run's shared dirs, so its `types.h` is the one beside it and not a sibling project's (a monorepo of
        networks, each with its own `include/types.h`)."""
        out: list[str] = []
        reach = self.closure(path)
        if not reach & self.chose:
            return out  # the shared dirs give the same files: the parse's arguments stay as they were
        for f in [path, *sorted(reach - {path})]:
            out += [d for d in self.dirs_of.get(f, ()) if d not in out]
        return out

    def closure(self, path: str) -> set[str]:
        seen = {path}
        stack = [path]
        while stack:
            for nxt in self.edges.get(stack.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen


def build(files: list[SourceFile], include_dirs: list[str], roots: frozenset[str] = frozenset()) -> IncludeGraph:
    """Resolve `#include`s among the inputs; an include found only by its tail adds an -I dir (never one above
    the project `roots`: tail_match).

    Real repos compile with -I flags we are not told about (`#include "helper.hpp"` from a
    sibling folder); the include's path tail matched against the inputs recovers them.
    """
    by_path = {f.path for f in files}
    by_tail: dict[str, list[str]] = defaultdict(list)
    for f in files:
        by_tail[os.path.basename(f.path)].append(f.path)
    by_data = {f.path: f.data for f in files}
    graph = IncludeGraph()
    auto: list[str] = []

    def add_dir(path: str, d: str) -> bool:
        """Record `d` as an auto -I dir of the run and of `path`'s own; False where the run's dirs have it."""
        if d in include_dirs:
            return False
        if d not in auto:
            auto.append(d)
        own = graph.dirs_of.setdefault(path, [])
        if d not in own:
            own.append(d)
        return True

    for f in files:
        targets: set[str] = set()
        here = os.path.dirname(f.path)
        for m in INCLUDE.finditer(f.data):
            name = m.group(2).decode("utf-8", "replace").strip()
            found = None
            search = ([here] if m.group(1) == b'"' else []) + include_dirs
            for d in search:
                cand = resolve(d, name)
                if cand is not None and cand in by_path:
                    found = cand
                    break
            if found is None and not _system_header(name):
                # The include folders the project's CMake build gives this folder (source.cmake_includes), before
                # any guess by tail: of a library vendored twice, the copy the build includes.
                top = next((r for r in roots if here == r or here.startswith(r + os.sep)), None)
                folders = cmake_includes.include_folders(here, top)
                # else the `-I` folders of the Makefile that compiles the folder's sources (source.make_includes)
                by_make = not folders
                folders = folders or make_includes.include_folders(here, top)
                for d in folders:
                    cand = resolve(d, name)
                    if cand is not None and cand in by_path:
                        found = cand
                        # (a Makefile's folders all, in its order: the parse searches them as its command line does)
                        added = [add_dir(f.path, x) for x in (folders if by_make else (d,))]
                        if any(added) and len(by_tail.get(os.path.basename(name), [])) > 1:
                            graph.chose.add(f.path)  # its own dirs first: the other copy is an auto dir too
                        break
            if found is None and not _system_header(name) and not (m.group(1) == b"<" and _host_compiler_has(name)) \
                    and not _found_outside(name, [here] if m.group(1) == b'"' else [], auto, by_path):
                tail = include_tail(name)
                matches = [p for p in by_tail.get(os.path.basename(name), [])
                           if tail_match(p, tail, roots) and not (m.group(1) == b"<" and _wraps(p, name, by_data))]
                if len(matches) >= 1:
                    # Of several same-named headers, the one nearest the includer (the longest shared
                    # folder), as its own build's -I would give; an auto dir found for another project's
                    # file used to answer it (yolo11's "types.h" read as ppocrv5's), then an earlier one.
                    if len(matches) > 1:
                        graph.chose.add(f.path)
                    found = min(matches, key=lambda p: (-_shared(p, f.path), p[: len(p) - len(tail)] not in auto, p))
                    add_dir(f.path, found[: len(found) - len(tail)])
            if found is not None and found != f.path:
                targets.add(found)
        graph.edges[f.path] = targets
    graph.auto_include_dirs = auto
    return graph


def _found_outside(name: str, here: list[str], auto: list[str], read: set[str]) -> bool:
    """Whether the includer's folder (a quoted include) or a folder the run already gives by tail (`auto`, in the
    order found) holds `name` on disk, a file not among those `read`: a project header neither mined nor taken
    as context (`#include "bvh/bvh.h"` of a host header, answered by `src/` beside the mined `src/kernel`). Guessed
    by its tail instead, a same-named file under the mined folder (`src/kernel/bvh/bvh.h`) made that folder an
    -I dir of every parse, and its `features.h` shadowed the C library's. (A file read is left to the tail match,
    which finds it, or a nearer namesake, as before.)"""
    for d in (*here, *auto):
        cand = resolve(d, name)
        if cand is not None:
            return cand not in read
    return False


def _wraps(path: str, name: str, data: dict[str, bytes]) -> bool:
    """Whether the project file `path` is a wrapper of the system header `<name>` it is named like: it is the
    includer itself, or it includes `<name>` itself (`util/windows.h` holding `#include <windows.h>` under
    `#ifdef _WIN32`). `#include <windows.h>` means the system's then, never that file: matched by its tail, its
    folder became an -I dir of every parse, and the folder's `math.h` shadowed the C library's."""
    base = os.path.basename(name)
    if os.path.basename(path) != base:
        return False
    return any(m.group(1) == b"<" and os.path.basename(m.group(2).decode("utf-8", "replace").strip()) == base
               for m in INCLUDE.finditer(data.get(path, b"")))


def _shared(a: str, b: str) -> int:
    """How many leading folders the paths `a` and `b` share."""
    n = 0
    for x, y in zip(a.split(os.sep)[:-1], b.split(os.sep)[:-1], strict=False):
        if x != y:
            break
        n += 1
    return n


def _system_header(name: str) -> bool:
    """A standard, POSIX or CUDA toolkit header name (`math.h`, `vector`, `cuda_fp16.h`): never matched
    to a project file by its tail. A repo's own `include/math.h` found for `#include <math.h>` became an
    -I dir that shadowed the C library's math.h in every translation unit."""
    return name in STD_HEADERS or name in SYSTEM_HEADERS or (is_toolkit_header(name) and not toolkit_lacks(name))


def _host_compiler_has(name: str) -> bool:
    """Whether `<name>` is in the host compiler's own include search list (`<omp.h>` in gcc's folder): the build
    finds it there. Matched by its tail to a project file instead (a library's `builder/omp.h`), the -I dir that
    gave it shadowed a toolkit header in every translation unit (`<cuda.h>` read as the same folder's `cuda.h`)."""
    from miner.source.missing_headers import system_include_dirs  # (lazy: asks the compiler once, when needed)

    return any(os.path.isfile(os.path.join(d, name)) for d in system_include_dirs())


_MAIN = lazy_re.compile(rb"\bint\s+main\s*\(")


def parse_roots(files: list[SourceFile], graph: IncludeGraph, context: list[SourceFile] = (),
                launchers: set[str] = frozenset()) -> list[str]:
    """Translation units that reach a kernel file, plus kernel files no such unit includes. Context
    translation units (outside the inputs) are roots only for kernel files no input unit reaches.
    `launchers` (translation units that name a kernel and call a launch API without including its file:
    a re-declared kernel launched through cudaLaunchKernel) are roots of their own: their launches are
    matched to the kernel by name and signature after the parse."""
    kernel_files = {f.path for f in files if f.has_kernel}
    roots: list[str] = []
    covered: set[str] = set()
    # A `.cu` another source #includes (`#include "kernel.cu"` in a benchmark's main.cu, after the header of
    # its types) is part of that translation unit, not one of its own: parsed alone, it lacks what its
    # includer declared first. A program of its own (a `main`: a test that includes the trainer) stays a root,
    # and so does one that nothing reaching a kernel includes.
    included = {q for p in [f.path for f in [*files, *context]] for q in graph.edges.get(p, ()) if q != p}
    for f in files:
        if f.path in included and f.path in kernel_files and not _MAIN.search(f.data):
            continue
        if os.path.splitext(f.path)[1].lower() in TU_SUFFIXES:
            reach = graph.closure(f.path) & kernel_files
            if reach:
                roots.append(f.path)
                covered |= reach
            elif f.path in launchers:
                roots.append(f.path)
    for f in context:
        if os.path.splitext(f.path)[1].lower() in TU_SUFFIXES:
            reach = graph.closure(f.path) & (kernel_files - covered)
            if reach:
                roots.append(f.path)
                covered |= reach
            elif f.path in launchers and not graph.closure(f.path) & kernel_files:
                roots.append(f.path)
    roots += sorted(kernel_files - covered)
    return roots
