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


def _generic_lambda(var: ci.Cursor) -> ci.Cursor | None:
    """The one `auto` parameter of the generic lambda a variable is initialized with, if it is one."""
    lam = next((x for x in var.get_children() if x.kind == K.LAMBDA_EXPR), None)
    if lam is None:
        inits = [x for x in var.get_children() if x.kind in _WRAPPERS]
        lam = next((y for x in inits for y in x.walk_preorder() if y.kind == K.LAMBDA_EXPR), None)
    if lam is None:
        return None
    parms = [p for p in lam.get_children() if p.kind == K.PARM_DECL]
    if len(parms) != 1 or parms[0].type.get_canonical().kind not in (ci.TypeKind.UNEXPOSED, ci.TypeKind.AUTO):
        return None
    return parms[0]


def _callee_var(call: ci.Cursor) -> ci.Cursor | None:
    kids = list(call.get_children())
    c = kids[0] if kids else None
    while c is not None and c.kind in _WRAPPERS:
        inner = list(c.get_children())
        c = inner[0] if len(inner) == 1 else None
    return c.referenced if c is not None and c.kind == K.DECL_REF_EXPR else None


def tag_lambda(st: _State, var: ci.Cursor, fn: ci.Cursor) -> None:
    """`var` a local initialized with a one-`auto`-parameter lambda: record the tag values it is called with
    in `fn` as that parameter's value list (all calls must pass a tag; otherwise nothing is recorded)."""
    parm = _generic_lambda(var)
    if parm is None:
        return
    vkey = _key(st.ctx, var)
    values: list[str] = []
    for call in fn.walk_preorder():
        if call.kind != K.CALL_EXPR:
            continue
        target = _callee_var(call)
        if target is None or _key(st.ctx, target) != vkey:
            continue
        args = list(call.get_children())[1:]
        value = _tag_value(args[0], _src(st.ctx, args[0])) if len(args) == 1 else None
        if value is None:
            return  # called with something that is not a tag: its values are not a closed list
        if value not in values:
            values.append(value)
    key = _key(st.ctx, parm)
    if values and key is not None:
        st.lists[key] = values


def read_tags(text: str, names: set[str]) -> str:
    """`decltype(tag)::value`, `tag.value`, `tag::value`, `tag()` and `tag.operator()()` as `tag`, for each of
    `names` (tags whose value is about to be put in)."""
    for n in names:
        e = re.escape(n)
        text = re.sub(rf"\bdecltype\s*\(\s*{e}\s*\)\s*::\s*value\b", n, text)
        text = re.sub(rf"(?<![\w.:]){e}\s*(?:\.|::)\s*value\b", n, text)
        text = re.sub(rf"(?<![\w.:]){e}\s*\(\s*\)", n, text)
    return text
