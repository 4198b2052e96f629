"""Names a unit needs for nvcc's host pass: those written only in the branch of an `#if __CUDA_ARCH__` test
that the parse (with `__CUDA_ARCH__=900`) skipped.

nvcc compiles every `__device__` function twice, and in the host pass `__CUDA_ARCH__` is undefined: the
`#else` of `#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800` (a bf16 fallback `bf16hmul(a, b)` beside
`__hmul(a, b)`) must find its names there too, though the parse, and with it the AST closure, saw only the
other branch. The identifiers of such skipped branches inside a closure piece are looked up like names of
a function whose expressions the parse dropped, with the bodies of the project macros they write.
"""

from __future__ import annotations

import re

import clang.cindex as ci

from miner.units.closure.context import _IDENT, _STRING_OR_COMMENT, TUContext, _skipped_ranges

_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$", re.M)


def _arch_test(data: bytes, start: int) -> bool:
    """Whether the skipped block at `start` is a branch of an `#if` chain that tests `__CUDA_ARCH__` (its
    own directive, or the `#if`/`#elif`s before it in the same chain)."""
    depth = 0
    for m in reversed(list(_DIRECTIVE.finditer(data, 0, min(len(data), start + 400)))):
        if m.start() > start + 2:
            continue  # the skipped range begins at its directive (or just before it)
        kind, cond = m.group(1), m.group(2)
        if kind == b"endif" and m.start() < start:
            depth += 1
            continue
        if depth:
            if kind in (b"if", b"ifdef", b"ifndef"):
                depth -= 1
            continue
        if b"__CUDA_ARCH__" in cond:
            return True
        if kind in (b"if", b"ifdef", b"ifndef"):
            return False  # the chain's opening directive, without the test
    return False


def host_pass_names(ctx: TUContext, cur: ci.Cursor) -> list[str]:
    """Identifiers in the skipped `__CUDA_ARCH__` branches inside `cur`'s text, comments and strings left out."""
    e = cur.extent
    if e.start.file is None:
        return []
    path = ctx.norm(e.start.file.name)
    cache = ctx.__dict__.setdefault("_skipped_of", {})
    if path not in cache:
        cache[path] = _skipped_ranges(ctx.tu, ctx.files.get(path))
    inside = [(s, t) for s, t in cache[path] if e.start.offset <= s and t <= e.end.offset]
    if not inside:
        return []
    data = ctx.read(path)
    names: list[str] = []
    for s, t in inside:
        if _arch_test(data, s):
            text = _STRING_OR_COMMENT.sub(" ", data[s:t].decode("utf-8", "replace"))
            names += [n for n in _IDENT.findall(text) if n not in ("if", "ifdef", "ifndef", "elif", "else", "endif",
                                                                   "defined", "__CUDA_ARCH__")]
    # A project macro written there (`TRACE();` on the host side) expands in the host pass: what its body names
    # (`ns::trace_domain`) is needed too, though no cursor of the parse points at it.
    todo, seen = list(dict.fromkeys(names)), set(names)
    while todo:
        for m in ctx.active_defs(todo.pop()):
            for n in _IDENT.findall(_STRING_OR_COMMENT.sub(" ", m.body)):
                if n not in seen:
                    seen.add(n)
                    names.append(n)
                    todo.append(n)
    return list(dict.fromkeys(names))


_DEFINE_OF = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)")


def arch_chain(data: bytes, offset: int, name: str) -> str | None:
    """The whole `#ifdef __CUDA_ARCH__` / `#define NAME a` / `#else` / `#define NAME b` / `#endif` chain around
    the definition of macro NAME at `offset`, when its branches hold nothing but definitions of NAME: the parse
    (with `__CUDA_ARCH__`) chose one, but nvcc's host pass takes the other, so a unit that copied only the
    device one (`constexpr int arch = __CUDA_ARCH__;`) failed there with `__CUDA_ARCH__` undefined. None when
    the definition sits in no such chain."""
    stack: list[tuple[int, bool]] = []  # open #if chains: (start of the #if line, tests __CUDA_ARCH__)
    found: tuple[int, bool, int] | None = None  # the innermost chain around `offset`, and its depth
    for m in _DIRECTIVE.finditer(data):
        if found is None and m.start() > offset and stack:
            found = (*stack[-1], len(stack))
        kind = m.group(1)
        if kind in (b"if", b"ifdef", b"ifndef"):
            stack.append((m.start(), b"__CUDA_ARCH__" in m.group(2)))
        elif kind in (b"elif", b"else") and stack and b"__CUDA_ARCH__" in m.group(2):
            stack[-1] = (stack[-1][0], True)
        elif kind == b"endif" and stack:
            start, arch = stack.pop()
            if found is not None and len(stack) + 1 == found[2]:
                if not (arch or found[1]) or start != found[0]:
                    return None
                end = data.find(b"\n", m.end())
                chain = data[start:len(data) if end < 0 else end]
                return _only_defines_of(chain, name)
        if found is None and m.start() > offset:
            return None
    return None


def _only_defines_of(chain: bytes, name: str) -> str | None:
    """The chain's text when every line outside its own directives defines `name` (continuations, comments and
    blank lines aside), else None."""
    lines = chain.split(b"\n")
    depth, cont = 0, False
    for ln in lines:
        if cont:
            cont = ln.rstrip().endswith(b"\\")
            continue
        d = _DIRECTIVE.match(ln)
        if d is not None:
            depth += {b"if": 1, b"ifdef": 1, b"ifndef": 1, b"endif": -1}.get(d.group(1), 0)
            if depth > 1:
                return None  # a nested #if: more than this macro's choice
            continue
        m = _DEFINE_OF.match(ln)
        if m is not None:
            if m.group(1).decode() != name:
                return None
            cont = ln.rstrip().endswith(b"\\")
            continue
        if ln.strip() and not ln.strip().startswith((b"//", b"/*", b"*")):
            return None
    return chain.decode("utf-8", "replace") + "\n"
