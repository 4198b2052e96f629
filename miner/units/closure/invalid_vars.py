"""Namespace-scope variables whose declaration the parse found invalid: their type comes from a library or a
toolkit feature the parse stub does not declare (`texture<float, 2, cudaReadModeElementType> lut;`, a legacy
texture reference that CUDA 12 removed). clang keeps the declaration (as an `int`) but no expression that names it
(`tex2D(lut, u, v)` has no DECL_REF_EXPR child, and no error is reported there), so no reference reaches it through
the AST. The unit needs it as the source wrote it: a toolkit that still declares the type builds the unit, and one
that does not stops on the declaration itself, where the build states why (builder.diagnostics)."""

from __future__ import annotations

import clang.cindex as ci

from miner.units.closure.context import Piece, TUContext


def invalid_variables(ctx: TUContext) -> dict[tuple[tuple[str, ...], str], tuple[Piece, ci.Cursor]]:
    """(namespaces, name) -> the invalid variable's piece, built once per TU."""
    return ctx.memo("_invalid_variables", lambda: _index(ctx))


def _index(ctx: TUContext) -> dict[tuple[tuple[str, ...], str], tuple[Piece, ci.Cursor]]:
    is_invalid = ci.conf.lib.clang_isInvalidDeclaration
    out: dict[tuple[tuple[str, ...], str], tuple[Piece, ci.Cursor]] = {}
    for key, lst in ctx.by_name.items():
        for p, c in lst:
            if c.kind == ci.CursorKind.VAR_DECL and ctx.has_errors(c) and is_invalid(c):
                out.setdefault(key, (p, c))
    return out
