"""Where a `#define` is in force: the `#undef` that closes a scoped definition (`#define OP ...` / uses / `#undef
OP`), and the definition in force at one place of a file (closure.per_inclusion: a header included once per
value of a macro defined around its `#include`)."""

from __future__ import annotations

import re

from miner import lazy_re
from miner.frontends.clang_frontend import skipped_in
from miner.units.closure.context import Macro, TUContext

# Every `#define` and `#undef` line of a file, by the name it names (`_undef_of`).
_DEFINE_OR_UNDEF = lazy_re.compile(rb"^[ \t]*#[ \t]*(undef|define)[ \t]+(\w+)", re.M)
_PLAIN_NAME = lazy_re.compile(rb"\w+")


def _undef_of(ctx: TUContext, m: Macro) -> int | None:
    """The offset of the `#undef` of `m`'s name that follows it in its file before any redefinition, else None.

    Read from the file's `#define`/`#undef` lines indexed once per file and TU: asked per candidate definition of
    every macro a closure takes, this compiled two patterns for the name and scanned the file from the definition
    each time (a thirtieth of a ggml unit's analysis). Both patterns match at line starts only, so the index's
    first line at or after the definition answers the same: an `#undef` there, else a redefinition comes first."""
    name = m.name.encode()
    if not _PLAIN_NAME.fullmatch(name):  # (not an ASCII identifier: the index's `\w+` would not hold it)
        return _undef_scanned(ctx, m)
    lines = ctx.memo("define_undef_lines", dict)
    found = lines.get(m.path)
    if found is None:
        found = lines[m.path] = {}
        # (an `#undef` in a branch the preprocessor skipped closes nothing: `#define F_ /* x */` / `#if __cplusplus
        # >= 201703L` / `#undef F_` / `#define F_ [[fallthrough]];` / `#elif defined(__has_attribute)` / `#undef F_`
        # ...: read as the end of the C++17 definition's scope, it left the unit with no definition at all)
        f = ctx.files.get(m.path)
        skipped = skipped_in(ctx.tu, f) if f is not None else []
        for d in _DEFINE_OR_UNDEF.finditer(ctx.read(m.path)):
            if d.group(1) == b"undef" and any(s <= d.start() < e for s, e in skipped):
                continue
            found.setdefault(d.group(2), []).append((d.start(), d.group(1) == b"undef"))
    for at, undef in found.get(name, ()):
        if at >= m.end:
            return at if undef else None
    return None


def _undef_scanned(ctx: TUContext, m: Macro) -> int | None:
    """`_undef_of` by scanning the file for the name's own patterns."""
    data = ctx.read(m.path)
    name = re.escape(m.name.encode())
    undef = re.compile(rb"^[ \t]*#[ \t]*undef[ \t]+" + name + rb"\b", re.M).search(data, m.end)
    if undef is None:
        return None
    again = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+" + name + rb"\b", re.M).search(data, m.end, undef.start())
    return undef.start() if again is None else None


def in_force_at(ctx: TUContext, name: str, path: str, offset: int) -> Macro | None:
    """The definition of `name` that `path` itself writes and has in force at `offset` (its last active `#define`
    above, not `#undef`'d before `offset`), else None."""
    above = [m for m in ctx.active_defs(name) if m.path == path and m.start < offset]
    if not above:
        return None
    u = _undef_of(ctx, above[-1])
    return above[-1] if u is None or u > offset else None
