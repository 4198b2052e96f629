"""Every translation unit parsed (libclang in worker processes, through the parse cache; tree-sitter for
what the preprocessor hid), and kernels of inactive #if branches parsed again in their configuration."""

from __future__ import annotations

import json
import os
import pickle
import threading
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from miner.errors import UsageError
from miner.extract import cache as extract_cache
from miner.extract import error_branches, guarded, isolated, switched
from miner.extract import instances as instance_files
from miner.extract.options import ExtractOptions, ExtractReport
from miner.extract.unit_data import UnitData, analysis_of
from miner.frontends import clang_frontend, hip_config, pch, prelude, treesitter_frontend
from miner.frontends.config import ParseConfig, clang_args
from miner.frontends.model import Kernel
from miner.frontends.parse_cache import ParseCache
from miner.source import context, include_graph
from miner.source.discover import SourceFile
from miner.units.headers import STD_HEADERS, SYSTEM_HEADERS

# Worker state: set once per process by the pool initializer (libclang's Index is not picklable).
_W: dict[str, Any] = {}


def _init_worker(config: ParseConfig, inputs: set[str], units: bool,
                 instances: dict[str, list[str]] | None = None) -> None:
    _W["config"], _W["inputs"], _W["index"], _W["units"] = config, inputs, None, units
    _W["instances"] = instances or {}


def _parse_root(path: str) -> clang_frontend.ParseResult:
    if _W.get("index") is None and clang_frontend.AVAILABLE:
        _W["index"] = clang_frontend.ci.Index.create()
    return clang_frontend.parse(path, _W["config"], _W["inputs"], _W["index"], analyse=_analysis(_W["units"]),
                                instances=_W["instances"].get(path, ()))


def _analysis(units: bool) -> clang_frontend.Analysis | None:
    """The analysis the parse runs on the live TU when units are wanted (closures, launches, explicit
    instantiations). Imported here, in the worker, on first use: a cached rerun never loads it."""
    if not units:
        return None
    from miner.units.analysis import analyse

    return analyse


def _run_clang(roots: list[str], config: ParseConfig, inputs: set[str], jobs: int, units: bool,
               tick: Callable[[], None], instances: dict[str, list[str]] | None = None
               ) -> list[clang_frontend.ParseResult]:
    # In worker processes even with one job: a parse that crashes or hangs is that file's failure alone.
    out = []
    for _i, res in isolated.run(_parse_root, roots, jobs, _lost_parse, initializer=_init_worker,
                                initargs=(config, inputs, units, instances)):
        out.append(res)
        tick()
    return sorted(out, key=lambda r: r.path)


def _lost_parse(item: str | tuple[Any, ...], why: str) -> clang_frontend.ParseResult:
    """The result of a parse whose worker crashed or ran out of time (`item`: a root, or a variant's job)."""
    return clang_frontend.ParseResult(item if isinstance(item, str) else item[0], error=why)


class _TreeSitterBeside:
    """The tree-sitter pass over the kernel files, in a thread while the main process builds the torch prefix: that
    build is one libclang call that lets go of the interpreter, about two parses long, and on two cores the other
    core had nothing to do until the parse pool started (MMCV: the pass is a few tenths of a second of it). The
    results are the pass's own; the thread is joined before anything forks (the preludes' builds, the pool)."""

    def __init__(self, cache: ParseCache | None, kernel_files: dict[str, SourceFile]) -> None:
        self.done: dict[str, tuple[list[Kernel], int]] = {}
        self.failed: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(cache, kernel_files), daemon=True)
        self.thread.start()

    def _run(self, cache: ParseCache | None, kernel_files: dict[str, SourceFile]) -> None:
        try:
            for path, f in sorted(kernel_files.items()):
                self.done[path] = extract_cache.treesitter(cache, f.data, path)
        except BaseException as exc:  # (handed to the main thread, which raises it where the pass would have)
            self.failed = exc

    def join(self) -> dict[str, tuple[list[Kernel], int]]:
        self.thread.join()
        if self.failed is not None:
            raise self.failed
        return self.done


def _overlaps(a: Kernel, b: Kernel) -> bool:
    return a.path == b.path and a.start_line <= b.end_line and b.start_line <= a.end_line


def _parse_all(files: list[SourceFile], config: ParseConfig, graph: include_graph.IncludeGraph,
               opts: ExtractOptions, report: ExtractReport,
               progress: Callable[[int], Callable[[], None]], units: UnitData,
               extra: list[SourceFile] = (), cache: ParseCache | None = None, pch_folder: str = "",
               references: dict[str, bytes] | None = None
               ) -> tuple[list[Kernel], dict[str, str], ParseConfig]:
    """Kernels from every file, for each kernel file the translation unit that parsed it, and the parse
    configuration used (with the precompiled prefix, built under `pch_folder`, where one was built).
    `references` gets each translation unit's parse as it came (pickled: what follows changes the records),
    for `CachedParse` to reuse in another configuration that preprocesses the same."""
    kernel_files = {f.path: f for f in files if f.has_kernel}
    inputs = {f.path for f in files}
    found: dict[tuple[str, int], Kernel] = {}
    tu_of: dict[str, str] = {}
    clang_failed: dict[str, str] = {}  # path -> why libclang gave no parse
    treesitter_done: dict[str, tuple[list[Kernel], int]] = {}  # the tree-sitter pass, where it ran beside libclang
    use_clang = opts.frontend in ("auto", "clang")
    if use_clang and not clang_frontend.AVAILABLE:
        if opts.frontend == "clang":
            raise UsageError("libclang is not available: install the 'libclang' package or use --frontend treesitter")
        report.notes.append("libclang is not available: using tree-sitter for every file")
        use_clang = False
    if use_clang:
        names = context.kernel_names(files)
        # Translation units that name a kernel and call a launch API without including its file.
        launchers = {f.path for f in [*files, *extra] if os.path.splitext(f.path)[1].lower()
                     in include_graph.TU_SUFFIXES and context.names_any(f.data, names)}
        # ... and those that launch, through a launch API, what a function of a kernel file chose (a kernel
        # pointer it returns): their launches are matched to that function's references after the parse.
        choosers = context.chooser_names(files, names)
        launchers |= {f.path for f in [*files, *extra] if os.path.splitext(f.path)[1].lower()
                      in include_graph.TU_SUFFIXES and context.LAUNCH_API.search(f.data)
                      and context.names_any(f.data, choosers)}
        # ... and those that hand a kernel's address to an object whose class, in a header they include, launches
        # it later (`k.create("scale", (const void *)&scale)`; launches.stored): the storing call is the launch.
        launching = {f.path for f in [*files, *extra] if context.LAUNCH_TOKEN.search(f.data)}
        launchers |= {f.path for f in [*files, *extra] if f.path not in launchers
                      and os.path.splitext(f.path)[1].lower() in include_graph.TU_SUFFIXES
                      and context.addresses_any(f.data, names)
                      and graph.closure(f.path) & launching}
        roots = include_graph.parse_roots(files, graph, extra, launchers)
        reach = {r: graph.closure(r) for r in roots}
        data = {f.path: f.data for f in [*files, *extra]}
        keys: dict[str, str] = {}
        plain_config = config
        # Generated instance files (includes and explicit instantiations only): one parse per group of
        # the same folder, includes and flags; the others' lines go to that parse's analysis.
        groups = instance_files.groups(roots, data, reach.__getitem__, lambda r: clang_args(plain_config, r))
        members = {m: rep for rep, ms in groups.items() for m in ms}
        if members:
            roots = [r for r in roots if r not in members]
            report.notes.append(f"{len(members)} generated instance files read as instantiation origins with "
                                f"the parse of another file of their group ({len(groups)} groups)")
        pch_config: list[ParseConfig] = []  # built at the first cache miss: it costs about two parses

        def parse_some(paths: list[str]) -> list[clang_frontend.ParseResult]:
            out, todo = [], []
            for r in paths:
                reach.setdefault(r, graph.closure(r))
                if cache is not None:
                    # The group's files are part of the result: their bytes are part of the key.
                    keys[r] = cache.key(r, clang_args(plain_config, r), opts.units,
                                        reach[r] | set(groups.get(r, ())), data, inputs, plain_config.context)
                hit = cache.load(keys[r]) if cache is not None else None
                if hit is not None:
                    out.append(hit)
                    tick()
                else:
                    todo.append(r)
            if todo:
                if not pch_config:
                    beside = (_TreeSitterBeside(cache, kernel_files) if opts.frontend in ("auto", "treesitter")
                              else None)
                    with_torch = _with_torch_pch(plain_config, [*files, *extra], {r: reach[r] for r in todo},
                                                 pch_folder)
                    if beside is not None:  # (joined before the preludes and the pool fork)
                        treesitter_done.update(beside.join())
                    pch_config.append(prelude.plan(
                        todo, with_torch, data, graph.edges, STD_HEADERS | SYSTEM_HEADERS, pch_folder,
                        lambda r: bool(with_torch.torch_pch) and r in with_torch.torch_tus,
                        _hip_defines(data, reach, with_torch.defines), opts.jobs))
                fresh = _run_clang(todo, pch_config[0], inputs, opts.jobs, opts.units, tick, groups)
                for res in fresh:
                    if cache is not None and not isolated.lost(res.error):
                        cache.store_result(keys[res.path], res)
                out += fresh
            return sorted(out, key=lambda res: res.path)

        # Longest first (by the bytes each unit reaches): one heavy file started last would be the
        # whole tail of the run. Results are sorted again afterwards, so the order is not visible.
        roots.sort(key=lambda r: -sum(len(data.get(p, b"")) for p in reach[r]))
        tick = progress(len(roots))
        pending = roots
        while pending:
            results = parse_some(pending)
            for res in results:
                if res.error:
                    clang_failed[res.path] = res.error
                    continue
                if references is not None and res.preprocessed and not groups.get(res.path):
                    # (a group's parse reads its other files' lines: another configuration's parse does not)
                    references[res.path] = pickle.dumps(res, protocol=pickle.HIGHEST_PROTOCOL)
                units.add(res)
                if res.unit_error:
                    report.notes.append(f"{res.path}: closure/launch analysis failed: {res.unit_error}")
                for k in res.kernels:
                    found.setdefault((k.path, k.start_offset), k)
                for s in sorted(res.seen_files):
                    tu_of.setdefault(s, res.path)
                for m in groups.get(res.path, ()):  # as its own parse did: no kernel is its own
                    tu_of.setdefault(m, m)
            # Kernel headers whose includers did not reach them (inactive #if) get their own parse.
            pending = sorted(p for p in kernel_files if p not in tu_of and p not in clang_failed
                             and p not in pending)
        config = pch_config[0] if pch_config else plain_config
        for p, why in sorted(clang_failed.items()):
            # (a crash or a hang is said as it was; any other error as libclang's refusal)
            said = f"{p}: {why if isolated.lost(why) else 'libclang could not parse the file'}"
            if opts.frontend == "clang":
                report.failures.append(said)
            else:
                report.notes.append(f"{said}; tree-sitter used")
    kernels = list(found.values())
    if opts.frontend in ("auto", "treesitter"):
        # tree-sitter also sees both sides of every #if: add what the preprocessor hid from clang.
        by_file: dict[str, list[Kernel]] = defaultdict(list)
        for k in kernels:
            by_file[k.path].append(k)
        for path, f in sorted(kernel_files.items()):
            ts_kernels, syntax_errors = (treesitter_done.pop(path) if path in treesitter_done
                                         else extract_cache.treesitter(cache, f.data, path))
            for k in ts_kernels:
                if not any(_overlaps(k, c) for c in by_file[path]):
                    kernels.append(k)
            if syntax_errors and opts.frontend == "treesitter":
                report.failures.append(f"{path}: syntax errors, partial results")
    if use_clang:
        kernels = _variant_parses(kernels, kernel_files, config, tu_of, units,
                                  _cached_parse(cache, graph, data, inputs, opts.units, reach, opts.jobs),
                                  graph, data)
    kernels.sort(key=lambda k: (k.path, k.start_offset))
    return kernels, tu_of, config


def _hip_defines(data: dict[str, bytes], reach: dict[str, set[str]],
                 defines: list[str]) -> Callable[[str], list[list[str]]]:
    """Per translation unit, the define sets of the configurations it will be parsed in besides the mined one:
    the HIP guards its include closure tests (`hip_config.variants` parses it with those), for the preludes."""
    guard_of: dict[str, list[str]] = {}

    def of(root: str) -> list[list[str]]:
        names: set[str] = set()
        for p in reach.get(root, ()):
            if p not in guard_of:
                guard_of[p] = hip_config.guards(data.get(p, b""))
            names.update(guard_of[p])
        found = sorted(n for n in names if n not in defines)
        return [found] if found else []
    return of


def _cached_parse(cache: ParseCache | None, graph: include_graph.IncludeGraph, data: dict[str, bytes],
                  inputs: set[str], units: bool, reach: dict[str, set[str]] | None = None, jobs: int = 1,
                  references: dict[str, bytes] | None = None, base: ParseConfig | None = None) -> CachedParse:
    """One translation unit parsed in another configuration (a kernel's inactive #if branch, the HIP
    guards), through the parse cache: on a rerun these parses were most of the time left. With
    `references` (the translation units' parses in `base`, `_parse_all`), a configuration that adds defines
    to `base` and preprocesses a unit the same takes the analysis of its reference parse."""
    return CachedParse(cache, graph, data, inputs, units, {} if reach is None else reach, jobs, references, base)


class CachedParse:
    """`parse(tu, variant)` through the parse cache; `prefetch` runs the misses of a known list of such
    parses in the worker pool first (they ran one after another in the main process, after the pool:
    on two cores the HIP configuration's parses were a serial tail of the run)."""

    def __init__(self, cache: ParseCache | None, graph: include_graph.IncludeGraph, data: dict[str, bytes],
                 inputs: set[str], units: bool, reach: dict[str, set[str]], jobs: int,
                 references: dict[str, bytes] | None = None, base: ParseConfig | None = None) -> None:
        self.cache, self.graph, self.data, self.inputs, self.units = cache, graph, data, inputs, units
        self.reach, self.jobs = reach, jobs
        self.references, self.base = references or {}, base
        self.reused = 0  # parses whose analysis was their reference parse's (a test reads it)
        self._ready: dict[tuple[str, str], clang_frontend.ParseResult] = {}  # prefetched, by (tu, key)
        self._missed: set[tuple[str, str]] = set()  # looked up by prefetch already: not counted twice

    def _key(self, tu: str, variant: ParseConfig) -> str:
        if tu not in self.reach:
            self.reach[tu] = self.graph.closure(tu)
        # Keyed like the main parses, without the precompiled prefix: it changes the cost, not the result
        # (and its path is a fresh temporary folder each run).
        plain = pch.without(variant)
        return (self.cache.key(tu, clang_args(plain, tu), self.units, self.reach[tu], self.data, self.inputs,
                               variant.context) if self.cache is not None else json.dumps(clang_args(plain, tu)))

    def __call__(self, tu: str, variant: ParseConfig) -> clang_frontend.ParseResult:
        key = self._key(tu, variant)
        ready = self._ready.pop((tu, key), None)
        if ready is None and self.cache is not None and (tu, key) not in self._missed:
            ready = self.cache.load(key)
        if ready is not None and (done := self._complete(tu, ready)) is not None:
            return done
        self._missed.discard((tu, key))
        res = isolated.call(_parse_variant, (tu, variant, self.inputs, self.units, self._same_as(tu, variant)),
                            _lost_parse)
        if self.cache is not None and not isolated.lost(res.error):
            self.cache.store_result(key, res)
        done = self._complete(tu, res)
        if done is None:  # (cannot happen: the reference was there when the parse was asked to reuse it)
            done = isolated.call(_parse_variant, (tu, variant, self.inputs, self.units, None), _lost_parse)
        return done

    def _same_as(self, tu: str, variant: ParseConfig) -> tuple[str, tuple[str, ...]] | None:
        """What a parse of `tu` in `variant` may reuse: the reference parse's digest and the macros `variant`
        defines beyond `base` (only when defines are all it adds)."""
        ref = self.references.get(tu)
        if not self.units or ref is None or self.base is None:
            return None
        extra = [d for d in variant.defines if d not in self.base.defines]
        names = tuple(dict.fromkeys(d.partition("=")[0] for d in extra))
        if not names or not all(hip_config.is_guard(n) for n in names):
            return None  # the digest looks at the branches of HIP guards only
        # The precompiled prefix changes the cost, not the tokens (pch.with_defines drops it where it would).
        if pch.without(replace(variant, defines=list(self.base.defines))) != pch.without(self.base):
            return None
        digest = pickle.loads(ref).preprocessed
        return (digest, names) if digest else None

    def _complete(self, tu: str, res: clang_frontend.ParseResult) -> clang_frontend.ParseResult | None:
        """`res` with the reference's analysis put in where its analysis was skipped (None: no such reference
        now; a fresh copy each time, as a parse of its own would give)."""
        if not res.reused:
            return res
        ref = pickle.loads(self.references[tu]) if tu in self.references else None
        if ref is None or ref.preprocessed != res.preprocessed:
            return None
        self.reused += 1
        return replace(res, analysis=ref.analysis, unit_error=ref.unit_error, reused=False)

    def prefetch(self, parses: list[tuple[str, ParseConfig]]) -> None:
        """Parse these now, the cache's misses in parallel; `__call__` then hands each result out once."""
        todo = []
        for tu, variant in parses:
            key = self._key(tu, variant)
            if (tu, key) in self._ready or (tu, key) in self._missed:
                continue
            hit = self.cache.load(key) if self.cache is not None else None
            if hit is not None:
                self._ready[(tu, key)] = hit
            else:
                self._missed.add((tu, key))
                todo.append((tu, key, variant))
        if len(todo) < 2 or self.jobs < 2:
            return  # nothing to overlap: __call__ parses it
        jobs = [(tu, variant, self.inputs, self.units, self._same_as(tu, variant)) for tu, _key, variant in todo]
        results: list[clang_frontend.ParseResult | None] = [None] * len(jobs)
        for i, res in isolated.run(_parse_variant, jobs, self.jobs, _lost_parse):
            results[i] = res
        for (tu, key, _variant), res in zip(todo, results, strict=True):
            if self.cache is not None and not isolated.lost(res.error):
                self.cache.store_result(key, res)
            self._missed.discard((tu, key))
            self._ready[(tu, key)] = res


def _parse_variant(job: tuple[str, ParseConfig, set[str], bool, tuple[str, tuple[str, ...]] | None]
                   ) -> clang_frontend.ParseResult:
    tu, variant, inputs, units, same_as = job
    res = clang_frontend.parse(tu, variant, inputs, analyse=_analysis(units), same_as=same_as)
    if res.error and (variant.torch_pch or variant.prelude_of):  # a prefix refused (it should not): the stub
        res = clang_frontend.parse(tu, pch.without(variant), inputs, analyse=_analysis(units),
                                   same_as=same_as)
    return res


def _with_torch_pch(config: ParseConfig, files: list[SourceFile], reach: dict[str, set[str]],
                    folder: str) -> ParseConfig:
    """The config with a precompiled stub + torch shim for the roots whose includes reach torch."""
    torch_files = {f.path for f in files if pch.includes_torch(f.data)}
    tus = frozenset(r for r, seen in reach.items() if seen & torch_files)
    # A precompiled prefix serves only parses with its own dialect and half defines: built for the most
    # common ones (clang_args compares them).
    kinds = Counter(tuple(config.args_of.get(r, ["-std=c++17"])) for r in tus)
    args = list(kinds.most_common(1)[0][0]) if kinds else ["-std=c++17"]
    tus = frozenset(r for r in tus if config.args_of.get(r, ["-std=c++17"]) == args)
    if len(tus) < 2:  # building the prefix costs about two parses
        return config
    path = pch.build(replace(config, args_of={**config.args_of, os.path.join(folder, "km_prefix.h"): args}), folder)
    return (replace(config, torch_pch=path, torch_tus=tus, args_of={**config.args_of, path: args})
            if path else config)


def _variant_parses(kernels: list[Kernel], kernel_files: dict[str, SourceFile], config: ParseConfig,
                    tu_of: dict[str, str], units: UnitData,
                    parse: Callable[[str, ParseConfig], clang_frontend.ParseResult],
                    graph: include_graph.IncludeGraph | None = None, data: dict[str, bytes] | None = None
                    ) -> list[Kernel]:
    """Kernels only tree-sitter saw (their #if branch was off) are parsed again by clang in the
    configuration that turns their branch on, so they get an AST, a closure and launches too; the
    defines that took are recorded with the kernel. So are the kernels of a header parsed alone because its
    includer's `#include` of it sits in such a branch (miner.extract.guarded), through that includer."""
    groups: dict[tuple[str, tuple[str, ...]], list[Kernel]] = defaultdict(list)
    for k in kernels:
        if k.frontend == "treesitter" and k.path in kernel_files:
            defines = treesitter_frontend.activating_defines(kernel_files[k.path].data, k.start_offset)
            if defines:
                groups[(tu_of.get(k.path, k.path), tuple(defines))].append(k)
    replaced: set[int] = set()  # kernels whose parse alone gave a closure the includer's parse replaces
    retaken: set[int] = set()  # template kernels a build switch gives concrete launches (extract.switched)
    errored: set[int] = set()  # kernels an active #error stops (extract.error_branches)
    if graph is not None and data is not None:
        for key, found in guarded.guarded_includers(kernels, tu_of, graph, data).items():
            groups[key].extend(found)
            replaced |= {id(k) for k in found}
        project = switched.project_defines(data)
        for key, found in switched.switched_launches(kernels, tu_of, units.launches, graph, data,
                                                     config.defines, project).items():
            groups[key].extend(k for k in found if id(k) not in replaced)
            retaken |= {id(k) for k in found}
        for key, found in error_branches.error_branches(kernels, tu_of, data, config.defines, project).items():
            found = [k for k in found if id(k) not in replaced and id(k) not in retaken]
            groups[key].extend(found)
            errored |= {id(k) for k in found}
    if not groups:
        return kernels
    swap: dict[int, Kernel] = {}
    planned = [(tu, pch.with_defines(config, list(defines), only=tu)) for (tu, defines) in sorted(groups)]
    if isinstance(parse, CachedParse):
        parse.prefetch(planned)
    for ((tu, defines), wanted), (_tu, variant) in zip(sorted(groups.items()), planned, strict=True):
        res = parse(tu, variant)  # through the parse cache
        if res.error:
            continue
        hits = {}
        found = analysis_of(res)
        for w in wanted:
            match = next((c for c in res.kernels if _overlaps(c, w)), None)
            if match is not None and id(w) in retaken:
                # Taken from this configuration only when it launches the kernel with arguments of its own, or
                # launches it at all where the default configuration did not.
                key = (match.path, match.start_offset)
                mine = [lc for lc in found.launches if lc.kernel == key and lc.kind != "reference"]
                before = [lc for lc in units.launches.get((w.path, w.start_offset), []) if lc.kind != "reference"]
                if not any(switched.concrete(lc) for lc in mine) and (before or not mine):
                    continue
                units.closures.pop((w.path, w.start_offset), None)
                units.launches.pop((w.path, w.start_offset), None)
            if match is not None and id(w) in errored:
                units.closures.pop((w.path, w.start_offset), None)
                units.launches.pop((w.path, w.start_offset), None)
            if match is not None:
                match.defines = list(defines)
                hits[(match.path, match.start_offset)] = match
                swap[id(w)] = match
                if id(w) in replaced:
                    units.closures.pop((w.path, w.start_offset), None)
        # Only the variant kernels take their closure and launches from this configuration.
        found.closures = {key: u for key, u in found.closures.items() if key in hits}
        found.launches = [lc for lc in found.launches if lc.kernel in hits]
        units.add_analysis(found, res.path)
    return [swap.get(id(k), k) for k in kernels]
