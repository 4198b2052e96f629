"""Three-valued evaluation of `#if` conditions from what is known of the macros at that point.

The precompiled preludes (frontends/prelude.py) follow a unit's includes in the order the preprocessor reads
them. A conditional include used to end that walk; a project's common header often includes the standard
library behind `#if defined(PROJ_USE_HIP)` / `#ifdef __ARM_FEATURE_SVE` branches whose outcome is certain in
a given parse configuration. Here a condition is True or False only where the preprocessor must come to the
same answer, else None (unknown):

- `defined X` / `defined(X)` and `#ifdef`/`#ifndef` read the state of X (`known(X)`: True, False or None);
- an identifier that is surely undefined is 0; any other identifier, a function-like macro call, a number
  with arithmetic or comparison operators, `?:`, `__has_include(...)` ... is unknown;
- `!`, `&&`, `||` and parentheses with Kleene logic (`false && unknown` is false, `true || unknown` true).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from miner import lazy_re

_TOKEN = lazy_re.compile(rb"\s*(?:(&&|\|\||==|!=|>=|<=|<<|>>)|([A-Za-z_]\w*)|(\d[\w.']*)|(\S))")
_INT = lazy_re.compile(rb"(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9]\d*)[uUlL]*$")
_COMMENT = lazy_re.compile(rb"/\*.*?\*/|//.*$", re.S)

Tri = bool | None


def and3(a: Tri, b: Tri) -> Tri:
    if a is False or b is False:
        return False
    return True if a is True and b is True else None


def or3(a: Tri, b: Tri) -> Tri:
    if a is True or b is True:
        return True
    return False if a is False and b is False else None


def not3(a: Tri) -> Tri:
    return None if a is None else not a


def evaluate(expr: bytes, known: Callable[[bytes], Tri], names: set[bytes] | None = None) -> Tri:
    """The value of the `#if` expression `expr` (None: the preprocessor's answer is not certain here). Every
    macro name a certain answer read is added to `names`."""
    expr = _COMMENT.sub(b" ", expr)
    if b"/*" in expr or b"?" in expr:
        return None  # a comment running on, or a conditional expression (its precedence is below ||)
    toks: list[tuple[str, bytes]] = []
    pos = 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None:
            break
        pos = m.end()
        if m.group(1):
            toks.append(("op", m.group(1)))
        elif m.group(2):
            toks.append(("id", m.group(2)))
        elif m.group(3):
            toks.append(("num", m.group(3)))
        elif m.group(4):
            toks.append(("op", m.group(4)))
    if expr[pos:].strip():
        return None
    seen: set[bytes] = set()
    try:
        value, end = _or(toks, 0, known, seen)
    except _Unknown:
        value, end = None, len(toks)
    if end != len(toks):
        value = None
    if names is not None and value is not None:  # an unknown answer decided nothing
        names |= seen
    return value


class _Unknown(Exception):
    """A token sequence this evaluator does not read: the whole condition is unknown."""


def _joined(op: bytes, operand: Callable, combine: Callable[[Tri, Tri], Tri]) -> Callable:
    """A left-associative chain of `operand`s joined by `op` (`||` over `&&` chains, `&&` over `_rel`s)."""
    def parse(toks: list[tuple[str, bytes]], i: int, known: Callable[[bytes], Tri],
              seen: set[bytes]) -> tuple[Tri, int]:
        value, i = operand(toks, i, known, seen)
        while i < len(toks) and toks[i] == ("op", op):
            right, i = operand(toks, i + 1, known, seen)
            value = combine(value, right)
        return value, i
    return parse


def _rel(toks: list[tuple[str, bytes]], i: int, known: Callable[[bytes], Tri], seen: set[bytes]) -> tuple[Tri, int]:
    """A chain of operands joined by any operator but && and || (comparisons, arithmetic): unknown when there
    is an operator, else the operand's truth."""
    value, i = _unary(toks, i, known, seen)
    other = False
    while i < len(toks) and toks[i][0] == "op" and toks[i][1] not in (b"&&", b"||", b")"):
        _, i = _unary(toks, i + 1, known, seen)
        other = True
    return (None if other else value), i


def _unary(toks: list[tuple[str, bytes]], i: int, known: Callable[[bytes], Tri], seen: set[bytes]) -> tuple[Tri, int]:
    if i >= len(toks):
        raise _Unknown
    kind, text = toks[i]
    if (kind, text) == ("op", b"!"):
        value, i = _unary(toks, i + 1, known, seen)
        return not3(value), i
    if kind == "op" and text in (b"-", b"+", b"~"):
        _, i = _unary(toks, i + 1, known, seen)
        return None, i
    if (kind, text) == ("op", b"("):
        value, i = _or(toks, i + 1, known, seen)
        if i >= len(toks) or toks[i] != ("op", b")"):
            raise _Unknown
        return value, i + 1
    if kind == "num":
        m = _INT.match(text)
        if m is None:
            return None, i + 1
        digits = m.group(1)
        base = 16 if digits[:2] in (b"0x", b"0X") else 8 if digits.startswith(b"0") else 10
        return int(digits[2:] if base == 16 else digits, base) != 0, i + 1
    if kind == "id" and text == b"defined":
        if i + 1 < len(toks) and toks[i + 1] == ("op", b"("):
            if i + 3 >= len(toks) or toks[i + 2][0] != "id" or toks[i + 3] != ("op", b")"):
                raise _Unknown
            name, i = toks[i + 2][1], i + 4
        elif i + 1 < len(toks) and toks[i + 1][0] == "id":
            name, i = toks[i + 1][1], i + 2
        else:
            raise _Unknown
        seen.add(name)
        return known(name), i
    if kind == "id":
        if i + 1 < len(toks) and toks[i + 1] == ("op", b"("):  # a function-like macro, __has_include(...)
            depth, i = 0, i + 1
            while i < len(toks):
                depth += {b"(": 1, b")": -1}.get(toks[i][1], 0) if toks[i][0] == "op" else 0
                i += 1
                if depth == 0:
                    break
            seen.add(text)
            return None, i
        seen.add(text)
        state = known(text)
        if text == b"__cplusplus" and state is True:
            return True, i + 1  # a C++ parse: nonzero (its value only matters to comparisons, which are unknown)
        # An undefined identifier is 0; a defined macro's value is not tracked.
        return (False if state is False else None), i + 1
    raise _Unknown


_and = _joined(b"&&", _rel, and3)
_or = _joined(b"||", _and, or3)
