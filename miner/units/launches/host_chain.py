"""Host-template chains: dependent calls recorded while walking, value lists of generic-lambda
dispatch, and the fixed point that pushes every known host instantiation down the call graph."""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from typing import Any

import clang.cindex as ci

from miner import lazy_re
from miner.units.launches import deduce_probe, overload_fit, value_spelling
from miner.units.launches.cursors import _aliases, _key, _primary, _targets, _template_args, _tparams
from miner.units.launches.record import _FUNCS, _IDENT, _MAX_DEPTH, K
from miner.units.launches.state import (
    LAMBDA,
    HostNames,
    _add,
    _DepCall,
    _State,
    _written_args,
    host_names,
    subtree_flags,
)
from miner.units.launches.tables import _class_instance, _match_partial
from miner.units.launches.text import _angle_args, _src, substitute, substitute_aliases


def _host_call(st: _State, call: ci.Cursor, children: list[ci.Cursor], ref: ci.Cursor | None,
               host_key: tuple[str, int] | None) -> None:
    """A call of a host function template: concrete arguments, or arguments written in terms of the
    enclosing host template's parameters."""
    ctx = st.ctx
    if ref is not None and ref.kind == K.FUNCTION_DECL:
        _class_arguments(st, ref)
    if ref is not None and ref.kind in _FUNCS and ref.location.file is not None:
        args = _template_args(ref)
        if args is None and ref.kind == K.FUNCTION_DECL and children:
            # A function or `nullptr` among the arguments (`entry<float, Opts, relu<float>>(...)`, a
            # function-pointer template parameter): libclang spells none, the call writes them.
            texts = _written_args(st, children[0], ref.spelling)
            if texts and texts[0]:
                args = _template_args(ref, [st.resolver(t, set()) for t in texts[0]])
        if args and not any("(lambda at " in a for a in args):  # (a lambda's type: functors.deduced_call)
            key = _def_key(ctx, _primary(ref))
            if key is not None and ctx.norm(ref.location.file.name) in ctx.inputs:
                _add(st.concrete, key, args)
            return
        if args is None and ref.kind == K.CXX_METHOD and children and (
                _member_call(st, children[0], ref, host_key) or _deduced_member_call(st, children, ref, host_key)):
            return
    if host_key is None or not children:
        return
    callee = children[0]
    if callee.kind == K.MEMBER_REF_EXPR and callee.referenced is None and host_key in st.classes:
        _object_call(st, callee, children, host_key)
        return
    for d in callee.walk_preorder():
        if d.kind not in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF):
            continue
        for t in _targets(ctx, d):
            if t.kind != K.FUNCTION_TEMPLATE or _key(ctx, t) in st.kernels:
                continue
            # A member template declared in its class and defined out of line: the walk keys its body (the
            # host template) by the definition, so the call is keyed the same way.
            key = _def_key(ctx, t)
            if key is None or key[0] not in ctx.inputs:
                continue
            texts = _written_args(st, callee, t.spelling)
            if texts and _kinds_fit(callee, _tparams(t), texts[0]):
                params = [p.spelling for p in st.host_params.get(host_key, [])]
                alias = {k: v for k, v in _aliases(ctx, callee, st.lists).items() if v}
                # (the deduction reads argument types by the depth of each parameter they name: in a member
                # template of a class template, `K *` of the class's `K` is not the member's first parameter)
                written = _deduce_rest(st, t, [substitute_aliases(x, alias) for x in texts[0]], children,
                                       host_names(st, host_key))
                if written is not None:
                    dc = _DepCall(host_key, params, key, written, binds=[
                        b for a, p in zip(children[1:], _parms(t), strict=False)
                        if (b := overload_fit.reference_binds(a, p, params)) is not None])
                    if len(written) < len(_tparams(t)) and host_key in st.classes:
                        # The rest deduced by the compiler in the class's probe (deduce_probe): the arguments'
                        # types depend on the class's configuration, which no written type spells.
                        dc._deduce = deduce_probe.prepare(  # type: ignore[attr-defined]
                            ctx, t, children[1:], st.classes[host_key], written)
                    st.dep_calls.append(dc)
        break


def _kinds_fit(callee: ci.Cursor, tparams: list[ci.Cursor], written: list[str]) -> bool:
    """Whether written template arguments can be this overload's: a type (a name the call refers to as a type,
    `f<Config>` with `typedef ... Config;`) for a value parameter, or a number for a type parameter, is another
    overload's."""
    types = {name for d in callee.walk_preorder() if d.kind == K.TYPE_REF
             for name in (d.spelling, d.spelling.rpartition(" ")[2])}
    for p, text in zip(tparams, written, strict=False):
        text = text.strip()
        if p.kind == K.TEMPLATE_NON_TYPE_PARAMETER and (text in types or text.startswith("typename ")):
            return False
        if p.kind == K.TEMPLATE_TYPE_PARAMETER and re.fullmatch(r"-?\d+[uUlL]*", text):
            return False
    return True


def _deduce_rest(st: _State, t: ci.Cursor, written: list[str], children: list[ci.Cursor], params: HostNames
                 ) -> list[str] | None:
    """Leading arguments written, the rest deduced (`run<kItems, kThreads>(n, nullptr, fn)` in a host template
    over `Fn fn`): without the deduced ones the callee's instantiation lacks `Fn`, and so does its launch.
    None for an overload of the set that cannot take the call's arguments."""
    from miner.units.launches.functors import lambda_overrides
    from miner.units.launches.sites import _deduce  # (sites imports this module)

    args = children[1:]
    parms = _parms(t)
    if len(parms) < len(args) and not any("..." in _src(st.ctx, p) for p in parms[-1:]):
        return None
    # (an argument of a known type the parameter cannot take: another overload of the same length's)
    if any(overload_fit.ill_typed(a, p) for a, p in zip(args, parms, strict=False)):
        return None
    # (too few arguments for the parameters without a default: another overload of the name, one with fewer
    # parameters, which the written arguments would then be mapped onto wrongly)
    if overload_fit.too_few(st.ctx, parms, len(args)):
        return None
    if len(written) >= len(_tparams(t)):
        return written
    got = _deduce(t, args, params, lambda_overrides(st, args, None), given=written)
    return got if got and len(got) > len(written) else written


def _named_instance(st: _State, c: ci.Cursor, host_key: tuple[str, int] | None,
                    fn: ci.Cursor | None = None) -> None:
    """A host function template named with concrete arguments outside any call (`{0, gpu<float, 4, float4>}` in a
    table of function pointers): an instantiation of it as a call would be, so the launches in its body take those
    arguments (they were inferred, and a vector type became its element type). libclang leaves the name in an
    initializer unresolved (an overload set): the arguments are then read as written, outside host templates.
    So it leaves a call it could not type (an argument naming a local whose initializer calls what the parse lacks):
    a written argument naming a type alias of the blocks around the reference in `fn` (`scalar_t` of a dispatch
    macro's case blocks) is read once per type the alias is bound to, as `recovered` reads a dropped call."""
    ctx = st.ctx
    ref = c.referenced
    if c.kind == K.DECL_REF_EXPR and ref is not None and ref.kind == K.FUNCTION_DECL:
        _class_arguments(st, ref)
        lists, target = [_template_args(ref)], _primary(ref)
    elif host_key is None and K.OVERLOADED_DECL_REF in (c.kind, ref.kind if ref is not None else None):
        found = [t for t in _targets(ctx, c) if t.kind == K.FUNCTION_TEMPLATE]
        if len(found) != 1:
            return
        target = found[0]
        # (every list one macro invocation writes: `{ROW(float) ROW(half) nullptr}` names the template at one place)
        lists = [[st.resolver(t, set()) for t in w] for w in _written_args(st, c, target.spelling)]
        if fn is not None and c.location.file is not None:
            lists = [bound for w in lists for bound in _per_binding(fn, ctx.norm(c.location.file.name),
                                                                    c.extent.start.offset, w)]
    else:
        return
    if target.location.file is None:
        return
    key = _def_key(ctx, target)
    if key is None or key[0] not in ctx.inputs or _key(ctx, target) in st.kernels:
        return
    for args in lists:
        if args and not any("(lambda at " in a for a in args):
            _add(st.concrete, key, args)


def _per_binding(fn: ci.Cursor, path: str, offset: int, args: list[str]) -> list[list[str]]:
    """`args` once per combination of the types the aliases it names are bound to around `offset` in `fn`
    (recovered._bindings); `args` itself where it names none."""
    from miner.units.launches.recovered import _MAX_COMBOS, _bindings  # (recovered imports this module's kin)

    idents = {n for a in args for n in _IDENT.findall(a)}
    bound = _bindings(fn, path, offset, idents) if idents else {}
    if not bound:
        return [args]
    combos = [dict(zip(bound, vals, strict=True)) for vals in itertools.product(*bound.values())][:_MAX_COMBOS]
    return [[substitute(a, combo) for a in args] for combo in combos]


def _class_arguments(st: _State, ref: ci.Cursor) -> None:
    """A project class template given as a type argument to a function template (`std::make_unique<Impl<int,
    short>>(...)` in a factory, `std::vector<Grid<float>>`'s members alike): constructed there, so an instantiation
    of the class, for its methods' launches, though no variable or explicit instantiation names it."""
    for i in range(max(ref.get_num_template_arguments(), 0)):
        try:
            if ref.get_template_argument_kind(i) != ci.TemplateArgumentKind.TYPE:
                continue
        except ValueError:  # (a pack: a kind the bindings do not name)
            continue
        t = ref.get_template_argument_type(i).get_canonical()
        while t.kind in (ci.TypeKind.POINTER, ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
            t = t.get_pointee()
        decl = t.get_declaration()
        if decl.kind in (K.STRUCT_DECL, K.CLASS_DECL) and decl.get_num_template_arguments() > 0:
            _class_instance(st, decl)


def _def_key(ctx, d: ci.Cursor) -> tuple[str, int] | None:
    """A function template's key: its definition's place where the TU has one (`_host_of` keys a host
    template's body there), else its declaration's."""
    return _key(ctx, d.get_definition() or d)


def _member_call(st: _State, callee: ci.Cursor, ref: ci.Cursor, host_key: tuple[str, int] | None) -> bool:
    """A call of a member function template with explicit arguments (`LaunchInner<double, 1024>(...)` in
    a method): libclang gives a method's specialization no template arguments (only a FUNCTION_DECL's), so
    they are read as written, folded, and recorded as concrete (or, in a host template, as a dependent call)."""
    ctx = st.ctx
    primary = _primary(ref)
    if primary is ref or primary.kind != K.FUNCTION_TEMPLATE or primary.location.file is None:
        return False
    key = _def_key(ctx, primary)
    texts = _written_args(st, callee, ref.spelling)
    if key is None or key[0] not in ctx.inputs or not texts or not texts[0]:
        return False
    params = [p.spelling for p in st.host_params.get(host_key, [])] if host_key is not None else []
    if any(re.search(rf"\b{re.escape(p)}\b", t) for t in texts[0] for p in params if p):
        alias = {k: v for k, v in _aliases(ctx, callee, st.lists).items() if v}
        dc = _DepCall(host_key, params, key, [substitute_aliases(x, alias) for x in texts[0]])
        if dc not in st.dep_calls:
            st.dep_calls.append(dc)
        return True
    _add(st.concrete, key, [st.resolver(t, set()) for t in texts[0]])
    return True


def _deduced_member_call(st: _State, children: list[ci.Cursor], ref: ci.Cursor, host_key: tuple[str, int] | None
                         ) -> bool:
    """A call of a member function template whose arguments are all deduced (`table.insert(keys, keys + n)`
    on a `Table<int>`): libclang names the specialization but gives a method's no template arguments, so they
    are deduced from the call's argument types against the member template's parameters, and recorded as an
    instantiation of the member template (its class's come from the object's type, `_class_instance`); the
    launches in its body then take them (with the class's, through `class_scope`). In a host template, the
    arguments that name its parameters make a dependent call."""
    from miner.units.launches.sites import _deduce  # (sites imports this module)

    ctx = st.ctx
    primary = _primary(ref)
    if primary is ref or primary.kind != K.FUNCTION_TEMPLATE or primary.location.file is None:
        return False
    key = _def_key(ctx, primary)
    if key is None or key[0] not in ctx.inputs or key in st.kernels:
        return False
    params = host_names(st, host_key) if host_key is not None else []
    got = _deduce(primary, children[1:], params, whole=True)
    if not got or len(got) != len(_tparams(primary)) or any("type-parameter" in a or "(lambda at " in a
                                                            for a in got):
        return False
    names = list(params) + [n for level in getattr(params, "outer", []) for n in level]
    if host_key is not None and any(re.search(rf"\b{re.escape(p)}\b", a) for a in got for p in names if p):
        dc = _DepCall(host_key, list(params), key, got)
        if dc not in st.dep_calls:
            st.dep_calls.append(dc)
        return True
    _add(st.concrete, key, [st.resolver(a, set()) for a in got])
    return True


@dataclass
class ObjectCall:
    """`impl_->insert(first, last, ref(), stream)` in a method of a class template, `impl_` a member whose type
    depends on the class's parameters (`std::unique_ptr<impl_type>`): the call names no declaration in the parse.
    `probe` is the object's type as the class's probe reads it (`decltype(*impl_)`); `name` the member called."""
    host: tuple[str, int]
    scope: Any
    probe: str
    name: str
    args: list[ci.Cursor]
    names: Any  # state.HostNames of the calling host


def _object_call(st: _State, callee: ci.Cursor, children: list[ci.Cursor], host_key: tuple[str, int]) -> None:
    """A call of a member of a class template's own member object, its type dependent (libclang spells the member
    called as nothing): kept for `class_scope.objects`, which reads the object's class per instantiation of the
    calling class, so the callee's class is instantiated and its member templates' arguments deduced."""
    from miner.units.launches.class_scope import scope_params  # (class_scope imports this module)

    toks = [t.spelling for t in callee.get_tokens()]
    if toks[:2] == ["this", "->"]:
        toks = toks[2:]
    if len(toks) != 3 or toks[1] not in ("->", ".") or not toks[0].isidentifier() or not toks[2].isidentifier():
        return
    obj = next(iter(callee.get_children()), None)
    d = obj.referenced if obj is not None else None
    if d is None or d.kind not in (K.FIELD_DECL, K.VAR_DECL) or d.spelling != toks[0]:
        return
    fn = st.host_cursors.get(host_key)
    scope = scope_params(fn, st.classes[host_key]) if fn is not None else None
    probe = f"decltype(*{toks[0]})" if toks[1] == "->" else f"decltype({toks[0]})"
    st.object_calls.append(ObjectCall(host_key, scope, probe, toks[2], children[1:], host_names(st, host_key)))


def _class_use(st: _State, ref: ci.Cursor, host_key: tuple[str, int] | None) -> None:
    """A project class template named with arguments in a host template's body (`new Grid<T, 2>{...}`, a
    factory in a lambda): the class is instantiated with those arguments for every instantiation of that host
    template, so its methods' launches take them. Concrete uses are recorded by the class's type already."""
    ctx = st.ctx
    cls = ref.referenced
    if host_key is None or cls is None or cls.kind != K.CLASS_TEMPLATE or ref.location.file is None:
        return
    key = _key(ctx, cls)
    params = [p.spelling for p in st.host_params.get(host_key, [])]
    if key is None or key[0] not in ctx.inputs or key == host_key or not params:
        return
    data = ctx.read(ctx.norm(ref.location.file.name))
    start = ref.extent.start.offset
    text = data[start:start + 600].decode("utf-8", "replace")
    m = re.match(rf"{re.escape(cls.spelling)}\s*<(?!<)", text)
    got = _angle_args(text, m.end() - 1) if m else None
    if not got or not got[0] or not any(re.search(rf"\b{re.escape(p)}\b", a) for a in got[0] for p in params):
        return
    alias = {k: v for k, v in _aliases(ctx, ref, st.lists).items() if v}
    dc = _DepCall(host_key, params, key, [substitute_aliases(a, alias) for a in got[0]])
    if dc not in st.dep_calls:
        st.dep_calls.append(dc)


_LIST_VALUE = lazy_re.compile(r"integral_constant<[^<>,]+,\s*\(?(-?\d+)[uUlL]*\)?\s*>")


_LIST_C = lazy_re.compile(r"\w+_c\s*<\s*(?:(?:unsigned|signed|long|short|std::size_t|size_t|int|bool)\s*)+,([^<>]*)>")


def _list_values(texts: list[str]) -> list[str]:
    """Values of a type list of integral constants (`list<integral_constant<int, 64>, ...>`, `list_c<int,
    64, 32>`), as spelled in the types named by a dispatch call."""
    for t in texts:
        vals = _LIST_VALUE.findall(t)
        if vals:
            return list(dict.fromkeys(vals))
    for t in texts:
        m = _LIST_C.search(t)
        if m:
            vals = [v.strip().rstrip("uUlL") for v in m.group(1).split(",")]
            if vals and all(re.fullmatch(r"-?\d+", v) for v in vals):
                return list(dict.fromkeys(vals))
    return []


def _lambda_lists(st: _State, call: ci.Cursor, children: list[ci.Cursor]) -> None:
    """A call that passes a generic lambda (`auto` parameter) and names a list of integral constants in
    its template arguments (`for_each<list_c<int, 64, 32>>([&](auto Tile) {...})`): the lambda runs once
    per value, so its parameter takes each of them."""
    if not subtree_flags(st, call) & LAMBDA:
        return  # (its arguments are in its subtree: no lambda among them)
    lambdas = [x for a in children[1:] for x in a.walk_preorder() if x.kind == K.LAMBDA_EXPR]
    if not lambdas or not children:
        return
    parms = [p for lam in lambdas[:1] for p in lam.get_children() if p.kind == K.PARM_DECL
             and p.type.get_canonical().kind in (ci.TypeKind.UNEXPOSED, ci.TypeKind.AUTO)]
    if len(parms) != 1:
        return
    texts: list[str] = []
    ref = call.referenced
    if ref is not None and ref.kind in _FUNCS:
        for i in range(max(ref.get_num_template_arguments(), 0)):
            try:
                if ref.get_template_argument_kind(i) == ci.TemplateArgumentKind.TYPE:
                    texts.append(value_spelling.type_spelling(ref.get_template_argument_type(i)))
            except ValueError:
                break
    for d in children[0].walk_preorder():  # the callee as written: `for_each<tiles_t>`
        if d.kind == K.TYPE_REF and d.referenced is not None:
            r = d.referenced
            if r.kind in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL):
                texts += [value_spelling.type_spelling(r.underlying_typedef_type), r.underlying_typedef_type.spelling]
            texts.append(value_spelling.type_spelling(d.type))
    texts.append(_src(st.ctx, children[0]))
    vals = _list_values(texts)
    key = _key(st.ctx, parms[0])
    if vals and key is not None:
        st.lists[key] = vals


def _class_names(st: _State, dc: _DepCall) -> set[str]:
    """The parameters of the class template around a member template that makes a dependent call, less the member's
    own names (which shadow them); empty for a caller outside a class template."""
    if dc.caller not in st.classes:
        return set()
    return {n for level in host_names(st, dc.caller).outer for n in level} - set(dc.caller_params)


def _words(text: str) -> list[str]:
    """The identifiers a text names, less those after `::` or `.` (members, not parameters)."""
    return re.findall(r"(?<![\w:.])[A-Za-z_]\w*", text)


def _to_definitions(st: _State, insts: dict[tuple[str, int], list[list[str]]]) -> bool:
    """A call of an out-of-line member template records its instantiation under the in-class declaration (all
    libclang gives the call); the launches in its body are keyed by the definition: copied there."""
    changed = False
    for decl, body in st.out_of_line.items():
        for inst in list(insts.get(decl, [])):
            changed |= _add(insts, body, inst)
    return changed


def _add_instance(st: _State, insts: dict[tuple[str, int], list[list[str]]], key: tuple[str, int],
                  args: list[str]) -> bool:
    """`args` as an instantiation of `key`; of a class template, as one of each partial specialization they match
    instead: the compiler instantiates the specialization, not the primary template (`launch<256, U>` declared
    to launch nothing for an unsupported width: the primary's launch with 256 is no launch of the program)."""
    matched = False
    changed = False
    for pkey, pattern, params in st.partials.get(key, ()):
        got = _match_partial(pattern, params, args)
        if got is not None:
            matched = True
            changed |= _add(insts, pkey, got)
    if matched:
        _add(st.routed, key, args)
        return changed
    return _add(insts, key, args)


def _parms(t: ci.Cursor) -> list[ci.Cursor]:
    return [c for c in t.get_children() if c.kind == K.PARM_DECL]


def _propagate(st: _State) -> dict[tuple[str, int], list[list[str]]]:
    """Concrete instantiations of every host template, pushed through dependent calls to a fixed point.
    A class template's instantiations reach the partial specializations they match."""
    insts = {k: [list(a) for a in v] for k, v in st.concrete.items()}
    for key in st.partials:
        if key in insts:
            got, insts[key] = insts[key], []
            for inst in got:
                _add_instance(st, insts, key, inst)
    # (a base's own bases: a chain of a few classes, each level from the one before)
    for _ in range(_MAX_DEPTH):
        added = False
        for key, bases in st.bases.items():
            for inst in list(insts.get(key, [])):
                for bkey, written, params in bases:
                    mapping = dict(zip(params, inst, strict=False))
                    added |= _add(insts, bkey, [substitute(w, mapping) for w in written])
        if not added:
            break
    _to_definitions(st, insts)
    class_names = {dc.caller: _class_names(st, dc) for dc in st.dep_calls}
    for _ in range(_MAX_DEPTH):
        changed = False
        for dc in st.dep_calls:
            if getattr(dc, "_probed_only", False):
                continue  # (class_scope.objects: the probe's answers are in st.concrete)
            for inst in list(insts.get(dc.caller, [])):
                # (an unnamed parameter, `template <typename = void>`, names nothing to put in)
                mapping = {k: v for k, v in zip(dc.caller_params, inst, strict=False) if k}
                if dc.binds and not overload_fit.class_ok(
                        dc.binds, mapping, st.ctx.memo("derived_classes", lambda: overload_fit.derived_classes(
                            st.ctx.tu))):
                    continue  # (an overload this instantiation's arguments cannot reach)
                texts = [substitute(t, mapping) for t in dc.args_text]
                if class_names[dc.caller] and any(n in class_names[dc.caller] for t in texts for n in _words(t)):
                    # An argument naming the caller's class's parameter (`K` deduced from a member `K *`): the
                    # caller's arguments do not bind it, the class's probe does (class_scope.resolve).
                    continue
                args = [st.resolver(t, set()) for t in texts]
                changed |= _add_instance(st, insts, dc.callee, args)
        changed |= _to_definitions(st, insts)
        if not changed:
            break
    return insts
