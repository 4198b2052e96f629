"""Spell a type whose template arguments hold values so that a compiler takes the text back.

libclang's canonical spelling prints a value argument nested in a type by its underlying integer: an enum
class argument as a bare number (`Config<float, Func<0>>` for `Func<Toggle::Off>`), which no compiler converts
back to the enum ("argument of type int is incompatible with template parameter of type Toggle"), and a
`uint8_t` / `int8_t` argument as a character literal (`Perf<32, '\\x04'>`), which compiles but makes ids and
dataset text unreadable. The class templates' own parameters say which is which: each such argument is spelled
`static_cast<Enum>(N)` or as its number.
"""

from __future__ import annotations

import re
from typing import NamedTuple

import clang.cindex as ci

from miner import lazy_re
from miner.frontends.clang_frontend import _qualified_name
from miner.units.closure import TUContext
from miner.units.launches import cursors  # (cursors spells arguments with this module: a module import)
from miner.units.launches.record import K
from miner.units.launches.text import _angle_args

_CLASS_KINDS = (K.STRUCT_DECL, K.CLASS_DECL)
_WRAPPERS = (ci.TypeKind.POINTER, ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE)
_SIGNED_CHARS = {"char", "signed char"}
_NAME_OPEN = lazy_re.compile(r"(?<![\w:])((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)\s*<(?!<)")
_CHAR = lazy_re.compile(r"'(\\x[0-9a-fA-F]+|\\[0-7]{1,3}|\\.|[^\\'])'")
_ESCAPES = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, "'": 39, '"': 34, "?": 63}


def type_spelling(t: ci.Type) -> str:
    """`t`'s canonical spelling with its nested enum and character-typed value arguments respelled."""
    canon = t.get_canonical()
    text = canon.spelling
    if "<" not in text:
        return text
    params: dict[str, list[Value | None]] = {}
    _collect(canon, params, 0)
    return _respell(text, params) if params else text


def _collect(t: ci.Type, params: dict[str, list[Value | None]], depth: int) -> None:
    """Class templates reachable through `t`'s template arguments whose value parameters need a respelling, by
    qualified name: per parameter a Value or None."""
    while t.kind in _WRAPPERS:
        t = t.get_pointee()
    if t.kind in (ci.TypeKind.CONSTANTARRAY, ci.TypeKind.INCOMPLETEARRAY):
        t = t.element_type
    decl = t.get_declaration()
    if depth > 8 or decl is None or decl.kind not in _CLASS_KINDS or decl.get_num_template_arguments() <= 0:
        return
    prim = cursors._primary(decl)
    if prim.kind == K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION:
        prim = cursors._primary(prim)
    kinds = _param_kinds(prim)
    if any(kinds):
        params[_qualified_name(prim)] = kinds
    for i in range(decl.get_num_template_arguments()):
        try:
            if decl.get_template_argument_kind(i) == ci.TemplateArgumentKind.TYPE:
                _collect(decl.get_template_argument_type(i).get_canonical(), params, depth + 1)
        except ValueError:  # (argument kinds the Python bindings do not know: packs, templates)
            continue


class Value(NamedTuple):
    """A value parameter whose arguments need a spelling: of an enum type (with its enumerators by value) or of
    a character type."""

    kind: str  # "enum", "signed char", "unsigned char"
    type: str = ""
    names: tuple[tuple[int, str], ...] = ()


def _param_kinds(template: ci.Cursor) -> list[Value | None]:
    return [_kind(p.type) if p.kind == K.TEMPLATE_NON_TYPE_PARAMETER else None for p in cursors._tparams(template)]


def _kind(t: ci.Type) -> Value | None:
    ct = t.get_canonical()
    if ct.kind == ci.TypeKind.ENUM and "(" not in ct.spelling:  # (not an unnamed enum)
        names = [(e.enum_value, e.spelling) for e in ct.get_declaration().get_children()
                 if e.kind == K.ENUM_CONSTANT_DECL]
        return Value("enum", ct.spelling, tuple(names))
    if ct.spelling in (*_SIGNED_CHARS, "unsigned char"):
        return Value("signed char" if ct.spelling in _SIGNED_CHARS else "unsigned char")
    return None


def value_of_type(t: ci.Type, arg: str) -> str:
    """A value argument for a parameter of type `t`: an enum's value as its enumerator, a character as its number."""
    return _value(arg, _kind(t))


def project_params(ctx: TUContext) -> dict[str, list[Value | None]]:
    """The translation unit's class templates with an enum or character-typed value parameter, by qualified
    name and by plain name where that is unambiguous: template arguments put together from text (an enumerator
    the resolver read as its value, `Func<1>`) are respelled with them (`respell`)."""
    out: dict[str, list[Value | None]] = {}
    plain: dict[str, list[Value | None] | None] = {}
    for lst in ctx.pieces.values():
        for _s, _e, piece, c in lst:
            if piece.kind != "CLASS_TEMPLATE" or not any(kinds := _param_kinds(c)):
                continue
            out[_qualified_name(c)] = kinds
            plain[c.spelling] = kinds if plain.get(c.spelling, kinds) == kinds else None
    out.update({name: kinds for name, kinds in plain.items() if kinds is not None and name not in out})
    return out


def respell(text: str, params: dict[str, list[Value | None]]) -> str:
    """`text` with the value arguments of the templates in `params` spelled for their parameters' types."""
    return _respell(text, params) if params and "<" in text else text


def _respell(text: str, params: dict[str, list[Value | None]]) -> str:
    # Every template-id is taken apart (a nested list ending in `>>` only parses from its outer one); one whose
    # arguments did not change keeps its text.
    out, i = [], 0
    for m in _NAME_OPEN.finditer(text):
        if m.start() < i:
            continue
        got = _angle_args(text, m.end() - 1)
        if got is None:
            continue
        args, end = got
        name = m.group(1) if m.group(1) in params else m.group(1).rpartition("::")[2]
        kinds = params.get(name, [])
        fixed = [_value(_respell(a, params), kinds[n] if n < len(kinds) else None) for n, a in enumerate(args)]
        if fixed != args:
            out.append(text[i:m.start()] + f"{m.group(1)}<{', '.join(fixed)}>")
            i = end
    return "".join(out) + text[i:]


def _value(arg: str, kind: Value | None) -> str:
    """An enum's value as its enumerator (`ns::Toggle::B`, valid for scoped and unscoped enums alike) or, where
    no one enumerator has it, a cast; a character literal as its number."""
    if kind is None:
        return arg
    if kind.kind == "enum" and re.fullmatch(r"-?\d+", arg):
        names = [n for v, n in kind.names if v == int(arg)]
        return f"{kind.type}::{names[0]}" if len(names) == 1 else f"static_cast<{kind.type}>({arg})"
    m = _CHAR.fullmatch(arg)
    if kind.kind.endswith("char") and m:
        body = m.group(1)
        if body.startswith("\\x"):
            v = int(body[2:], 16)
        elif re.fullmatch(r"\\[0-7]{1,3}", body):
            v = int(body[1:], 8)
        elif body.startswith("\\"):
            v = _ESCAPES.get(body[1], ord(body[1]))
        else:
            v = ord(body)
        v &= 0xFF
        return str(v - 256 if kind.kind == "signed char" and v > 127 else v)
    return arg
