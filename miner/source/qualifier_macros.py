"""Kernel qualifier macros that nothing the miner reads defines.

A header-only library may write its kernels `GLOBALQUALIFIER void memset(...)`, with the macro (`#define
GLOBALQUALIFIER __global__`) in a helper library its CMake downloads: no file of the tree defines it, so the text
holds no `__global__`, the files were no kernel files, and the parse saw an unknown word before `void`. What the
word stands for is told by the project's own launches: a function written `M void f(` that some file launches
with chevrons (`f<<<...>>>`, `ns::f<T><<<...>>>`) is a kernel, so M is `__global__` where most functions it
writes are launched so. Such a macro becomes a define
of every parse (and so of the units, which keep their parse's defines).

A source written once for CUDA and OpenCL defines the macro itself, per framework (`#ifdef CUDA` / `#define
KW_GLOBAL_KERNEL __global__` / `#elif defined(FW_OPENCL)` / `#define KW_GLOBAL_KERNEL __kernel`), and its build
passes the framework's switch (`add_definitions(-DCUDA)`, a kernel script's `nvcc -DCUDA`). The text holds no
`__global__` but that `#define`, so its kernel files were no kernel files either ("no kernels found"), and a parse
without the switch would see the OpenCL side or neither. `defined_qualifiers` finds such macros: a file that
writes `M void f(` with one of them is a kernel file, and the switch whose branch defines M as `__global__` (a
plain name no source `#define`s, not the compiler's `__NAME__`) is defined for every parse: it selects the CUDA
side of the code, which is the side a CUDA miner mines.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from miner import lazy_re

_DEFINE = lazy_re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)
# `M void f(` at a declaration's start (after `;`, a brace, `template <...>` or a line start), other words between.
_QUALIFIED = lazy_re.compile(rb"(?:^|[;{}>])[ \t\r\n]*([A-Z_][A-Z0-9_]{2,})\s+"
                        rb"(?:(?:static|inline|[A-Z_][A-Z0-9_]*)\s+)*void\s+(\w+)\s*\(", re.M)
# A chevron launch of `f`, qualified and with template arguments possibly over lines.
_LAUNCHED = lazy_re.compile(rb"\b(\w+)\s*(?:<[^;{}()<>]*(?:<[^;{}()<>]*>[^;{}()<>]*)*>\s*)?<<<")


def kernel_qualifiers(texts: Iterable[bytes]) -> dict[str, str]:
    """{macro: "__global__"} for each macro no text defines that stands where `__global__` goes before a function
    the texts launch with chevrons."""
    texts = list(texts)
    defined: set[bytes] = set()
    launched: set[bytes] = set()
    written: dict[bytes, set[bytes]] = {}
    for data in texts:
        if b"#" in data:
            defined.update(_DEFINE.findall(data))
        if b"<<<" in data:
            launched.update(_LAUNCHED.findall(data))
        for m in _QUALIFIED.finditer(data):
            written.setdefault(m.group(1), set()).add(m.group(2))
    # Most of the names M writes must be launched: a host or device function may share a kernel's name (a
    # table's `insert` member beside the `insert` kernel), a kernel may be launched from outside the tree.
    return {name.decode(): "__global__" for name, fns in sorted(written.items())
            if name not in defined and 2 * len(fns & launched) > len(fns)}


def uses(data: bytes, macros: dict[str, str]) -> bool:
    """Whether `data` writes a function with one of the kernel qualifier `macros`."""
    return any(m.group(1).decode() in macros for m in _QUALIFIED.finditer(data)) if macros else False


# `#define M __global__` alone on its line (a trailing comment allowed).
_DEFINES_GLOBAL = lazy_re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+__global__[ \t]*(?://[^\n]*|/\*[^\n]*)?$",
                             re.M)
_DIRECTIVE = lazy_re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b([^\n]*)", re.M)
# The test of a branch that one defined name turns on: `#ifdef X`, `#if defined(X)`, `#elif defined X`.
_ON_WHEN_DEFINED = lazy_re.compile(rb"(?:ifdef[ \t]+([A-Za-z_]\w*)|(?:el)?if[ \t]+\(?\s*defined\s*\(?\s*([A-Za-z_]\w*)"
                              rb"\s*\)?\s*\)?)[ \t]*(?://.*|/\*.*)?$")


def _branch_test(data: bytes, at: int) -> bytes | None:
    """The directive (`ifdef CUDA`, `elif defined(X)`) of the innermost conditional branch around offset `at`, or
    None at the top level."""
    stack: list[bytes] = []
    for m in _DIRECTIVE.finditer(data, 0, at):
        kind = m.group(1)
        if kind in (b"if", b"ifdef", b"ifndef"):
            stack.append(kind + m.group(2).rstrip())
        elif kind == b"endif":
            if stack:
                stack.pop()
        elif stack:  # elif / else: the branch in force is now this one
            stack[-1] = kind + m.group(2).rstrip()
    return stack[-1] if stack else None


def defined_qualifiers(texts: Iterable[bytes]) -> dict[str, str | None]:
    """{macro: switch} for each macro some text `#define`s as `__global__` and some text writes before a function
    (`M void f(`): the switch is the name whose definition turns on the branch holding that `#define` (`CUDA` of
    `#ifdef CUDA`), None where no switch is needed (an unconditional define, a compiler-defined guard such as
    `__CUDACC__`) or none can be told (a `#define` under another kind of test, or a switch the project defines)."""
    texts = list(texts)
    defined: set[bytes] = set()
    written: set[bytes] = set()
    found: dict[bytes, bytes | None] = {}
    for data in texts:
        if b"#" in data:
            defined.update(_DEFINE.findall(data))
        written.update(m.group(1) for m in _QUALIFIED.finditer(data))
        if b"__global__" not in data:
            continue
        for m in _DEFINES_GLOBAL.finditer(data):
            test = _branch_test(data, m.start())
            on = _ON_WHEN_DEFINED.fullmatch(test) if test is not None else None
            switch = (on.group(1) or on.group(2)) if on else None
            if switch is not None and (switch.startswith(b"__") or switch in defined):
                switch = None
            if m.group(1) not in found or found[m.group(1)] is None:
                found[m.group(1)] = switch
    return {name.decode(): (sw.decode() if sw else None) for name, sw in sorted(found.items()) if name in written}
