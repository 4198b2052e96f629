"""Namespace names of explicit instantiation lines, spelled as the compiler reads them where the line sits.

`using namespace functional;` then `template void Add<BinaryFunctor<elem::Mult, Capture>>(...);` inside
`namespace proj { namespace gpu {`: `elem` is `proj::functional::elem`, seen through the using-directive. The
arguments travel to the kernels the host template launches, and the unit instantiates them in the kernel's
namespace, where no such using-directive holds: "identifier elem is undefined". Unqualified type names are
qualified by the unit's pieces (`render._qualified_types`); a relative namespace head (`elem::`) names no piece.
The compiler says which namespace it is: a probe appended to the main file declares, in the namespace of the
host template the line instantiates (an explicit instantiation sits in an enclosing namespace of its template;
a using-directive there holds in the reopened namespace too),

    namespace proj { namespace gpu { namespace __km_ns_0 = elem; } }

and the alias's target is the full chain. Only heads that are no namespace at global scope are asked, so a TU
whose lines write `std::` or `at::` pays no probe parse.
"""

from __future__ import annotations

import re

import clang.cindex as ci

from miner import lazy_re
from miner.units.closure import TUContext
from miner.units.closure.shims import _enclosing_namespaces
from miner.units.launches.record import K

# A relative qualified name's first component (`elem` of `elem::Min`; not `::x`, not the `b` of `a::b::c`).
_HEAD = lazy_re.compile(r"(?<![\w:])([A-Za-z_]\w*)\s*::(?!\s*~)")


def qualify(ctx: TUContext, lines: list[tuple[ci.Cursor, list[str]]]) -> list[list[str]]:
    """Each line's arguments with relative namespace heads written from the global namespace, as the namespace of
    its host template (`fn`) reads them; a head the compiler does not read as a namespace is left as written."""
    wanted: dict[tuple[tuple[str, ...], str], str] = {}
    top = _global_namespaces(ctx)
    for fn, args in lines:
        ns = tuple(_enclosing_namespaces(fn))
        for a in args:
            for head in _HEAD.findall(a):
                if head not in top and (ns, head) not in wanted:
                    wanted[(ns, head)] = f"__km_ns_{len(wanted)}"
    found = _probe(ctx, wanted) if wanted else {}
    out = []
    for fn, args in lines:
        ns = tuple(_enclosing_namespaces(fn))
        out.append([_HEAD.sub(lambda m, ns=ns: _spelled(m, found.get((ns, m.group(1)))), a) for a in args])
    return out


def _spelled(m: re.Match[str], full: str | None) -> str:
    return f"{full}::" if full else m.group(0)


def _global_namespaces(ctx: TUContext) -> set[str]:
    names = ctx.memo("_global_namespaces", set)
    if not names:
        names.update(c.spelling for c in ctx.tu.cursor.get_children() if c.kind == K.NAMESPACE and c.spelling)
        names.add("std")
    return names


def _probe(ctx: TUContext, wanted: dict[tuple[tuple[str, ...], str], str]) -> dict[tuple[tuple[str, ...], str], str]:
    """One parse with a namespace alias per (namespace, head); the chain each alias names, by the same key."""
    if ctx.probe is None:
        return {}
    lines = []
    for (ns, head), alias in wanted.items():
        opened = "".join(f"namespace {n} {{ " if n else "namespace { " for n in ns)
        lines.append(f"{opened}namespace {alias} = {head};{' }' * len(ns)}")
    tu = ctx.probe("\n".join(lines))
    if tu is None:
        return {}
    main = ctx.norm(ctx.tu.spelling)
    bad = {d.location.line for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error
           and d.location.file is not None and ctx.norm(d.location.file.name) == main}
    by_alias = {alias: key for key, alias in wanted.items()}
    out: dict[tuple[tuple[str, ...], str], str] = {}
    stack = [c for c in tu.cursor.get_children() if c.kind == K.NAMESPACE]
    while stack:
        c = stack.pop()
        if c.location.file is None or ctx.norm(c.location.file.name) != main:
            continue
        for ch in c.get_children():
            if ch.kind == K.NAMESPACE:
                stack.append(ch)
            elif ch.kind == K.NAMESPACE_ALIAS and ch.spelling in by_alias and ch.location.line not in bad:
                target = next((r.referenced for r in ch.get_children() if r.kind == K.NAMESPACE_REF), None)
                chain = [*_enclosing_namespaces(target), target.spelling] if target is not None else []
                if chain and all(chain):  # (an anonymous namespace cannot be written)
                    out[by_alias[ch.spelling]] = "::".join(chain)
    return out
