"""The `--expt-*` flags a CMake project sets in a module its root CMakeLists.txt includes
(`include(cmake/Utils.cmake)` holding `function(set_cuda_flags target) ... --expt-relaxed-constexpr ...`), or
one it includes by module name from a folder it adds to `CMAKE_MODULE_PATH` (`list(APPEND CMAKE_MODULE_PATH
${PROJECT_SOURCE_DIR}/cmake)` ... `include(ProjectCudaFlags)` finds `cmake/ProjectCudaFlags.cmake`).

`build_flags.find` reads the build files of the folders above a source; a module kept in a folder of its own
(`cmake/`) is no such folder, so its flags were missed and units of code written for relaxed constexpr failed
("calling a constexpr __host__ function from a __global__ function is not allowed"). Only these two flags are
taken from modules: they change what device code may call, never which configuration is built.
"""

from __future__ import annotations

import functools
import os
import re

from miner import lazy_re
from miner.source.flag_spelling import normal, uncommented

_INCLUDE = lazy_re.compile(r"^\s*include\s*\(\s*\"?([^\s)\"]+)\"?", re.M)
_ROOT_VAR = lazy_re.compile(r"^\$\{(?:\w*_SOURCE_DIR|CMAKE_CURRENT_LIST_DIR)\}/")
_MODULE_PATH = lazy_re.compile(r"^\s*(?:list\s*\(\s*(?:APPEND|INSERT)\s+CMAKE_MODULE_PATH(?:\s+\d+)?"
                          r"|set\s*\(\s*CMAKE_MODULE_PATH)([^)]*)\)", re.M | re.I)
_EXPT = lazy_re.compile(r"(?<![\w/])-{1,2}(expt-relaxed-constexpr|expt-extended-lambda|extended-lambda)\b")


@functools.cache
def project_modules(root: str) -> tuple[str, ...]:
    """The project's `.cmake` modules the root CMakeLists.txt includes, relative to root."""
    top = os.path.join(root, "CMakeLists.txt")
    try:
        with open(top, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
    except OSError:
        return ()
    code = uncommented(text)
    # the project's own module folders (a standard CMake module, `include(CheckLanguage)`, is in none of them)
    dirs = [_ROOT_VAR.sub("", w.strip('"')) for m in _MODULE_PATH.finditer(code) for w in m.group(1).split()]
    dirs = [d for d in dirs if "$" not in d]
    out: list[str] = []
    for m in _INCLUDE.finditer(code):
        name = m.group(1)
        if name.endswith(".cmake"):
            rels = [_ROOT_VAR.sub("", name)]
        elif "/" not in name and "$" not in name:
            rels = [os.path.join(d, name + ".cmake") for d in dirs]
        else:
            continue
        rel = next((r for r in rels if "$" not in r and os.path.isfile(os.path.join(root, r))), "")
        path = os.path.realpath(os.path.join(root, rel))
        if rel and path.startswith(os.path.realpath(root) + os.sep) and os.path.relpath(path, root) not in out:
            out.append(os.path.relpath(path, root))
    return tuple(out)


@functools.cache
def module_flags(root: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(flags, module files relative to root) of the `--expt-*` flags the root's modules set."""
    flags: list[str] = []
    used: list[str] = []
    for rel in project_modules(root):
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
            code = uncommented(fh.read())
        got = [normal(x) for x in _EXPT.findall(code)]
        if got:
            flags += [f for f in got if f not in flags]
            used.append(rel)
    return tuple(flags), tuple(used)
