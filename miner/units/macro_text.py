"""Textual expansion of a project's own macros, for reading lines that macros write.

Explicit instantiations are often written through macros (`#define INST(T) template GLOBAL void k<T>(T *);`
then `INST(float) INST(double)`, with `#define GLOBAL __global__`); libclang does not expose explicit
function template instantiations, so they are read from the text after these macros are expanded.
Only the expansion needed for that: object-like and function-like macros of the project (`#`, `##`,
`__VA_ARGS__` honoured), rescanned a bounded number of times, never a C preprocessor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from miner import lazy_re
from miner.frontends.common import split_top

_DEFINE = lazy_re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([^)]*\))?((?:[^\n\\]|\\\r?\n|\\.)*)", re.M)
_IDENT = lazy_re.compile(r"[A-Za-z_]\w*")
_COMMENT = lazy_re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
MAX_PASSES = 6
MAX_TEXT = 2_000_000  # expansion stops growing a text past this many characters


@dataclass(frozen=True)
class MacroDef:
    name: str
    params: tuple[str, ...] | None  # None: object-like
    body: str


def definitions(text: str) -> dict[str, MacroDef]:
    """Every `#define` of a source text (the last one of a name wins), comments removed."""
    return {name: defs[-1] for name, defs in _scanned(text).items()}


def every_definition(text: str) -> dict[str, list[MacroDef]]:
    """Every `#define` of a source text, all of a name's definitions in text order (those of both
    branches of an `#if`), comments removed. A new dict each call; the scan is made once per text and process
    (`_DEFINITIONS`): each translation unit read the definitions of every project file it includes, twice."""
    return {name: list(defs) for name, defs in _scanned(text).items()}


def _scanned(text: str) -> dict[str, list[MacroDef]]:
    found = _DEFINITIONS.get(text)
    if found is None:
        if len(_DEFINITIONS) > 4096:
            _DEFINITIONS.clear()
        found = _DEFINITIONS[text] = _every_definition(text)
    return found


# Source text -> its definitions (MacroDef is frozen: the lists are copied, the definitions shared).
_DEFINITIONS: dict[str, dict[str, list[MacroDef]]] = {}


def _every_definition(text: str) -> dict[str, list[MacroDef]]:
    out: dict[str, list[MacroDef]] = {}
    for m in _DEFINE.finditer(_COMMENT.sub(" ", text)):
        # a parameter list continued over lines (`#define M(A, \<newline> B)`): the second name is `B`
        params = (tuple(p.strip() for p in re.sub(r"\\\r?\n", " ", m.group(2)[1:-1]).split(",") if p.strip())
                  if m.group(2) else None)
        out.setdefault(m.group(1), []).append(MacroDef(m.group(1), params, re.sub(r"\\\n", " ", m.group(3)).strip()))
    return out


def _call_args(text: str, open_at: int) -> tuple[list[str], int] | None:
    """Arguments of a macro call whose `(` is at `open_at`, and the offset after its `)`."""
    depth = 0
    for i in range(open_at, len(text)):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return split_top(text[open_at + 1:i], angle=False), i + 1
    return None


def _apply(macro: MacroDef, args: list[str]) -> str:
    params = list(macro.params or ())
    mapping: dict[str, str] = {}
    variadic = params and params[-1].endswith("...")
    if variadic:
        named = params[:-1]
        rest = args[len(named):]
        mapping["__VA_ARGS__"] = ", ".join(rest)
        if params[-1] != "...":
            mapping[params[-1][:-3].strip()] = mapping["__VA_ARGS__"]
        params = named
    for p, a in zip(params, args, strict=False):
        mapping[p] = a
    body = re.sub(r"(?<!#)#(?!#)\s*([A-Za-z_]\w*)", lambda m: '"' + mapping[m.group(1)] + '"' if m.group(1) in mapping
                  else m.group(0), macro.body) if "#" in macro.body else macro.body
    body = _IDENT.sub(lambda m: mapping.get(m.group(0), m.group(0)), body)
    return re.sub(r"\s*##\s*", "", body)


def expand(text: str, macros: dict[str, MacroDef], names: set[str] | None = None) -> str:
    """`text` with the invocations of `macros` (those in `names`, when given) expanded, rescanned
    until nothing changes or MAX_PASSES. `#define` lines themselves are left out of the result."""
    text = _DEFINE.sub(" ", _COMMENT.sub(" ", text))
    wanted = set(macros) if names is None else names & set(macros)
    if not wanted:
        return text
    for _ in range(MAX_PASSES):
        out: list[str] = []
        pos, changed = 0, False
        for m in _IDENT.finditer(text):
            if m.start() < pos or m.group(0) not in wanted:
                continue
            macro = macros[m.group(0)]
            if macro.params is None:
                out += [text[pos:m.start()], " ", macro.body, " "]
                pos, changed = m.end(), True
                continue
            j = m.end()
            while j < len(text) and text[j] in " \t\n":
                j += 1
            if j >= len(text) or text[j] != "(":
                continue
            call = _call_args(text, j)
            if call is None:
                continue
            args, end = call
            out += [text[pos:m.start()], " ", _apply(macro, args), " "]
            pos, changed = end, True
        if not changed:
            break
        out.append(text[pos:])
        text = "".join(out)
        if len(text) > MAX_TEXT:
            break
    return text
