"""Project context: files outside the inputs that the inputs need.

A user often points the miner at one file (`--input-file roi_align_cuda_kernel.cuh`) or one folder
of a larger project. The kernel's helper header (`#include "pytorch_cuda_helper.hpp"`, found by a
`-I` the build system passes) and the `.cu` that launches it (with the AT_DISPATCH that fixes its
types) then lie outside the inputs. They are looked up in the enclosing project (the git checkout,
else the input's folder) by include path tail, and returned as context: parsed and used for
closures and launches, never mined for kernels of their own.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict

from miner.discover import SOURCE_SUFFIXES, SourceFile, _check_text

_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".tox", ".venv", "build", "dist"}
_SYSTEM_DIR = re.compile(r"^(torch|ATen|c10|caffe2|pybind11|cuda|cub|thrust|cooperative_groups|nv|crt|hip|rocm|"
                         r"sys|bits|linux|mma|cutlass|cute|cudnn|cublas|nccl|mpi|omp|Python)/")
_TU_SUFFIXES = {".cu", ".hip", ".cpp", ".cc", ".cxx"}
MAX_PROJECT_FILES = 20000  # a bigger tree is not scanned: pass the folders you need instead


def project_root(path: str) -> str:
    """The git checkout that holds `path`, else the folder of `path` (or `path` if it is one)."""
    start = path if os.path.isdir(path) else os.path.dirname(path)
    d = start
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return start
        d = parent


def _includes(data: bytes) -> list[str]:
    """Quoted includes, and `<dir/file>` ones a project may own (`<utils/helper.h>`); `<vector>`,
    `<cuda_fp16.h>` and framework headers are the toolchain's."""
    out = []
    for m in _INCLUDE.finditer(data):
        name = m.group(2).decode("utf-8", "replace").strip()
        if m.group(1) == b'"' or "/" in name and not _SYSTEM_DIR.match(name):
            out.append(name)
    return out


def _may_be_project(name: str) -> bool:
    return not _SYSTEM_DIR.match(name)


def _project_files(roots: set[str], skip: set[str]) -> dict[str, list[str]]:
    """basename -> real paths of the source files under the project roots (inputs excluded)."""
    by_name: dict[str, list[str]] = defaultdict(list)
    count = 0
    for root in sorted(roots):
        for d, dirs, names in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x not in _SKIP_DIRS and not x.startswith("."))
            for n in names:
                if os.path.splitext(n)[1].lower() not in SOURCE_SUFFIXES:
                    continue
                p = os.path.realpath(os.path.join(d, n))
                if p not in skip:
                    by_name[n].append(p)
                count += 1
                if count > MAX_PROJECT_FILES:
                    return by_name
    return by_name


def _read(path: str) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError:
        return None
    return None if _check_text(path, data) else data


def find(files: list[SourceFile], include_dirs: list[str], roots: list[str],
         project: str | None = None) -> list[SourceFile]:
    """Context files the inputs need: unresolved includes, transitively, and includers of kernel
    headers that no input translation unit includes. Empty when the inputs are self-sufficient."""
    inputs = {f.path: f.data for f in files}
    tails: dict[str, list[str]] = defaultdict(list)
    for p in inputs:
        tails[os.path.basename(p)].append(p)

    def resolves(name: str, here: str, quoted: bool, known: dict[str, bytes]) -> bool:
        for d in ([here] if quoted else []) + include_dirs:
            if os.path.realpath(os.path.join(d, name)) in known:
                return True
        tail = "/" + name.lstrip("./")
        return any(p.endswith(tail) for p in tails.get(os.path.basename(name), ()))

    missing = [(name, os.path.dirname(p)) for p, data in inputs.items() for name in _includes(data)
               if _may_be_project(name) and not resolves(name, os.path.dirname(p), True, inputs)]
    headers = {p for p, data in inputs.items() if b"__global__" in data
               and os.path.splitext(p)[1].lower() not in _TU_SUFFIXES}
    included = {q for p, data in inputs.items() if os.path.splitext(p)[1].lower() in _TU_SUFFIXES
                for name in _includes(data) for q in headers if q.endswith("/" + name.lstrip("./"))}
    orphans = headers - included
    if not missing and not orphans:
        return []
    projects = ({os.path.realpath(project)} if project else
                {project_root(r) for r in roots} | {project_root(p) for p in inputs})
    pool = _project_files(projects, set(inputs))
    context: dict[str, bytes] = {}

    def take(path: str) -> None:
        if path in context or path in inputs:
            return
        data = _read(path)
        if data is None:
            return
        context[path] = data
        tails[os.path.basename(path)].append(path)
        todo.append(path)

    def lookup(name: str) -> str | None:
        tail = "/" + name.lstrip("./")
        cands = sorted(p for p in pool.get(os.path.basename(name), ()) if p.endswith(tail))
        return cands[0] if cands else None

    todo: list[str] = []
    for name, _here in missing:
        if (found := lookup(name)) is not None:
            take(found)
    # The translation units that include an orphan kernel header: its real launchers.
    for cands in pool.values():
        for p in cands:
            if os.path.splitext(p)[1].lower() not in _TU_SUFFIXES:
                continue
            data = _read(p)
            if data and any(h.endswith("/" + n.lstrip("./")) for n in _includes(data) for h in orphans):
                take(p)
    while todo:
        path = todo.pop()
        for name in _includes(context[path]):
            if _may_be_project(name) and not resolves(name, os.path.dirname(path), True, {**inputs, **context}):
                if (found := lookup(name)) is not None:
                    take(found)
    return [SourceFile(path=p, data=d, explicit=False) for p, d in sorted(context.items())]
