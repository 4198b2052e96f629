"""Device operators written for a type: part of the type's interface, so they come with it. A call of one may be
written nowhere the parse can see it (`cub::BlockReduce<pair_t, N>(tmp).Sum(v)` adds with the operator inside the
library, which the parse does not read), or the parse may have resolved it to a built-in (`a + b` on an alias of a
library type the parse could not read became `int`)."""

from __future__ import annotations

import re

import clang.cindex as ci

from miner import lazy_re
from miner.units.closure.context import _STRING_OR_COMMENT, K, Piece, TUContext
from miner.units.closure.dropped import dropped_pieces

_DEVICE = lazy_re.compile(r"\b__device__\b")


def operators_of(ctx: TUContext, type_name: str) -> list[tuple[Piece, ci.Cursor | None]]:
    """The namespace-scope `__device__` operator overloads whose parameter list names `type_name` (pieces with their
    cursor; a dropped declaration's with None)."""
    return ctx.memo("_device_operators", lambda: _index(ctx)).get(type_name, [])


def _index(ctx: TUContext) -> dict[str, list[tuple[Piece, ci.Cursor | None]]]:
    out: dict[str, list[tuple[Piece, ci.Cursor | None]]] = {}
    found: list[tuple[Piece, ci.Cursor | None]] = [
        (p, c) for (_ns, name), lst in ctx.by_name.items() if name.startswith("operator") for p, c in lst]
    found += [(p, None) for (_ns, name), lst in dropped_pieces(ctx).items() if name.startswith("operator") for p in lst]
    for p, c in found:
        if p.kind not in ("FUNCTION_DECL", "FUNCTION_TEMPLATE"):
            continue
        head = _STRING_OR_COMMENT.sub(" ", ctx.read(p.path)[p.start:p.end].decode("latin-1")).split("{", 1)[0]
        # (`HOST_DEVICE_INLINE double3 operator+(...)`: the attribute comes from a project macro)
        device = _DEVICE.search(head) or (c is not None and any(ch.kind == K.CUDADEVICE_ATTR
                                                                for ch in c.get_children()))
        if not device or "(" not in head:
            continue
        params = head.split("(", 1)[1]
        if c is not None:
            # (an operator a macro writes, `SV_OPERATOR(<)`: its text names no parameter; its cursor's do)
            params += " ".join(ch.type.spelling for ch in c.get_children() if ch.kind == K.PARM_DECL)
        for word in dict.fromkeys(re.findall(r"[A-Za-z_]\w*", params)):
            out.setdefault(word, []).append((p, c))
    return out
