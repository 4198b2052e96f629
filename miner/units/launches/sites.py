"""Launch sites: `<<<...>>>` and the launch APIs (cudaLaunchKernel*, hipLaunchKernelGGL), with
template arguments deduced from the call's argument types where none are written."""

from __future__ import annotations

import re
from typing import Any

import clang.cindex as ci

from miner import lazy_re
from miner.frontends.common import split_top
from miner.units.closure.shims import _enclosing_namespaces
from miner.units.launches import deduce_probe, value_spelling
from miner.units.launches.chosen import _variable, chooser_launches, chosen_launches, table_launches
from miner.units.launches.config_objects import launch_config_fields
from miner.units.launches.cursors import _aliases, _overloaded, _primary, _template_args, _tparams, qualify_namespaces
from miner.units.launches.dataflow import _targets_of_launch
from miner.units.launches.functors import lambda_overrides
from miner.units.launches.helpers import note_helper
from miner.units.launches.record import _API, K, Launch
from miner.units.launches.state import _kernel_key, _kernel_refs, _record_aliases, _State, _written_args, host_names
from miner.units.launches.stored import note_member_launch
from miner.units.launches.text import _join_tokens, _macro_launch, _src, substitute
from miner.units.launches.typed_pointers import note_typed_launch
from miner.units.launches.values import _values


def _chevron(st: _State, fn: ci.Cursor, path: str, call: ci.Cursor, children: list[ci.Cursor], cfg: ci.Cursor,
             in_lambda: bool, host_key: tuple[str, int] | None) -> None:
    ctx = st.ctx
    callee = children[0]
    ref = call.referenced
    found = _targets_of_launch(st, _kernel_refs(st, callee), fn, callee)
    cfg_text = _src(ctx, cfg).strip()
    # `<< <grid, block >> >` (spaced chevrons nvcc accepts; the parse saw them joined) reads as `<<<...>>>`.
    if re.match(r"<<\s+<|<\s+<<", cfg_text):
        cfg_text = re.sub(r"\s*>\s*>\s*>?$", ">>>", re.sub(r"^(?:<<\s+<|<\s+<<)", "<<<", cfg_text))
    kind = "<<<>>>"
    args_text: list[str] | None = None
    if cfg_text.startswith("<<<"):
        cfg_text = cfg_text[3:-3] if cfg_text.endswith(">>>") else cfg_text[3:]
        parts: list[str | None] = list(split_top(cfg_text))
        args_text = [_src(ctx, a) for a in children if a is not callee and a is not cfg]
    else:  # inside a launch macro: the configuration comes from its expansion
        loc = cfg.extent.start
        parts, args_text, kind = _macro_launch(ctx, cfg_text, (ctx.norm(loc.file.name), loc.offset)
                                               if loc.file is not None else None)
    parts = parts + [None] * 4
    if len(found) > 1:
        found = _fitting(st, found, len([a for a in children if a is not callee and a is not cfg]))
    if not found:
        var = _local_variable(callee)
        chevron_cfg: dict[str, str | None] = {"grid": parts[0], "block": parts[1], "shared_mem": parts[2] or "0",
                                              "stream": parts[3] or "0"}
        if var is not None and fn is not None and table_launches(
                st, fn, path, call, var, chevron_cfg, args_text or [], kind, in_lambda, host_key):
            return
        # (a pointer a chooser returned, stored here or in the member the pointer is read from)
        if var is not None and fn is not None and var.kind == K.VAR_DECL and chooser_launches(
                st, fn, path, call, var, None, chevron_cfg, args_text or [], kind, in_lambda, host_key):
            return
        # `kernel<<<...>>>(n, args...)` with `kernel` a parameter: a launch helper, whose callers are the launches.
        # (`body_<<<g, b>>>(...)`, `props.fn<<<...>>>(...)`: a member that holds the kernel, launches.stored; before
        # note_helper, which would take `props`, a parameter, for the kernel)
        if kind == "<<<>>>" and fn is not None and not note_member_launch(st, fn, callee, parts, kind) \
                and not note_helper(st, fn, callee, parts, args_text or []):
            # `f<<<g, b>>>(...)` with `Scorer f = ctx->scorer;`: the kernels stored in a `Scorer`.
            note_typed_launch(st, fn, path, call, callee, parts, args_text or [], kind, in_lambda, host_key)
        return
    for r, t, own in found:
        kkey = _kernel_key(st, t)
        concrete = written = None
        if own:
            written = _written_args(st, r, st.kernels[kkey].name) if r is not None else []
            written = [qualify_namespaces(r, w) for w in written] if r is not None else written
            concrete = _template_args(t) if t.kind == K.FUNCTION_DECL else None
            if concrete is None and ref is not None and _kernel_key(st, ref) == kkey:
                concrete = _template_args(ref)
            if concrete is None and written and r is not None:
                # A function (pointer) argument (`k<scalar_t, op<scalar_t>>`), which libclang cannot spell:
                # that position as written, with this launch's own aliases put in (one dispatch case each).
                concrete = _with_declarations(st, t if t.kind == K.FUNCTION_DECL else ref, written[0], r)
            if concrete and any("(lambda at " in a for a in concrete):
                # A lambda's closure type: deduced again with its functor struct (launches.functors) instead.
                kargs = [a for a in children if a is not callee and a is not cfg]
                host = host_names(st, host_key, fn)
                deduced = _deduce(_primary(t), kargs, host, lambda_overrides(st, kargs, host_key))
                concrete, written = None, ([deduced] if deduced else written)
            if concrete is None and not written and t.kind == K.FUNCTION_TEMPLATE:
                host = host_names(st, host_key, fn)
                kargs = [a for a in children if a is not callee and a is not cfg]
                deduced = _deduce(t, kargs, host, lambda_overrides(st, kargs, host_key))
                own_names = [p.spelling for p in _tparams(t)]
                if (not deduced and own_names and all(n in host for n in own_names)
                        and not _converted_whole(t, [_src(ctx, a) for a in kargs], own_names)):
                    # Argument types the parse leaves dependent (`make_view(this->cams())` in an out-of-line
                    # method of `Base<Model>`) match nothing; a kernel whose every template parameter is
                    # named like one of the launching template's is taken to receive that parameter.
                    deduced = own_names
                written = [deduced] if deduced else written
            elif concrete is None and written and t.kind == K.FUNCTION_TEMPLATE and len(written[0]) < len(_tparams(t)):
                # `transform_kernel<T><<<...>>>(n, in, out, f)`: the trailing parameters are deduced from the arguments.
                host = host_names(st, host_key, fn)
                kargs = [a for a in children if a is not callee and a is not cfg]
                deduced = _deduce(t, kargs, host, lambda_overrides(st, kargs, host_key), given=written[0])
                if deduced and len(deduced) > len(written[0]):
                    written = [written[0] + deduced[len(written[0]):]]
        launch = Launch(kernel=kkey, launcher=fn.spelling, path=path, line=call.location.line, kind=kind,
                        config={"grid": parts[0], "block": parts[1], "shared_mem": parts[2] or "0",
                                "stream": parts[3] or "0"},
                        args=args_text or [], template_args=concrete, template_args_text=written[0] if written else [],
                        in_lambda=in_lambda, host_template=host_key)
        if own and concrete is None and host_key is not None and t.kind == K.FUNCTION_TEMPLATE \
                and len(launch.template_args_text) < len(_tparams(t)):
            # Arguments the parse could not type deduce nothing here: the class's probe deduces them per
            # instantiation of the class the launch sits in (class_scope, deduce_probe).
            kargs = [a for a in children if a is not callee and a is not cfg]
            launch._deduce = deduce_probe.prepare(  # type: ignore[attr-defined]
                ctx, t, kargs, st.classes.get(host_key), list(launch.template_args_text))
        if own and r is not None:
            _record_aliases(st, launch, r)
        _values(ctx, launch, fn, call)
        st.launches.append(launch)


_MEMBER_CALL = lazy_re.compile(r"^[\w:]+(?:\.|->)\w+\s*\(.*\)$", re.S)


def _converted_whole(kernel: ci.Cursor, args: list[str], names: list[str]) -> bool:
    """Whether a kernel parameter whose whole type is one of its template parameters (`const Vector x`) receives a
    member call's result (`x.getPOD()` of the launcher's `const Vector &x`): what the call returns is another type (a
    plain view of the object), so the launcher's same-named parameter is not the kernel's. Taken for it, the launch
    of `dot<Vector>` instantiated `dot_kernel<Vector<double, int, int>>`, which has none of the view's members."""
    params = [c for c in kernel.get_children() if c.kind == K.PARM_DECL]
    for p, text in zip(params, args, strict=False):
        whole = re.sub(r"\b(?:const|volatile)\b|[\s&]", "", p.type.spelling)
        if whole in names and _MEMBER_CALL.match(text.strip()):
            return True
    return False


def _local_variable(callee: ci.Cursor) -> ci.Cursor | None:
    """The function's own variable a launch calls (`f<<<...>>>` with `auto f = table[i];`), not a parameter."""
    var, member = _variable(callee)
    if var is None or member is not None or var.semantic_parent is None or \
            var.semantic_parent.kind in (K.TRANSLATION_UNIT, K.NAMESPACE):
        return None
    return var


def _with_declarations(st: _State, spec: ci.Cursor | None, written: list[str], r: ci.Cursor) -> list[str] | None:
    """Template arguments of a specialization some of whose arguments are declarations (functions): types and
    integers from the AST, declarations from the written text with the launch's non-dependent aliases put in;
    None where anything stays dependent or the two lists do not line up."""
    if spec is None or _kernel_key(st, spec) is None:
        return None
    n = spec.get_num_template_arguments()
    if n <= 0 or n != len(written):
        return None
    alias = _aliases(st.ctx, r, st.lists)
    if any(not v for k, v in alias.items() if re.search(rf"\b{re.escape(k)}\b", " ".join(written))):
        return None
    out: list[str] = []
    for i in range(n):
        try:
            kind = spec.get_template_argument_kind(i)
        except ValueError:
            return None
        if kind == ci.TemplateArgumentKind.DECLARATION:
            out.append(substitute(written[i], {k: v for k, v in alias.items() if v}))
        elif kind in (ci.TemplateArgumentKind.TYPE, ci.TemplateArgumentKind.INTEGRAL):
            one = _template_args_at(spec, i)
            if one is None:
                return None
            out.append(one)
        else:
            return None
    return out


def _template_args_at(spec: ci.Cursor, i: int) -> str | None:
    if spec.get_template_argument_kind(i) == ci.TemplateArgumentKind.TYPE:
        return value_spelling.type_spelling(spec.get_template_argument_type(i))
    ptypes = [p.type.get_canonical().spelling if p.kind == K.TEMPLATE_NON_TYPE_PARAMETER else ""
              for p in _tparams(_primary(spec))]
    t = ptypes[i] if i < len(ptypes) else ""
    if t == "bool":
        return "true" if spec.get_template_argument_unsigned_value(i) else "false"
    if t.startswith("unsigned"):
        return str(spec.get_template_argument_unsigned_value(i))
    return str(spec.get_template_argument_value(i))


def _is_pack(c: ci.Cursor) -> bool:
    return any(t.spelling == "..." for t in c.get_tokens())


def _fitting(st: _State, found: list[tuple[ci.Cursor | None, ci.Cursor, bool]], nargs: int
             ) -> list[tuple[ci.Cursor | None, ci.Cursor, bool]]:
    """Of several same-name kernels a dependent launch may reach (an overload set), those it can call: no more
    written template arguments than template parameters, and as many call arguments as parameters (packs and
    defaults aside). `k<T, 4><<<...>>>(a, b)` is no launch of `template <int N> k(float*)`; if none fits, all."""
    out = []
    for r, t, own in found:
        prim = _primary(t)
        tps = _tparams(prim)
        parms = [c for c in prim.get_children() if c.kind == K.PARM_DECL]
        key = _kernel_key(st, t)
        written = _written_args(st, r, st.kernels[key].name) if own and r is not None and key in st.kernels else []
        if written and written[0] and not any(_is_pack(p) for p in tps) and len(written[0]) > len(tps):
            continue
        if not any(_is_pack(p) for p in parms) and (
                nargs > len(parms) or nargs < len([p for p in parms if not any(
                    tok.spelling == "=" for tok in p.get_tokens())])):
            continue
        out.append((r, t, own))
    return out or found


_CV = lazy_re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b|&")


def _type_text(t: ci.Type, host: list[str]) -> str:
    """A type as text: canonical, with a host template's parameters by name (`type-parameter-0-1` -> Tg)."""
    text = value_spelling.type_spelling(t)
    if re.search(r",\s*>|<\s*,|,\s*,", text):
        # libclang spells a template template parameter used as an argument as nothing
        # (`typename Map<T, >::index_type`): the type as written (`index_type *`) is the better text.
        text = t.spelling

    outer = getattr(host, "outer", [])  # (state.HostNames: the enclosing class templates' parameters)

    def name(m: re.Match[str]) -> str:
        depth, index = int(m.group(1)), int(m.group(2))
        level = outer[depth] if depth < len(outer) else host if depth == len(outer) else []
        return level[index] if index < len(level) else m.group(0)
    return re.sub(r"type-parameter-(\d+)-(\d+)", name, text)


def _arg_type(arg: ci.Cursor, host: list[str]) -> str:
    """An argument's type as text for deduction. A dependent specialization's canonical spelling names the
    class template's own parameters (`Chunks<N>` for `Chunks<depth>`): then its written spelling, which names
    the host's. A pack expansion of a host parameter pack (`args...`) is that parameter's type (`Ts...`)."""
    if arg.kind == K.PACK_EXPANSION_EXPR or arg.type.spelling == "<dependent type>":
        ref = next((c.referenced for c in arg.walk_preorder() if c.kind == K.DECL_REF_EXPR), None)
        if ref is not None and ref.kind == K.PARM_DECL and ref.type.spelling.endswith("..."):
            return " ".join(_CV.sub(" ", ref.type.spelling).split())
    if arg.type.spelling == "<dependent type>" and (own := _this_type(arg)):
        return own
    if (arg.type.spelling == "<dependent type>" or _placeholder(arg.type.spelling)) and (
            declared := _declared_type(arg)):
        return declared
    canon = " ".join(_CV.sub(" ", _type_text(arg.type, host)).split())
    written = " ".join(_CV.sub(" ", arg.type.spelling).split())
    words = set(re.findall(r"[A-Za-z_]\w*", written))
    names = set(host) | {n for level in getattr(host, "outer", []) for n in level}
    if canon != written and words & names and not set(re.findall(r"[A-Za-z_]\w*", canon)) & names \
            and "type-parameter" not in canon:
        return written
    if canon != written and words & names and _own_parameters(arg.type) & (set(re.findall(r"[A-Za-z_]\w*", canon))
                                                                         - names - words):
        # `tree_t<T, _dims>` for `tree_t<T, D>`: the canonical spelling of a dependent specialization names the
        # class template's own value parameter where the host's is meant (its type parameters it spells by
        # position, read as the host's above); the written spelling names the host's.
        return written
    return canon


def _own_parameters(t: ci.Type) -> set[str]:
    """The template parameter names of the class template a (pointer to, reference to) dependent specialization
    names; empty for any other type."""
    while t.kind in (ci.TypeKind.POINTER, ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
        t = t.get_pointee()
    d = t.get_declaration()
    return {p.spelling for p in _tparams(d)} if d.kind == K.CLASS_TEMPLATE else set()


def _this_type(arg: ci.Cursor) -> str | None:
    """`*this` (or `this`) passed by a member of a class template: the parse leaves the expression dependent (an
    operator call where some `operator*` is visible, a copy for a by-value parameter), but its type is the class
    with its own parameters (`table<K, V, H>`), which the class's probe evaluates per instantiation like any text
    in its scope; None for any other expression."""
    toks = [t.spelling for t in arg.get_tokens() if t.spelling not in "()"]
    if toks not in (["*", "this"], ["this"]):
        return None
    this = next((c for c in arg.walk_preorder() if c.kind == K.CXX_THIS_EXPR), None)
    if this is None or this.type.kind != ci.TypeKind.POINTER:
        return None
    pointee = this.type.get_pointee()
    text = " ".join(_CV.sub(" ", pointee.spelling).split())
    if not text or "dependent" in text:
        return None
    decl = pointee.get_declaration()
    parent = decl.semantic_parent if decl is not None else None
    if parent is not None and parent.kind == K.NAMESPACE and "::" not in text.split("<", 1)[0]:
        # (spelled as the class names itself; the unit's explicit instantiation sits outside its namespace)
        text = "::".join((*_enclosing_namespaces(decl), text))
    return text if toks[0] == "*" else f"{text} *"


def _declared_type(arg: ci.Cursor, depth: int = 0) -> str | None:
    """The type a dependent argument's declaration spells (`ref()` in a class template's member, whose `this` is
    dependent: the method's return type as written, `ref_type`, which names a member of the class that the
    class's probe reads per instantiation; a local `auto view = get_view();`: its initializer's); None where it
    spells nothing better (`auto` all the way, dependent again)."""
    c = _bare(arg)
    d = c.referenced if c.kind in (K.CALL_EXPR, K.MEMBER_REF_EXPR, K.DECL_REF_EXPR) else None
    if d is None and c.kind == K.MEMBER_REF_EXPR:
        return _dependent_member_type(c, depth)
    if d is None:
        return None
    if d.kind in (K.CXX_METHOD, K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
        t = d.result_type
    elif d.kind in (K.FIELD_DECL, K.VAR_DECL, K.PARM_DECL):
        t = d.type
    else:
        return None
    text = " ".join(_CV.sub(" ", t.spelling).split())
    if d.kind == K.VAR_DECL and depth < 2 and (_placeholder(text) or "dependent" in text):
        init = [ch for ch in d.get_children() if ch.kind.is_expression()]
        return _initializer_type(init[-1], depth + 1) if init else None
    return text if text and "dependent" not in text and not _placeholder(text) else None


def _placeholder(text: str) -> bool:
    """Whether a type's spelling is (or holds) a placeholder the template's parse has not deduced: `auto`,
    `auto *` and `const auto *const` of a local in a host template, `decltype(auto)`."""
    return re.search(r"\bauto\b", text) is not None


def _initializer_type(init: ci.Cursor, depth: int) -> str | None:
    """`_declared_type` of a local's initializer; pointer arithmetic (`auto *part = target + i * n;`) has its
    pointer operand's type."""
    c = _bare(init)
    if c.kind == K.BINARY_OPERATOR:
        for side in c.get_children():
            t = _declared_type(side, depth)
            if t is not None and t.endswith("*"):
                return t
        return None
    return _declared_type(init, depth)


def _bare(c: ci.Cursor) -> ci.Cursor:
    while c.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR) and len(kids := list(c.get_children())) == 1:
        c = kids[0]
    return c


_MEMBER_DEPTH = 4  # bases followed, and `auto` initializers read, to find a member's declaration


def _dependent_member_type(c: ci.Cursor, depth: int) -> str | None:
    """`s.rows` where `s` is a `Slots<W>` (a class template of the host's class, specialized by the member
    template's own parameter): the parse leaves the member unresolved (no declaration, `<dependent type>`), but
    the class template's definition declares it, here or in a base (`LaneSlots<W> : Slots<W>`): the member's
    type as written there, the class's parameters replaced by the object's arguments (`key_t *`, a name of the
    enclosing class that its probe reads per instantiation). None where the object's class is not found."""
    kids = list(c.get_children())
    toks = [t.spelling for t in c.get_tokens()]
    if len(kids) != 1 or len(toks) < 3 or toks[-2] not in (".", "->") or not toks[-1].isidentifier():
        return None
    found = _object_class(_bare(kids[0]), toks[-2] == "->", depth)
    if found is None:
        return None
    cls, mapping = found
    for _ in range(_MEMBER_DEPTH):
        bases = []
        for ch in cls.get_children():
            if ch.kind == K.FIELD_DECL and ch.spelling == toks[-1]:
                text = " ".join(_CV.sub(" ", ch.type.spelling).split())
                text = substitute(text, mapping) if mapping else text
                return text if text and "dependent" not in text else None
            if ch.kind == K.CXX_BASE_SPECIFIER:
                bases.append(ch)
        if len(bases) != 1:
            return None
        base = _class_of_type(bases[0].type, " ".join(_CV.sub(" ", bases[0].type.spelling).split()))
        if base is None:
            return None
        cls, own = base
        mapping = {k: substitute(v, mapping) for k, v in own.items()} if mapping else own
    return None


def _object_class(obj: ci.Cursor, arrow: bool, depth: int) -> tuple[ci.Cursor, dict[str, str]] | None:
    """The class (template) definition an object expression's type names, with its parameters mapped to the
    arguments the type writes (`Slots<W>`: {W_of_the_class: W}); an `auto` local's from its initializer."""
    t = obj.type
    if arrow and t.kind == ci.TypeKind.POINTER:
        t = t.get_pointee()
    text = " ".join(_CV.sub(" ", t.spelling).split())
    if text not in ("<dependent type>", "auto"):
        if arrow:
            text = text.rstrip("* ").strip() if text.endswith("*") else ""
        return _class_of_type(t, text) if text else None
    d = obj.referenced if obj.kind == K.DECL_REF_EXPR else None
    if d is None or d.kind != K.VAR_DECL or depth >= _MEMBER_DEPTH or arrow:
        return None
    init = [ch for ch in d.get_children() if ch.kind.is_expression()]
    if not init:
        return None
    call = _bare(init[-1])
    if call.kind != K.CALL_EXPR:
        return None
    callee = call.referenced
    decls = [callee] if callee is not None else _callee_decls(call)
    results = {(r.result_type.spelling, r.result_type.get_declaration().hash) for r in decls}
    if len(results) != 1:
        return None
    r = decls[0].result_type
    return _class_of_type(r, " ".join(_CV.sub(" ", r.spelling).split()))


def _class_of_type(t: ci.Type, text: str) -> tuple[ci.Cursor, dict[str, str]] | None:
    if t.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
        t = t.get_pointee()
    decl = t.get_declaration()
    if decl is None or decl.kind.is_invalid() or decl.kind not in (K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE):
        return None
    prim = _primary(decl)
    if prim.kind == K.CLASS_TEMPLATE:
        decl = prim
    if not decl.is_definition():
        decl = decl.get_definition() or decl
    mapping: dict[str, str] = {}
    if decl.kind == K.CLASS_TEMPLATE:
        m = re.search(r"<(.*)>\s*&?$", text)
        names = [p.spelling for p in _tparams(decl)]
        args = split_top(m.group(1)) if m else []
        if len(args) != len(names):
            return None
        mapping = {n: a for n, a in zip(names, args, strict=True) if n != a}
    return decl, mapping


def _callee_decls(call: ci.Cursor) -> list[ci.Cursor]:
    """The functions a dependent call may name (`pattern_for<W>(s)` in a member template: an overload set)."""
    kids = list(call.get_children())
    if not kids:
        return []
    head = _bare(kids[0])
    for c in head.walk_preorder():
        if c.kind == K.OVERLOADED_DECL_REF:
            return [d for d in _overloaded(c) if d.kind in (K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.FUNCTION_DECL)]
        if c.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR) and c.referenced is not None:
            r = c.referenced
            found = _overloaded(r) if r.kind == K.OVERLOADED_DECL_REF else [r]
            return [d for d in found if d.kind in (K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.FUNCTION_DECL)]
    return []


def _whole_type(arg: ci.Cursor, host: list[str]) -> str | None:
    """An argument's type as a template parameter taken whole by value deduces it: references and top-level
    cv dropped, a pointee's kept (`const int *` deduces `InputIt = const int *`)."""
    if arg.type.spelling == "<dependent type>":
        return None
    t = arg.type.get_canonical()
    if t.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE):
        t = t.get_pointee()
    text = re.sub(r"\s+(const|volatile)\s*$", "", _type_text(t, host)).strip()
    if "*" not in text and "&" not in text:
        text = re.sub(r"^(?:(?:const|volatile)\s+)+", "", text)
    return " ".join(text.split()) or None


def _deduce(kernel: ci.Cursor, args: list[ci.Cursor], host: list[str],
            overrides: dict[int, str] | None = None, given: list[str] | None = None,
            whole: bool = False) -> list[str] | None:
    """Template arguments a launch without `<...>` deduces from its arguments' types: the kernel's
    parameter types with its template parameters as holes, matched against the argument types
    (`adamw_kernel3<<<...>>>(params, grads)` inside `adamw_update<Tp, Tg>` gives <Tp, Tg>). `overrides`
    give the type of an argument by position where the AST has none to spell (a lambda's functor struct);
    `given` the leading arguments written at the launch (`k<T, RNG, 4><<<...>>>(n, rng, out, f)` deduces F only);
    `whole`: a parameter that is a template parameter alone keeps its argument's pointee cv (`_whole_type`)."""
    tps = [p.spelling for p in _tparams(kernel)]
    parms = [c for c in kernel.get_children() if c.kind == K.PARM_DECL]
    if not tps or not parms:
        return None
    fixed = dict(zip(tps, given or [], strict=False))
    bound: dict[str, str] = dict(fixed)
    # Holes bound only from a dependent argument's declared type (`key_t *` read from the class template that
    # declares the member): an argument the AST types (`unsigned long`) replaces that text where they differ.
    declared: set[str] = set()
    for i, (parm, arg) in enumerate(zip(parms, args, strict=False)):
        pat = " ".join(_CV.sub(" ", parm.type.spelling).split())
        act = (overrides or {}).get(i) or _arg_type(arg, host)
        weak = i not in (overrides or {}) and (arg.type.spelling == "<dependent type>"
                                               or _placeholder(arg.type.spelling))
        if whole and i not in (overrides or {}) and pat in tps and (exact := _whole_type(arg, host)) \
                and " ".join(_CV.sub(" ", exact).split()) == act:
            act = exact  # (`whole`: a member template's call, `InputIt first` given a `const int *`)
        if not pat or not act or "type-parameter" in act or "<dependent" in act or _placeholder(act):
            continue
        if pat.endswith("...") and act.endswith("..."):
            # A pack passed on whole (`ArgTypes... args` given `args...` of the host's `Ts... args`).
            pat, act = pat[:-3].strip(), act[:-3].strip()
        holes = [n for n in tps if n.isidentifier() and re.search(rf"\b{re.escape(n)}\b", pat)]
        if not holes:
            continue
        rx, used, last = "", set(), set()
        pieces = re.split(r"\b(" + "|".join(re.escape(n) for n in holes) + r")\b", pat)
        for k, piece in enumerate(pieces):
            if piece in holes:
                rx += f"(?P={piece})" if piece in used else f"(?P<{piece}>.+?)"
                used.add(piece)
                if k + 1 < len(pieces) and pieces[k + 1].lstrip().startswith(">"):
                    last.add(piece)
            else:
                rx += re.escape(piece)
        m = re.fullmatch(rx, act)
        if not m:
            continue
        for n in holes:
            got = split_top(m.group(n).strip())
            if len(got) > 1 and n not in last:
                return None
            # The last written argument of `Tensor<T, 2, Inner>` against the argument's full type
            # `Tensor<float, 2, true, long, Traits>`: what follows it are the template's defaults.
            if n in fixed:
                continue
            if n not in bound:
                bound[n] = got[0]
                if weak:
                    declared.add(n)
            elif bound[n] != got[0]:
                if weak:
                    continue
                if n not in declared:
                    return None  # two arguments disagree: leave it to a better source
                bound[n] = got[0]
                declared.discard(n)
            elif not weak:
                declared.discard(n)
    out = []
    params = _tparams(kernel)
    for i, n in enumerate(tps):  # trailing parameters may have defaults (filled by instantiations.plan)
        if n not in bound:
            # A defaulted parameter ahead of a deduced one (`template <int kItems = 4, typename Fn> void
            # run(size_t n, Fn fn)` called as `run(n, lambda)`): its default, the earlier ones put in.
            default = _param_default(params[i]) if any(m in bound for m in tps[i + 1:]) else None
            if default is None:
                break
            bound[n] = substitute(default, dict(zip(tps[:i], out, strict=False)))
        out.append(bound[n])
    return out or None


def _param_default(p: ci.Cursor) -> str | None:
    """A template parameter's default as written (`128` of `int kThreads = 128`), None without one."""
    tokens = [t.spelling for t in p.get_tokens()]
    if "=" not in tokens:
        return None
    return _join_tokens(tokens[tokens.index("=") + 1:]) or None


def _api_launch(st: _State, fn: ci.Cursor, path: str, call: ci.Cursor, children: list[ci.Cursor], api: str,
                in_lambda: bool, host_key: tuple[str, int] | None) -> None:
    ctx = st.ctx
    args = children[1:]
    idx = _API[api]
    if len(args) <= idx:
        return
    found = _targets_of_launch(st, _kernel_refs(st, args[idx]), fn, args[idx])
    texts = [_src(ctx, a) for a in args]
    ex = api in ("cudaLaunchKernelEx", "cudaLaunchKernelExC")
    if not found and api.startswith("cuda"):
        # The kernel is one of the function's parameters: a launch helper, as for `kernel<<<...>>>`.
        cfg = launch_config_fields(st, fn, call, args[0]) if ex else _api_config(texts)
        kargs = texts[idx + 1:] if api == "cudaLaunchKernelEx" else [texts[3]] if len(texts) > 3 else []
        parts = [cfg[k] for k in ("grid", "block", "shared_mem", "stream")]
        # (`cudaLaunchKernel(fn_, ...)`: a member, launches.stored; the member of a local a chooser filled,
        # `spec.run`, is launches.chosen's too: on to it below)
        if not note_member_launch(st, fn, args[idx], parts, api) and \
                note_helper(st, fn, args[idx], parts, kargs, kind=api):
            return
    if not found and idx == 0 and not ex:
        # No kernel named: a pointer a function chose (`k = pick<T>(p); cudaLaunchKernel(k, ...)`).
        chosen_launches(st, fn, path, call, args[0], _api_config(texts), [texts[3]] if len(texts) > 3 else [],
                        api, in_lambda, host_key)
        return
    seen: set[tuple[Any, ...]] = set()
    for r, t, own in found:
        kkey = _kernel_key(st, t)
        written = _written_args(st, r, st.kernels[kkey].name) if own and r is not None else []
        concrete = _template_args(t) if own and t.kind == K.FUNCTION_DECL else None
        sig = (kkey, tuple(concrete or ()), tuple(written[0]) if written else ())
        if sig in seen:
            continue
        seen.add(sig)
        cfg = _api_config(texts)
        if ex:  # the fields of the `cudaLaunchConfig_t` it points to, as set before the launch
            cfg = {**launch_config_fields(st, fn, call, args[0]), "config": texts[0]}
        launch = Launch(kernel=kkey, launcher=fn.spelling, path=path, line=call.location.line, kind=api, config=cfg,
                        args=texts[idx + 1:] if api == "cudaLaunchKernelEx" else [texts[3]] if len(texts) > 3 else [],
                        template_args=concrete, template_args_text=written[0] if written else [],
                        in_lambda=in_lambda, host_template=host_key)
        if own and r is not None:
            _record_aliases(st, launch, r)
        _values(ctx, launch, fn, call)
        st.launches.append(launch)


def _api_config(texts: list[str]) -> dict[str, str | None]:
    """grid, block, shared memory, stream of `cudaLaunchKernel(k, grid, block, args, smem, stream)`."""
    return {"grid": texts[1] if len(texts) > 1 else None, "block": texts[2] if len(texts) > 2 else None,
            "shared_mem": texts[4] if len(texts) > 4 else "0", "stream": texts[5] if len(texts) > 5 else "0"}
