"""A generic lambda handed to a dispatch function template that calls it with tags:

    template <typename F> void dispatch_bool(bool v, F&& f) { if (v) f(std::true_type{}); else f(std::false_type{}); }
    dispatch_float_types(dt, "op", [&](auto tag) { using T = typename decltype(tag)::type; k<T><<<...>>>(); });

The lambda runs once per call of its callable parameter in the function's body; its `auto` parameters take those
calls' tags (launches.tags reads them, as it does for a lambda held in a local and called in its function)."""

from __future__ import annotations

import clang.cindex as ci

from miner.units.launches.cursors import _key
from miner.units.launches.record import K
from miner.units.launches.state import _State
from miner.units.launches.tags import _WRAPPERS, _Cell, _cell, _expand, _record_parms, call_args


def dispatched_lambda(st: _State, call: ci.Cursor, children: list[ci.Cursor]) -> None:
    """A generic lambda handed to a function template whose body calls it with tags (`dispatch_float_types(dt, [&](
    auto type_tag) {...})`, the body's cases writing `f(type_identity<float>{})`; `dispatch_bool(v, [&](auto large)
    {...})` calling `f(std::true_type{})` and `f(std::false_type{})`): its parameters take the tags of those calls,
    as a lambda held in a local does from the calls in its function."""
    args = children[1:]
    for i, a in enumerate(args):
        lam = a
        while lam.kind in _WRAPPERS and len(kids := list(lam.get_children())) == 1:
            lam = kids[0]
        if lam.kind != K.LAMBDA_EXPR:
            continue
        parms = [p if p.type.get_canonical().kind in (ci.TypeKind.UNEXPOSED, ci.TypeKind.AUTO) else None
                 for p in lam.get_children() if p.kind == K.PARM_DECL]
        if not any(p is not None for p in parms) or any(_key(st.ctx, p) in st.lists for p in parms if p is not None):
            continue
        for fn in _callee_templates(call, children, len(args)):
            fparms = [p for p in fn.get_children() if p.kind == K.PARM_DECL]
            if i >= len(fparms):
                continue
            rows = _calls_of(st, fn, fparms[i], len(parms))
            if rows:
                _record_parms(st, parms, _key(st.ctx, lam), _expand(st, rows))
                break


def _callee_templates(call: ci.Cursor, children: list[ci.Cursor], nargs: int) -> list[ci.Cursor]:
    """The definitions of the function templates a call may name (its instantiation's template; the overload set
    of a dependent call inside another generic lambda), of that many parameters."""
    lib = ci.conf.lib
    ref = call.referenced
    cands: list[ci.Cursor] = []
    if ref is not None:
        cands.append(ref if ref.kind == K.FUNCTION_TEMPLATE else lib.clang_getSpecializedCursorTemplate(ref))
    elif children:
        d = next((x for x in children[0].walk_preorder() if x.kind == K.OVERLOADED_DECL_REF), None)
        if d is not None:
            cands += [lib.clang_getOverloadedDecl(d, j) for j in range(lib.clang_getNumOverloadedDecls(d))]
    out: list[ci.Cursor] = []
    for t in cands:
        d = t.get_definition() if t is not None and t.kind == K.FUNCTION_TEMPLATE else None
        if d is not None and len([p for p in d.get_children() if p.kind == K.PARM_DECL]) == nargs and d not in out:
            out.append(d)
    return out


def _calls_of(st: _State, fn: ci.Cursor, parm: ci.Cursor, arity: int) -> list[list[_Cell]] | None:
    """The tag rows of the calls of `parm` (a callable parameter) in `fn`'s body; None where one passes no tag."""
    rows: list[list[_Cell]] = []
    for args in call_args(st, fn, parm):
        if len(args) != arity:
            return None
        row = [_cell(st, a) for a in args]
        if any(c is None or c[0] == "ref" for c in row):
            return None
        rows.append(row)
    return rows
