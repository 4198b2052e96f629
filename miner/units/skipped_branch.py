"""Why a kernel only tree-sitter found has no AST: the `#if` branch around it that the parse's preprocessor skipped,
and, where its condition names macros no file of the project defines, that a header from outside the project sets
them (`#if LIB_VERSION_CODE >= LIB_VERSION(2,28,0)` around kernels written against a library's newer API, whose
`lib.h` the parse lacks: the condition is false and the kernels are not compiled)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from miner import lazy_re
from miner.units.closure.arch_branches import chains_open_at

_WORD = lazy_re.compile(rb"[A-Za-z_]\w*")
_NOT_MACROS = frozenset({b"defined", b"__has_include", b"__has_feature", b"true", b"false"})


def skipped_branch(data: bytes, offset: int, project: Iterable[bytes]) -> tuple[str, int, list[str]] | None:
    """(the directive of the innermost `#if` chain open at `offset`, its line, the macro names its conditions name
    that no text of `project` `#define`s), or None where no `#if` is open there."""
    stack = chains_open_at(data, offset)
    if not stack:
        return None
    branches = stack[-1]
    kind, cond = branches[-1]
    # the line of that branch's directive: the last one of its kind before `offset` whose condition is `cond`
    at = -1
    for m in re.finditer(rb"^[ \t]*#[ \t]*" + re.escape(kind) + rb"\b" + re.escape(cond) + rb"$", data[:offset], re.M):
        at = m.start()
    line = data.count(b"\n", 0, at) + 1 if at >= 0 else 0
    names = [w for b_kind, b_cond in branches for w in _WORD.findall(b_cond) if w not in _NOT_MACROS]
    names = list(dict.fromkeys(names))
    texts = list(project)
    undefined = [n.decode() for n in names
                 if not any(re.search(rb"^[ \t]*#[ \t]*define[ \t]+" + re.escape(n) + rb"\b", t, re.M)
                            for t in texts if n in t)]
    shown = " ".join(f"#{k.decode()} {c.decode().strip()}".strip() for k, c in branches)
    return shown, line, undefined
