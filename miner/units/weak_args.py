"""Why a template kernel's arguments are only defaults (`inferred`): a stated reason where the mined sources
hold no concrete arguments at all, so such a kernel is told apart from one whose real arguments the miner missed.

Two cases are stated, each checked against the sources rather than assumed:

- `not_instantiated`: nothing launches, references or explicitly instantiates the kernel. Its name is written
  nowhere besides its definition (`launch_missing: not_referenced`), or only at launches the AST resolved to
  another kernel of that name, an overload or a same-name kernel of another file (`other_definition`), or only
  in code a literal `#if 0` switches off (`disabled_code`).
- `generated_launcher`: nothing in the mined sources names the kernel, and its translation unit includes files
  the tree lacks that a project script writes (`launch_missing: generated_source`, units/generated.py).
- `class_parameter`: a type parameter the kernel names members through (`typename AK::Params`) has no argument a
  launch gives; a scalar default is no class, so such a unit cannot build whatever else is right.
- `launcher_not_instantiated`: every launch sits in a host function template whose instantiations are unknown,
  and no such template is named anywhere besides its own definition and the bodies of its same-name overloads
  (`SetData(ContextPtr c, ...)` forwarding to `SetData(cudaStream_t s, ...)`): nothing calls or instantiates it.
- `generic_lambda`: every launch sits in a generic lambda and deduces the kernel's template arguments from its
  `auto` parameters, whose types only the lambda's instantiations (a variant visitor's alternatives) give.
- `launcher_unparsed` (set by units.assemble): every launch's text sits in a function whose head the parse
  reported errors on and read as no function (a parameter of a library type the parse does not read:
  units/unparsed_launchers.py), so the launch is not in the AST.

Anything else (a launch whose arguments the miner could not follow, a name written where no launch was
resolved) carries no reason: that is the miner's miss, counted as such (`scripts/mine_corpus.py`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from miner.units.mentions import Mentions
from miner.units.records import Analyses, Launch
from miner.units.unparsed_launchers import enclosing_function

WEAK = ("inferred", "none")


def launch_sites(data: Analyses, but: tuple[str, int]) -> set[tuple[str, int]]:
    """(path, line) of every recorded launch of a kernel other than `but`."""
    return {(lc.path, lc.line) for key, recs in data.launches.items() if key != but
            for lc in recs if lc.kind != "reference"}


def other_definition(uses: list[tuple[str, int]], sites: set[tuple[str, int]],
                     mentions: Mentions | None = None) -> bool:
    """Every place the name is written is a launch resolved to another kernel: at the launch itself, or in the
    body of a launch macro (`#define LAUNCH(N) k<T, N><<<...>>>(...)`) every invocation of which is one."""
    if not uses:
        return False
    for path, line in uses:
        if (path, line) in sites:
            continue
        macro = mentions.macro_at(path, line) if mentions is not None else None
        if macro is None:
            return False
        name, start, end = macro
        inv = mentions.uses(name, (path, start, end))  # type: ignore[union-attr]
        if not inv or not all(u in sites for u in inv):
            return False
    return True


def launcher_uses(records: Iterable[Launch], mentions: Mentions) -> dict[str, int] | None:
    """How often each enclosing host template of the launches is named besides its own name at its definition,
    when every launch took its host template's defaults (else None: the launches had real arguments)."""
    launches = [lc for lc in records if lc.kind != "reference"]
    if not launches or not all(lc.host_defaulted and lc.host_template for lc in launches):
        return None
    out: dict[str, int] = {}
    for lc in launches:
        path, offset = lc.host_template  # type: ignore[misc]
        # A use inside another overload of the same name (one that forwards to this one) enters the set
        # only if that overload is entered: uses among the overloads themselves do not count.
        uses = [u for u in mentions.uses(lc.launcher, (path, offset, offset + 1))
                if not mentions.in_definition_of(lc.launcher, *u)]
        # (a use inside a function template that is itself named nowhere, `spmv_coo_flat_k` calling
        # `__spmv_coo_flat_k` and called by nothing, instantiates nothing either)
        out[f"{lc.launcher}@{path}:{offset}"] = len([u for u in uses if not _in_unused_caller(mentions, u, 3)])
    return out


def _in_unused_caller(mentions: Mentions, use: tuple[str, int], depth: int) -> bool:
    """Whether `use` lies in the body of a function template whose name is written nowhere outside its own
    definition (its callers' callers followed to `depth`): a chain of templates nothing instantiates."""
    found = enclosing_function(mentions.text(use[0]), use[1])
    if found is None:
        return False
    name, start, end = found
    callers = [u for u in mentions.uses(name, (use[0], start, end)) if not mentions.in_definition_of(name, *u)]
    return not callers or (depth > 0 and all(_in_unused_caller(mentions, u, depth - 1) for u in callers))


def reason(meta: dict[str, Any], insts: list[dict[str, Any]], records: list[Launch],
           launchers: dict[str, int] | None, classes: frozenset[str] = frozenset()) -> dict[str, Any] | None:
    """The `args_missing` block of a template kernel left with only inferred arguments, or None. `classes`: the type
    parameters the kernel names members through (instantiations.class_types)."""
    if not meta.get("template_params") or meta.get("is_specialization") or \
            not all(i.get("origin") in WEAK for i in insts):
        return None
    name = meta["name"]
    missing = (meta.get("launch_missing") or {}).get("reason")
    if not records and missing in ("not_referenced", "other_definition", "disabled_code"):
        return {"reason": "not_instantiated",
                "detail": f"nothing in the mined sources launches, references or explicitly instantiates {name} "
                          "(launch_missing: " + missing + "): no concrete template arguments exist there"}
    if not records and missing == "generated_source":
        return {"reason": "generated_launcher",
                "detail": f"{name}'s launches are in sources the build generates (launch_missing: generated_source): "
                          "the mined sources hold no concrete template arguments"}
    if launchers and not any(launchers.values()):
        names = sorted({k.split("@", 1)[0] for k in launchers})
        return {"reason": "launcher_not_instantiated",
                "detail": f"{name} is launched only in host template(s) {', '.join(names)}, which nothing in the "
                          "mined sources calls or instantiates: no concrete template arguments exist there"}
    launches = [lc for lc in records if lc.kind != "reference"]
    if launches and all(lc.generic_params for lc in launches):
        params = sorted({p for lc in launches for p in lc.generic_params})
        return {"reason": "generic_lambda",
                "detail": f"{name}'s template arguments are deduced from {', '.join(params)}, the `auto` parameter(s) "
                          "of the generic lambda(s) that launch it: each instantiation of the lambda (a visitor "
                          "calling it per alternative) gives its own, and the parse sees none of those types"}
    if launches and all(lc.unread_args for lc in launches):
        own = sorted({n for lc in launches for n in lc.unread_args})
        return {"reason": "launcher_unparsed",
                "detail": f"{name}'s launch was read back from the text of a definition the parse dropped whole (its "
                          f"head names a type the parse could not read); its template arguments are that function's "
                          f"own {', '.join(own)}, which only its callers fix, and those calls are no calls in the AST"}
    # (a class units.class_args found for the parameter is no default standing for nothing)
    named = sorted({n for i in insts for n in (i.get("template_args") or {})
                    if n in classes and n not in (i.get("inferred_classes") or {})})
    if named:
        return {"reason": "class_parameter",
                "detail": f"{name} names members through {', '.join(named)} (a class, never a scalar), and no launch "
                          "the miner followed gives one: the default it takes stands for nothing and cannot build"}
    return None
