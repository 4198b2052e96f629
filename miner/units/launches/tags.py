"""Tag dispatch through a generic lambda held in a local variable:

    auto launch = [&](auto tag) { constexpr int R = decltype(tag)::value; k<T, R><<<...>>>(...); };
    switch (m) { case 1: launch(std::integral_constant<int, 1>{}); break; ... }

The lambda's `auto` parameter takes the value of each tag it is called with in the enclosing function
(`std::integral_constant<int, N>{}`, `std::true_type{}`, `std::bool_constant<B>{}`); it joins the value lists of
generic-lambda dispatch (`_State.lists`), and the idioms that read a tag's value (`decltype(tag)::value`,
`tag.value`, `tag()`) are read as the tag itself once its value is put in (`finish`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

import clang.cindex as ci

from miner import lazy_re
from miner.units.launches import value_spelling
from miner.units.launches.cursors import _key
from miner.units.launches.record import K
from miner.units.launches.state import _State
from miner.units.launches.text import _src

# `integral_constant<int, 4>` / `integral_constant<bool, true>` / `bool_constant<true>` in a type or in the text.
_TAG = lazy_re.compile(
    r"\b(?:integral_constant\s*<[^<>,]+,\s*|bool_constant\s*<\s*)\(?(-?\d+|true|false)[uUlL]*\)?\s*>")
_BOOL_TAG = lazy_re.compile(r"\b(true|false)_type\b")
_WRAPPERS = (K.UNEXPOSED_EXPR, K.PAREN_EXPR)


def _tag_value(arg: ci.Cursor, text: str) -> str | None:
    for spelled in (arg.type.get_canonical().spelling, text):
        m = _TAG.search(spelled) or _BOOL_TAG.search(spelled)
        if m:
            return m.group(1)
    return None


class TagColumn(list):
    """One `auto` parameter's tag values over the calls of a lambda of several: the i-th values of the columns
    of one `group` (the lambda) were passed together, so they are put in as rows, never crossed (`invoke(Int<8>,
    Int<4>)`, `invoke(Int<64>, Int<16>)` are two launches, not four)."""

    group: tuple[str, int] | None = None


def _generic_lambda(var: ci.Cursor) -> list[ci.Cursor | None] | None:
    """The parameters of the generic lambda a variable is initialized with (None for one that is no `auto`), if
    it is one with an `auto` parameter."""
    lam = next((x for x in var.get_children() if x.kind == K.LAMBDA_EXPR), None)
    if lam is None:
        inits = [x for x in var.get_children() if x.kind in _WRAPPERS]
        lam = next((y for x in inits for y in x.walk_preorder() if y.kind == K.LAMBDA_EXPR), None)
    if lam is None:
        return None
    parms = [p if p.type.get_canonical().kind in (ci.TypeKind.UNEXPOSED, ci.TypeKind.AUTO) else None
             for p in lam.get_children() if p.kind == K.PARM_DECL]
    return parms if any(p is not None for p in parms) else None


def _callee_var(call: ci.Cursor) -> ci.Cursor | None:
    kids = list(call.get_children())
    c = kids[0] if kids else None
    while c is not None and c.kind in _WRAPPERS:
        inner = list(c.get_children())
        c = inner[0] if len(inner) == 1 else None
    return c.referenced if c is not None and c.kind == K.DECL_REF_EXPR else None


# `float{}`, `__half()`, `T{}`: a value-initialized object standing for its type (a type tag).
_TYPE_TAG = lazy_re.compile(r"\s*((?:::)?[A-Za-z_][\w:]*(?:\s*<[^{}()]*>)?)\s*(?:\{\s*\}|\(\s*\))\s*")
_Cell = tuple[str, str] | None  # ("value", "64"), ("type", "__half"), ("ref", parameter) or unknown


_NAMES = (K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_REF)


def _value_initialized(arg: ci.Cursor) -> bool:
    """`X{}` / `X()` by the AST (its text may be a macro's invocation, `f(t{})` in a dispatch macro's case)."""
    while arg.kind == K.UNEXPOSED_EXPR and len(kids := list(arg.get_children())) == 1:
        arg = kids[0]
    if arg.kind == K.CALL_EXPR:
        if arg.referenced is None or arg.referenced.kind != K.CONSTRUCTOR:
            return False
    elif arg.kind not in (K.CXX_FUNCTIONAL_CAST_EXPR, K.INIT_LIST_EXPR):
        return False
    for ch in arg.get_children():
        if ch.kind in _NAMES or (ch.kind == K.INIT_LIST_EXPR and not list(ch.get_children())):
            continue
        return False
    return True


def _type_tag(st: _State, arg: ci.Cursor, text: str) -> str | None:
    m = _TYPE_TAG.fullmatch(text)
    if m is None and not _value_initialized(arg):
        return None
    canon = arg.type.get_canonical()
    if canon.kind in (ci.TypeKind.UNEXPOSED, ci.TypeKind.AUTO) or "type-parameter" in canon.spelling \
            or canon.kind == ci.TypeKind.INVALID:
        written = m.group(1) if m is not None else ""
        # (a host template's own parameter, `T{}`: by name, bound per instantiation in _finish)
        return written if re.fullmatch(r"[A-Za-z_]\w*", written) else None
    # (`type_identity<float>{}` stands for `float`: read back as `typename decltype(tag)::type`, see read_tags)
    return value_spelling.type_spelling(_identity_wrapped(canon) or canon)


def _identity_wrapped(canon: ci.Type) -> ci.Type | None:
    """`float` for `type_identity<float>` (a class template specialization of one type argument whose member
    `type` is that argument), else None."""
    if canon.get_num_template_arguments() != 1:
        return None
    arg = canon.get_template_argument_type(0)
    if arg.kind == ci.TypeKind.INVALID:
        return None
    tmpl = ci.conf.lib.clang_getSpecializedCursorTemplate(canon.get_declaration())
    if tmpl is None or tmpl.kind != K.CLASS_TEMPLATE:
        return None
    params = [c.spelling for c in tmpl.get_children() if c.kind == K.TEMPLATE_TYPE_PARAMETER]
    for ch in tmpl.get_children():
        if ch.kind in (K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL) and ch.spelling == "type":
            return arg if params and ch.underlying_typedef_type.spelling == params[0] else None
    return None


def _cell(st: _State, arg: ci.Cursor) -> _Cell:
    text = _src(st.ctx, arg)
    value = _tag_value(arg, text)
    if value is not None:
        return ("value", value)
    inner = arg
    while inner.kind in _WRAPPERS and len(kids := list(inner.get_children())) == 1:
        inner = kids[0]
    if inner.kind == K.DECL_REF_EXPR and inner.referenced is not None and inner.referenced.kind == K.PARM_DECL:
        key = _key(st.ctx, inner.referenced)
        return ("ref", repr(key)) if key is not None else None
    t = _type_tag(st, arg, text)
    return ("type", t) if t is not None else None


def _lambda_vars(fn: ci.Cursor) -> list[ci.Cursor]:
    return [c for c in fn.walk_preorder() if c.kind == K.VAR_DECL and _generic_lambda(c) is not None]


def tag_lambda(st: _State, var: ci.Cursor, fn: ci.Cursor) -> None:
    """`var` a local initialized with a generic lambda: record the tags it is called with in `fn` as its `auto`
    parameters' value lists. A parameter gets one only if every call passes it a tag: an integral constant
    (`std::integral_constant<int, 4>{}`, read back as `decltype(tag)::value`, `tag.value`), an object standing
    for its type (`float{}`, read back as `decltype(tag)`), or another generic lambda's parameter that has a list
    (`invoke(tkv, ...)` inside `dispatch(auto tkv)`). With several such parameters the calls are rows
    (`TagColumn`). All the function's generic lambdas are read at its first one, outer ones first."""
    done = st.__dict__.setdefault("_tag_functions", set())
    fkey = _key(st.ctx, fn)
    if fkey in done:
        return
    done.add(fkey)
    raw = {id(v): (v, _rows(st, v, fn)) for v in _lambda_vars(fn)}
    pending = dict(raw)
    for _ in range(4):  # (a lambda's rows may name the parameters of another: resolve those first)
        progress = False
        for ident, (v, rows) in list(pending.items()):
            if rows is None:
                del pending[ident]
                continue
            refs = {c[1] for r in rows for c in r if c is not None and c[0] == "ref"}
            if any(_unresolved(st, ref, raw) for ref in refs):
                continue
            _record(st, v, _expand(st, rows))
            del pending[ident]
            progress = True
        if not pending or not progress:
            break
    for v, rows in pending.values():
        if rows is not None:
            _record(st, v, _expand(st, rows))


def _unresolved(st: _State, ref: str, raw: dict[int, tuple[ci.Cursor, list | None]]) -> bool:
    """Whether `ref` is a parameter of a generic lambda of this function whose list is still to be recorded."""
    if ref in st.__dict__.setdefault("_tag_keys", {}):
        return False
    for v, rows in raw.values():
        if rows is not None and any(p is not None and repr(_key(st.ctx, p)) == ref for p in _generic_lambda(v) or ()):
            return True
    return False


def call_args(st: _State, fn: ci.Cursor, var: ci.Cursor) -> Iterator[list[ci.Cursor]]:
    """The arguments of each call in `fn`'s body whose callee is the variable or parameter `var`."""
    vkey = _key(st.ctx, var)
    for call in fn.walk_preorder():
        if call.kind == K.CALL_EXPR and (target := _callee_var(call)) is not None and _key(st.ctx, target) == vkey:
            yield list(call.get_children())[1:]


def _rows(st: _State, var: ci.Cursor, fn: ci.Cursor) -> list[list[_Cell]] | None:
    parms = _generic_lambda(var)
    if parms is None:
        return None
    rows: list[list[_Cell]] = []
    for args in call_args(st, fn, var):
        if len(args) == len(parms) + 1 and args[0].type.get_canonical().get_pointee().kind == ci.TypeKind.FUNCTIONPROTO:
            args = args[1:]  # (a call in a non-template function names the lambda's `operator()` first)
        if len(args) != len(parms):
            return None  # (defaulted or variadic: not a closed list)
        rows.append([_cell(st, a) if p is not None else None for a, p in zip(args, parms, strict=True)])
    return rows


def _expand(st: _State, rows: list[list[_Cell]]) -> list[list[str | None]]:
    """Rows with another lambda's parameter put in: one row per value of its list."""
    keys = st.__dict__.setdefault("_tag_keys", {})
    out: list[list[str | None]] = [[]]
    result: list[list[str | None]] = []
    for row in rows:
        out = [[]]
        for c in row:
            if c is not None and c[0] == "ref":
                vals = st.lists.get(keys[c[1]], []) if c[1] in keys else []
                out = [[*o, x] for o in out for x in vals] if vals else [[*o, None] for o in out]
            else:
                out = [[*o, c[1] if c is not None else None] for o in out]
        result.extend(out)
    return result


def _record(st: _State, var: ci.Cursor, rows: list[list[str | None]]) -> None:
    _record_parms(st, _generic_lambda(var) or [], _key(st.ctx, var), rows)


def _record_parms(st: _State, parms: list[ci.Cursor | None], lkey: tuple[str, int] | None,
                  rows: list[list[str | None]]) -> None:
    keys = st.__dict__.setdefault("_tag_keys", {})
    # The parameters every call passes a tag (a parameter some call passes anything else stays unknown, and the
    # lambda's other parameters keep their lists).
    tagged = [i for i, p in enumerate(parms) if p is not None and rows and all(r[i] is not None for r in rows)]
    group = lkey if len(tagged) > 1 else None
    for i in tagged:
        key = _key(st.ctx, parms[i])  # type: ignore[arg-type]
        if key is None:
            continue
        column = TagColumn(r[i] for r in rows) if group is not None else TagColumn(dict.fromkeys(r[i] for r in rows))
        column.group = group
        st.lists[key] = column
        keys[repr(key)] = key


def read_tags(text: str, names: set[str]) -> str:
    """`decltype(tag)::value`, `tag.value`, `tag::value`, `tag()` and `tag.operator()()` as `tag`, for each of
    `names` (tags whose value is about to be put in)."""
    for n in names:
        e = re.escape(n)
        text = re.sub(rf"\bdecltype\s*\(\s*{e}\s*\)\s*::\s*value\b", n, text)
        text = re.sub(rf"\btypename\s+decltype\s*\(\s*{e}\s*\)\s*::\s*type\b", n, text)  # (an identity tag)
        text = re.sub(rf"\bdecltype\s*\(\s*{e}\s*\)", n, text)  # (a type tag: `using T = decltype(t);`)
        text = re.sub(rf"(?<![\w.:]){e}\s*(?:\.|::)\s*value\b", n, text)
        text = re.sub(rf"(?<![\w.:]){e}\s*\(\s*\)", n, text)
    return text
