"""Generated instance files read as instantiation origins of one parse instead of a parse each.

Code generators write one translation unit per configuration whose whole text is an `#include` of the
template's header and explicit instantiations, often through the project's macros:

    #include "../attn.cuh"
    DECL_ATTN_CASE(64, half);        // #define DECL_ATTN_CASE(D, T) template void attn_case<D, T>(...)

Every such file of one folder with the same include lines and the same parse flags is the same
translation unit but for those lines, and the lines change nothing the preprocessor or the kernel walk
sees: libclang does not expose explicit function instantiations, so the analysis reads them from the
text anyway (`units.instantiations.explicit_in`, the launch walk's host instantiations). So the first
file of each such group (by path) is parsed, with the other files' texts handed to its analysis as
instantiation origins (`clang_frontend.parse(..., instances=...)`); the others are not parsed. On a
quantized-inference engine with 120 generated files this removed most of the parses.

A file is an instance file only when, comments aside, it holds `#include` lines and statements that are
explicit function instantiations (`template R f<A>(...);`, `extern template ...;`) or invocations of
the project's function-like macros that expand to nothing else. Anything more (a `#define` before the
include, a definition, a class instantiation, whose cursors the launch walk reads) keeps its own parse.
"""

from __future__ import annotations

import os
import re
from collections import defaultdict
from collections.abc import Callable

from miner import lazy_re
from miner.units import macro_text

_COMMENT = lazy_re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_INCLUDE = lazy_re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"][^>"\n]+[>"][ \t]*$', re.M)
_DIRECTIVE = lazy_re.compile(r"^[ \t]*#", re.M)
# `template R f<A>(...)` / `extern template ...`: an explicit instantiation (declaration) of a function;
# `template <...>` (a template or a specialization) and `template struct/class/union X<A>` are not.
_FUNCTION_INSTANCE = lazy_re.compile(r"(?:extern\s+)?template\s+(?!<|struct\b|class\b|union\b)[^{}]*\)[^{}()]*")
_MACRO_CALL = lazy_re.compile(r"(?:extern\s+)?([A-Za-z_]\w*)\s*\(")
MAX_BYTES = 64_000  # generated instance files are a few lines; a big file is not one
MAX_DEPTH = 4  # macros that invoke macros that write the instantiations


def _statements(code: str) -> list[str] | None:
    """Top-level `;`-terminated statements, None when something else (a brace, trailing text) is there."""
    if "{" in code or "}" in code:
        return None
    parts = code.split(";")
    if parts[-1].strip():
        return None
    return [p.strip() for p in parts[:-1] if p.strip()]


Macros = dict[str, list[macro_text.MacroDef]]  # every definition of a name: both sides of an #if


def _is_instance(stmt: str, macros: Macros, depth: int = 0) -> bool:
    """An explicit function instantiation, or a macro invocation that writes only such statements (or
    nothing) under every definition the project gives the macro."""
    if _FUNCTION_INSTANCE.fullmatch(stmt):
        return True
    m = _MACRO_CALL.match(stmt)
    defs = macros.get(m.group(1), []) if m else []
    if not defs or depth > MAX_DEPTH or not stmt.endswith(")") or any(d.params is None for d in defs):
        return False
    extern = "extern " if stmt.startswith("extern") else ""
    call = stmt[m.start(1):]
    for d in defs:
        expanded = macro_text.expand(call, {d.name: d}).strip()
        if expanded == call:
            return False
        inner = _statements(expanded.rstrip(";") + ";") if expanded else []
        if inner is None or not all(_is_instance(extern + x, macros, depth + 1) for x in inner):
            return False
    return True


def _own_statements(text: str) -> list[str] | None:
    """The statements beside the `#include` lines, None when the file has anything else."""
    body = _INCLUDE.sub(" ", _COMMENT.sub(" ", text))
    if _DIRECTIVE.search(body):
        return None  # any other directive (#define, #if, #pragma) may change what the headers say
    return _statements(body)


def instance_only(text: str, macros: Macros) -> bool:
    """The file holds `#include` lines and explicit function instantiations only (at least one)."""
    stmts = _own_statements(text)
    return bool(stmts) and all(_is_instance(s, macros) for s in stmts)


def include_lines(text: str) -> tuple[str, ...]:
    return tuple(" ".join(m.group(0).split()) for m in _INCLUDE.finditer(_COMMENT.sub(" ", text)))


def groups(roots: list[str], data: dict[str, bytes], reach: Callable[[str], set[str]],
           flags: Callable[[str], list[str]]) -> dict[str, list[str]]:
    """{first file: the other files} for every group of two or more instance files with the same folder,
    include lines and parse flags. `reach(path)`: the files a translation unit includes (their macros
    write the instantiations); `flags(path)`: its parse arguments."""
    by_key: dict[tuple, list[str]] = defaultdict(list)
    macro_cache: dict[str, Macros] = {}
    for root in sorted(roots):
        raw = data.get(root)
        if raw is None or len(raw) > MAX_BYTES or b"template" not in raw and b"(" not in raw:
            continue
        text = raw.decode("utf-8", "replace")
        lines = include_lines(text)
        if not lines or not _own_statements(text):
            continue  # before reading the headers' macros: most files are not instance files
        macros: Macros = defaultdict(list)
        for p in sorted(reach(root) - {root}):
            if p not in macro_cache:
                macro_cache[p] = macro_text.every_definition(data.get(p, b"").decode("utf-8", "replace"))
            for name, defs in macro_cache[p].items():
                macros[name] += [d for d in defs if d not in macros[name]]
        if instance_only(text, macros):
            by_key[(os.path.dirname(root), lines, tuple(flags(root)))].append(root)
    return {members[0]: members[1:] for members in by_key.values() if len(members) > 1}

