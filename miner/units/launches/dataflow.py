"""Argument data flow: which kernel a launch's callee expression names when it goes through
variables, assignments and struct members."""

from __future__ import annotations

import ctypes
from typing import Any

import clang.cindex as ci

from miner.units.launches.cursors import _key, _primary, _template_args, _tparams
from miner.units.launches.record import _FUNCS, K
from miner.units.launches.state import _kernel_key, _kernel_refs, _State


def _through_variables(st: _State, fn: ci.Cursor, expr: ci.Cursor) -> list[tuple[ci.Cursor, ci.Cursor, dict]]:
    """Kernels that reach a launch through a variable: a function pointer or (void*) table initialized
    with them, a variable assigned from them, or assigned the result of a repo function whose body
    names them (`spec = choose_kernel<T>(p); cudaLaunchKernel(spec.kernel, ...)`). The third item maps
    that function's template parameters to the call's arguments."""
    ctx = st.ctx
    member = next((d.spelling for d in expr.walk_preorder() if d.kind == K.MEMBER_REF_EXPR), None)
    out: list[tuple[ci.Cursor, ci.Cursor, dict]] = []
    for d in expr.walk_preorder():
        v = d.referenced if d.kind == K.DECL_REF_EXPR else None
        if v is None or v.kind not in (K.VAR_DECL, K.PARM_DECL):
            continue
        sources = [v.get_definition() or v, *_assigned(st, fn, v)]  # and assignments to it in this function
        for src in sources:
            out += [(r, t, {}) for r, t in _kernel_refs(st, src)]
            for call in src.walk_preorder():
                if call.kind != K.CALL_EXPR or call.referenced is None or call.referenced.kind not in _FUNCS:
                    continue
                callee = call.referenced
                prim = _primary(callee)
                body = prim.get_definition() or prim
                bkey = _key(ctx, body)
                if bkey is None or bkey[0] not in ctx.inputs or bkey in st.kernels or not body.is_definition():
                    continue
                mapping = dict(zip([p.spelling for p in _tparams(body)], _template_args(callee) or [], strict=False))
                if bkey not in st.bodies:
                    st.bodies[bkey] = (_kernel_refs(st, body), _member_stores(body))
                refs, stores = st.bodies[bkey]
                if member:
                    picked = [rt for rt in refs if stores.get(rt[0].hash) in (member, None)]
                    refs = picked or refs
                out += [(r, t, mapping) for r, t in refs]
        if out:
            break
    return out


def _assigned(st: _State, fn: ci.Cursor, v: ci.Cursor) -> list[ci.Cursor]:
    """Right-hand sides of the assignments in `fn` whose left-hand side names `v`, in source order.
    The function's assignments are indexed once per function: walking the whole function again for every
    launch through a variable was quadratic, and a host function that nested dispatch macros expand into
    thousands of launches (each `kernel<<<...>>>` with `kernel` a local) did not finish in an hour."""
    index = st.assignments.get(fn.hash)
    if index is None or index[0] != fn:
        by_var: dict[int, list[tuple[ci.Cursor, ci.Cursor]]] = {}
        for a in fn.walk_preorder():
            kids = _assignment(a)
            if not kids:
                continue
            named: list[ci.Cursor] = []
            for k in kids[0].walk_preorder():
                r = k.referenced if k.kind == K.DECL_REF_EXPR else None
                if r is not None and not any(r == x for x in named):
                    named.append(r)
            for r in named:
                by_var.setdefault(r.hash, []).append((r, kids[1]))
        index = (fn, by_var)
        st.assignments[fn.hash] = index
    return [rhs for r, rhs in index[1].get(v.hash, ()) if r == v]


_BINOP: Any = None


def _assignment(c: ci.Cursor) -> list[ci.Cursor] | None:
    """[lhs, rhs] of `lhs = rhs` (built-in or a class's operator=), else None."""
    global _BINOP
    if c.kind == K.CALL_EXPR and c.spelling == "operator=":
        kids = list(c.get_children())
        return [kids[0], kids[-1]] if len(kids) >= 2 else None
    if c.kind != K.BINARY_OPERATOR:
        return None
    if _BINOP is None:
        try:
            fn = ci.conf.lib.clang_getCursorBinaryOperatorKind
            fn.argtypes, fn.restype = [ci.Cursor], ctypes.c_int
            sp = ci.conf.lib.clang_getBinaryOperatorKindSpelling
            sp.argtypes, sp.restype, sp.errcheck = [ctypes.c_int], ci._CXString, ci._CXString.from_result
            _BINOP = (fn, sp)
        except AttributeError:  # libclang older than 17: no operator kinds
            _BINOP = False
    if not _BINOP:
        return None
    if _BINOP[1](_BINOP[0](c)) != "=":
        return None
    kids = list(c.get_children())
    return kids if len(kids) == 2 else None


def _member_stores(body: ci.Cursor) -> dict[int, str]:
    """Kernel-reference cursor hash -> the struct field it is stored into (`s.exec = (void*)k<...>`)."""
    out: dict[int, str] = {}
    for a in body.walk_preorder():
        kids = _assignment(a)
        if kids and kids[0].kind == K.MEMBER_REF_EXPR:
            for d in kids[1].walk_preorder():
                out[d.hash] = kids[0].spelling
    return out


def _targets_of_launch(st: _State, direct: list[tuple[ci.Cursor, ci.Cursor]], fn: ci.Cursor, expr: ci.Cursor
                       ) -> list[tuple[ci.Cursor | None, ci.Cursor, bool]]:
    """(reference, kernel, arguments-belong-to-this-launch) for each kernel a launch expression reaches.
    Through a variable, a kernel reached by several references gets one launch record without template
    arguments: those references fix the instantiations (kind `reference`), not the launch."""
    for r, _t in direct:
        st.consumed.add(r.hash)
    if direct:
        return [(r, t, True) for r, t in direct]
    groups: dict[tuple[str, int], list[tuple[ci.Cursor, ci.Cursor, dict]]] = {}
    for r, t, mapping in _through_variables(st, fn, expr):
        groups.setdefault(_kernel_key(st, t), []).append((r, t, mapping))
    out: list[tuple[ci.Cursor | None, ci.Cursor, bool]] = []
    for lst in groups.values():
        r, t, mapping = lst[0]
        own = len(lst) == 1 and not mapping
        if own:
            st.consumed.add(r.hash)
        out.append((r, t, own))
    return out
