"""Typed records of one translation unit's analysis: per kernel its closure, its launches and references,
and the explicit instantiations the unit writes.

The analysis runs in the parse worker while the libclang TU is alive (`units.analysis.analyse`); what it
finds crosses the process boundary and sits in the parse cache as plain data (`TUAnalysis.to_dict`), and
the extract pipeline reads it back typed (`TUAnalysis.from_dict`) for `units.assemble`. Plain data at the
boundary, so the cache never depends on these classes' pickled layout. This module imports nothing heavy:
the parent process reads records without loading the analysis.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Protocol

KernelKey = tuple[str, int]  # (path, byte offset where the kernel's definition starts)

_ATOMS = frozenset({str, int, float, bool, type(None)})
_FIELDS: dict[type, tuple[str, ...]] = {}


def plain(obj: Any) -> Any:
    """`dataclasses.asdict` for these records, the same dict: a rerun's cache keys serialise every closure
    and launch, and asdict's deepcopy of each string was a third of it. Exact str/int/float/bool/None,
    list, tuple, dict and dataclass instances are copied here; anything else as asdict does."""
    t = type(obj)
    if t in _ATOMS:
        return obj
    if t is list:
        return [plain(x) for x in obj]
    if t is dict:
        return {plain(k): plain(v) for k, v in obj.items()}
    if t is tuple:
        return tuple(plain(x) for x in obj)
    names = _FIELDS.get(t)
    if names is None:
        if not dataclasses.is_dataclass(t):
            return dataclasses._asdict_inner(obj, dict)  # type: ignore[attr-defined]
        names = _FIELDS[t] = tuple(f.name for f in dataclasses.fields(t))
    return {n: plain(getattr(obj, n)) for n in names}


@dataclass
class PieceText:
    """One closure piece (or macro) as text, in source order, with its namespace chain."""

    kind: str  # the libclang cursor kind's name (`FUNCTION_DECL`, ...) or `MACRO`
    name: str
    namespaces: list[str]
    text: str
    path: str
    line: int
    after: bool = False  # after the kernel in the source (its own specializations): emitted after it
    c_linkage: bool = False  # declared inside `extern "C"`, which its text does not hold: the unit wraps it
    functor: bool = False  # a struct standing for a lambda (launches.functors): only in the units naming it
    # Taken from another translation unit's closure for the types these name in its launches' template
    # arguments (a functor class defined in that .cu): only in the units whose arguments name one of them.
    needs: list[str] = field(default_factory=list)
    # `#if` conditions the source writes the declaration under and the unit repeats (closure.arch_branches.arch_guards)
    guards: list[str] = field(default_factory=list)


@dataclass
class ClosureRecord:
    """What a kernel's unit needs besides the kernel: pieces, `#include`s, torch shim names, and the
    metadata `unresolved` entries (symbol, reason, where) for parse errors inside the closure."""

    kernel_path: str
    pieces: list[PieceText] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)
    shims: list[str] = field(default_factory=list)
    unresolved: list[dict[str, str]] = field(default_factory=list)
    # Vendored header libraries the unit #includes instead of inlining (closure.vendored): include_dir,
    # parts, headers, defines, define_text.
    vendored: list[dict[str, Any]] = field(default_factory=list)
    # The frameworks (frontends.frameworks: torch, tf) whose unit shims the unit inlines for `shims`.
    frameworks: list[str] = field(default_factory=list)
    # The TU's includes found nowhere by its parse (closure.text._lacking_headers): render states a failure they
    # explain (units.render._lacking_statement).
    lacking: list[str] = field(default_factory=list)
    # Device functions and `__device__`/`__constant__` variables of external linkage the closure reaches but the
    # TU only declares (units.cross_file.externals): name, namespaces, kind, usr, path, line. A project built with
    # separate compilation (`-rdc`) defines them in another file; extract brings that definition in.
    externals: list[dict[str, Any]] = field(default_factory=list)
    # The definitions brought in from other files (extract.cross_file): symbol, kind, path, line, declared.
    cross_file: list[dict[str, Any]] = field(default_factory=list)
    # Class parameter -> {"type", "reason"}: a class the TU passes another kernel that fits a class parameter no
    # launch gives (units.class_args); the closure holds its definition, instantiations.plan puts it in.
    class_args: dict[str, dict[str, str]] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return plain(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ClosureRecord:
        return cls(d["kernel_path"], [PieceText(**p) for p in d["pieces"]], list(d["includes"]),
                   list(d["shims"]), [dict(u) for u in d["unresolved"]], [dict(v) for v in d.get("vendored", [])],
                   list(d.get("frameworks", ["torch"] if d["shims"] else [])), list(d.get("lacking", [])),
                   [dict(e) for e in d.get("externals", [])], [dict(c) for c in d.get("cross_file", [])],
                   {k: dict(v) for k, v in d.get("class_args", {}).items()})


@dataclass
class Declaration:
    """A function a translation unit declares but does not define (`void K(const P p);` in a host .cpp):
    a launch of it belongs to the kernel another unit defines with that name and parameter types."""

    name: str  # qualified
    params: list[str]  # parameter types as clang spells them
    path: str
    line: int
    c_linkage: bool = False  # `extern "C"`: one symbol of that name, whatever parameters the declaration lists
    template_params: list[str] = field(default_factory=list)  # of a declared-only function template


@dataclass
class Launch:
    kernel: KernelKey | None  # in the search (path, offset of the kernel's name); handed back (path, start)
    launcher: str
    path: str
    line: int
    kind: str  # `<<<>>>`, the launch API or macro, or `reference`
    config: dict[str, str | None] = field(default_factory=dict)
    values: dict[str, int] = field(default_factory=dict)
    # grid/block/shared memory with locals and macros put in (miner.units.launch_formula), where that differs.
    formula: dict[str, str] = field(default_factory=dict)
    definitions: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    template_args: list[str] | None = None  # concrete, when the AST resolved them
    template_args_text: list[str] = field(default_factory=list)  # as written
    in_lambda: bool = False
    host_template: tuple[str, int] | None = None  # enclosing host function template
    host_params: list[str] = field(default_factory=list)
    # One argument list per known instantiation of the enclosing host template(s).
    host_template_args: list[list[str]] = field(default_factory=list)
    # The translation unit (main file) each of `host_template_args` was instantiated in, same order: set when
    # the analyses are merged (extract.unit_data), so `verify` compiles a TU that makes that instantiation.
    host_tus: list[str] = field(default_factory=list)
    # The host template's instantiations were unknown: its parameters took their defaults.
    host_defaulted: bool = False
    # Written arguments with macros, enumerators and aliases replaced (no host parameters left).
    resolved_text: list[str] | None = None
    # One argument list per element of the list a generic lambda is dispatched over
    # (`for_each<list_c<int, 64, 32>>([&](auto Tile) { k<T, Tile><<<...>>>(); })`).
    dispatch_args: list[list[str]] = field(default_factory=list)
    # The `auto` parameters of a generic lambda the launch's arguments name where the kernel's template arguments
    # are deduced from them (`[&](auto &p) { ctx.launch(cfg, k, p); }`): each instantiation of the lambda (a variant
    # visitor's alternatives) gives its own, and the parse sees none of them (units.weak_args: `generic_lambda`).
    generic_params: list[str] = field(default_factory=list)
    # Launches read back from a definition the parse dropped whole (launches.recovered): the names of that
    # function's own template parameters and type aliases its template arguments are written with. Only its
    # callers fix them, and none of those calls were read, so the arguments stay unknown (weak_args:
    # `launcher_unparsed`), never an instantiation spelled with the launcher's names.
    unread_args: list[str] = field(default_factory=list)
    # A launch of a function the unit only declares: `kernel` is None until extract matches the
    # declaration to the kernel another translation unit defines.
    declared: Declaration | None = None
    # Functor structs standing for lambdas these arguments name (PieceText fields), made in this launch's
    # translation unit: a kernel whose closure another TU took gets them from here.
    functors: list[dict[str, Any]] = field(default_factory=list)
    # A launch of a kernel pointer a function chose (launches.chosen): that function's qualified name, concrete
    # template arguments and the member read (`spec.run`); `kernel` is None until matched after the parse.
    via: dict[str, Any] | None = None
    # For a reference: the member of a kernel spec it is stored into (`s.run = (void *)k<T>`), if any.
    via_member: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return plain(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Launch:
        d = dict(d)
        for k in ("kernel", "host_template"):
            if d.get(k) is not None:
                d[k] = tuple(d[k])
        if d.get("declared") is not None:
            d["declared"] = Declaration(**d["declared"])
        return cls(**d)


@dataclass
class TUAnalysis:
    """Everything one translation unit's analysis found."""

    closures: dict[KernelKey, ClosureRecord] = field(default_factory=dict)
    launches: list[Launch] = field(default_factory=list)  # of kernels this unit defines
    declared_launches: list[Launch] = field(default_factory=list)  # of functions it only declares
    # kernel name -> template argument lists of its explicit instantiations (`template __global__ void k<float>(...)`)
    explicit: dict[str, list[list[str]]] = field(default_factory=dict)
    # Why the analysis stopped early (what it found until then is kept); not part of the plain data: the
    # parse result carries it as `unit_error`.
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"closures": [[list(key), c.to_dict()] for key, c in self.closures.items()],
                "launches": [lc.to_dict() for lc in self.launches],
                "declared_launches": [lc.to_dict() for lc in self.declared_launches],
                "explicit": {name: [list(a) for a in lst] for name, lst in self.explicit.items()}}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TUAnalysis:
        return cls({(key[0], key[1]): ClosureRecord.from_dict(c) for key, c in d["closures"]},
                   [Launch.from_dict(x) for x in d["launches"]],
                   [Launch.from_dict(x) for x in d["declared_launches"]],
                   {name: [list(a) for a in lst] for name, lst in d["explicit"].items()})


class Analyses(Protocol):
    """The analyses of every translation unit merged per kernel, as `units.assemble.attach` reads them
    (the extract pipeline's `UnitData`: the first closure found, launches from every unit)."""

    closures: dict[KernelKey, ClosureRecord]
    launches: dict[KernelKey, list[Launch]]
    explicit: dict[str, list[list[str]]]  # kernel name -> explicit instantiations' argument lists
