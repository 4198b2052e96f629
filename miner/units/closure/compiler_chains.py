"""A macro defined inside a chain of branches per compiler (`#if defined(__clang__)` / `#elif defined(__GNUC__)` /
`#elif defined(_MSC_VER)` / `#endif`), copied with every branch's definition of it.

Portable headers decide their feature macros per compiler (a half-precision library's `HALF_ENABLE_CPP11_USER_LITERALS`:
`__has_feature(cxx_user_literals)` under clang, `HALF_GCC_VERSION >= 407` under g++). The parse is clang, so it took
the clang branch; nvcc's passes are g++ (host) and EDG in g++ mode (device), which take the g++ branch. A unit that
copied the clang branch alone (under its `#if defined(__clang__)`) left the macro undefined for nvcc, and the class
whose friend declaration it enables failed ("member ... is inaccessible"). The unit gets the chain projected on the
macro: every branch directive, every nested `#if` that defines it, its own definitions, nothing else; and the
definitions of the file's macros those conditions read (`HALF_GCC_VERSION`), undefined again after it where the
file undefines them.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from miner import lazy_re
from miner.units.closure.arch_branches import _only_defines_of

_LINE_DIRECTIVE = lazy_re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif|define|undef)\b[ \t]*(\w*)")
# The compilers' identities: the parse answers these as clang does, nvcc's passes as g++ (EDG in g++ mode).
_IDENTITY = lazy_re.compile(rb"\b(?:__clang__|__GNUC__|__GNUG__|_MSC_VER|__INTEL_COMPILER|__ICC|__ICL|__NVCOMPILER|"
                       rb"__PGI|__llvm__)\b")
_WORD = lazy_re.compile(rb"[A-Za-z_]\w*")
_COMMENT = lazy_re.compile(rb"/\*.*?\*/|//[^\n]*", re.S)


@dataclass(frozen=True)
class _Chain:
    start: int  # the `#if` line's first byte
    end: int  # just after the `#endif` line
    identity: bool  # a branch condition tests which compiler this is


def _lines(data: bytes, start: int = 0, end: int | None = None) -> list[tuple[int, bytes]]:
    """(offset, text) of each logical line of data[start:end], continued lines joined (newlines kept)."""
    end = len(data) if end is None else end
    out: list[tuple[int, bytes]] = []
    at = start
    while at < end:
        nl = data.find(b"\n", at, end)
        stop = end if nl < 0 else nl + 1
        first = at
        while data[first:stop].rstrip(b"\r\n").endswith(b"\\") and stop < end:
            nl = data.find(b"\n", stop, end)
            stop = end if nl < 0 else nl + 1
        out.append((first, data[first:stop]))
        at = stop
    return out


@functools.lru_cache(maxsize=32)
def _chains(data: bytes) -> tuple[_Chain, ...]:
    out: list[_Chain] = []
    stack: list[tuple[int, bool]] = []
    for at, line in _lines(data):
        m = _LINE_DIRECTIVE.match(line)
        if m is None:
            continue
        kind = m.group(1)
        if kind in (b"if", b"ifdef", b"ifndef"):
            stack.append((at, _IDENTITY.search(_COMMENT.sub(b" ", line)) is not None))
        elif kind == b"elif" and stack:
            stack[-1] = (stack[-1][0], stack[-1][1] or _IDENTITY.search(_COMMENT.sub(b" ", line)) is not None)
        elif kind == b"endif" and stack:
            start, identity = stack.pop()
            out.append(_Chain(start, at + len(line), identity))
    return tuple(out)


def identity_projection(data: bytes, offset: int, name: str) -> str | None:
    """The text that defines macro `name` (defined at `offset` of the file `data`) as every compiler's branch
    does, when the definition sits inside a chain of branches per compiler; None otherwise, or where a condition
    kept reads a macro the chain itself defines (dropping those lines would change it)."""
    around = [c for c in _chains(data) if c.start < offset < c.end]
    inner = [c for c in around if c.identity]
    if not inner:
        return None
    chain = max(inner, key=lambda c: c.start)
    kept, dropped_names = _project(data, chain, name.encode())
    if kept is None:
        return None
    read = {w for at, line in _lines(kept) if (m := _LINE_DIRECTIVE.match(line)) and m.group(1) in (
        b"if", b"ifdef", b"ifndef", b"elif") for w in _WORD.findall(_COMMENT.sub(b" ", line[m.start(1):]))}
    if read & dropped_names:
        return None
    before, after = [], []
    for w in sorted(read - {b"defined", name.encode()}):
        text = _definition_before(data, chain.start, w)
        if text is not None:
            before.append(text)
            if re.search(rb"^[ \t]*#[ \t]*undef[ \t]+" + w + rb"\b", data[chain.end:], re.M):
                after.append(f"#undef {w.decode()}\n")
    body = kept.decode("utf-8", "replace")
    return "".join(before) + body + ("" if body.endswith("\n") else "\n") + "".join(after)


def _project(data: bytes, chain: _Chain, name: bytes) -> tuple[bytes | None, set[bytes]]:
    """The chain's directive lines, the nested `#if` blocks that define `name` and its own `#define`/`#undef`
    lines; and the names the dropped `#define`s define."""
    blocks: list[tuple[list[bytes], list[bool]]] = []  # per open #if: its lines, whether it defines `name`
    dropped: set[bytes] = set()
    result: bytes | None = None
    for _at, line in _lines(data, chain.start, chain.end):
        m = _LINE_DIRECTIVE.match(line)
        kind = m.group(1) if m else None
        if kind in (b"if", b"ifdef", b"ifndef"):
            blocks.append(([line], [False]))
        elif kind in (b"elif", b"else") and blocks:
            blocks[-1][0].append(line)
        elif kind == b"endif" and blocks:
            lines, defines = blocks.pop()
            lines.append(line)
            if not blocks:
                result = b"".join(lines) if defines[0] else None
            elif defines[0]:
                blocks[-1][0].extend(lines)
                blocks[-1][1][0] = True
        elif kind in (b"define", b"undef") and blocks:
            if m.group(2) == name:
                blocks[-1][0].append(line)
                blocks[-1][1][0] = True
            elif kind == b"define":
                dropped.add(m.group(2))
    return result, dropped


def _definition_before(data: bytes, before: int, word: bytes) -> str | None:
    """The file's last definition of macro `word` ahead of `before`, with its chain where the chain holds nothing
    but definitions of it (`#if defined(__INTEL_COMPILER)` / `#define V __INTEL_COMPILER` / `#else` / `#define V
    0` / `#endif`); None where the file defines it nowhere ahead (a compiler's or another file's macro)."""
    found = None
    for m in re.finditer(rb"^[ \t]*#[ \t]*define[ \t]+" + re.escape(word) + rb"\b", data[:before], re.M):
        found = m.start()
    if found is None:
        return None
    around = [c for c in _chains(data) if c.start < found < c.end and c.end <= before]
    if around:
        chain = max(around, key=lambda c: c.start)
        text = _only_defines_of(data[chain.start:chain.end].rstrip(b"\n"), word.decode())
        if text is not None:
            return text
    line = next(text for at, text in _lines(data, found, min(len(data), found + 4000)) if at == found)
    return line.decode("utf-8", "replace") if line.endswith(b"\n") else line.decode("utf-8", "replace") + "\n"
