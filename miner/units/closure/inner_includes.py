"""`#include`s inside a piece's text: a list header included in the middle of a declaration, once per use with the
list's macro defined for that place (`struct Params {` / `#define FIELD(name) float name;` / `#include
"kernel/fields.h"` / `#undef FIELD` / `};`, the "X-macro" pattern). The file it names declares nothing of its own
that the closure takes; the unit has only the piece, and the directive is spelled relative to the project's include
root (an ancestor of the mined folder the build gives with `-I`), which the unit's build does not have: nvcc stopped
at it ("No such file or directory"). The included text takes the directive's place, as the preprocessor does."""

from __future__ import annotations

import os

from miner.source.include_graph import INCLUDE, include_tail
from miner.units.closure.context import TUContext

_MAX_DEPTH = 8  # a list header that includes another list: a few levels; a cycle stops here


def inline_includes(ctx: TUContext, path: str, start: int, end: int, text: str, taken: frozenset[str]) -> str:
    """`text` (the piece at `path`[start:end], as rendered) with each `#include` directive the parse resolved to a
    project file replaced by that file's text, its own such directives replaced in turn. Not a file included once
    that the closure takes pieces of (`taken`: its declarations are in the unit already; a list header included
    at the top level for its declarations and again inside a struct for its members is inlined in the struct),
    nor one the parse did not enter (an include guard skipped it) nor one outside the project's inputs: those
    directives stay as they are."""
    return _inline(ctx, path, start, end, text, taken, ())


def _inline(ctx: TUContext, path: str, start: int, end: int, text: str, taken: frozenset[str],
            stack: tuple[str, ...]) -> str:
    data = ctx.read(path)
    if b"include" not in data[start:end] or len(stack) >= _MAX_DEPTH:
        return text
    out, pos = [], 0
    for m in INCLUDE.finditer(data, start, end):
        line_end = data.find(b"\n", m.end())
        line_end = len(data) if line_end < 0 else line_end
        target = _resolved(ctx, path, m.start(), line_end)
        # a file included once whose pieces the closure takes: its declarations are in the unit already
        had = target in taken and len(ctx.included_at.get(target, ())) < 2
        seen = _entered_elsewhere(ctx, m.group(2).decode("utf-8", "replace")) if target is None else \
            target if had else None
        # Inside an inlined list header, a header the unit has the declarations of already (its include guard made
        # it a no-op here, or this is the one place it was entered and the closure took its pieces: `#include
        # "kernel/types.h"` atop the list): the directive goes. Otherwise a project file the parse entered here
        # takes the directive's place.
        drop = bool(stack and seen)
        if not drop and (target is None or target in stack or target not in ctx.inputs or had):
            continue
        directive = data[m.start():line_end].decode("utf-8", "replace")
        at = text.find(directive, pos)
        if at < 0:  # (a cut took the directive's line)
            continue
        if drop:
            out += [text[pos:at], f"/* kernel-miner: {os.path.basename(seen or '')} included before */"]
        else:
            body = ctx.read(target).decode("utf-8", "replace")
            body = _inline(ctx, target, 0, len(ctx.read(target)), body, taken, (*stack, path))
            out += [text[pos:at], f"/* kernel-miner: {m.group(2).decode('utf-8', 'replace')} */\n",
                    body.rstrip("\n")]
        pos = at + len(directive)
    return "".join(out) + text[pos:] if out else text


def _resolved(ctx: TUContext, path: str, line_start: int, line_end: int) -> str | None:
    """The file the parse entered through the `#include` at `path`[line_start:line_end], or None."""
    for target, sites in ctx.included_at.items():
        if any(src == path and line_start <= off <= line_end for src, off in sites):
            return target
    return None


def _entered_elsewhere(ctx: TUContext, name: str) -> str | None:
    """A project file of the translation unit that answers `#include "name"` by its path tail, or None."""
    tail = include_tail(name)
    return next((p for p in ctx.included_at if p.endswith(tail) and p in ctx.inputs), None)
