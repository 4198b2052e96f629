"""What the driver-API launch search reads of a host file's text (comments blanked): the function bodies and their
parameters, and the values a local variable of one is given.

The host files of programs that load their kernels from a module are often not translation units the miner parses
(`units.driver_api`), so this is text: a body is a `{` whose head reads as a function's (`Type Class::name(params) {`)
with no function open around it, and a local variable holds a constant where each of its assignments in the body is
one name (`kern = FUNC_RAYVOXEL;` in each case of a switch) and nothing else writes it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

from miner import lazy_re
from miner.frontends.common import split_top

_BRACE = lazy_re.compile(rb"[{}]")
# A comment or a literal: a `//` in a string (`"f //0"`) starts no comment, a `}` in one closes nothing.
_COMMENT_OR_LITERAL = lazy_re.compile(rb'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\'|/\*.*?\*/|//[^\n]*', re.S)
_QUALIFIER_AT_END = lazy_re.compile(rb"\b(?:const|noexcept|override|final|volatile)\s*$")
_NAME_AT_END = lazy_re.compile(rb"([A-Za-z_][\w:~]*)\s*$")
_CONTROL = {b"if", b"for", b"while", b"switch", b"catch", b"sizeof", b"return"}
_PARAM_NAME = lazy_re.compile(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*$")
_QUALIFIERS = {"const", "volatile", "unsigned", "signed", "int", "char", "float", "double", "long", "short", "bool"}
_FN_POINTER = lazy_re.compile(r"\(\s*[*&]\s*([A-Za-z_]\w*)\s*\)")
# What a local variable may be given and still hold a known constant: one (qualified) name, or a table's entry at one
# (`cuFunc[FUNC_X]`).
_CONSTANT = lazy_re.compile(r"\s*(?:[A-Za-z_][\w:]*|[A-Za-z_][\w.>-]*\s*\[\s*[A-Za-z_][\w:]*\s*\])\s*")
_NOT_TYPES = {b"return", b"case", b"else", b"goto", b"throw", b"delete", b"co_return", b"co_yield"}
_COMPOUND = lazy_re.compile(rb"\s*(?:\+\+|--|(?:[-+*/%&|^]|<<|>>)=)")


def without_comments(raw: bytes) -> bytes:
    """The text with its comments blanked (same offsets and lines), its literals kept."""
    return _COMMENT_OR_LITERAL.sub(lambda m: m.group(0) if m.group(0)[:1] in b"\"'" else _spaces(m.group(0)), raw)


def code_only(raw: bytes) -> bytes:
    """The text with its comments and the insides of its literals blanked (same offsets and lines)."""
    return _COMMENT_OR_LITERAL.sub(lambda m: m.group(0)[:1] + _spaces(m.group(0)[1:-1]) + m.group(0)[-1:]
                                   if m.group(0)[:1] in b"\"'" else _spaces(m.group(0)), raw)


def _spaces(text: bytes) -> bytes:
    return re.sub(rb"[^\n]", b" ", text)


@dataclass(frozen=True)
class Body:
    """A function's body in a text: its name as the head writes it (`Class::name`), its parameters' names, and the
    offsets of its braces."""

    name: str
    params: tuple[str, ...]
    start: int
    end: int

    @property
    def last(self) -> str:
        """The name a call spells (`launch` of `Launcher::launch`)."""
        return re.split(r"::", self.name)[-1]


def bodies(text: bytes) -> list[Body]:
    """The function bodies of a comment-blanked text, in order (a function defined inside another's body, a lambda
    or a local class's method, is part of the outer one)."""
    out: list[Body] = []
    stack: list[tuple[int, tuple[str, str] | None]] = []
    open_fn = 0
    for m in _BRACE.finditer(text):
        i = m.start()
        if text[i] == ord("{"):
            head = None if open_fn else _head(text, i)
            open_fn += head is not None
            stack.append((i, head))
        elif stack:
            opened, head = stack.pop()
            if head is not None:
                open_fn -= 1
                out.append(Body(head[0], tuple(param_names(head[1])), opened, i))
    out += [Body(h[0], tuple(param_names(h[1])), opened, len(text)) for opened, h in stack if h is not None]
    return sorted(out, key=lambda b: b.start)


def _head(text: bytes, brace: int) -> tuple[str, str] | None:
    """(name, parameter list) of the function head a `{` ends (`Type Class::name(params) const {`), read backwards
    from the brace, however long the parameter list; a constructor's member initializers (`: a_(a), b_{b}`) are
    stepped over to its own head."""
    j = brace
    while True:
        before = text[max(0, j - 40):j].rstrip()
        q = _QUALIFIER_AT_END.search(before)
        if q is None:
            break
        j -= len(text[max(0, j - 40):j]) - q.start()
    while True:
        j = len(text[:j].rstrip()) - 1
        if j < 0 or text[j] not in b")}":
            return None
        close = j
        j = _opening(text, j)
        if j is None:
            return None
        name = _NAME_AT_END.search(text[max(0, j - 300):j])
        if name is None or name.group(1) in _CONTROL:
            return None
        start = j - (len(text[max(0, j - 300):j]) - name.start())
        lead = text[max(0, start - 40):start].rstrip()
        if text[close] == ord(")") and not (lead.endswith(b",") or lead.endswith(b":") and not lead.endswith(b"::")):
            return name.group(1).decode(), text[j + 1:close].decode("utf-8", "replace")
        if not (lead.endswith(b",") or lead.endswith(b":") and not lead.endswith(b"::")):
            return None  # (`name{...} {`: no function's head)
        j = start - (len(text[max(0, start - 40):start]) - len(lead)) - 1  # (before the `,` or `:`)


def _opening(text: bytes, close: int) -> int | None:
    """The offset of the `(` (`{`) that the `)` (`}`) at `close` ends, reading backwards; None past a `;`."""
    pair = {ord(")"): ord("("), ord("}"): ord("{")}[text[close]]
    shut, depth, j = text[close], 0, close
    while j >= 0:
        c = text[j]
        if c == shut:
            depth += 1
        elif c == pair:
            depth -= 1
            if depth == 0:
                return j
        elif c == ord(";") or (shut == ord(")") and c in b"{}"):
            return None
        j -= 1
    return None


def body_at(found: list[Body], at: int) -> Body | None:
    """The body holding offset `at` (`found` as `bodies` gives it)."""
    i = bisect_right([b.start for b in found], at) - 1
    return found[i] if i >= 0 and found[i].start < at < found[i].end else None


def param_names(params: str) -> list[str]:
    """The parameter names of a head's parameter list: `...` for C varargs, `` for an unnamed one."""
    out: list[str] = []
    for p in split_top(params):
        p = p.split("=", 1)[0].strip()
        if not p or p == "void":
            continue
        if p.endswith("..."):
            out.append("...")
        elif fp := _FN_POINTER.search(p):
            out.append(fp.group(1))
        else:
            # (a type alone, `int`, `const T &`, names nothing)
            m = _PARAM_NAME.search(p)
            named = m is not None and re.search(r"[\w>*&]\s*$", p[:m.start()]) is not None
            out.append(m.group(1) if m is not None and named and m.group(1) not in _QUALIFIERS else "")
    return out


def local_values(text: bytes, body: Body, var: str) -> list[str] | None:
    """What a variable declared in `body` is given, where each assignment (its initializer too) is one name or one
    table entry and nothing else writes it (no `+=`, `++`, address taken); [] for one written otherwise (a loop
    counter) or never given a value; None for a parameter or a variable not declared there (a member, a global)."""
    if var in body.params:
        return None
    inner = text[body.start:body.end]
    word = re.escape(var.encode())
    declared = re.finditer(rb"(?:(\w+)|>)(?:\s*[*&]+\s*|\s+)" + word + rb"\s*(?:[;=,{]|\[)", inner)
    if not any(d.group(1) not in _NOT_TYPES for d in declared):
        return None  # (no declaration: `return op;` is none)
    values: list[str] = []
    for m in re.finditer(rb"(?<![\w.>:])" + word + rb"\b", inner):
        before = inner[:m.start()].rstrip()
        if before.endswith((b"++", b"--")) or (before.endswith(b"&") and not before.endswith(b"&&")
                                                and not re.search(rb"[\w)\]]\s*&$", before)):
            return []
        after = inner[m.end():]
        if _COMPOUND.match(after):
            return []
        if (assign := re.match(rb"\s*=(?!=)([^;,)]*)[;,)]", after)) is not None:
            rhs = assign.group(1).decode("utf-8", "replace")
            if not _CONSTANT.fullmatch(rhs):
                return []
            values.append(rhs.strip())
    return values
