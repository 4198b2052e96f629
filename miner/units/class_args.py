"""A class for a template kernel's class parameter that no launch gives: one the project passes to another kernel.

A kernel template whose type parameter types objects it names members of (`plan.Eval(y, x)`, `grid.ch(0, b)`:
instantiations.member_uses) cannot take the scalar default (`float`): "expression must have class type". Where its
launches give no concrete argument for it (nothing instantiates it, or its launcher template's own callers are
unknown), the analysis looks for a class the project itself passes: a concrete argument some launch in the same
translation unit gives another kernel's type parameter. One fits when a definition of that class (a class, class
template or partial specialization the project declares by that name, its bases followed) declares every member the
kernel names through the parameter. Among those that fit, one given to a parameter of the same name comes first
(the project's own convention: `Partition partition` in every kernel of a file), then the most often given, then
the shortest. Nothing is invented: where nothing fits, the parameter keeps the default and units.weak_args states
`class_parameter`. The chosen class stays `inferred` (a guess, not an instantiation the project makes), with the
reason in the instantiation's `inferred_classes`.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from miner import lazy_re
from miner.units.instantiations import _SCALARS, _UNRESOLVED_ARG, member_uses

if TYPE_CHECKING:
    from miner.frontends.model import Kernel
    from miner.units.closure.context import TUContext
    from miner.units.records import Launch

# `ns::Name<...>` (optionally `const`): the class a concrete argument names, and its last component.
_CLASS_ARG = lazy_re.compile(r"\s*(?:const\s+)?(?:::)?((?:[A-Za-z_]\w*\s*::\s*)*([A-Za-z_]\w*))\s*(<.*>)?\s*$", re.S)
_CLASS_KINDS = ("STRUCT_DECL", "CLASS_DECL", "UNION_DECL", "CLASS_TEMPLATE", "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION")
_MEMBER_KINDS = ("FIELD_DECL", "CXX_METHOD", "FUNCTION_TEMPLATE", "VAR_DECL", "CONVERSION_FUNCTION",
                 "USING_DECLARATION")
_BASE_DEPTH = 4  # bases of bases followed (`Partition : Instance<...>, HaloPartition<Opt>`)


def _concrete_lists(launch: Launch) -> list[list[str]]:
    """The concrete argument lists a launch gives (none from a host template whose instantiations are unknown)."""
    out: list[list[str]] = [list(a) for a in launch.dispatch_args or []]
    if launch.template_args:
        out.append(list(launch.template_args))
    elif launch.host_template_args and not launch.host_defaulted:
        out += [list(a) for a in launch.host_template_args]
    elif launch.resolved_text:
        out.append(list(launch.resolved_text))
    return out


def _given(found: list[Launch], by_name: dict[Any, Kernel]) -> tuple[list[tuple[str, str, str]], set[Any]]:
    """(parameter name, class argument, kernel) of every class some launch gives a kernel's type parameter, and the
    kernels that have a launch with concrete arguments."""
    out: list[tuple[str, str, str]] = []
    concrete: set[Any] = set()
    for launch in found:
        k = by_name.get(launch.kernel) if launch.kernel is not None else None
        if k is None:
            continue
        lists = _concrete_lists(launch)
        if lists:
            concrete.add(launch.kernel)
        for args in lists:
            for tp, a in zip(k.template_params, args, strict=False):
                a = a.strip()
                if tp.kind == "type" and not _SCALARS.fullmatch(a) and _CLASS_ARG.fullmatch(a) \
                        and not _UNRESOLVED_ARG.search(a) and "(anonymous" not in a and "lambda" not in a:
                    out.append((tp.name, a, k.name))
    return out, concrete


def _members(cur: Any, depth: int = _BASE_DEPTH) -> set[str] | None:
    """The names a class declares, with its bases'; None where a base is no class the parse resolved (its members
    are unknown, so no fit can be told)."""
    out: set[str] = set()
    for c in cur.get_children():
        kind = c.kind.name
        if kind in _MEMBER_KINDS and c.spelling:
            out.add(c.spelling)
        elif kind == "CXX_BASE_SPECIFIER":
            base = c.referenced
            base = base.get_definition() or base if base is not None else None
            if base is None or base.kind.name not in _CLASS_KINDS or depth == 0:
                return None
            more = _members(base, depth - 1)
            if more is None:
                return None
            out |= more
    return out


def _fits(ctx: TUContext, head: str, wanted: frozenset[str], memo: dict[str, list[set[str]]]) -> bool:
    """Some definition the project gives the class `head` declares every member in `wanted`."""
    if head not in memo:
        defs: list[set[str]] = []
        for group in ctx.groups_named(head):
            for _piece, cur in group:
                if cur.kind.name in _CLASS_KINDS and cur.is_definition() and (m := _members(cur)) is not None:
                    defs.append(m)
        memo[head] = defs
    return any(wanted <= d for d in memo[head])


def infer(ctx: TUContext, kernels: list[Kernel], found: list[Launch], by_name: dict[Any, Kernel],
          read: Any) -> dict[tuple[str, int], dict[str, dict[str, str]]]:
    """(kernel path, start) -> class parameter -> {"type", "reason"}, for the TU's template kernels without a launch
    that gives concrete arguments whose class parameters a class the TU passes elsewhere fits."""
    given, concrete = _given(found, by_name)
    if not given:
        return {}
    concrete_keys = {(by_name[key].path, by_name[key].start_offset) for key in concrete}
    counts = Counter((p, a) for p, a, _k in given)
    memo: dict[str, list[set[str]]] = {}
    out: dict[tuple[str, int], dict[str, dict[str, str]]] = {}
    for k in kernels:
        key = (k.path, k.start_offset)
        if not k.template_params or k.is_specialization or key in concrete_keys:
            continue
        meta = {"name": k.name, "params": [{"name": p.name, "type": p.type} for p in k.params],
                "template_params": [{"kind": t.kind, "name": t.name} for t in k.template_params]}
        text = read(k.path)[k.start_offset:k.end_offset].decode("utf-8", "replace")
        uses = member_uses(meta, text)
        for param, wanted in sorted(uses.items()):
            best: tuple[tuple[int, int, int], str, str] | None = None
            for (p, a), n in counts.items():
                m = _CLASS_ARG.fullmatch(a)
                if m is None or not _fits(ctx, m.group(2), wanted, memo):
                    continue
                rank = (0 if p == param else 1, -n, len(a))
                if best is None or rank < best[0]:
                    donor = next(kn for pp, aa, kn in given if (pp, aa) == (p, a))
                    best = (rank, a, f"{donor}'s parameter {p}, a launch in the translation unit of "
                                     f"{os.path.basename(ctx.tu.spelling)}")
            if best is None:
                continue
            _rank, arg, where = best
            out.setdefault(key, {})[param] = {
                "type": arg,
                "reason": f"no launch gives {param}, which {k.name} names members of ({', '.join(sorted(wanted))}); "
                          f"{arg} is a class the project passes ({where}) and declares every one of them"}
    return out


def names(found: dict[str, dict[str, str]]) -> set[str]:
    """The identifiers in the chosen classes: the kernel's closure needs their definitions."""
    return {n for v in found.values() for n in re.findall(r"[A-Za-z_]\w*", v["type"])}
