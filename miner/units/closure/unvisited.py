"""Names a declaration's text writes where libclang's cursor walk does not go.

libclang 18 visits `decltype(...)`, `sizeof(...)`, default template arguments and `enable_if` conditions, but
exposes no cursor for the expression of an exception specification (`void swap(P& o) noexcept(
detail::sw::nothrow<T>::value)`), an alignment (`alignas(kAlign)`, `__align__(N)`), a conditional
`explicit(...)`, CUDA's `__launch_bounds__(kThreads)` or an `__attribute__((...))`. A name used only there is
reached by no reference, so a closure built from the cursor walk drops it, and the unit fails where the
original compiled ("namespace ... has no member"). The closure reads these argument lists from the text and
looks each (qualified) name up in the namespaces visible from the declaration.
"""

from __future__ import annotations

import re

import clang.cindex as ci

from miner import lazy_re
from miner.units.closure.context import TUContext
from miner.units.closure.shims import _namespace_chain

# Keywords/attributes whose parenthesized argument libclang does not expose as child cursors.
_OPENERS = lazy_re.compile(r"\b(?:noexcept|alignas|explicit|__launch_bounds__|__align__|__attribute__|__declspec)\s*\(")
# A possibly qualified name: `::a::b::c`, `a :: b`; template arguments end it (`nothrow<T>::value`).
_CHAIN = lazy_re.compile(r"(::\s*)?([A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)")
_KEYWORDS = frozenset({"noexcept", "alignas", "explicit", "sizeof", "alignof", "decltype", "typename", "template",
                       "true", "false", "nullptr", "const", "volatile", "static_cast", "reinterpret_cast",
                       "const_cast", "dynamic_cast", "this", "operator", "__attribute__", "__declspec"})


def argument_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of the text inside each unvisited argument list, outermost only (`noexcept(noexcept(x))`
    is one span)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    while (m := _OPENERS.search(text, pos)) is not None:
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += (text[i] == "(") - (text[i] == ")")
            i += 1
        spans.append((m.end(), i - 1 if depth == 0 else i))
        pos = i
    return spans


def specialization_span(text: str, name: str) -> tuple[int, int] | None:
    """(start, end) of the template argument list an explicit specialization of the function `name` writes
    (`template <> bool matches<packed16>(Kind k)`): libclang 18 exposes no cursor for those arguments either, so a
    type named only there (a specialization for a type nothing else uses) was left out of the unit."""
    m = re.search(r"(?<![\w.>])" + re.escape(name) + r"\s*<", text)
    if m is None:
        return None
    depth, i = 1, m.end()
    while i < len(text) and depth:
        depth += (text[i] == "<") - (text[i] == ">")
        i += 1
    return (m.end(), i - 1) if depth == 0 else None


def qualified_names(text: str, extra: tuple[int, int] | None = None) -> list[tuple[tuple[str, ...], str, bool]]:
    """(qualifiers, name, global) of each name written inside the unvisited argument lists of `text` (comments
    and strings already blanked), and inside the span `extra`. A name after `>::` or `)::` (`nothrow<T>::value`)
    is a member of what precedes it, reached with that, and left out; so are keywords."""
    out: list[tuple[tuple[str, ...], str, bool]] = []
    for start, end in [*argument_spans(text), *([extra] if extra else [])]:
        for m in _CHAIN.finditer(text, start, end):
            before = text[start:m.start()].rstrip()
            if m.group(1) and before.endswith((">", ")", "]")):
                continue  # `X<T>::value`: a member of X<T>
            if before.endswith((".", "->")):
                continue  # `o.first`: a member access
            parts = tuple(p.strip() for p in m.group(2).split("::"))
            if parts[-1] in _KEYWORDS or parts[0] in _KEYWORDS:
                continue
            out.append((parts[:-1], parts[-1], bool(m.group(1))))
    return list(dict.fromkeys(out))


def candidate_scopes(scope: tuple[str, ...], quals: tuple[str, ...], is_global: bool) -> list[tuple[str, ...]]:
    """The namespaces a (qualified) name written in `scope` may live in, innermost first; an anonymous
    namespace's names are visible from its enclosing one."""
    heads = [()] if is_global else [scope[:i] for i in range(len(scope), -1, -1)]
    return [s for h in heads for s in (h + quals, h + ("",) + quals)]


def using_scopes(ctx: TUContext, scope: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Namespaces that `using namespace X;` directives make visible in `scope` (a directive in `scope` or in
    one of its enclosing namespaces, an unnamed one included): `__launch_bounds__(kThreads)` in a file that
    brings the constants of `detail::knobs` in that way names nothing the enclosing scopes hold."""
    cache: dict[tuple[str, ...], list[tuple[str, ...]]] = ctx.__dict__.setdefault("_using_scopes", {})
    if scope not in cache:
        out: list[tuple[str, ...]] = []
        for lst in ctx.pieces.values():
            for _s, _e, piece, c in lst:
                if piece.kind != "USING_DIRECTIVE" or scope[:len(piece.namespaces)] != piece.namespaces:
                    continue
                for ch in c.get_children():
                    ref = ch.referenced
                    if ref is not None and ref.kind == ci.CursorKind.NAMESPACE and _namespace_chain(ref) not in out:
                        out.append(_namespace_chain(ref))
        cache[scope] = out
    return cache[scope]
