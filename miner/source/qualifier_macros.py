"""Kernel qualifier macros that nothing the miner reads defines.

A header-only library may write its kernels `GLOBALQUALIFIER void memset(...)`, with the macro (`#define
GLOBALQUALIFIER __global__`) in a helper library its CMake downloads: no file of the tree defines it, so the text
holds no `__global__`, the files were no kernel files, and the parse saw an unknown word before `void`. What the
word stands for is told by the project's own launches: a function written `M void f(` that some file launches
with chevrons (`f<<<...>>>`, `ns::f<T><<<...>>>`) is a kernel, so M is `__global__` where most functions it
writes are launched so. Such a macro becomes a define
of every parse (and so of the units, which keep their parse's defines).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)
# `M void f(` at a declaration's start (after `;`, a brace, `template <...>` or a line start), other words between.
_QUALIFIED = re.compile(rb"(?:^|[;{}>])[ \t\r\n]*([A-Z_][A-Z0-9_]{2,})\s+"
                        rb"(?:(?:static|inline|[A-Z_][A-Z0-9_]*)\s+)*void\s+(\w+)\s*\(", re.M)
# A chevron launch of `f`, qualified and with template arguments possibly over lines.
_LAUNCHED = re.compile(rb"\b(\w+)\s*(?:<[^;{}()<>]*(?:<[^;{}()<>]*>[^;{}()<>]*)*>\s*)?<<<")


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
