"""Project context: files outside the inputs that the inputs need.

A user often points the miner at one file (`--input-file roi_align_cuda_kernel.cuh`) or one folder
of a larger project. The kernel's helper header (`#include "pytorch_cuda_helper.hpp"`, found by a
`-I` the build system passes) and the `.cu` that launches it (with the AT_DISPATCH that fixes its
types) then lie outside the inputs. They are looked up in the enclosing project (the git checkout,
else the input's folder) by include path tail, and returned as context: parsed and used for
closures and launches, never mined for kernels of their own.

A third kind of launcher includes nothing of the kernel's: a host file that re-declares the kernel as a
plain function (`void K(const Params p);`, in a .cpp the host compiler builds) and launches it through
`cudaLaunchKernel((void*)K, ...)`. Only its text says it belongs to the kernel, so translation units of
the project that name an input kernel nothing in the inputs names, and call a launch API, are taken too.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict

from miner import lazy_re
from miner.source import cmake_includes, umbrella
from miner.source.checkout import project_root
from miner.source.discover import _SKIP_DIRS as _DISCOVER_SKIP_DIRS
from miner.source.discover import SOURCE_SUFFIXES, SourceFile, _check_text
from miner.source.include_graph import INCLUDE, TU_SUFFIXES, include_tail, resolve, tail_match
from miner.units.headers import STD_HEADERS, is_toolkit_header, toolkit_lacks

_SKIP_DIRS = _DISCOVER_SKIP_DIRS | {"build", "dist"}
_SYSTEM_DIR = lazy_re.compile(r"^(torch|ATen|c10|caffe2|pybind11|cuda|cub|thrust|cooperative_groups|nv|crt|hip|rocm|"
                         r"sys|bits|linux|mma|cutlass|cute|cudnn|cublas|nccl|mpi|omp|Python)/")
MAX_PROJECT_FILES = 20000  # a bigger tree is not scanned: pass the folders you need instead
# Files taken because they name a kernel: a common kernel name (`add_kernel`) in a big project must not
# turn every file that happens to say it into a parse.
MAX_NAMING_FILES = 64
# A kernel's name after `__global__` and its return type (macro-written kernels are not seen; they are
# rare among kernels launched from another file).
_GLOBAL_NAME = lazy_re.compile(rb"__global__\s+(?:__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)\s*)?"
                          rb"(?:[\w:<>,*&\s]*?[\s*&])?"
                          rb"(?:__launch_bounds__\s*\((?:[^()]|\([^()]*\))*\)\s*)?(\w+)\s*\(")
# A launch the host compiler accepts (a launch API) or nvcc does (chevrons).
LAUNCH_TOKEN = lazy_re.compile(rb"\b(?:cudaLaunch\w*|hipLaunch\w*|cuLaunchKernel\w*)\s*\(|<<<")


def kernel_names(files: list[SourceFile]) -> set[str]:
    """Names of the kernels the files define (`__global__ ... name(`), from their text."""
    return {m.group(1).decode() for f in files if f.has_kernel for m in _GLOBAL_NAME.finditer(f.data)}


# A kernel taken as a pointer (`(void *)&k<T, 4>`, `reinterpret_cast<void *>(k)`): named, not launched, here.
_KERNEL_POINTER = lazy_re.compile(rb"(?:\(\s*(?:const\s+)?void\s*\*\s*\)"
                             rb"|reinterpret_cast\s*<\s*(?:const\s+)?void\s*\*\s*>\s*\()\s*&?\s*(?:\w+::)*(\w+)")
# A function's head just before its body's brace: `name(...)`, `name<...>(...)`, possibly `const`.
_FUNCTION_HEAD = lazy_re.compile(rb"(\w+)\s*(?:<[^{};()]*>)?\s*\((?:[^{};()]|\([^{};()]*\))*\)\s*(?:const\s*)?$")
_CONTROL = {b"if", b"for", b"while", b"switch", b"catch", b"sizeof", b"return"}
# An explicit launch API (what a host compiler's file uses: it cannot write chevrons).
LAUNCH_API = lazy_re.compile(rb"\b(?:cudaLaunch\w*|hipLaunchKernel|hipLaunchCooperativeKernel|cuLaunchKernel\w*)\s*\(")


def chooser_names(files: list[SourceFile], names: set[str]) -> set[str]:
    """Functions of the kernel files that take one of `names` as a pointer (`template <class T> void *pick(...)
    { return (void *)k<T, 1>; }`): a file that calls a launch API and names one launches what it returns."""
    out: set[str] = set()
    for f in files:
        if not f.has_kernel or not _KERNEL_POINTER.search(f.data):
            continue
        spots = [m.start() for m in _KERNEL_POINTER.finditer(f.data) if m.group(1).decode() in names]
        if spots:
            out |= _enclosing_functions(f.data, spots)
    return out


def _enclosing_functions(data: bytes, spots: list[int]) -> set[str]:
    """The names of the innermost functions whose bodies hold the offsets `spots` (braces counted)."""
    out: set[str] = set()
    stack: list[int] = []
    todo = sorted(spots)
    j = 0
    for i, ch in enumerate(data):
        while j < len(todo) and todo[j] <= i:
            for start in reversed(stack):
                head = data[max(0, start - 400):start]
                head = re.split(rb"[;{}]", head)[-1]
                m = _FUNCTION_HEAD.search(head.rstrip())
                if m and m.group(1) not in _CONTROL:
                    out.add(m.group(1).decode())
                    break
            j += 1
        if j >= len(todo):
            break
        if ch == 0x7B:  # {
            stack.append(i)
        elif ch == 0x7D and stack:  # }
            stack.pop()
    return out


def names_any(data: bytes, names: set[str]) -> bool:
    """Whether `data` calls a launch API and names one of `names` (a word, not a part of one)."""
    if not names or not LAUNCH_TOKEN.search(data):
        return False
    return any(n.encode() in data and re.search(rb"(?<!\w)" + re.escape(n.encode()) + rb"(?!\w)", data)
               for n in names)


def addresses_any(data: bytes, names: set[str]) -> bool:
    """Whether `data` takes the address of one of `names` (`&scale`, `(const void *)scale`): a kernel handed to
    an object that keeps it and launches it later (miner.units.launches.stored), in a file with no launch."""
    if not names or b"&" not in data and b"void" not in data:
        return False
    return any(n.encode() in data and re.search(rb"(?:&\s*|\(\s*(?:const\s+)?void\s*(?:const\s*)?\*\s*\)\s*&?\s*)"
                                                 + re.escape(n.encode()) + rb"(?!\w)", data)
               for n in names)


def _unnamed(files: list[SourceFile]) -> set[str]:
    """Kernels of the inputs that no input names outside `__global__` statements (their definition and
    declarations): their launcher, if any, is elsewhere in the project."""
    from miner.units.mentions import Mentions  # mentions is plain text work; no cycle at import time

    mentions = Mentions((f.path, f.data) for f in files)
    return {n for n in kernel_names(files) if not mentions.uses(n, ("", 0, 0))}




def _includes(data: bytes, roots: frozenset[str] = frozenset()) -> list[str]:
    """Quoted includes, and `<dir/file>` or `<file.h>` ones a project may own (`<utils/helper.h>`, a
    `<cuda_helper.h>` of its own); `<vector>`, `<cuda_fp16.h>` and framework headers (`torch/...`, `cub/...`)
    are the toolchain's, unless quoted and at that path under a project root: a project's own `cuda/` folder
    (`#include "cuda/components/groups.cuh"` beside `hip/`) is no libcu++ header, and its declarations are
    the units' to inline. So is one the toolkit does not have (`<cuda/api.hpp>`: headers.toolkit_lacks)."""
    out = []
    for m in INCLUDE.finditer(data):
        name = m.group(2).decode("utf-8", "replace").strip()
        if _SYSTEM_DIR.match(name) and not toolkit_lacks(name):
            if m.group(1) == b'"' and any(os.path.isfile(os.path.join(r, name)) for r in roots):
                out.append(name)
        elif m.group(1) == b'"' or "/" in name or _maybe_project(name):
            out.append(name)
    return out


_SYSTEM_FOLDERS = ("/usr/include", "/usr/local/include")


def _maybe_project(name: str) -> bool:
    """`<file.h>` that no system folder holds and that is no standard or CUDA toolkit header: the project's
    own, found by a `-I` its build passes (a `<cuda_helper.h>` beside the sources)."""
    return (bool(os.path.splitext(name)[1]) and name not in STD_HEADERS and not is_toolkit_header(name)
            and not any(os.path.exists(os.path.join(d, name)) for d in _SYSTEM_FOLDERS))


def _system_named(data: bytes) -> list[str]:
    """`<file.h>` includes that `_includes` leaves to the system only because a system folder holds a file of
    that name (glibc's `<error.h>`), though no standard or toolkit header is called so: a project may have its own
    (`include/error.h` with its error codes), and its build's `-I include` comes before the system's folders."""
    out = []
    for m in INCLUDE.finditer(data):
        name = m.group(2).decode("utf-8", "replace").strip()
        if (m.group(1) == b"<" and "/" not in name and os.path.splitext(name)[1] and name not in STD_HEADERS
                and not is_toolkit_header(name) and not _maybe_project(name)):
            out.append(name)
    return out


def _project_files(roots: set[str], skip: set[str]) -> dict[str, list[str]]:
    """basename -> real paths of the files under the project roots (inputs excluded). Files of any suffix:
    an `#include` names a header whatever its suffix (`cuda_utils.hu`, a `define.c` of host constants), and
    only names an include asks for are looked up; the size limit counts the source files alone."""
    by_name: dict[str, list[str]] = defaultdict(list)
    count = 0
    for root in sorted(roots):
        for d, dirs, names in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x not in _SKIP_DIRS and not x.startswith("."))
            real_d = None
            for n in names:
                source = os.path.splitext(n)[1].lower() in SOURCE_SUFFIXES
                # The folder's real path once, and realpath per file only for links: a realpath per file
                # (an lstat per path component) was a fifth of a cached MMCV rerun.
                real_d = real_d or os.path.realpath(d)
                p = os.path.join(real_d, n)
                if source and os.path.islink(p):
                    p = os.path.realpath(p)
                if p not in skip:
                    by_name[n].append(p)
                count += source
                if count > MAX_PROJECT_FILES:
                    return by_name
    return by_name


def _spelled_tops(inputs: dict[str, bytes], tails: dict[str, list[str]]) -> set[str]:
    """The folders above the inputs that their includes are spelled from (`.../src/lib` gives `...` for an input
    `.../src/lib/kernels/core/array.h` that `#include "src/lib/kernels/core/array.h"` names)."""
    out: set[str] = set()
    for data in inputs.values():
        for name in _includes(data):
            if name.startswith(".") or "/" not in name:
                continue
            tail = include_tail(name)
            for q in tails.get(os.path.basename(name), ()):
                if q.endswith(tail) and len(q) > len(tail):
                    out.add(q[:-len(tail)])
    return {t for t in out if not any(t.startswith(u + os.sep) for u in out)}


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return None if _check_text(path, data) else data


def _projects(paths: list[str], roots: list[str], project: str | None) -> set[str]:
    return ({os.path.realpath(project)} if project else
            {project_root(r) for r in roots} | {project_root(p) for p in paths})


def tail_bounds(paths: list[str], roots: list[str], project: str | None) -> frozenset[str]:
    """The project roots no include found by its tail may reach above (include_graph.tail_match). Only a stated
    project or a git checkout: the folder that stands in for a project when there is neither is often below
    the include dir an include implies."""
    return frozenset(d for d in _projects(paths, roots, project)
                     if project or os.path.exists(os.path.join(d, ".git")))


def find(files: list[SourceFile], include_dirs: list[str], roots: list[str],
         project: str | None = None) -> list[SourceFile]:
    """Context files the inputs need: unresolved includes, transitively, and includers of kernel
    headers that no input translation unit includes. Empty when the inputs are self-sufficient."""
    inputs = {f.path: f.data for f in files}
    projects = _projects(list(inputs), roots, project)
    bounds = tail_bounds(list(inputs), roots, project)
    context: dict[str, bytes] = {}
    tails: dict[str, list[str]] = defaultdict(list)
    for p in inputs:
        tails[os.path.basename(p)].append(p)

    def resolves(name: str, here: str) -> bool:
        for d in [here, *include_dirs]:
            cand = resolve(d, name)
            if cand is not None and (cand in inputs or cand in context):
                return True
        tail = include_tail(name)
        return any(tail_match(p, tail, bounds) for p in tails.get(os.path.basename(name), ()))

    missing = [(name, os.path.dirname(p)) for p, data in inputs.items() for name in _includes(data, bounds)
               if not resolves(name, os.path.dirname(p))]
    is_tu = {p: os.path.splitext(p)[1].lower() in TU_SUFFIXES for p in inputs}
    headers = {p for p, data in inputs.items() if b"__global__" in data and not is_tu[p]}
    included = {q for p, data in inputs.items() if is_tu[p]
                for name in _includes(data, bounds) for q in headers if tail_match(q, include_tail(name), bounds)}
    orphans = headers - included
    unnamed = _unnamed(files)
    if not missing and not orphans and not unnamed:
        return []
    if not project:
        # A checkout without `.git` (an archive) gave the mined folder itself as the project, so the headers that its
        # files include from the checkout's top (`src/lib/utils/helpers.h` from `src/lib/kernels/`) were found
        # nowhere. Where an input answers an include spelled from such a top, that top is the project's too.
        tops = _spelled_tops(inputs, tails)
        projects = {r for r in projects if not any(r.startswith(t + os.sep) for t in tops)} | tops
    pool = _project_files(projects, set(inputs))
    todo: list[str] = []

    def take(path: str, data: bytes | None = None) -> None:
        if path in context or path in inputs:
            return
        data = data if data is not None else _read(path)
        if data is None:
            return
        context[path] = data
        tails[os.path.basename(path)].append(path)
        todo.append(path)

    # The include folders the project's build passes, as far as the includes answered by path tail show them
    # (`<amg_config.h>` found as `include/amg_config.h` says `-I include`): a system-named header in one of them is
    # the project's (_system_named).
    folders: dict[str, None] = dict.fromkeys(include_dirs)

    def lookup(name: str, here: str) -> str | None:
        # Beside its includer first, as the compiler looks (three benchmarks' own `define.c`); else by tail.
        near = resolve(here, name)
        if near is not None and os.path.isfile(near):
            return near
        # Then in the build's include folders, in their order (source.cmake_includes: a library vendored twice
        # answers by tail from both copies, and the first by name was not the one the build includes).
        top = next((r for r in projects if here == r or here.startswith(r + os.sep)), None)
        for d in [*include_dirs, *cmake_includes.include_folders(here, top)]:
            cand = resolve(d, name)
            if cand is not None and os.path.isfile(cand) and any(cand.startswith(r + os.sep) for r in projects):
                folders.setdefault(d)  # (an include folder of the build: its system-named headers are the project's)
                return cand
        tail = include_tail(name)
        cands = sorted(p for p in pool.get(os.path.basename(name), ()) if tail_match(p, tail, bounds))
        if cands:
            folders.setdefault(cands[0][: len(cands[0]) - len(tail)])
        return cands[0] if cands else None

    def in_folders(name: str) -> str | None:
        return next((c for d in folders if (c := resolve(d, name)) is not None and os.path.isfile(c)), None)

    for name, here in missing:
        if (found := lookup(name, here)) is not None:
            take(found)
    # The translation units that include an orphan kernel header (its real launchers), and those that
    # name a kernel nothing in the inputs names while calling a launch API (a re-declaring launcher).
    naming = 0
    for cands in pool.values():
        for p in cands:
            if os.path.splitext(p)[1].lower() not in TU_SUFFIXES or (not orphans and not unnamed):
                continue
            data = _read(p)
            if not data:
                continue
            if orphans and any(tail_match(h, include_tail(n), bounds)
                               for n in _includes(data, bounds) for h in orphans):
                take(p, data)
            elif naming < MAX_NAMING_FILES and names_any(data, unnamed):
                naming += 1
                take(p, data)
    if orphans:
        # Kernel headers reached only through the library's public header (a header-only library mined from its
        # header folder): the project program that includes that header is their translation unit.
        def find_any(name: str, here: str) -> str | None:
            for d in [here, *include_dirs]:
                cand = resolve(d, name)
                if cand is not None and (cand in inputs or os.path.isfile(cand)):
                    return cand
            tail = include_tail(name)
            got = sorted(p for p in tails.get(os.path.basename(name), ()) if tail_match(p, tail, bounds))
            return got[0] if got else lookup(name, here)

        taken = [p for p in context if os.path.splitext(p)[1].lower() in TU_SUFFIXES]
        for path, data in umbrella.units_through_public_headers(
                inputs, orphans, (p for cands in pool.values() for p in cands), taken,
                lambda text: _includes(text, bounds), find_any, _read):
            take(path, data)
    system_named = dict.fromkeys(n for data in inputs.values() for n in _system_named(data))
    while todo:
        while todo:
            path = todo.pop()
            here = os.path.dirname(path)
            for name in _includes(context[path], bounds):
                if not resolves(name, here) and (found := lookup(name, here)) is not None:
                    take(found)
        # Once the include folders are known: the system-named headers they hold, for the files that include them.
        for name in [*system_named, *(n for data in list(context.values()) for n in _system_named(data))]:
            if (found := in_folders(name)) is not None:
                take(found)
    return [SourceFile(path=p, data=d, explicit=False) for p, d in sorted(context.items())]
