"""The extract job: discover → parse (libclang, tree-sitter) → provenance → dataset folder."""

from __future__ import annotations

import hashlib
import multiprocessing as mp
import os
import re
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from miner import dataset, extract_cache
from miner.dataset.schema import SCHEMA_VERSION
from miner.errors import NothingToDo, UsageError
from miner.frontends import clang_frontend, hip_config, pch, treesitter_frontend
from miner.frontends.config import ParseConfig, clang_args, framework_overlay
from miner.frontends.model import Kernel
from miner.frontends.parse_cache import ParseCache
from miner.source import build_flags, compile_db, context, include_graph
from miner.source.discover import SourceFile, discover
from miner.source.provenance import Origin, origin_of
from miner.units.mentions import Mentions

FRONTENDS = ("auto", "clang", "treesitter")
LANGUAGES = ("auto", "cuda", "triton")
CUDA_SUFFIXES = {".cu", ".cuh", ".hip"}


@dataclass
class ExtractOptions:
    paths: list[str]
    out_dir: str
    include_dirs: list[str] = field(default_factory=list)
    defines: list[str] = field(default_factory=list)
    compile_commands: str | None = None
    jobs: int = 1
    frontend: str = "auto"
    units: bool = True  # closure, launches, instantiations and rendered units (needs libclang)
    project: str | None = None  # where context files are looked up (default: the inputs' git checkout)
    language: str = "auto"  # auto: .py files are mined for Triton kernels, the rest for CUDA ones


@dataclass
class ExtractReport:
    kernels: list[dict[str, Any]] = field(default_factory=list)
    files: int = 0
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class UnitData:
    """What the parse workers found for units: closures (first TU wins), launches, explicit insts."""

    closures: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    launches: dict[tuple[str, int], list[dict[str, Any]]] = field(default_factory=dict)
    explicit: dict[str, list[list[str]]] = field(default_factory=dict)
    declared: list[dict[str, Any]] = field(default_factory=list)  # launches of re-declared kernels

    def add(self, res: clang_frontend.ParseResult) -> None:
        for key, unit in res.units.items():
            self.closures.setdefault(key, unit)
        for launch in res.launches:
            self._add_launch(tuple(launch["kernel"]), launch)
        self.declared.extend(getattr(res, "declared_launches", ()))
        for name, lst in res.explicit.items():
            for args in lst:
                if args not in self.explicit.setdefault(name, []):
                    self.explicit[name].append(args)

    def _add_launch(self, key: tuple[str, int], launch: dict[str, Any]) -> None:
        lst = self.launches.setdefault(key, [])
        sig = _launch_key(launch)
        if all(_launch_key(x) != sig for x in lst):
            lst.append(launch)

    def match_declared(self, kernels: list[Kernel]) -> None:
        """Launches of a kernel re-declared in another translation unit (`void K(const P p);` in a host
        .cpp, `cudaLaunchKernel((void*)K, ...)`) go to the kernel of that qualified name whose parameter
        types match; where no types match, to the only kernel of that name and parameter count."""
        by_name: dict[str, list[Kernel]] = defaultdict(list)
        for k in kernels:
            by_name[k.qualified_name].append(k)
        for launch in self.declared:
            decl = launch["declared"]
            same = [k for k in by_name.get(decl["name"], ()) if len(k.params) == len(decl["params"])]
            exact = [k for k in same if [_type_key(p.type) for p in k.params] == [_type_key(t) for t in decl["params"]]]
            for k in exact or (same if len(same) == 1 else []):
                self._add_launch((k.path, k.start_offset), {**launch, "kernel": (k.path, k.start_offset)})


_QUALIFIERS = re.compile(r"\b(?:const|volatile|__restrict__|__restrict|restrict|struct|class|enum)\b|(?:\w+)?::")


def _type_key(text: str) -> str:
    """A parameter type compared across translation units: qualifiers that do not change the call (a
    by-value `const`, `__restrict__`), elaborated keywords and namespace prefixes left out."""
    return "".join(_QUALIFIERS.sub(" ", text).split())


def _launch_key(launch: dict[str, Any]) -> tuple[Any, ...]:
    return (launch["path"], launch["line"], launch["kind"], tuple(launch["template_args"] or ()),
            tuple(launch.get("template_args_text") or ()))


# Worker state: set once per process by the pool initializer (libclang's Index is not picklable).
_W: dict[str, Any] = {}


def _init_worker(config: ParseConfig, inputs: set[str], units: bool) -> None:
    _W["config"], _W["inputs"], _W["index"], _W["units"] = config, inputs, None, units


def _parse_root(path: str) -> clang_frontend.ParseResult:
    if _W.get("index") is None and clang_frontend.AVAILABLE:
        _W["index"] = clang_frontend.ci.Index.create()
    return clang_frontend.parse(path, _W["config"], _W["inputs"], _W["index"], with_units=_W["units"])


def _run_clang(roots: list[str], config: ParseConfig, inputs: set[str], jobs: int, units: bool,
               tick: Callable[[], None]) -> list[clang_frontend.ParseResult]:
    if jobs <= 1 or len(roots) <= 1:
        _init_worker(config, inputs, units)
        out = []
        for r in roots:
            out.append(_parse_root(r))
            tick()
        return out
    ctx = mp.get_context("fork")
    with ctx.Pool(min(jobs, len(roots)), initializer=_init_worker, initargs=(config, inputs, units)) as pool:
        out = []
        for res in pool.imap_unordered(_parse_root, roots, chunksize=1):
            out.append(res)
            tick()
    return sorted(out, key=lambda r: r.path)


def _overlaps(a: Kernel, b: Kernel) -> bool:
    return a.path == b.path and a.start_line <= b.end_line and b.start_line <= a.end_line


def _parse_all(files: list[SourceFile], config: ParseConfig, graph: include_graph.IncludeGraph,
               opts: ExtractOptions, report: ExtractReport,
               progress: Callable[[int], Callable[[], None]], units: UnitData,
               extra: list[SourceFile] = (), cache: ParseCache | None = None, pch_folder: str = ""
               ) -> tuple[list[Kernel], dict[str, str], ParseConfig]:
    """Kernels from every file, for each kernel file the translation unit that parsed it, and the parse
    configuration used (with the precompiled prefix, built under `pch_folder`, where one was built)."""
    kernel_files = {f.path: f for f in files if f.has_kernel}
    inputs = {f.path for f in files}
    found: dict[tuple[str, int], Kernel] = {}
    tu_of: dict[str, str] = {}
    clang_failed: set[str] = set()
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
        roots = include_graph.parse_roots(files, graph, extra, launchers)
        reach = {r: graph.closure(r) for r in roots}
        data = {f.path: f.data for f in [*files, *extra]}
        keys: dict[str, str] = {}
        plain_config = config
        pch_config: list[ParseConfig] = []  # built at the first cache miss: it costs about two parses

        def parse_some(paths: list[str]) -> list[clang_frontend.ParseResult]:
            out, todo = [], []
            for r in paths:
                reach.setdefault(r, graph.closure(r))
                if cache is not None:
                    keys[r] = cache.key(r, clang_args(plain_config, r), opts.units, reach[r], data,
                                        inputs, plain_config.context)
                hit = cache.load(keys[r]) if cache is not None else None
                if hit is not None:
                    out.append(hit)
                    tick()
                else:
                    todo.append(r)
            if todo:
                if not pch_config:
                    pch_config.append(_with_torch_pch(plain_config, [*files, *extra],
                                                      {r: reach[r] for r in todo}, pch_folder))
                fresh = _run_clang(todo, pch_config[0], inputs, opts.jobs, opts.units, tick)
                for res in fresh:
                    if cache is not None and not res.error:
                        cache.store(keys[res.path], res)
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
                    clang_failed.add(res.path)
                    continue
                units.add(res)
                if res.unit_error:
                    report.notes.append(f"{res.path}: closure/launch analysis failed: {res.unit_error}")
                for k in res.kernels:
                    found.setdefault((k.path, k.start_offset), k)
                for s in sorted(res.seen_files):
                    tu_of.setdefault(s, res.path)
            # Kernel headers whose includers did not reach them (inactive #if) get their own parse.
            pending = sorted(p for p in kernel_files if p not in tu_of and p not in clang_failed
                             and p not in pending)
        config = pch_config[0] if pch_config else plain_config
        for p in sorted(clang_failed):
            if opts.frontend == "clang":
                report.failures.append(f"{p}: libclang could not parse the file")
            else:
                report.notes.append(f"{p}: libclang could not parse the file; tree-sitter used")
    kernels = list(found.values())
    if opts.frontend in ("auto", "treesitter"):
        # tree-sitter also sees both sides of every #if: add what the preprocessor hid from clang.
        by_file: dict[str, list[Kernel]] = defaultdict(list)
        for k in kernels:
            by_file[k.path].append(k)
        for path, f in sorted(kernel_files.items()):
            ts_kernels, syntax_errors = extract_cache.treesitter(cache, f.data, path)
            for k in ts_kernels:
                if not any(_overlaps(k, c) for c in by_file[path]):
                    kernels.append(k)
            if syntax_errors and opts.frontend == "treesitter":
                report.failures.append(f"{path}: syntax errors, partial results")
    if use_clang:
        kernels = _variant_parses(kernels, kernel_files, config, tu_of, units,
                                  _cached_parse(cache, graph, data, inputs, opts.units, reach))
    kernels.sort(key=lambda k: (k.path, k.start_offset))
    return kernels, tu_of, config


def _cached_parse(cache: ParseCache | None, graph: include_graph.IncludeGraph, data: dict[str, bytes],
                  inputs: set[str], units: bool, reach: dict[str, set[str]] | None = None
                  ) -> Callable[[str, ParseConfig], clang_frontend.ParseResult]:
    """One translation unit parsed in another configuration (a kernel's inactive #if branch, the HIP
    guards), through the parse cache: on a rerun these parses were most of the time left."""
    reach = {} if reach is None else reach

    def parse(tu: str, variant: ParseConfig) -> clang_frontend.ParseResult:
        if tu not in reach:
            reach[tu] = graph.closure(tu)
        # Keyed like the main parses, without the precompiled prefix: it changes the cost, not the result
        # (and its path is a fresh temporary folder each run).
        plain = replace(variant, torch_pch=None)
        key = (cache.key(tu, clang_args(plain, tu), units, reach[tu], data, inputs, variant.context)
               if cache is not None else "")
        hit = cache.load(key) if cache is not None else None
        if hit is not None:
            return hit
        res = clang_frontend.parse(tu, variant, inputs, with_units=units)
        if res.error and variant.torch_pch:
            res = clang_frontend.parse(tu, plain, inputs, with_units=units)
        if cache is not None and not res.error:
            cache.store(key, res)
        return res

    return parse


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
                    parse: Callable[[str, ParseConfig], clang_frontend.ParseResult]) -> list[Kernel]:
    """Kernels only tree-sitter saw (their #if branch was off) are parsed again by clang in the
    configuration that turns their branch on, so they get an AST, a closure and launches too; the
    defines that took are recorded with the kernel."""
    groups: dict[tuple[str, tuple[str, ...]], list[Kernel]] = defaultdict(list)
    for k in kernels:
        if k.frontend == "treesitter" and k.path in kernel_files:
            defines = treesitter_frontend.activating_defines(kernel_files[k.path].data, k.start_offset)
            if defines:
                groups[(tu_of.get(k.path, k.path), tuple(defines))].append(k)
    if not groups:
        return kernels
    swap: dict[int, Kernel] = {}
    for (tu, defines), wanted in sorted(groups.items()):
        variant = pch.with_defines(config, list(defines))
        res = parse(tu, variant)  # through the parse cache
        if res.error:
            continue
        hits = {}
        for w in wanted:
            match = next((c for c in res.kernels if _overlaps(c, w)), None)
            if match is not None:
                match.defines = list(defines)
                hits[(match.path, match.start_offset)] = match
                swap[id(w)] = match
        # Only the variant kernels take their closure and launches from this configuration.
        res.units = {key: u for key, u in res.units.items() if key in hits}
        res.launches = [lc for lc in res.launches if tuple(lc["kernel"]) in hits]
        units.add(res)
    return [swap.get(id(k), k) for k in kernels]


def _input_root(path: str, roots: list[str]) -> str:
    for r in sorted(roots, key=len, reverse=True):
        if path == r or path.startswith(r + os.sep):
            return r
    return os.path.dirname(path)


def _rel(path: str, root: str) -> str:
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else path


def _project_flags(files: list[SourceFile], graph: include_graph.IncludeGraph, per_file: dict[str, list[str]],
                   project: str | None, roots: list[str]) -> dict[str, dict[str, Any]]:
    """Per source file, the nvcc flags its project's build gives it (metadata `build_flags`): the build
    files above it, a compile_commands.json `-std` over theirs, else the dialect its own text (or a
    header it includes) needs. Files nothing is known for are left out."""
    own = {f.path for f in files if build_flags.source_std(f.data.decode("utf-8", "replace"))}
    out: dict[str, dict[str, Any]] = {}
    for f in files:
        # Build files are looked for up to the project: --project, else the git checkout, else the input
        # folder that holds the file (a setup.py beside src/ belongs to the sources under it).
        stop = project or context.project_root(f.path)
        if not project and not os.path.exists(os.path.join(stop, ".git")):
            stop = _input_root(f.path, roots)
        found = build_flags.find(f.path, stop) or {"nvcc": [], "from": []}
        flags, used = list(found["nvcc"]), list(found["from"])
        db_std = [a for a in per_file.get(f.path, []) if a.startswith("-std=")]
        if db_std:
            flags = build_flags.merge([*(x for x in flags if not x.startswith("-std=")),
                                       build_flags.normal(db_std[-1])])
            used.append("compile_commands.json")
        if not any(x.startswith("-std=") for x in flags) and ({f.path} | graph.closure(f.path)) & own:
            flags = [build_flags.std_flag(20), *flags]
            used.append("source")  # a requires clause, a concept, ... in the file or a header it includes
        if flags:
            out[f.path] = {"nvcc": flags, "from": used}
    return out


def _file_defines(config: ParseConfig, tu: str | None) -> list[str]:
    """-D flags a compile_commands.json entry gives the translation unit."""
    args = config.per_file_args.get(tu or "", [])
    out = []
    for i, a in enumerate(args):
        if a == "-D" and i + 1 < len(args):
            out.append(args[i + 1])
        elif a.startswith("-D") and len(a) > 2:
            out.append(a[2:])
    return out


def _metadata(k: Kernel, text: bytes, origin: Origin, kid: str, tu: str | None,
              config: ParseConfig) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "id": kid,
        "name": k.name,
        "qualified_name": k.qualified_name,
        "source": {
            "repo": origin.repo,
            "commit": origin.commit,
            "license": origin.license,
            "path": _rel(k.path, origin.root),
            "start_line": k.start_line,
            "end_line": k.end_line,
            "sha256": hashlib.sha256(text).hexdigest(),
        },
        "signature": k.signature,
        "params": [vars(p) for p in k.params],
        "template_params": [vars(t) for t in k.template_params],
        "attributes": [vars(a) for a in k.attributes],
        "is_specialization": k.is_specialization,
        "frontend": k.frontend,
        "diagnostics": k.diagnostics or {"count": 0, "errors": 0, "messages": []},
        "parse_context": {
            "translation_unit": _rel(tu, origin.root) if tu else None,
            "defines": [f"__CUDA_ARCH__={config.cuda_arch}", "__NVCC__",
                        *dict.fromkeys([*config.defines, *_file_defines(config, tu), *k.defines])],
            "include_dirs": [_rel(d, origin.root) for d in config.include_dirs if d.startswith(origin.root)],
            # Where source.path and the paths above are relative to, for `verify` to find the original.
            "root": origin.root,
        },
    }


def extract(opts: ExtractOptions, progress: Callable[[int], Callable[[], None]] | None = None) -> ExtractReport:
    if opts.frontend not in FRONTENDS:
        raise UsageError(f"unknown frontend {opts.frontend!r}: choose one of {', '.join(FRONTENDS)}")
    for d in opts.include_dirs:
        if not os.path.isdir(d):
            raise UsageError(f"{d}: include directory does not exist")
    if opts.language not in LANGUAGES:
        raise UsageError(f"unknown language {opts.language!r}: choose one of {', '.join(LANGUAGES)}")
    progress = progress or (lambda total: (lambda: None))
    out_dir = dataset.prepare_output(opts.out_dir)
    triton_report = None
    if opts.language in ("auto", "triton"):
        from miner.triton import extract as triton_extract

        triton_report = triton_extract.extract(opts.paths, out_dir, units=opts.units, project_root=opts.project)
        if opts.language == "triton" or not _has_cuda_input(opts.paths):
            if not triton_report.kernels and not triton_report.failures:
                raise NothingToDo("no Triton kernels found in the given inputs (no @triton.jit definitions)")
            return triton_report
    report = _extract_cuda(opts, out_dir, progress)
    if triton_report is not None:
        report.kernels += triton_report.kernels
        report.files += triton_report.files
        report.failures += [f for f in triton_report.failures if f not in report.failures]
        if not report.kernels and not report.failures:
            raise NothingToDo("no kernels found in the given inputs (no __global__ nor @triton.jit definitions)")
    return report


def _has_cuda_input(paths: list[str]) -> bool:
    """Whether the inputs hold any file the CUDA frontends read (a tree of .py files has none)."""
    from miner.source.discover import SOURCE_SUFFIXES

    for p in paths:
        if os.path.isfile(p) and os.path.splitext(p)[1].lower() in SOURCE_SUFFIXES:
            return True
        for _dp, _dns, fns in os.walk(p):
            if any(os.path.splitext(f)[1].lower() in SOURCE_SUFFIXES for f in fns):
                return True
    return False


def _extract_cuda(opts: ExtractOptions, out_dir, progress: Callable[[int], Callable[[], None]]) -> ExtractReport:
    per_file = compile_db.load(opts.compile_commands) if opts.compile_commands else {}
    disc = discover(opts.paths)
    report = ExtractReport(failures=list(disc.failures), notes=list(disc.notes))
    files = disc.files
    cuda_files = [f for f in files if f.has_kernel or os.path.splitext(f.path)[1].lower() in CUDA_SUFFIXES]
    report.files = len(cuda_files)
    if not any(f.has_kernel for f in files):
        if report.failures or opts.language == "auto":
            return report
        raise NothingToDo("no CUDA kernels found in the given inputs (no __global__ definitions)")
    include_dirs = [os.path.realpath(d) for d in opts.include_dirs]
    if opts.project is not None and not os.path.isdir(opts.project):
        raise UsageError(f"{opts.project}: --project is not a directory")
    extra = (context.find(files, include_dirs, disc.roots, opts.project)
             if opts.units or opts.frontend != "treesitter" else [])
    if extra:
        names = ", ".join(os.path.basename(f.path) for f in extra[:8]) + (" ..." if len(extra) > 8 else "")
        report.notes.append(f"{len(extra)} project files outside the inputs used as context: {names}")
    graph = include_graph.build(files + extra, include_dirs)
    flags_of = _project_flags(files + extra, graph, per_file, opts.project, disc.roots)
    config = ParseConfig(include_dirs=include_dirs + graph.auto_include_dirs,
                         defines=list(opts.defines), per_file_args=per_file,
                         context=frozenset(f.path for f in extra),
                         args_of={p: a for p, fl in flags_of.items()
                                  if (a := build_flags.parse_args(fl["nvcc"])) != ["-std=c++17"]},
                         overlay_dir=framework_overlay([f.data for f in files + extra]))
    units = UnitData()
    cache = ParseCache.open()
    # The precompiled prefix lives until the HIP configuration's parses are done: they use it too.
    with tempfile.TemporaryDirectory(prefix="km-pch-") as pch_folder:
        kernels, tu_of, parse_config = _parse_all(files, config, graph, opts, report, progress, units, extra,
                                                  cache, pch_folder)
        units.match_declared(kernels)
        inputs = {f.path for f in files}
        hip_parse = _cached_parse(cache, graph, {f.path: f.data for f in [*files, *extra]}, inputs, opts.units)
        hip_variants = (hip_config.variants(files, extra, graph, parse_config, kernels, tu_of, inputs, units,
                                            UnitData, opts.units, hip_parse)
                        if opts.frontend != "treesitter" and clang_frontend.AVAILABLE else [])
    if cache is not None and cache.hits:
        report.notes.append(f"{cache.hits} of {cache.hits + cache.misses} translation unit parses from the parse "
                            f"cache ({cache.folder})")
    variant_of = {id(v.of): v for v in hip_variants}
    data = {f.path: f.data for f in files}
    mentions = Mentions([*data.items(), *((f.path, f.data) for f in extra)])
    ordinals: dict[tuple[str, str], int] = defaultdict(int)
    metas: list[dict[str, Any]] = []
    replaced: set[tuple[str | None, str]] = set()
    for k in kernels:
        origin = origin_of(k.path, _input_root(k.path, disc.roots))
        rel = _rel(k.path, origin.root)
        key = (rel, k.qualified_name)
        kid = dataset.kernel_id(k.qualified_name, origin.repo, rel, ordinals[key])
        ordinals[key] += 1
        text = data[k.path][k.start_offset:k.end_offset]
        meta = _metadata(k, text, origin, kid, tu_of.get(k.path), config)
        if (bf := flags_of.get(tu_of.get(k.path) or k.path) or flags_of.get(k.path)):
            meta["build_flags"] = bf
        native = hip_config.native_reason(k.path, data[k.path])
        if native:
            meta["variant"] = {"toolchain": "hip", "defines": [], "reason": native}
        meta = extract_cache.write_kernel(cache, out_dir, meta, k, text, units, origin.root, opts.units,
                                          mentions)
        metas.append(meta)
        replaced.add((origin.repo, rel))
        v = variant_of.get(id(k))
        if v is not None:  # the same kernel in its project's HIP configuration
            vk = v.kernel
            vtext = data[vk.path][vk.start_offset:vk.end_offset]
            vmeta = _metadata(vk, vtext, origin, dataset.kernel_id(vk.qualified_name + "@hip", origin.repo, rel,
                                                                   ordinals[key] - 1), tu_of.get(k.path), config)
            if "build_flags" in meta:
                vmeta["build_flags"] = meta["build_flags"]
            vmeta["variant"] = {"toolchain": "hip", "defines": v.defines, "of": kid,
                                "reason": f"HIP branches (#if on {', '.join(v.defines)})"}
            vmeta = extract_cache.write_kernel(cache, out_dir, vmeta, vk, vtext, v.units, origin.root, opts.units,
                                               mentions)
            metas.append(vmeta)
    dataset.merge_index(out_dir, metas, replaced)
    if cache is not None and (hits := cache.entry_hits.get(extract_cache.KIND, 0)):
        report.notes.append(f"{hits} of {hits + cache.entry_misses.get(extract_cache.KIND, 0)} kernel folders "
                            f"from the cache ({cache.folder})")
    report.kernels = metas
    return report
