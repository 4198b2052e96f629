"""The nvcc command lines a project's shell scripts run, and which sources each names (issue 14).

A folder may hold several build descriptions of one source: `compile.sh` running `nvcc -std=c++17 --shared
kernels.cu -o libk.so` (the library the project's Python loads with ctypes) beside a `setup.py` whose
`CUDAExtension('k_cuda', ['kernels.cu'])` nothing builds. Merged, the extension's torch defaults
(`-D__CUDA_NO_BFLOAT16_CONVERSIONS__`) reached a unit whose `(float)bf16` the real build compiles. Which
description applies to a source: the one that names it. A shell script's nvcc line that names the source is a
description of it; a torch extension is one only where it names the source and can be imported (one of its
sources defines the Python module: `PYBIND11_MODULE`, `TORCH_LIBRARY`, `PyInit_`), as an extension without
a module builds a library nothing can load.
"""

from __future__ import annotations

import ast
import functools
import os
import re

from miner import lazy_re
from miner.source.build_files import read_build_file

_MAX_BYTES = 200_000
_NVCC = lazy_re.compile(r"(?:^|[\s;&|(`/])nvcc(?:\s|$)")
# The compiler run through a variable the script names for it (`NVCC="$1"` ... `${NVCC} -ptx k.cu`): the value
# comes from the caller (a CMake custom command passes the compiler's path), the name says what it runs.
_NVCC_VAR = lazy_re.compile(r"""(?:^|[\s;&|(`])["']?\$\{?\w*NVCC\w*\}?["']?(?=\s|$)""", re.I)
_ASSIGN = lazy_re.compile(
    r"^\s*(?:export\s+|local\s+|readonly\s+)?([A-Za-z_]\w*)=(\"[^\"]*\"|'[^']*'|[^\s;&|]*)\s*(?:$|;)")
_FOR = lazy_re.compile(r"(?:^|[\s;&|])for\s+([A-Za-z_]\w*)\s+in\s+([^;\n]*?)\s*(?:;|$)")
_VAR_REF = lazy_re.compile(r"\$\{([A-Za-z_]\w*)\}|\$([A-Za-z_]\w*)")
_SOURCE = lazy_re.compile(r"\.(?:cu|cpp|cc|cxx|c)$")
# What a torch / pybind11 extension's sources must define for Python to import the built module.
_MODULE_ENTRY = lazy_re.compile(rb"\bPYBIND11_MODULE\b|\bTORCH_LIBRARY(?:_IMPL)?\b|\bPyInit_\w+|\bPyModule_Create\b")
_EXTENSIONS = {"CUDAExtension", "CppExtension", "Extension"}


def _read(path: str) -> str:
    return read_build_file(path, _MAX_BYTES)


def _logical_lines(text: str) -> list[str]:
    """The script's commands: `\\`-continued lines joined, comments cut (a `#` starting a word)."""
    out: list[str] = []
    pending = ""
    for raw in text.splitlines():
        line = re.sub(r"(?:^|\s)#.*$", "", raw)
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append(pending + line)
        pending = ""
    if pending:
        out.append(pending)
    return out


def _expand(text: str, env: dict[str, str]) -> str:
    """`text` with the script's variables of known value (`$NAME`, `${NAME}`) replaced; others kept."""
    return _VAR_REF.sub(lambda m: env.get(m.group(1) or m.group(2), m.group(0)), text)


def _track(line: str, env: dict[str, str]) -> None:
    """Record what one logical line sets: a plain assignment (`LIST='16 32 64'`, `src=.`) whose value holds no
    unknown variable, and a `for` loop's variable, which takes the first word of its list. A build that runs the
    same nvcc line once per value of a loop (`for s in $LIST; do nvcc -DSIZE=$s k.cu; done`, one PTX per size)
    compiles the source in each of those configurations; the first is the one mined, as a unit compiles in one."""
    m = _ASSIGN.match(line)
    if m:
        value = _expand(m.group(2).strip("'\""), env)
        if "$" in value or "`" in value:
            env.pop(m.group(1), None)  # (a positional argument, a command's output: not known)
        else:
            env[m.group(1)] = value
    for m in _FOR.finditer(line):
        words = _expand(m.group(2), env).replace('"', " ").replace("'", " ").split()
        if words and not any("$" in w or "`" in w or "*" in w for w in words[:1]):
            env[m.group(1)] = words[0]
        else:
            env.pop(m.group(1), None)


@functools.cache
def nvcc_lines(script: str) -> tuple[tuple[tuple[str, ...], str], ...]:
    """(sources named, the command's text after `nvcc`) for each nvcc command of the shell script at `script`;
    a source is a word ending in a source suffix, as the script's folder resolves it (a word holding a shell
    variable is kept by its file name)."""
    folder = os.path.dirname(script)
    out: list[tuple[tuple[str, ...], str]] = []
    env: dict[str, str] = {}
    for line in _logical_lines(_read(script)):
        _track(line, env)
        line = _expand(line, env)
        m = _NVCC.search(line) or _NVCC_VAR.search(line)
        if m is None:
            continue
        command = re.split(r"\s(?:&&|\|\||;|\|)\s", line[m.end():])[0]
        sources = []
        for word in command.split():
            word = word.strip("'\"")
            if not _SOURCE.search(word) or word.startswith("-"):
                continue
            sources.append(word if "$" in word else os.path.normpath(os.path.join(folder, word)))
        out.append((tuple(sources), command))
    return tuple(out)


def names(script: str, source: str) -> list[str]:
    """The nvcc command texts of `script` that compile `source` (a real path)."""
    base = os.path.basename(source)
    return [cmd for srcs, cmd in nvcc_lines(script)
            if any(s == source or ("$" in s and os.path.basename(s) == base) for s in srcs)]


def _extension_sources(text: str, folder: str) -> list[list[str]]:
    """The source paths of each extension call of a Python build script, resolved from its folder; a call whose
    sources are not all string literals (a glob, a variable) is left out (what it builds is not known)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    out: list[list[str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if (f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "") not in _EXTENSIONS:
            continue
        given = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords
                                                               if k.arg == "sources"), None)
        if not isinstance(given, ast.List | ast.Tuple):
            continue
        if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in given.elts):
            continue
        out.append([os.path.normpath(os.path.join(folder, e.value)) for e in given.elts])  # type: ignore[attr-defined]
    return out


def _defines_module(path: str) -> bool:
    try:
        with open(path, "rb") as fh:
            return _MODULE_ENTRY.search(fh.read(4_000_000)) is not None
    except OSError:
        return True  # (a source that cannot be read: nothing is known against the extension)


@functools.cache
def unloadable_extension(script: str, source: str) -> bool:
    """Whether every extension call of the Python build script `script` that names `source` lists, as literal
    paths, sources none of which defines a Python module: an extension nothing can import, not the build of
    `source` (False when no call names it, or when one may be importable)."""
    folder = os.path.dirname(script)
    naming = [srcs for srcs in _extension_sources(_read(script), folder) if source in srcs]
    return bool(naming) and not any(_defines_module(s) for srcs in naming for s in srcs)
