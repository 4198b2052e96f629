"""The parse workers' unit analyses merged across translation units: closures, launches, explicit
instantiations, and launches of kernels re-declared elsewhere matched to their definitions."""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from miner import lazy_re
from miner.extract import specialized
from miner.frontends import clang_frontend
from miner.frontends.model import Kernel
from miner.units.launches.chosen import match_chosen
from miner.units.records import ClosureRecord, KernelKey, Launch, TUAnalysis


@dataclass
class UnitData:
    """What the parse workers found for units: closures (first TU wins), launches, explicit insts."""

    closures: dict[KernelKey, ClosureRecord] = field(default_factory=dict)
    launches: dict[KernelKey, list[Launch]] = field(default_factory=dict)
    explicit: dict[str, list[list[str]]] = field(default_factory=dict)
    declared: list[Launch] = field(default_factory=list)  # launches of re-declared kernels

    def add(self, res: clang_frontend.ParseResult) -> None:
        self.add_analysis(analysis_of(res), res.path)

    def add_analysis(self, found: TUAnalysis, tu: str | None = None) -> None:
        if tu is not None:
            _mark_tu(found.launches, tu)
        for key, unit in found.closures.items():
            have = self.closures.setdefault(key, unit)
            if have is not unit:
                _take_argument_types(have, unit, [lc for lc in found.launches if lc.kernel == key])
                _take_class_args(have, unit)
        for launch in found.launches:
            self._add_launch(launch.kernel, launch)
        self.declared.extend(found.declared_launches)
        for name, lst in found.explicit.items():
            for args in lst:
                if args not in self.explicit.setdefault(name, []):
                    self.explicit[name].append(args)

    def _add_launch(self, key: KernelKey, launch: Launch) -> None:
        lst = self.launches.setdefault(key, [])
        sig = _launch_key(launch)
        same = next((x for x in lst if _launch_key(x) == sig), None)
        if same is None:
            lst.append(launch)
        else:
            _merge_host_args(same, launch)

    def share_with_branch_twins(self, kernels: list[Kernel]) -> None:
        """A kernel only tree-sitter saw, in a branch no define can turn on (`#if __CUDA_ARCH__ >= 900` / the real
        kernel / `#else` / an empty one of the same signature), takes the closure and launches of its twin in the
        parsed branch: the same name, file and parameters. Its text names what the twin's does (`__launch_bounds__(
        MAX_THREADS)`, the parameter types), and a launch binds to one or the other by configuration (nvcc's host
        pass sees the `#else`). Before, it had no closure at all: "MAX_THREADS is undefined"."""
        parsed = defaultdict(list)
        namesakes = defaultdict(list)
        for k in kernels:
            if k.frontend == "clang" and (k.path, k.start_offset) in self.closures:
                parsed[(k.path, k.qualified_name, len(k.params))].append(k)
                namesakes[(k.path, k.qualified_name)].append(k)
        for k in kernels:
            key = (k.path, k.start_offset)
            twins = parsed.get((k.path, k.qualified_name, len(k.params)), [])
            if k.frontend != "treesitter" or key in self.closures:
                continue
            # An older version of the kernel under `#if 0` (other parameters) beside the one built: the file's
            # names it uses (its device helpers, types) are the ones its namesake's closure takes; its launches
            # (other arguments) are not shared.
            alike = len(twins) == 1
            if not alike and len(twins := namesakes.get((k.path, k.qualified_name), [])) != 1:
                continue
            twin = twins[0]
            have = self.closures[(twin.path, twin.start_offset)]
            what = "twin" if alike else "namesake (other parameters)"
            self.closures[key] = replace(have, unresolved=[*have.unresolved, {
                "symbol": "*", "where": f"{os.path.basename(k.path)}:{k.start_line}",
                "reason": f"no AST (an inactive #if branch): the closure of its {what} at line {twin.start_line}"}])
            for lc in self.launches.get((twin.path, twin.start_offset), []) if alike else ():
                self._add_launch(key, replace(lc, kernel=key))

    def match_declared(self, kernels: list[Kernel]) -> None:
        """Launches of a kernel re-declared in another translation unit (`void K(const P p);` in a host
        .cpp, `cudaLaunchKernel((void*)K, ...)`) go to the kernel of that qualified name whose parameter
        types match; a declared template's, to the explicit specializations its arguments reach; where
        neither, to the only kernel of that name and parameter count; for an `extern "C"` declaration, else to
        the only C kernel of that name (one symbol, whatever it lists)."""
        by_name: dict[str, list[Kernel]] = defaultdict(list)
        for k in kernels:
            by_name[k.qualified_name].append(k)
        refs = [lc for lst in self.launches.values() for lc in lst if lc.kind == "reference"]
        for launch in match_chosen([lc for lc in self.declared if lc.via], refs):
            self._add_launch(launch.kernel, launch)
        for launch in self.declared:
            decl = launch.declared
            if decl is None:
                continue
            same = [k for k in by_name.get(decl.name, ()) if len(k.params) == len(decl.params)]
            exact = [k for k in same if [_type_key(p.type) for p in k.params] == [_type_key(t) for t in decl.params]]
            # A C declaration names the one symbol of its name whatever parameters it lists (a host header's copy
            # the kernel's own signature has outgrown): the only C kernel of that name where none fits better.
            cnamed = [k for k in by_name.get(decl.name, ()) if k.c_linkage] if decl.c_linkage else []
            # A declared template (`template <typename T> __global__ void K(T *p);`) whose definitions are
            # explicit specializations in other units: the ones its arguments reach (extract.specialized).
            for k in exact or specialized.reached(same, launch, _type_key) or (same if len(same) == 1 else []) \
                    or (cnamed if len(cnamed) == 1 else []):
                self._add_launch((k.path, k.start_offset), replace(launch, kernel=(k.path, k.start_offset)))


_IDENT = lazy_re.compile(r"[A-Za-z_]\w*")


def _take_argument_types(have: ClosureRecord, other: ClosureRecord, launches: list[Launch]) -> None:
    """A kernel's closure is taken in the first translation unit that reaches it; another TU's launches may
    name in their template arguments a type only that TU defines (`apply<2>(..., AxpyOp<float>(), a)` in its
    own .cu, giving `k<Chunks<2>, AxpyOp<float>, float>`). Its closure has the type and what the type needs:
    what the first closure lacks of it is added, emitted only in the units whose arguments name such a type."""
    named = {n for lc in launches for args in [lc.template_args or [], lc.resolved_text or [],
                                               *lc.host_template_args, *lc.dispatch_args]
             for a in args for n in _IDENT.findall(a)}
    _take_types(have, other, named)


def _take_class_args(have: ClosureRecord, other: ClosureRecord) -> None:
    """Classes another translation unit found for class parameters (units.class_args) that the first closure's
    TU did not: that TU passes them to other kernels (a test program instantiating the library's launchers), the
    first may pass none. Taken with their types' pieces, emitted only in the units whose arguments name them."""
    new = {p: v for p, v in other.class_args.items() if p not in have.class_args}
    if not new:
        return
    have.class_args = {**have.class_args, **new}
    _take_types(have, other, {n for v in new.values() for n in _IDENT.findall(v["type"])})


def _take_types(have: ClosureRecord, other: ClosureRecord, named: set[str]) -> None:
    """The pieces of `other` that the types `named` need and `have` lacks, added to `have` (see above)."""
    present = {p.name for p in have.pieces}
    lacking = sorted(n for n in named if n not in present and any(p.name == n and not p.functor
                                                                  for p in other.pieces))
    if not lacking:
        return
    known: dict[tuple[str, str, tuple[str, ...]], list[int]] = {}
    for i, p in enumerate(have.pieces):
        known.setdefault((p.kind, p.name, tuple(p.namespaces)), []).append(i)
    extra = [replace(p, needs=lacking) for p in other.pieces
             if not p.functor and (p.kind, p.name, tuple(p.namespaces)) not in known]
    # A piece an earlier merge added is emitted only for that merge's names: where this TU's closure has it too
    # (the matrix class both layers' virtual host methods use, each layer's functor launched from its own TU),
    # this merge's names need it as well, or their units lack it ("not a class or struct name"). Every piece of
    # that key: a class's forward declaration shares its definition's, and a typedef before the definition
    # needs it.
    for key in {(p.kind, p.name, tuple(p.namespaces)) for p in other.pieces if not p.functor}:
        for i in known.get(key, ()):
            if have.pieces[i].needs:
                have.pieces[i] = replace(have.pieces[i],
                                         needs=list(dict.fromkeys([*have.pieces[i].needs, *lacking])))
    # Each after what it may need of the first closure: those before the kernel, then those after it.
    have.pieces = [*[p for p in have.pieces if not p.after], *[p for p in extra if not p.after],
                   *[p for p in have.pieces if p.after], *[p for p in extra if p.after]]
    # and the headers those pieces include (`-FLT_MAX` in a member specialization of the argument's class, from
    # a header whose `<float.h>` only the other closure's files reached: "identifier FLT_MAX is undefined").
    have.includes = list(dict.fromkeys([*have.includes, *other.includes]))


def analysis_of(res: clang_frontend.ParseResult) -> TUAnalysis:
    """The parse result's analysis, typed again (empty where there was none)."""
    return TUAnalysis.from_dict(res.analysis) if res.analysis is not None else TUAnalysis()


_QUALIFIERS = lazy_re.compile(r"\b(?:const|volatile|__restrict__|__restrict|restrict|struct|class|enum)\b|(?:\w+)?::")


def _type_key(text: str) -> str:
    """A parameter type compared across translation units: qualifiers that do not change the call (a
    by-value `const`, `__restrict__`), elaborated keywords and namespace prefixes left out."""
    return "".join(_QUALIFIERS.sub(" ", text).split())


def _mark_tu(launches: list[Launch], tu: str) -> None:
    """Each host-template argument list of one translation unit's analysis came from that TU (the parse's main
    file): a header's launcher instantiated only in a test program is compiled, by `verify`, in that program."""
    for lc in launches:
        if lc.host_template_args and not lc.host_defaulted and len(lc.host_tus) != len(lc.host_template_args):
            lc.host_tus = [tu] * len(lc.host_template_args)


def _merge_host_args(first: Launch, other: Launch) -> None:
    """The same launch in a header seen from another translation unit: a host template is instantiated
    per TU (`dispatch_softmax<Half, float>(...)` in one .cu, nothing in another that includes the same
    header), so the instantiations of every TU count, and real ones replace defaulted ones."""
    new = [a for a in other.host_template_args or [] if a]
    if new and not other.host_defaulted:
        if first.host_defaulted or not first.host_template_args:
            first.host_template_args, first.host_defaulted, first.host_tus = [], False, []
        tus = other.host_tus if len(other.host_tus) == len(other.host_template_args) else []
        for i, args in enumerate(other.host_template_args or []):
            if args and args not in first.host_template_args:
                first.host_template_args.append(args)
                # (kept parallel only while every list has its TU: the first TU's lists carry theirs)
                if tus and len(first.host_tus) == len(first.host_template_args) - 1:
                    first.host_tus.append(tus[i])
    for args in other.dispatch_args or []:
        if args not in first.dispatch_args:
            first.dispatch_args.append(args)
    for f in other.functors or []:
        if all(f["name"] != g["name"] for g in first.functors):
            first.functors.append(f)


def _launch_key(launch: Launch) -> tuple[Any, ...]:
    return (launch.path, launch.line, launch.kind, tuple(launch.template_args or ()),
            tuple(launch.template_args_text or ()))
