"""Tag dispatch through a generic lambda held in a local variable:

    auto launch = [&](auto tag) { constexpr int R = decltype(tag)::value; k<T, R><<<...>>>(...); };
    switch (m) { case 1: launch(std::integral_constant<int, 1>{}); break; ... }

The lambda's `auto` parameter takes the value of each tag it is called with in the enclosing function
(`std::integral_constant<int, N>{}`, `std::true_type{}`, `std::bool_constant<B>{}`); it joins the value lists of
generic-lambda dispatch (`_State.lists`), and the idioms that read a tag's value (`decltype(tag)::value`,
`tag.value`, `tag()`) are read as the tag itself once its value is put in (`finish`)."""

from __future__ import annotations

import re

import clang.cindex as ci

from miner.units.launches.cursors import _key
from miner.units.launches.record import K
from miner.units.launches.state import _State
from miner.units.launches.text import _src

# `integral_constant<int, 4>` / `integral_constant<bool, true>` / `bool_constant<true>` in a type or in the text.
_TAG = re.compile(r"\b(?:integral_constant\s*<[^<>,]+,\s*|bool_constant\s*<\s*)\(?(-?\d+|true|false)[uUlL]*\)?\s*>")
_BOOL_TAG = re.compile(r"\b(true|false)_type\b")
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


def tag_lambda(st: _State, var: ci.Cursor, fn: ci.Cursor) -> None:
    """`var` a local initialized with a generic lambda: record the tag values it is called with in `fn` as its
    `auto` parameters' value lists. A parameter gets one only if every call passes it a tag; with several such
    parameters the calls are rows (`TagColumn`)."""
    parms = _generic_lambda(var)
    if parms is None:
        return
    vkey = _key(st.ctx, var)
    rows: list[list[str | None]] = []
    for call in fn.walk_preorder():
        if call.kind != K.CALL_EXPR:
            continue
        target = _callee_var(call)
        if target is None or _key(st.ctx, target) != vkey:
            continue
        args = list(call.get_children())[1:]
        if len(args) == len(parms) + 1 and args[0].type.get_canonical().get_pointee().kind == ci.TypeKind.FUNCTIONPROTO:
            args = args[1:]  # (a call in a non-template function names the lambda's `operator()` first)
        if len(args) != len(parms):
            return  # (defaulted or variadic: not a closed list)
        rows.append([_tag_value(a, _src(st.ctx, a)) if p is not None else None
                     for a, p in zip(args, parms, strict=True)])
    # The parameters every call passes a tag (a type tag such as `uint8_t{}` or an outer lambda's own `auto` in
    # another place leaves that parameter unknown, not the lambda).
    tagged = [i for i, p in enumerate(parms) if p is not None and rows and all(r[i] is not None for r in rows)]
    group = vkey if len(tagged) > 1 else None
    for i in tagged:
        key = _key(st.ctx, parms[i])  # type: ignore[arg-type]
        if key is None:
            continue
        column = TagColumn(r[i] for r in rows) if group is not None else TagColumn(dict.fromkeys(r[i] for r in rows))
        column.group = group
        st.lists[key] = column


def read_tags(text: str, names: set[str]) -> str:
    """`decltype(tag)::value`, `tag.value`, `tag::value`, `tag()` and `tag.operator()()` as `tag`, for each of
    `names` (tags whose value is about to be put in)."""
    for n in names:
        e = re.escape(n)
        text = re.sub(rf"\bdecltype\s*\(\s*{e}\s*\)\s*::\s*value\b", n, text)
        text = re.sub(rf"(?<![\w.:]){e}\s*(?:\.|::)\s*value\b", n, text)
        text = re.sub(rf"(?<![\w.:]){e}\s*\(\s*\)", n, text)
    return text
