"""The analysis the parse worker runs on a live translation unit: each kernel's closure, its launches and
references, and the explicit instantiations the unit writes.

The extract pipeline passes `analyse` into `frontends.clang_frontend.parse`, which calls it while the TU
is alive (cursors cannot leave the worker process); the frontend imports nothing from `units/`. The
result is typed (`units.records.TUAnalysis`); the frontend hands it back as plain data (`to_dict`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from miner import lazy_re
from miner.units import class_args, closure, cross_file, instantiations, launches, macro_text
from miner.units.records import ClosureRecord, Declaration, PieceText, TUAnalysis, plain

if TYPE_CHECKING:
    from miner.frontends.clang_frontend import LiveTU

_IDENT = lazy_re.compile(r"[A-Za-z_]\w*")


def analyse(live: LiveTU) -> TUAnalysis:
    """Closure and launches while the TU is alive. A failure part way keeps what was found before it
    (launches without closures, say) and says why in `error`: one TU's closure failing must not stop the run."""
    out = TUAnalysis()
    try:
        _analyse(live, out)
    except Exception as exc:  # noqa: BLE001 - see above
        out.error = f"{type(exc).__name__}: {exc}"
    return out


def _analyse(live: LiveTU, out: TUAnalysis) -> None:
    ctx = closure.TUContext(live.tu, live.inputs, live.norm, live.read, live.forced)
    try:
        _analyse_in(live, ctx, out)
    finally:
        # The context's per-TU tables refer to it (memoised closures over `ctx`): cleared, the TU they hold is
        # freed as the parse returns, not at the next collection of cycles (clang_frontend.parse).
        ctx.__dict__.clear()


def _analyse_in(live: LiveTU, ctx: closure.TUContext, out: TUAnalysis) -> None:
    tu, kernels, norm = live.tu, live.kernels, live.norm
    ctx.instances = list(live.instances)
    ctx.probe = getattr(live, "probe", None)
    ctx.given_defines = dict(getattr(live, "command_line", None) or {})
    by_name = {(k.path, k.name_offset): k for k in kernels}
    # Every redeclaration is its own key: a reference resolves to whichever one lookup found.
    stand_ins = {key: d for key, d in live.declared.items() if key not in by_name}
    found, _calls = launches.find(ctx, {**by_name, **stand_ins})
    # Names in the concrete template arguments of each kernel's launches and explicit instantiations
    # (`k<GPUHashTable<int, int>::device_view>`): the unit needs their types too.
    arg_names: dict[tuple[str, int], set[str]] = {}
    for launch in found:
        if launch.kernel is None:
            if launch.via:  # a chosen kernel pointer (launches.chosen): matched across TUs in extract
                out.declared_launches.append(launch)
            continue
        if launch.kernel in stand_ins:
            # Only real launches: a declared function named elsewhere is an ordinary host call.
            if launch.kind != "reference":
                dl = stand_ins[launch.kernel]
                out.declared_launches.append(replace(launch, kernel=None, declared=Declaration(
                    dl.qualified_name, dl.params, dl.path, dl.line, dl.c_linkage, list(dl.template_params))))
            continue
        k = by_name[launch.kernel]
        rec = replace(launch, kernel=(k.path, k.start_offset))
        out.launches.append(rec)
        lists = [launch.template_args or [], launch.resolved_text or [], *launch.host_template_args,
                 *launch.dispatch_args]
        named = {n for args in lists for a in args for n in _IDENT.findall(a)}
        arg_names.setdefault(rec.kernel, set()).update(named)
        rec.functors = [plain(PieceText("STRUCT_DECL", f.name, list(f.namespaces), f.text, f.path, f.line,
                                         after=True, functor=True))
                        for n, f in launches.functors(ctx).items() if n in named]
    # Explicit instantiations sit beside the kernel or in the .cu that includes its header, often
    # written through the project's macros (defined in any file of this TU).
    texts = {p: ctx.active_text(p) for p in ctx.order if p in live.inputs}  # (the branches taken)
    macros: dict[str, macro_text.MacroDef] = {}
    for t in texts.values():
        macros.update(macro_text.definitions(t))
    for path in {k.path for k in kernels} | {norm(tu.spelling)}:
        if path not in texts:
            continue
        for name, lst in instantiations.explicit_in(texts[path], macros).items():
            out.explicit.setdefault(name, []).extend(lst)
    for path in live.instances:  # the group's other instance files: their lines as this unit's own
        for name, lst in instantiations.explicit_in(live.read(path).decode("utf-8", "replace"), macros).items():
            out.explicit.setdefault(name, []).extend(lst)
    # Classes the TU passes other kernels, for class parameters no launch gives (units.class_args).
    classes = class_args.infer(ctx, kernels, found, by_name, live.read)
    for k, c in zip(kernels, live.cursors, strict=True):
        key = (k.path, k.start_offset)
        names = arg_names.get(key, set()) | {n for args in out.explicit.get(k.name, []) for a in args
                                               for n in _IDENT.findall(a)}
        names |= class_args.names(classes.get(key, {}))
        made = [f for n, f in launches.functors(ctx).items() if n in names]
        cl = closure.compute(ctx, c, k.path, k.start_offset, sorted(names), [f.cursor for f in made],
                             launches.redeclared(ctx) if made else frozenset())
        pieces = [PieceText(**p) for p in closure.render_pieces(ctx, cl, k.path, k.start_offset)]
        # Functor structs standing for lambdas in the template arguments: after the kernel and the closure.
        pieces += [PieceText("STRUCT_DECL", f.name, list(f.namespaces), f.text, f.path, f.line, after=True,
                             functor=True)
                   for f in made]
        out.closures[key] = ClosureRecord(k.path, pieces, cl.includes, cl.shims, cl.unresolved, cl.vendored,
                                           cl.frameworks, cl.lacking, cross_file.externals(ctx, cl, c),
                                           class_args=classes.get(key, {}))
