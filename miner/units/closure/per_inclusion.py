"""A header written to be included once per value of a macro (`#define SCALAR float` / `#include "ops-inl.h"` /
`#undef SCALAR` / `#define SCALAR double` / `#include "ops-inl.h"` ..., the header without an include guard): each
inclusion declares other functions (the operators of one scalar type). The closure indexes one text per place,
so a piece of such a header is written once per inclusion, each copy under the definitions in force at its
`#include`, which the copy `#undef`s after itself as the source does."""

from __future__ import annotations

from miner.units.closure.context import _IDENT, _STRING_OR_COMMENT, Macro, Piece, TUContext
from miner.units.closure.macro_scope import in_force_at


def per_inclusion(ctx: TUContext, p: Piece, text: str) -> str:
    """`text` (piece `p`'s) once per inclusion of its file that the parse saw declare it, each copy between the
    `#define`s of the macros whose definition differs between those inclusions and their `#undef`s; `text` as
    it is for a piece declared once, or whose macros are the same at every inclusion."""
    copies = ctx.repeated.get((p.path, p.start), 1)
    sites = ctx.included_at.get(p.path, [])
    # (identical declarations at one place that are not one per inclusion, two overloads one macro invocation
    # writes: left as they are)
    if copies < 2 or len(sites) != copies:
        return text
    names = [t for t in dict.fromkeys(_IDENT.findall(_STRING_OR_COMMENT.sub(" ", text))) if ctx.active_macro(t)]
    at_sites = [{n: in_force_at(ctx, n, path, offset) for n in names} for path, offset in sites]
    varying = [n for n in names if len({id(s[n]) for s in at_sites}) > 1]
    if not varying:
        return text
    out: list[str] = []
    seen: set[tuple[int, ...]] = set()
    for s in at_sites:
        key = tuple(id(s[n]) for n in varying)
        if key in seen:  # (two inclusions under the same definitions declare the same: one copy)
            continue
        seen.add(key)
        defs = [s[n] for n in varying]
        if not out:  # (a definition the unit writes before this text: the first copy's stands in its place)
            out += [f"#undef {n}\n" for n in varying]
        out += [_definition(ctx, m) for m in defs if m is not None]
        out.append(text.rstrip("\n") + "\n")
        out += [f"#undef {n}\n" for n in varying]
    return "".join(out)


def _definition(ctx: TUContext, m: Macro) -> str:
    """The `#define` line(s) of `m` as the source writes them."""
    return ctx.read(m.path)[m.start:m.end].decode("utf-8", "replace").rstrip("\n") + "\n"
