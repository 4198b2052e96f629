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
