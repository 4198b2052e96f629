"""The walk over one translation unit: every function body visited once, launch sites, references
and host calls recorded, then host-template chains propagated and each launch finished (`find`)."""

from __future__ import annotations

from typing import Any

import clang.cindex as ci

from miner.units.closure import TUContext
from miner.units.launches import class_scope, instantiated, member_types, range_dispatch, used_methods, value_spelling
from miner.units.launches.chosen import note_pointer
from miner.units.launches.cursors import _Resolver
from miner.units.launches.dispatch_functions import dispatched_lambda
from miner.units.launches.finish import _finish
from miner.units.launches.forwarding import forward_helpers, note_forward
from miner.units.launches.functors import deduced_call
from miner.units.launches.helpers import finish_helpers, note_call
from miner.units.launches.host_chain import _class_use, _host_call, _lambda_lists, _named_instance, _propagate
from miner.units.launches.record import _API, _TYPED_USES, K, Launch
from miner.units.launches.recovered import recover_dropped, recover_dropped_calls, recover_dropped_definitions
from miner.units.launches.sites import _api_launch, _chevron
from miner.units.launches.state import LAMBDA, _State, subtree_flags
from miner.units.launches.stored import (
    finish_constructions,
    note_construction,
    note_ctor_stores,
    note_store,
    stored_helpers,
)
from miner.units.launches.tables import (
    _class_instance,
    _definitions,
    _explicit_host_instantiations,
    _host_of,
    _reference,
)
from miner.units.launches.tags import tag_lambda
from miner.units.launches.typed_pointers import finish_typed, note_typed_store
from miner.units.launches.values import _taken_branches

_CUDA_ATTRS = {K.CUDAGLOBAL_ATTR, K.CUDADEVICE_ATTR, K.CUDAHOST_ATTR}
_NAMED_TYPES = (ci.TypeKind.TYPEDEF, ci.TypeKind.ELABORATED)  # (a variable of a pointer typedef, cheaply)
_CASTS_AND_STORES = {K.CSTYLE_CAST_EXPR, K.CXX_REINTERPRET_CAST_EXPR, K.CXX_STATIC_CAST_EXPR, K.BINARY_OPERATOR}


def find(ctx: TUContext, kernels: dict[tuple[str, int], Any]
         ) -> tuple[list[Launch], dict[tuple[str, int], list[list[str]]]]:
    """Launches and references of known kernels, and concrete instantiations of host templates."""
    st = _State(ctx, kernels, _Resolver(ctx))
    st.names = {k.name for k in kernels.values()}
    defs = _definitions(st)
    for path, d in defs:
        if d.kind == K.VAR_DECL:
            _walk(st, d, path, None)
            continue
        if (path, d.location.offset) in kernels and any(ch.kind == K.CUDAGLOBAL_ATTR for ch in d.get_children()):
            continue  # (a host function one macro wrote with a kernel shares the kernel's location: walked)
        if _device_only(ctx, d):
            continue  # device code calls no host function; it launches only through `<<<>>>` or a launch API
        _walk(st, d, path, d)
    recover_dropped(st, defs)
    recover_dropped_definitions(st)
    recover_dropped_calls(st, defs)
    stored_helpers(st)
    forward_helpers(st)
    finish_helpers(st)
    finish_constructions(st)
    finish_typed(st)
    _explicit_host_instantiations(st)
    insts = _propagate(st)
    # Arguments written in a class template's scope (its member aliases) read by the compiler, per known
    # instantiation of the class; dependent calls' answers feed the propagation again.
    prober = class_scope.resolve(st, insts, {id(rec): dict(getattr(rec, "_aliases", {}))
                                             for rec in st.launches + st.refs})
    if any(id(dc) in prober.results for dc in st.dep_calls):
        insts = _propagate(st)
    if st.object_calls and class_scope.objects(st, insts):
        # Calls on member objects instantiated further classes and member templates: probed again, a round per
        # level of forwarding (`Set::insert` -> `Impl::insert` -> the launch), while rounds add instantiations.
        for _ in range(3):
            before = {k: len(v) for k, v in st.concrete.items()}
            insts = _propagate(st)
            prober = class_scope.resolve(st, insts, {id(rec): dict(getattr(rec, "_aliases", {}))
                                                     for rec in st.launches + st.refs})
            if {k: len(v) for k, v in st.concrete.items()} == before:
                break
        insts = _propagate(st)
    for rec in st.launches + st.refs:
        _finish(st, rec, insts)
    class_scope.apply(st, prober)
    _respell_values(ctx, st.launches + st.refs + st.chosen, insts)
    member_types.resolve(st, st.launches + st.refs)
    # What the program itself instantiates (a library's expression types built through its API) last: those
    # arguments are clang's, and replace the defaults a chain the propagation could not follow took.
    if instantiated.wanted(st, st.launches + st.refs):
        instantiated.apply(st.launches + st.refs, instantiated.program_sites(st, st.launches + st.refs, defs))
    # (Launches of a chosen pointer name no kernel here: matched to the chooser's references after the parse.)
    return _merge(st.launches) + _merge(st.refs) + st.chosen, insts


def _dependent_name(children: list[ci.Cursor]) -> str:
    """The name a dependent call's callee spells (its overload set), "" without one."""
    head = children[0] if children else None
    if head is None or head.kind not in (K.UNEXPOSED_EXPR, K.OVERLOADED_DECL_REF, K.DECL_REF_EXPR):
        return ""
    return next((d.spelling for d in head.walk_preorder() if d.kind == K.OVERLOADED_DECL_REF), "")


def _respell_values(ctx: TUContext, found: list[Launch], insts: dict[tuple[str, int], list[list[str]]]) -> None:
    """Arguments put together from text name an enumerator by its value (the resolver's constants); inside a
    class template's argument list that value goes back to the parameter's enum type."""
    params = value_spelling.project_params(ctx)
    if not params:
        return

    def fix(args: list[str]) -> list[str]:
        return [value_spelling.respell(a, params) for a in args]
    for rec in found:
        if rec.template_args is not None:
            rec.template_args = fix(rec.template_args)
        rec.host_template_args = [fix(a) for a in rec.host_template_args]
        rec.dispatch_args = [fix(a) for a in rec.dispatch_args]
    for key, lists in insts.items():
        insts[key] = [fix(a) for a in lists]


def _device_only(ctx: TUContext, d: ci.Cursor) -> bool:
    """A `__device__` function (not `__host__` too) whose text cannot launch a kernel (dynamic parallelism:
    `<<<>>>`, a launch API). Its text is read first, so only such functions pay for a look at their attributes."""
    e = d.extent
    if e.start.file is None or e.end.file is None or e.start.file.name != e.end.file.name:
        return False
    text = ctx.read(ctx.norm(e.start.file.name))[e.start.offset:e.end.offset]
    head = text.split(b"{", 1)[0]
    if b"__device__" not in head or b"<<<" in text or b"Launch" in text:
        return False
    return {ch.kind for ch in d.get_children() if ch.kind in _CUDA_ATTRS} == {K.CUDADEVICE_ATTR}


def _merge(records: list[Launch]) -> list[Launch]:
    """One record per (kernel, kind, line, concrete arguments): downstream, records are told apart by
    path, line and `template_args` alone, so two references on one line (`b ? (void*)k<T, 8> :
    (void*)k<T, 4>`) become one whose `host_template_args` hold both."""
    out: dict[tuple[Any, ...], Launch] = {}
    for rec in records:
        sig = (rec.kernel, rec.kind, rec.path, rec.line, tuple(rec.template_args or ()))
        first = out.setdefault(sig, rec)
        if first is rec:
            continue
        extra = rec.host_template_args + ([rec.resolved_text] if rec.resolved_text else [])
        if first.resolved_text and rec.kind == "reference":
            first.host_template_args.append(first.resolved_text)
            first.resolved_text = None
        for args in extra:
            if args not in first.host_template_args:
                first.host_template_args.append(args)
        first.host_defaulted = first.host_defaulted and rec.host_defaulted
        for args in rec.dispatch_args:
            if args not in first.dispatch_args:
                first.dispatch_args.append(args)
    return list(out.values())


def _walk(st: _State, root: ci.Cursor, path: str, fn: ci.Cursor | None) -> None:
    host_key = _host_of(st, path, fn) if fn is not None else None
    if fn is not None and fn.kind == K.CONSTRUCTOR:
        note_ctor_stores(st, fn)  # `props(F fn, ...) : fn(fn)`: launches.stored
    first = (len(st.launches), len(st.refs), len(st.dep_calls))
    _walk_body(st, root, path, fn, host_key)
    if fn is not None and host_key in st.classes:
        # The class's parameters as this definition names them (out of line, possibly differently) and the
        # member template's own, for class_scope.
        scope = class_scope.scope_params(fn, st.classes[host_key])
        for rec in st.launches[first[0]:] + st.refs[first[1]:] + st.dep_calls[first[2]:]:
            rec._scope = scope  # type: ignore[attr-defined]


def _may_hold_lambda(var: ci.Cursor) -> bool:
    t = var.type.get_canonical()
    return t.kind in (ci.TypeKind.AUTO, ci.TypeKind.UNEXPOSED) or "lambda at " in t.spelling


def _walk_body(st: _State, root: ci.Cursor, path: str, fn: ci.Cursor | None, host_key: tuple[str, int] | None) -> None:
    stack: list[tuple[ci.Cursor, bool]] = [(root, False)]
    while stack:
        c, in_lambda = stack.pop()
        kind = c.kind
        children_: list[ci.Cursor] | None = None
        # (a local of a closure type, or one whose type a template leaves undeduced: any other local would cost
        # tag_lambda a walk of the whole function for nothing)
        if kind == K.VAR_DECL and fn is not None and _may_hold_lambda(c):
            tag_lambda(st, c, fn)  # before the lambda's body is walked: its launches read the tag values
        if kind in _CASTS_AND_STORES:
            stores = list(c.get_children())
            note_pointer(st, c, stores)
            if kind == K.BINARY_OPERATOR and fn is not None:
                note_store(st, fn, c, stores)  # `fn_ = fn;` in a method: launches.stored
                note_typed_store(st, c, stores)  # `f = k;` with `Scorer f`: launches.typed_pointers
        elif kind == K.VAR_DECL and fn is not None and c.type.kind in _NAMED_TYPES:
            note_typed_store(st, c, list(c.get_children()))  # `Scorer f = k;`
        if kind == K.VAR_DECL and fn is not None and c.type.kind in (ci.TypeKind.RECORD, ci.TypeKind.ELABORATED):
            note_construction(st, fn, path, c, in_lambda, host_key)  # `props<F> p(k<typename P::X>, 128);`
        if kind == K.CALL_EXPR:
            children = children_ = list(c.get_children())
            cfg = next((x for x in children if x.kind == K.CALL_EXPR
                        and x.spelling == "__cudaPushCallConfiguration"), None)
            ref = c.referenced
            _lambda_lists(st, c, children)
            if subtree_flags(st, c) & LAMBDA:
                dispatched_lambda(st, c, children)
            if cfg is not None:
                _chevron(st, fn or root, path, c, children, cfg, in_lambda, host_key)
            elif fn is not None and (api := ref.spelling if ref is not None else _dependent_name(children)) in _API:
                # (a call in a template whose kernel argument is the template's own is dependent: no referenced)
                _api_launch(st, fn, path, c, children, api, in_lambda, host_key)
            elif fn is not None:
                used_methods.note_call(st, ref)
                _host_call(st, c, children, ref, host_key)
                range_dispatch.note_call(st, children, ref)
                deduced_call(st, c, children, host_key)
                note_call(st, fn, path, c, children, in_lambda, host_key)
                note_forward(st, fn, c, children)
        elif kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF) and (
                c.spelling in st.names or (not c.spelling and kind == K.DECL_REF_EXPR)):
            _reference(st, root if fn is None else fn, path, c, in_lambda, host_key)
            if c.kind == K.DECL_REF_EXPR and c.referenced is not None and c.referenced.kind == K.OVERLOADED_DECL_REF:
                _named_instance(st, c, host_key, fn)  # (a host template's name in a table's initializer)
                continue  # its OVERLOADED_DECL_REF child names the same thing
        elif kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF):
            _named_instance(st, c, host_key, fn)
        elif kind == K.TEMPLATE_REF:
            _class_use(st, c, host_key)
        elif kind in _TYPED_USES:
            decl = c.type.get_canonical().get_declaration()
            if decl.kind in (K.STRUCT_DECL, K.CLASS_DECL) and decl.get_num_template_arguments() > 0:
                _class_instance(st, decl)
        if children_ is None:
            children_ = list(c.get_children())
        else:
            children_ = list(children_)  # (a copy: the call's list went to its handlers)
        if kind == K.IF_STMT:
            children_ = _taken_branches(c, children_)
        # Reversed onto the stack: records come out in source order (and dispatch order).
        stack.extend((ch, in_lambda or kind == K.LAMBDA_EXPR) for ch in reversed(children_))
