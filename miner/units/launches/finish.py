"""A launch's template arguments finished: one list per host instantiation, host parameters
substituted, `conditional_t<is_same<...>>` folded, defaults where nothing is known."""

from __future__ import annotations

import re

import clang.cindex as ci

from miner import lazy_re
from miner.frontends.common import split_top
from miner.units.launches import used_methods, value_spelling
from miner.units.launches.cursors import _default_for
from miner.units.launches.record import _IDENT, K, Launch
from miner.units.launches.state import _State
from miner.units.launches.tags import read_tags
from miner.units.launches.text import substitute, substitute_aliases

_MAX_LIST_VARIANTS = 64


_COND = lazy_re.compile(
    r"(?:std::)?conditional_t\s*<\s*(?:std::)?is_same(?:_v\s*<|\s*<)\s*([\w:\s]+?)\s*,\s*([\w:\s]+?)"
                   r"\s*>(?:::value)?\s*,\s*([\w:\s]+?)\s*,\s*([\w:\s]+?)\s*>")


_SAME = {"at::Half": "c10::Half", "at::BFloat16": "c10::BFloat16", "half": "__half", "signed": "int",
         "unsigned": "unsigned int", "signed int": "int"}


_DISTINCT = {"float", "double", "int", "unsigned int", "long", "unsigned long", "long long", "unsigned long long",
             "short", "unsigned short", "char", "signed char", "unsigned char", "bool", "c10::Half",
             "c10::BFloat16", "__half", "__nv_bfloat16"}


_MINMAX = lazy_re.compile(r"(?<![\w:])(?:std::)?(min|max)\s*\(\s*(-?\d+)[uUlL]*\s*,\s*(-?\d+)[uUlL]*\s*\)")


def _fold_conditional(text: str) -> str:
    """`std::conditional_t<std::is_same<float, at::Half>::value, int2, int4>` once the class template's
    parameter is bound -> `int4`, where both compared types are known builtins (else left as written).
    `std::min(2u, 1)` of two integers (a host constant over a bound `uint32_t` parameter, whose value lost its
    type: no `std::min` overload takes `unsigned` and `int`) -> `1`."""
    def one(m: re.Match[str]) -> str:
        a, b = (_SAME.get(" ".join(x.split()), " ".join(x.split())) for x in (m.group(1), m.group(2)))
        if a == b:
            return m.group(3).strip()
        return m.group(4).strip() if a in _DISTINCT and b in _DISTINCT else m.group(0)
    text = _MINMAX.sub(lambda m: str((min if m.group(1) == "min" else max)(int(m.group(2)), int(m.group(3)))), text)
    return _COND.sub(one, text)


# Sizes of the fundamental and CUDA vector types, for `sizeof(T)` in a host constant once T is bound
# (`constexpr int THREADS_PER_VALUE = Dh_MAX * sizeof(T) / 16;`).
_SIZEOF = {
    **dict.fromkeys(("char", "signed char", "unsigned char", "bool", "int8_t", "uint8_t"), 1),
    **dict.fromkeys(("short", "unsigned short", "int16_t", "uint16_t", "half", "__half", "__nv_bfloat16",
                     "nv_bfloat16", "c10::Half", "at::Half", "c10::BFloat16", "at::BFloat16"), 2),
    **dict.fromkeys(("int", "unsigned int", "unsigned", "float", "int32_t", "uint32_t", "half2", "__half2",
                     "__nv_bfloat162", "nv_bfloat162"), 4),
    **dict.fromkeys(("double", "long", "unsigned long", "long long", "unsigned long long", "int64_t", "uint64_t",
                     "size_t", "std::size_t", "float2", "int2", "uint2"), 8),
    **dict.fromkeys(("float4", "int4", "uint4", "double2"), 16),
}
_SIZEOF_RX = lazy_re.compile(r"\bsizeof\s*\(\s*([\w:\s]+?)\s*\)")
_IS_SAME = lazy_re.compile(
    r"(?:std::)?is_same(?:_v\s*<|\s*<)")
_COND_LITERAL = lazy_re.compile(
    r"(?:std::)?conditional_t\s*<\s*\(?(true|false)\)?\s*,\s*([\w:\s]+?)\s*,\s*([\w:\s]+?)\s*>")
_TEMPLATE_ID = lazy_re.compile(r"^((?:[A-Za-z_]\w*::)*)([A-Za-z_]\w*)\s*<(.*)>$", re.S)


def _fold_traits(st: _State, text: str) -> str:
    """`sizeof(float)` and `std::is_same<A, B>::value` once a host instantiation bound their types: the
    value where the answer is certain (alias templates of the project expanded first), else as written."""
    text = _SIZEOF_RX.sub(lambda m: str(_SIZEOF.get(" ".join(m.group(1).split()), m.group(0))), text)
    out, pos = "", 0
    for m in _IS_SAME.finditer(text):
        if m.start() < pos:
            continue
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"<": 1, ">": -1}.get(text[i], 0)
            i += 1
        if depth:
            break
        args = split_top(text[m.end():i - 1])
        tail = re.match(r"\s*::\s*value\b", text[i:]) if "_v" not in m.group(0) else re.match("", "")
        if len(args) != 2 or tail is None:
            continue
        same = _same_type(st, args[0], args[1])
        if same is None:
            continue
        out += text[pos:m.start()] + ("true" if same else "false")
        pos = i + tail.end()
    return _COND_LITERAL.sub(lambda m: m.group(2 if m.group(1) == "true" else 3).strip(), out + text[pos:])


def _norm_type(st: _State, t: str, depth: int = 0) -> str:
    """A type's text with the project's alias templates expanded (`Cross_params<float>` ->
    `Params<float, true>`), namespaces dropped, spaces normalized."""
    t = " ".join(t.replace("typename ", "").split())
    m = _TEMPLATE_ID.match(t)
    if m is None or depth > 4:
        return _SAME.get(t.split("::")[-1] if "::" in t and not t.startswith(("c10::", "at::")) else t, t)
    name, args = m.group(2), [_norm_type(st, a, depth + 1) for a in split_top(m.group(3))]
    for gp, gc in (x for lst in st.ctx.groups_named(name) for x in lst):
        if gp.kind != "TYPE_ALIAS_TEMPLATE_DECL":
            continue
        params = [c.spelling for c in gc.get_children() if c.kind.name.startswith("TEMPLATE_") and
                  c.kind.name.endswith("PARAMETER")]
        alias = [c for c in gc.get_children() if c.kind.name == "TYPE_ALIAS_DECL"]
        if alias and len(params) == len(args):
            under = alias[0].underlying_typedef_type.spelling
            return _norm_type(st, substitute(under, dict(zip(params, args, strict=True))), depth + 1)
    return f"{name}<{', '.join(args)}>"


def _same_type(st: _State, a: str, b: str) -> bool | None:
    """Whether two spelled types are the same: True/False where certain, None otherwise."""
    a, b = _norm_type(st, a), _norm_type(st, b)
    if a == b:
        return True
    if a in _DISTINCT and b in _DISTINCT:
        return False
    ma, mb = _TEMPLATE_ID.match(a), _TEMPLATE_ID.match(b)
    if ma and mb and ma.group(2) == mb.group(2):
        xa, xb = split_top(ma.group(3)), split_top(mb.group(3))
        if len(xa) == len(xb):
            for p, q in zip(xa, xb, strict=True):
                if p == q:
                    continue
                lit = re.compile(r"-?\d+|true|false")
                if (lit.fullmatch(p) and lit.fullmatch(q)) or (p in _DISTINCT and q in _DISTINCT):
                    return False  # one argument certainly differs: distinct specializations
                return None
    return None


def _finish(st: _State, rec: Launch, insts: dict[tuple[str, int], list[list[str]]]) -> None:
    """Resolve a record's written arguments: aliases, constants, and the host template's instantiations
    (or its parameters' defaults when none is known); once per value of each list a generic lambda
    parameter in them is dispatched over."""
    alias = getattr(rec, "_aliases", {})
    lists = getattr(rec, "_lists", {})
    for attr in ("_aliases", "_lists"):
        if hasattr(rec, attr):
            delattr(rec, attr)
    if rec.host_template is not None:
        params = st.host_params.get(rec.host_template, [])
        rec.host_params = [p.spelling for p in params]
    variants: list[dict[str, str]] = [{}]
    grouped: set[object] = set()
    for name, vals in lists.items():
        group = getattr(vals, "group", None)
        if group is None:
            variants = [{**v, name: x} for v in variants for x in vals][:_MAX_LIST_VARIANTS]
        elif group not in grouped:
            # The tags of one call of a lambda of several `auto` parameters go in together (tags.TagColumn).
            grouped.add(group)
            names = [n for n, x in lists.items() if getattr(x, "group", None) == group]
            rows = dict.fromkeys(zip(*(lists[n] for n in names), strict=True))
            variants = [{**v, **dict(zip(names, row, strict=True))} for v in variants for row in rows]
            variants = variants[:_MAX_LIST_VARIANTS]
    if not lists:
        _finish_one(st, rec, insts, alias, {})
        return
    host_args, defaulted = list(rec.host_template_args), rec.host_defaulted
    for variant in variants:
        rec.resolved_text, rec.host_template_args, rec.host_defaulted = None, [], False
        _finish_one(st, rec, insts, alias, variant)
        if rec.resolved_text is not None and rec.resolved_text not in rec.dispatch_args:
            rec.dispatch_args.append(rec.resolved_text)
        for args in rec.host_template_args:
            if args not in host_args:
                host_args.append(args)
        defaulted = defaulted or rec.host_defaulted
    rec.resolved_text, rec.host_template_args, rec.host_defaulted = None, host_args, defaulted and bool(host_args)


def _finish_one(st: _State, rec: Launch, insts: dict[tuple[str, int], list[list[str]]], alias: dict[str, str],
                variant: dict[str, str]) -> None:
    names = set(rec.host_params)
    texts = [substitute(read_tags(substitute_aliases(t, {k: v for k, v in alias.items() if v and k not in names}),
                                  set(variant)), variant) for t in rec.template_args_text]
    if not texts:
        return
    rec.resolved_text = [st.resolver(t, names) for t in texts]
    idents = {n for t in rec.resolved_text for n in _IDENT.findall(t)}
    used = idents & names
    # A name that depends on something other than the host template's parameters (an enclosing class
    # template's, a generic lambda's `auto`): these arguments cannot be made concrete here.
    unknown = {n for n, v in alias.items() if not v} - names
    if rec.template_args is not None or rec.host_template is None or not used or idents & unknown:
        if used or idents & unknown:
            rec.resolved_text = None
        return
    # An instantiation that binds fewer parameters than the text uses (a dependent call whose trailing arguments
    # neither the parse nor the probe deduced) would leave a parameter's name in the arguments, which names
    # nothing in the unit ("identifier Value_type is undefined"): the launch takes defaults instead.
    known = [i for i in insts.get(rec.host_template, []) if used <= set(rec.host_params[:len(i)])]
    if known and st.class_keys.get(rec.host_template) == rec.host_template:
        # (a method of a class template: the instances that use it)
        known = used_methods.used_instances(st, rec.host_template, rec.launcher, known)
    if known:
        params = st.host_params.get(rec.host_template, [])
        for inst in known:
            mapping = dict(zip(rec.host_params, inst, strict=False))
            # A host parameter of enum type recorded as its value (`mix_all<Variant::Light>` as 1) names the
            # enumerator again where the text puts it into a type (`Props<V>{}` needs `Variant`, not `int`);
            # an argument that is the parameter alone stays its value (render casts it to the kernel's type).
            typed = dict(mapping)
            for p in params:
                t = p.type.get_canonical()
                if p.kind == K.TEMPLATE_NON_TYPE_PARAMETER and t.kind == ci.TypeKind.ENUM \
                        and re.fullmatch(r"-?\d+", mapping.get(p.spelling, "").strip()):
                    typed[p.spelling] = value_spelling.value_of_type(t, mapping[p.spelling].strip())
            args = [_fold_conditional(_fold_traits(st, st.resolver(
                        substitute(t, mapping if t.strip() in names else typed), set())))
                    for t in rec.resolved_text]
            if args not in rec.host_template_args:
                rec.host_template_args.append(args)
    else:
        params = st.host_params.get(rec.host_template, [])
        mapping = {p.spelling: _default_for(p) for p in params}
        mapping.update(_bounded_defaults(st.host_cursors.get(rec.host_template), params, mapping))
        mapping.update(_sibling_arguments(st, rec.host_template, insts))
        rec.host_template_args.append([_fold_conditional(substitute(t, mapping)) for t in rec.resolved_text])
        rec.host_defaulted = True
    rec.resolved_text = None


def _sibling_arguments(st: _State, key: tuple[str, int] | None, insts: dict[tuple[str, int], list[list[str]]]
                       ) -> dict[str, str]:
    """For a class partial specialization no known instantiation selects (`engine<TVoxel, PlainIndex>` where the
    configuration header's typedef picks `BlockIndex`: `template class engine<voxel_s, TheIndex>;`), its parameters
    that stand alone at a position of its argument list take what the class's first instantiation gives there
    (`TVoxel` = `voxel_s`): the type the project's other configuration would use, and a better default than a
    scalar for a class the kernel reads members of. Still an inferred argument (the launch stays `host_defaulted`).
    Empty where the key is no such specialization or a parameter is left over."""
    for primary, parts in st.partials.items():
        for pkey, pattern, params in parts:
            if pkey != key or not params:
                continue
            for inst in [*insts.get(primary, []), *st.routed.get(primary, [])]:
                got = {p.strip(): inst[i] for i, p in enumerate(pattern) if i < len(inst) and p.strip() in params}
                if set(params) <= set(got):
                    return got
    return {}


# Values tried, largest first, for a value parameter that indexes an array of known size.
_BOUNDED_TRIES = (128, 64, 32, 16, 8, 4, 2, 1, 0)


def _bounded_defaults(fn: ci.Cursor | None, params: list[ci.Cursor], mapping: dict[str, str]) -> dict[str, str]:
    """Defaults of a host template's value parameters that its body uses in a subscript of an array of known size
    (`max_tensors[depth - 1]` with `constexpr int max_tensors[5]`): 128 reads past the end, and a class it puts
    the parameter into (`Meta<depth>` sizing its members by the same table) is no constant expression then. The
    largest value that keeps every such subscript in bounds; the usual default where none does."""
    values = [p.spelling for p in params if p.kind == K.TEMPLATE_NON_TYPE_PARAMETER and mapping.get(p.spelling)
              and re.fullmatch(r"\d+", mapping[p.spelling])]
    if fn is None or not values:
        return {}
    bounds: dict[str, list[tuple[str, int]]] = {}
    for c in fn.walk_preorder():
        if c.kind != K.ARRAY_SUBSCRIPT_EXPR:
            continue
        kids = list(c.get_children())
        if len(kids) != 2:
            continue
        base = kids[0]
        while base.kind == K.UNEXPOSED_EXPR and len(inner := list(base.get_children())) == 1:
            base = inner[0]
        d = base.referenced if base.kind == K.DECL_REF_EXPR else None
        if d is None or d.kind != K.VAR_DECL or d.type.kind != ci.TypeKind.CONSTANTARRAY:
            continue
        size = d.type.get_array_size()
        index = " ".join(t.spelling for t in kids[1].get_tokens())
        for name in values:
            if size > 0 and re.search(rf"\b{re.escape(name)}\b", index):
                bounds.setdefault(name, []).append((index, size))
    from miner.units.instantiations import eval_int  # (instantiations imports the launch records)

    out: dict[str, str] = {}
    for name, uses in bounds.items():
        for v in _BOUNDED_TRIES:
            got = [eval_int(substitute(index, {name: str(v)})) for index, _ in uses]
            if all(g is not None and 0 <= g < size for g, (_, size) in zip(got, uses, strict=True)):
                if str(v) != mapping[name]:
                    out[name] = str(v)
                break
    return out
