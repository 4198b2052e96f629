"""CMake conditions on the CUDA toolkit's version, decided for the toolkit the units are built with.

A CMake project turns features on by the toolkit it finds (`if(${CUDA_VERSION_MAJOR} VERSION_GREATER_EQUAL "11")`
/ `add_definitions("-DENABLE_BF16")`): every build with a toolkit that new defines it. Read as an option of the
build (a condition that says nothing of the platform), such a definition was left out, and the code it guards
(bf16 conversion helpers the fp8 kernels call) was missing from the parse and the units. A condition whose every
comparison reads a CUDA version variable is evaluated against the installed nvcc (`cuda.h`'s CUDA_VERSION);
anything else is not decided here (None).
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from collections.abc import Callable

from miner import lazy_re

_VARS = lazy_re.compile(r"^(?:CUDA_VERSION|CUDA_VERSION_STRING|CUDAToolkit_VERSION|CMAKE_CUDA_COMPILER_VERSION"
                   r"|CUDA_VERSION_MAJOR|CUDA_VERSION_MINOR|CUDAToolkit_VERSION_MAJOR|CUDAToolkit_VERSION_MINOR)$")
_TOKEN = lazy_re.compile(r'\$\{(\w+)\}|"([^"]*)"|([()])|([\w.+-]+)')
_OPS = {"VERSION_GREATER_EQUAL", "VERSION_GREATER", "VERSION_LESS", "VERSION_LESS_EQUAL", "VERSION_EQUAL",
        "GREATER_EQUAL", "GREATER", "LESS", "LESS_EQUAL", "EQUAL", "STREQUAL"}


@functools.cache
def toolkit_version() -> tuple[int, int] | None:
    """(major, minor) of the installed nvcc's toolkit, from `cuda.h`; None without nvcc."""
    from miner import cuda_libs  # lazy: asks nvcc once per process

    nvcc = shutil.which("nvcc")
    for d in cuda_libs.toolkit_include_dirs(nvcc) if nvcc else ():
        path = os.path.join(d, "cuda.h")
        if os.path.isfile(path):
            with open(path, encoding="utf-8", errors="replace") as f:
                m = re.search(r"^[ \t]*#[ \t]*define[ \t]+CUDA_VERSION[ \t]+(\d+)", f.read(), re.M)
            if m:
                v = int(m.group(1))
                return v // 1000, v % 1000 // 10
    return None


def _value(name: str, version: tuple[int, int]) -> str:
    if name.endswith("_MAJOR"):
        return str(version[0])
    if name.endswith("_MINOR"):
        return str(version[1])
    return f"{version[0]}.{version[1]}"


def _compare(a: str, op: str, b: str) -> bool | None:
    if op == "STREQUAL":
        return a == b
    try:
        if op.startswith("VERSION_"):
            x = tuple(int(p) for p in a.split("."))
            y = tuple(int(p) for p in b.split("."))
            n = max(len(x), len(y))
            x, y = x + (0,) * (n - len(x)), y + (0,) * (n - len(y))
            op = op[len("VERSION_"):]
        else:
            x, y = float(a), float(b)
    except ValueError:
        return None
    return {"GREATER_EQUAL": x >= y, "GREATER": x > y, "LESS": x < y, "LESS_EQUAL": x <= y, "EQUAL": x == y}[op]


def holds(condition: str, version: tuple[int, int] | None = None) -> bool | None:
    """Whether the CMake `if(...)` condition holds with the toolkit `version` (default: the installed one);
    None unless it is made only of comparisons of CUDA version variables, AND, OR, NOT and parentheses."""
    version = version or toolkit_version()
    if version is None:
        return None
    toks: list[tuple[str, str]] = []  # (kind, text): var | lit | op | paren | word
    for m in _TOKEN.finditer(condition):
        if m.group(1) is not None:
            toks.append(("var", m.group(1)) if _VARS.match(m.group(1)) else ("unknown", m.group(1)))
        elif m.group(2) is not None:
            toks.append(("lit", m.group(2)))
        elif m.group(3):
            toks.append(("paren", m.group(3)))
        else:
            w = m.group(4)
            kind = ("op" if w in _OPS else "logic" if w in ("AND", "OR", "NOT") else
                    "var" if _VARS.match(w) else "lit")
            toks.append((kind, w))
    if not any(k == "var" for k, _ in toks) or any(k == "unknown" for k, _ in toks):
        return None
    pos = 0

    def operand() -> str | None:
        nonlocal pos
        if pos >= len(toks):
            return None
        kind, text = toks[pos]
        pos += 1
        if kind == "var":
            return _value(text, version)
        return text if kind == "lit" else None

    def factor() -> bool | None:
        nonlocal pos
        if pos < len(toks) and toks[pos] == ("logic", "NOT"):
            pos += 1
            v = factor()
            return None if v is None else not v
        if pos < len(toks) and toks[pos] == ("paren", "("):
            pos += 1
            v = disjunction()
            if pos >= len(toks) or toks[pos] != ("paren", ")"):
                return None
            pos += 1
            return v
        was_var = pos < len(toks) and toks[pos][0] == "var"
        a = operand()
        if a is None or pos >= len(toks) or toks[pos][0] != "op":
            return None
        op = toks[pos][1]
        pos += 1
        is_var = pos < len(toks) and toks[pos][0] == "var"
        b = operand()
        if b is None or not (was_var or is_var):
            return None  # a comparison of something else: an option of the build
        return _compare(a, op, b)

    def chain(word: str, operand: Callable[[], bool | None]) -> bool | None:
        """`a AND b AND ...` (or OR): None as soon as one operand is unknown."""
        nonlocal pos
        v = operand()
        while v is not None and pos < len(toks) and toks[pos] == ("logic", word):
            pos += 1
            w = operand()
            v = None if w is None else (v and w if word == "AND" else v or w)
        return v

    def conjunction() -> bool | None:
        return chain("AND", factor)

    def disjunction() -> bool | None:
        return chain("OR", conjunction)

    result = disjunction()
    return result if pos == len(toks) else None
