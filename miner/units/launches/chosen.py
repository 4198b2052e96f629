"""Launches of a kernel pointer a function chooses: `void *k = pick_kernel<T>(p);` or `spec = pick<T, I>(p);`
then `cudaLaunchKernel(k, grid, block, args, smem, stream)` or `cudaLaunchKernel(spec.run, ...)`.

The chooser is usually defined in the kernels' own `.cu` (`return (void *)&scale<T, 4>;`, `s.run = (void *)k<T>;`)
and only declared where the launch is, so the launch's translation unit sees no kernel. The launch is kept with
`via` (the chooser's qualified name, its concrete template arguments, the member read); after every TU is parsed,
`match_chosen` turns the references inside that chooser (recorded in the kernels' TU with the chooser's
instantiations as host template arguments) into launches with this configuration. A reference's `via_member`
(the member it is stored into, `s.run = (void *)k`) must match the member the launch reads, where both are known.
"""

from __future__ import annotations

from dataclasses import replace

import clang.cindex as ci

from miner.frontends.cindex_speed import ASSIGN, binary_operator_kind
from miner.units.launches.cursors import _primary, _template_args
from miner.units.launches.record import K, Launch
from miner.units.launches.state import _State
from miner.units.launches.values import _values

_WRAPPERS = {K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.CSTYLE_CAST_EXPR, K.CXX_STATIC_CAST_EXPR,
             K.CXX_REINTERPRET_CAST_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR}


def chosen_launches(st: _State, fn: ci.Cursor, path: str, call: ci.Cursor, kernel_arg: ci.Cursor,
                    cfg: dict[str, str | None], args: list[str], api: str, in_lambda: bool,
                    host_key: tuple[str, int] | None) -> None:
    """Launch records (kernel unknown, `via` set) for each chooser call whose result reaches `kernel_arg`."""
    var, member = _variable(kernel_arg)
    if var is None:
        return
    table_launches(st, fn, path, call, var, cfg, args, api, in_lambda, host_key)
    chooser_launches(st, fn, path, call, var, member, cfg, args, api, in_lambda, host_key)


def chooser_launches(st: _State, fn: ci.Cursor, path: str, call: ci.Cursor, var: ci.Cursor, member: str | None,
                     cfg: dict[str, str | None], args: list[str], api: str, in_lambda: bool,
                     host_key: tuple[str, int] | None) -> bool:
    """Launch records (kernel unknown, `via` set) for each chooser call whose result `var` holds: stored in it by
    this function, or stored by a function of the same file in the member `var` is initialized from
    (`coder->pre.kernel = (void *)pick<RGB>(coder);` in a set-up function, `k = (kernel_t)coder->pre.kernel;
    k<<<grid, block>>>(...)` in the run function). True when one was recorded."""
    done = False
    for chooser in _assigned_calls(fn, var) + _member_assigned_calls(fn, var):
        ref = chooser.referenced
        if ref is None or ref.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
            continue
        targs = _template_args(ref) if ref.kind == K.FUNCTION_DECL else None
        if targs is None and ref.kind == K.FUNCTION_TEMPLATE:
            continue  # a dependent call: which instantiation is chosen is not known here
        primary = _primary(ref)
        launch = Launch(kernel=None, launcher=fn.spelling, path=path, line=call.location.line, kind=api,
                        config=dict(cfg), args=list(args), in_lambda=in_lambda, host_template=host_key)
        launch.via = {"function": _qualified(primary), "template_args": list(targs or []), "member": member}
        _values(st.ctx, launch, fn, call)
        st.chosen.append(launch)
        done = True
    return done


def table_launches(st: _State, fn: ci.Cursor, path: str, call: ci.Cursor, var: ci.Cursor, cfg: dict[str, str | None],
                   args: list[str], kind: str, in_lambda: bool, host_key: tuple[str, int] | None) -> bool:
    """A launch of a pointer read from a table of kernels (`auto f = table[i]; f<<<g, b, 0, s>>>(...)`, the table
    a namespace-scope array `{k<A, float>, k<B, float>, ..., nullptr}`): one launch with this configuration per
    kernel reference of the table's initializer, matched after the parse like a chooser's (`via`: the table's
    name and file, which keep two files' `static` tables of one name apart). True when one was recorded."""
    done = False
    for table in _subscripted_tables(fn, var):
        loc = table.location
        if loc.file is None:
            continue
        launch = Launch(kernel=None, launcher=fn.spelling, path=path, line=call.location.line, kind=kind,
                        config=dict(cfg), args=list(args), in_lambda=in_lambda, host_template=host_key)
        launch.via = {"function": table.spelling, "template_args": [], "member": None,
                      "path": st.ctx.norm(loc.file.name)}
        _values(st.ctx, launch, fn, call)
        st.chosen.append(launch)
        done = True
    return done


def _subscripted_tables(fn: ci.Cursor, var: ci.Cursor) -> list[ci.Cursor]:
    """Namespace-scope arrays the function stores an element of in `var` (its initializer, `var = t[i]`)."""
    rhs: list[ci.Cursor] = [_strip(c) for c in var.get_children()
                            if c.kind not in (K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_REF)][-1:]
    for c in fn.walk_preorder():
        if c.kind == K.BINARY_OPERATOR and _is_assignment(c):
            kids = list(c.get_children())
            if len(kids) == 2 and _strip(kids[0]).kind == K.DECL_REF_EXPR and _strip(kids[0]).referenced == var:
                rhs.append(_strip(kids[1]))
    out: list[ci.Cursor] = []
    for r in rhs:
        if r.kind != K.ARRAY_SUBSCRIPT_EXPR:
            continue
        base = _strip(next(iter(r.get_children()), r))
        t = base.referenced if base.kind == K.DECL_REF_EXPR else None
        if t is not None and t.kind == K.VAR_DECL and t.semantic_parent is not None and \
                t.semantic_parent.kind in (K.TRANSLATION_UNIT, K.NAMESPACE) and t not in out:
            out.append(t)
    return out


def _strip(c: ci.Cursor) -> ci.Cursor:
    while c.kind in _WRAPPERS:
        kids = [k for k in c.get_children() if k.kind not in (K.TYPE_REF, K.NAMESPACE_REF)]
        if len(kids) != 1:
            break
        c = kids[0]
    return c


def _variable(arg: ci.Cursor) -> tuple[ci.Cursor | None, str | None]:
    """The local variable the kernel argument reads, and the member read of it (`spec.run` -> spec, "run")."""
    c = _strip(arg)
    member = None
    if c.kind == K.MEMBER_REF_EXPR:
        member = c.spelling
        base = next(iter(c.get_children()), None)
        c = _strip(base) if base is not None else c
    if c.kind != K.DECL_REF_EXPR or c.referenced is None or c.referenced.kind != K.VAR_DECL:
        return None, None
    return c.referenced, member


def _assigned_calls(fn: ci.Cursor, var: ci.Cursor) -> list[ci.Cursor]:
    """Calls whose result the function stores in `var`: its initializer and every `var = f(...)` (in
    dispatch lambdas too), in source order."""
    out: list[ci.Cursor] = []
    init = [_strip(c) for c in var.get_children() if c.kind not in (K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_REF)]
    out += [c for c in init[-1:] if c.kind == K.CALL_EXPR and c.referenced is not None
            and c.referenced.kind != K.CONSTRUCTOR]
    for c in fn.walk_preorder():
        if c.kind == K.BINARY_OPERATOR or (c.kind == K.CALL_EXPR and c.spelling == "operator="):
            kids = [k for k in c.get_children() if not (k.kind == K.UNEXPOSED_EXPR and k.spelling == "operator=")]
            if len(kids) != 2 or not _is_assignment(c):
                continue
            lhs, rhs = _strip(kids[0]), _strip(kids[1])
            if lhs.kind == K.DECL_REF_EXPR and lhs.referenced is not None and lhs.referenced == var \
                    and rhs.kind == K.CALL_EXPR:
                out.append(rhs)
    return out


def _member_assigned_calls(fn: ci.Cursor, var: ci.Cursor) -> list[ci.Cursor]:
    """Where `var` is initialized from a member (`(kernel_t)coder->pre.kernel`): the calls any function of the
    file stores in that member (`coder->pre.kernel = (void *)pick<RGB>(coder);`), in source order."""
    init = [_strip(c) for c in var.get_children() if c.kind not in (K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_REF)]
    field = init[-1].referenced if init and init[-1].kind == K.MEMBER_REF_EXPR else None
    if field is None or field.kind != K.FIELD_DECL or fn.location.file is None:
        return []
    out: list[ci.Cursor] = []
    name = fn.location.file.name
    for top in fn.translation_unit.cursor.get_children():
        if top.location.file is None or top.location.file.name != name:
            continue
        for c in top.walk_preorder():
            if c.kind != K.BINARY_OPERATOR or not _is_assignment(c):
                continue
            kids = list(c.get_children())
            if len(kids) != 2:
                continue
            lhs, rhs = _strip(kids[0]), _strip(kids[1])
            if lhs.kind == K.MEMBER_REF_EXPR and lhs.referenced == field and rhs.kind == K.CALL_EXPR \
                    and rhs.referenced is not None and rhs.referenced.kind != K.CONSTRUCTOR:
                out.append(rhs)
    return out


def _is_assignment(c: ci.Cursor) -> bool:
    if c.kind == K.CALL_EXPR:
        return True
    if (op := binary_operator_kind(c)) is not None:
        return op == ASSIGN
    try:
        return c.binary_operator == ci.BinaryOperator.Assign  # type: ignore[attr-defined]
    except AttributeError:  # (older bindings: the operator's token)
        toks = [t.spelling for t in c.get_tokens()]
        return "=" in toks


def _qualified(c: ci.Cursor) -> str:
    parts = [c.spelling]
    p = c.semantic_parent
    while p is not None and p.kind in (K.NAMESPACE, K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE):
        parts.append(p.spelling)
        p = p.semantic_parent
    return "::".join(reversed([x for x in parts if x]))


def note_pointer(st: _State, c: ci.Cursor, children: list[ci.Cursor]) -> None:
    """During the walk: a kernel name cast to `void *` (`(void *)k<T, 4>`, kept in `st.as_pointer` by the name's
    cursor), and the member such a cast is stored into (`s.run = (void *)k<T>`, in `st.stored`). From the AST, so
    a chooser a macro writes (`#define CASE(...) s.run = (void *)k<...>;`) counts as well."""
    if c.kind == K.BINARY_OPERATOR:
        if len(children) == 2 and children[0].kind == K.MEMBER_REF_EXPR and _void_cast(_strip_to_cast(children[1])):
            ref = _named(_strip_to_cast(children[1]))
            if ref is not None:
                st.stored[ref.hash] = children[0].spelling
        return
    if _void_cast(c):
        ref = _named(c)
        if ref is not None:
            st.as_pointer.add(ref.hash)


def _strip_to_cast(c: ci.Cursor) -> ci.Cursor:
    while c.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR):
        kids = list(c.get_children())
        if len(kids) != 1:
            break
        c = kids[0]
    return c


def _void_cast(c: ci.Cursor) -> bool:
    if c.kind not in (K.CSTYLE_CAST_EXPR, K.CXX_REINTERPRET_CAST_EXPR, K.CXX_STATIC_CAST_EXPR):
        return False
    t = c.type.get_canonical()
    return t.kind == ci.TypeKind.POINTER and t.get_pointee().kind == ci.TypeKind.VOID


def _named(cast: ci.Cursor) -> ci.Cursor | None:
    """The name a cast takes the address of (through `&`, parentheses and implicit conversions)."""
    kids = [k for k in cast.get_children() if k.kind not in (K.TYPE_REF, K.NAMESPACE_REF)]
    c = kids[-1] if kids else None
    while c is not None and c.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR, K.UNARY_OPERATOR):
        inner = list(c.get_children())
        if len(inner) != 1:
            return None
        c = inner[0]
    return c if c is not None and c.kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF) else None


def match_chosen(chosen: list[Launch], refs: list[Launch]) -> list[Launch]:
    """Launches made of the references inside each chosen launch's chooser: the reference's kernel and template
    arguments (the chooser's instantiations the launch names, where it names some), the launch's configuration."""
    out: list[Launch] = []
    for launch in chosen:
        via = launch.via or {}
        name = via.get("function", "").split("::")[-1]
        for ref in refs:
            if ref.kind != "reference" or ref.launcher != name or via.get("path", ref.path) != ref.path:
                continue
            stored = ref.via_member
            if via.get("member") and stored and stored != via["member"]:
                continue
            # (the reference's lists are the kernel's arguments per chooser instantiation: the launch's chooser
            # arguments put into the reference's written arguments give the one it picks)
            hosts = ref.host_template_args
            want = via.get("template_args") or []
            if want and hosts and ref.host_params:
                # (only the positions the reference writes as a chooser parameter are compared; a launch whose
                # chooser arguments match none of them keeps them all: it is a launch all the same)
                pos = {i: want[ref.host_params.index(t)] for i, t in enumerate(ref.template_args_text)
                       if t in ref.host_params and ref.host_params.index(t) < len(want)}
                hosts = [h for h in hosts if all(i < len(h) and _same(h[i], v) for i, v in pos.items())] or hosts
            out.append(replace(launch, kernel=ref.kernel, template_args=ref.template_args,
                               template_args_text=list(ref.template_args_text), host_template=ref.host_template,
                               host_params=list(ref.host_params), host_template_args=[list(h) for h in hosts],
                               host_defaulted=ref.host_defaulted, resolved_text=ref.resolved_text,
                               dispatch_args=list(ref.dispatch_args), declared=None))
    return out


# Spellings of one type on the platforms nvcc builds for (a launch's canonical `int` for a written `int32_t`).
_SAME_TYPES = {"at::Half": "c10::Half", "half": "__half", "signed": "int", "unsigned": "unsigned int",
               "int32_t": "int", "uint32_t": "unsigned int", "int64_t": "long", "uint64_t": "unsigned long",
               "int16_t": "short", "uint16_t": "unsigned short", "int8_t": "signed char", "uint8_t": "unsigned char",
               "size_t": "unsigned long", "long long": "long", "unsigned long long": "unsigned long"}


def _same(a: str, b: str) -> bool:
    def norm(x: str) -> str:
        x = " ".join(x.replace("std::", "").split())
        return _SAME_TYPES.get(x, x)
    return norm(a) == norm(b)
