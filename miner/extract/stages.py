"""The CUDA/HIP extract pipeline as a named list of stages with gates over one context.

As clang-extract states its passes: `STAGES` is the order, each `Stage` has a `gate` (does this run
include it) and a `step` that reads and fills `CudaRun`. A step may end the run (`run.done`: inputs
without a kernel). The `--no-units` gate is `CudaRun.units`: the units analysis cannot be a stage of
its own, because it runs on the live libclang translation unit inside the parse workers (`parse`
passes the analysis callable in, or None) and the kernel's folder is cached whole (`write` renders
the units, or not); those two stages read the gate.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import tempfile
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from miner import dataset
from miner.errors import MinerError, NothingToDo, UsageError
from miner.extract import cache as extract_cache
from miner.extract import cross_file
from miner.extract.metadata import _input_root, _metadata, _project_flags, _rel
from miner.extract.options import CUDA_SUFFIXES, ExtractOptions, ExtractReport
from miner.extract.parse import _cached_parse, _parse_all
from miner.extract.unit_data import UnitData
from miner.frontends import clang_frontend, hip_config
from miner.frontends.config import ParseConfig, framework_overlay
from miner.frontends.model import Kernel
from miner.frontends.parse_cache import ParseCache
from miner.source import (
    build_flags,
    compile_db,
    configured_headers,
    context,
    copied_headers,
    feature_guards,
    header_wheels,
    include_graph,
    missing_headers,
    runtime_defines,
)
from miner.source.discover import Discovery, SourceFile, discover
from miner.source.provenance import origin_of
from miner.units.mentions import Mentions


@dataclass
class CudaRun:
    """What the stages share: the options, then what each stage found, in stage order."""

    opts: ExtractOptions
    out_dir: Any
    progress: Callable[[int], Callable[[], None]]
    report: ExtractReport = field(default_factory=ExtractReport)
    done: bool = False  # a stage ended the run early
    per_file: dict[str, Any] = field(default_factory=dict)  # discover: compile_commands.json flags
    disc: Discovery | None = None
    files: list[SourceFile] = field(default_factory=list)
    include_dirs: list[str] = field(default_factory=list)
    extra: list[SourceFile] = field(default_factory=list)  # project context: files outside the inputs
    graph: include_graph.IncludeGraph | None = None  # configure
    flags_of: dict[str, Any] = field(default_factory=dict)
    config: ParseConfig | None = None
    unit_data: UnitData = field(default_factory=UnitData)  # parse
    # Each translation unit's parse as it came, pickled (parse): a HIP configuration that preprocesses a unit
    # the same takes its analysis instead of running it again.
    references: dict[str, bytes] = field(default_factory=dict)
    cache: ParseCache | None = None
    kernels: list[Kernel] = field(default_factory=list)
    tu_of: dict[str, str] = field(default_factory=dict)
    hip_variants: list[Any] = field(default_factory=list)  # hip variants
    hip_parse: Any = None  # hip variants: its parse (its `reused` count)
    # parse: the configuration the parse used (with the precompiled prefix where one was built) and the
    # prefix's folder, kept until the run ends: the HIP configuration's parses use the prefix too.
    parse_config: ParseConfig | None = None
    pch_folder: tempfile.TemporaryDirectory | None = None

    @property
    def units(self) -> bool:
        """The --no-units gate (closures, launches, instantiations, rendered units)."""
        return self.opts.units


@dataclass(frozen=True)
class Stage:
    name: str
    gate: Callable[[CudaRun], bool]
    step: Callable[[CudaRun], None]


def _always(run: CudaRun) -> bool:
    return True


def _discover(run: CudaRun) -> None:
    opts = run.opts
    run.per_file = compile_db.load(opts.compile_commands) if opts.compile_commands else {}
    run.disc = disc = discover(opts.paths)
    run.report = report = ExtractReport(failures=list(disc.failures), notes=list(disc.notes))
    run.files = files = disc.files
    cuda_files = [f for f in files if f.has_kernel or os.path.splitext(f.path)[1].lower() in CUDA_SUFFIXES]
    report.files = len(cuda_files)
    if not any(f.has_kernel for f in files):
        if report.failures or opts.language == "auto":
            run.done = True
            return
        raise NothingToDo("no CUDA kernels found in the given inputs (no __global__ definitions)")
    run.include_dirs = [os.path.realpath(d) for d in opts.include_dirs]
    if opts.project is not None and not os.path.isdir(opts.project):
        raise UsageError(f"{opts.project}: --project is not a directory")


def _project_context(run: CudaRun) -> None:
    assert run.disc is not None
    run.extra = extra = context.find(run.files, run.include_dirs, run.disc.roots, run.opts.project)
    if extra:
        names = ", ".join(os.path.basename(f.path) for f in extra[:8]) + (" ..." if len(extra) > 8 else "")
        run.report.notes.append(f"{len(extra)} project files outside the inputs used as context: {names}")


def _configure(run: CudaRun) -> None:
    assert run.disc is not None
    files, extra = run.files, run.extra
    bounds = context.tail_bounds([f.path for f in files], run.disc.roots, run.opts.project)
    run.graph = graph = include_graph.build(files + extra, run.include_dirs, bounds)
    if _generated_headers(run, graph) | _copied_headers(run, graph):
        extra = run.extra
        run.graph = graph = include_graph.build(files + extra, run.include_dirs, bounds)
    run.flags_of = flags_of = _project_flags(files + extra, graph, run.per_file, run.opts.project, run.disc.roots)
    run.config = ParseConfig(include_dirs=run.include_dirs + graph.auto_include_dirs,
                             defines=[*run.opts.defines, *(f"{m}={v}" for m, v in run.disc.kernel_macros.items()
                                                           if not any(d.partition("=")[0] == m
                                                                      for d in run.opts.defines)),
                                      *(n for n in run.disc.kernel_switches()
                                        if not any(d.partition("=")[0] == n for d in run.opts.defines))],
                             per_file_args=run.per_file,
                             context=frozenset(f.path for f in extra),
                             args_of={p: a for p, fl in flags_of.items()
                                      if (a := build_flags.parse_args(fl["nvcc"])) != ["-std=c++17"]},
                             overlay_dir=framework_overlay([f.data for f in files + extra]),
                             defines_of=_feature_switches(files + extra, graph))
    run.config.include_dirs_of = {f.path: dirs for f in files + extra
                                  if (f.has_kernel or os.path.splitext(f.path)[1].lower() in include_graph.TU_SUFFIXES)
                                  and (dirs := graph.include_dirs_of(f.path))}
    _header_wheels(run, files + extra, graph)
    if run.disc.kernel_switches():
        run.report.notes.append(f"defined for every parse: {', '.join(run.disc.kernel_switches())} (the switch whose "
                                f"branch defines the project's kernel qualifier macro as __global__)")
    switches = sorted({n for names in run.config.defines_of.values() for n in names if "=" not in n})
    if switches:
        run.report.notes.append(f"defined for the translation units whose explicit instantiations they guard "
                                f"(no source defines them; the build must): {', '.join(switches)}")
    # One finder for both: its lookups (a file per include dir and name) are cached per finder.
    found = _toolkit_finder(files + extra, run.include_dirs + graph.auto_include_dirs)
    valued = _header_switches(files + extra, graph, found)
    configured = _configured_headers(files + extra, graph, found,
                                     [*run.disc.roots, *([run.opts.project] if run.opts.project else [])])
    for path, names in configured.items():
        run.config.defines_of[path] = [*run.config.defines_of.get(path, []),
                                       *(n for n in names if n not in run.config.defines_of.get(path, []))]
    if configured:
        run.report.notes.append(f"defined for the translation units that include a header the build configures from "
                                f"a CMake template (the template's macros, default configure): "
                                f"{', '.join(sorted({n.partition('=')[0] for ns in configured.values() for n in ns}))}")
    for path, names in valued.items():
        run.config.defines_of[path] = sorted({*run.config.defines_of.get(path, []), *names})
    if valued:
        run.report.notes.append(f"defined for the translation units that reach a conditional whose branch in force "
                                f"includes a header found nowhere (the build's value): "
                                f"{', '.join(sorted({n for names in valued.values() for n in names}))}")
    given = _runtime_defines(run, files + extra, graph)
    if given:
        run.report.notes.append(f"defined for the kernel sources the host compiles at run time (the values its host "
                                f"code writes into the module's source or options): "
                                f"{', '.join(sorted({n.partition('=')[0] for ns in given.values() for n in ns}))}")


def _runtime_defines(run: CudaRun, files: list[SourceFile], graph: include_graph.IncludeGraph) -> dict[str, list[str]]:
    """Per kernel source, the names the project's host code defines with a literal value when it compiles kernel
    sources at run time (miner.source.runtime_defines) that the source uses and nothing it reaches declares:
    added to its parse's defines (and so to its units'). Without them every kernel of a source built by NVRTC
    from macros the host substitutes (`real`, `BLOCK`) failed on those names."""
    assert run.disc is not None and run.config is not None
    root = run.opts.project or (run.disc.roots[0] if run.disc.roots else None)
    if not root:
        return {}
    found = runtime_defines.host_defines(os.path.realpath(root))
    if not found.given and not found.leading:
        return {}
    data = {f.path: f.data for f in files}
    defined = {d.partition("=")[0] for d in run.config.defines}
    device_only = [f.path for f in files if os.path.splitext(f.path)[1].lower() in CUDA_SUFFIXES
                   and not runtime_defines.defines_kernels(f.data)]
    out: dict[str, list[str]] = {}
    for f in files:
        if not f.has_kernel:
            continue
        # Sources of device functions the host puts before this one's text (`Sources::vectorOps + Sources::x`):
        # parsed as included first, so the closure takes what the kernels use of them (their overloads of
        # `make_int4(int)` made calls to the toolkit's four-argument one fail).
        preludes = found.preludes(f.path, device_only)
        if preludes:
            run.config.per_file_args[f.path] = [*run.config.per_file_args.get(f.path, []),
                                                *(a for p in preludes for a in ("-include", p))]
        have = run.config.defines_of.get(f.path, [])
        texts = [f.data, *(data[p] for p in [*preludes, *sorted(graph.closure(f.path) - {f.path})] if p in data)]
        names = runtime_defines.for_source(found, os.path.relpath(f.path, os.path.realpath(root)), texts,
                                           defined | {d.partition("=")[0].partition("(")[0] for d in have})
        if names:
            run.config.defines_of[f.path] = [*have, *names]
            out[f.path] = names
    return out


def _project_files_and_finder(run: CudaRun, graph: include_graph.IncludeGraph
                              ) -> tuple[dict[str, bytes], Any, list[str]] | None:
    """The run's files by path, a header finder without the parse shims, and the project's roots: what the
    build-written and build-copied headers are read from; None without a finder."""
    assert run.disc is not None
    files = run.files + run.extra
    found = _toolkit_finder(files, run.include_dirs + graph.auto_include_dirs, shims=False)
    if found is None:
        return None
    return ({f.path: f.data for f in files}, found,
            [*run.disc.roots, *([run.opts.project] if run.opts.project else [])])


def _generated_headers(run: CudaRun, graph: include_graph.IncludeGraph) -> bool:
    """Headers the build writes from a template that holds declarations (`nccl.h` from `nccl.h.in`), which the
    tree lacks: written as the build would (miner.source.configured_headers.generated) into a folder of the
    cache that joins the include dirs, and taken as project context, so the parse sees their types and the
    units inline what they use. Without them every use of the library's handle types (`ncclComm_t`) failed."""
    # (without the parse shims: the project's own template wins over the shim that stands in for the library
    # where a project only uses it; shims/nccl.h declares a few of NCCL's names, not the device API's)
    got = _project_files_and_finder(run, graph)
    if got is None:
        return False
    made = configured_headers.generated(*got)
    folder = configured_headers.write_generated({name: text for name, (_t, text) in made.items()})
    if folder is None:
        return False
    run.include_dirs = [*run.include_dirs, folder]
    run.extra = [*run.extra, *(SourceFile(os.path.join(folder, name), text.encode(), False)
                               for name, (_t, text) in sorted(made.items()))]
    run.report.notes.append("headers the build writes from a template, written as a default configure would (the "
                            "units inline what they use): " + ", ".join(
                                f"{name} from {_rel(t, run.disc.roots[0]) if run.disc.roots else t}"
                                for name, (t, _x) in sorted(made.items())))
    return True


def _copied_headers(run: CudaRun, graph: include_graph.IncludeGraph) -> bool:
    """Folders of project headers the build copies under another name (miner.source.copied_headers): reached
    through links in a cache folder that joins the include dirs."""
    got = _project_files_and_finder(run, graph)
    if got is None:
        return False
    links = copied_headers.aliases(*got)
    folder = copied_headers.write_links(links)
    if folder is None:
        return False
    run.include_dirs = [*run.include_dirs, folder]
    root = run.disc.roots[0] if run.disc.roots else "/"
    run.report.notes.append("folders of headers the build copies under another name, read in place: " + ", ".join(
        f"{alias}/ = {_rel(target, root)}/" for alias, target in sorted(links.items())))
    return True


def _header_wheels(run: CudaRun, files: list[SourceFile], graph: include_graph.IncludeGraph) -> None:
    """The translation units that include a header-only library the tree lacks and a wheel ships (CUTLASS):
    parsed with the wheel's include dir; without the wheel, a note says which (their units keep the includes
    and fail their build saying what to install, miner.cuda_libs)."""
    assert run.config is not None
    dirs, missing = header_wheels.per_translation_unit(files, graph, run.config.include_dirs)
    run.config.system_dirs_of = dirs
    if dirs:
        run.report.notes.append(f"{len(dirs)} sources reach CUTLASS/CuTe headers the tree lacks: parsed with those of "
                                f"the installed wheel ({', '.join(sorted({d for ds in dirs.values() for d in ds}))})")
    if missing:
        libs = sorted({lib.wheel for ls in missing.values() for lib in ls})
        run.report.notes.append(f"{len(missing)} sources reach headers the tree lacks that a wheel ships: "
                                f"pip install {' '.join(libs)} (their units keep the includes and fail to build "
                                f"without it)")


def _feature_switches(files: list[SourceFile], graph: include_graph.IncludeGraph) -> dict[str, list[str]]:
    """Per source, the build's feature switches that its translation unit's guarded explicit
    instantiations need (miner.source.feature_guards), from the files it reaches."""
    guarded = feature_guards.switches({f.path: f.data for f in files})
    if not guarded:
        return {}
    out: dict[str, list[str]] = {}
    for f in files:
        names = {n for p in {f.path} | graph.closure(f.path) for n in guarded.get(p, ())}
        if names:
            out[f.path] = sorted(names)
    return out


def _header_switches(files: list[SourceFile], graph: include_graph.IncludeGraph,
                     found: Callable[[str, str, bool], bool] | None) -> dict[str, list[str]]:
    """Per source, `NAME=VALUE` defines that switch the conditionals its translation unit reaches off a header
    found nowhere (miner.source.missing_headers). Off without the toolkit's include dirs (`found` None): a
    toolkit header (`cufft.h`) would look missing."""
    if found is None:
        return {}
    per_file = missing_headers.switches({f.path: f.data for f in files}, found)
    merged = _per_translation_unit(files, graph, {p: [(n, str(v)) for n, v in d.items()] for p, d in per_file.items()})
    return {path: sorted(defs, key=lambda d: d.partition("=")[0]) for path, defs in merged.items()}


def _toolkit_finder(files: list[SourceFile], include_dirs: list[str],
                    shims: bool = True) -> Callable[[str, str, bool], bool] | None:
    """missing_headers.finder over the project, the toolkit and the shims; None without nvcc (a toolkit header
    would look missing)."""
    from miner.builder.toolchain import find_nvcc
    from miner.cuda_libs import toolkit_include_dirs
    from miner.frontends.config import stub_dir

    try:
        toolkit = toolkit_include_dirs(find_nvcc())
    except (MinerError, OSError):
        return None
    if not toolkit:
        return None
    return missing_headers.finder([f.path for f in files], include_dirs, toolkit,
                                  (str(stub_dir() / "shims"),) if shims else ())


def _configured_headers(files: list[SourceFile], graph: include_graph.IncludeGraph,
                        found: Callable[[str, str, bool], bool] | None, roots: list[str]) -> dict[str, list[str]]:
    """Per source, the `NAME=VALUE` macros of the configured headers (miner.source.configured_headers) that the
    files its translation unit reaches include: a header the tree lacks, written by the build from a CMake
    template the tree holds."""
    if found is None:
        return {}
    per_file = configured_headers.defines({f.path: f.data for f in files}, found, roots)
    return _per_translation_unit(files, graph, {p: [d.partition("=")[::2] for d in defs]
                                                for p, defs in per_file.items()})


def _per_translation_unit(files: list[SourceFile], graph: include_graph.IncludeGraph,
                          per_file: dict[str, list[tuple[str, str]]]) -> dict[str, list[str]]:
    """Per source, `NAME=VALUE` for the (name, value) pairs of the files its translation unit reaches, in the
    order of those files (sorted paths); the first value of a name wins."""
    if not per_file:
        return {}
    out: dict[str, list[str]] = {}
    for f in files:
        chosen: dict[str, str] = {}
        for p in sorted({f.path} | graph.closure(f.path)):
            for name, value in per_file.get(p, []):
                chosen.setdefault(name, value)
        if chosen:
            out[f.path] = [f"{n}={v}" for n, v in chosen.items()]
    return out


def _parse(run: CudaRun) -> None:
    run.cache = ParseCache.open()
    run.pch_folder = tempfile.TemporaryDirectory(prefix="km-pch-")
    run.kernels, run.tu_of, run.parse_config = _parse_all(run.files, run.config, run.graph, run.opts, run.report,
                                                          run.progress, run.unit_data, run.extra, run.cache,
                                                          run.pch_folder.name, run.references)
    run.unit_data.match_declared(run.kernels)
    run.unit_data.share_with_branch_twins(run.kernels)


def _hip_variants(run: CudaRun) -> None:
    inputs = {f.path for f in run.files}
    hip_parse = _cached_parse(run.cache, run.graph, {f.path: f.data for f in [*run.files, *run.extra]}, inputs,
                              run.units, jobs=run.opts.jobs, references=run.references,
                              base=run.parse_config or run.config)
    run.hip_parse = hip_parse
    run.hip_variants = hip_config.variants(run.files, run.extra, run.graph, run.parse_config or run.config,
                                           run.kernels, run.tu_of, inputs, run.unit_data, UnitData, hip_parse)
    if hip_parse.reused:
        run.report.notes.append(f"{hip_parse.reused} HIP-configuration parses preprocessed like their translation "
                                f"unit: its analysis reused")


def _cross_file(run: CudaRun) -> None:
    """Definitions in other files of a separately compiled project (`-rdc`) into the closures that only declare
    them (extract.cross_file)."""
    assert run.config is not None
    data = {f.path: f.data for f in [*run.files, *run.extra]}
    inputs = {f.path for f in run.files}
    parse = cross_file.parser(run.parse_config or run.config, inputs, run.graph, data, run.cache)
    found: list[dict[str, bytes]] = []

    def more() -> dict[str, bytes]:
        # (the project's other files, `--project` or the inputs' git checkout: read once, and only when a closure
        # declares what the run's files may not define)
        if not found:
            assert run.disc is not None
            roots = sorted(context.tail_bounds([], run.disc.roots, run.opts.project))
            found.append(cross_file.project_sources(roots, data, inputs))
        return found[0]
    cross_file.resolve(run.unit_data, data, parse, run.report.notes, more)
    for v in run.hip_variants:
        if isinstance(getattr(v, "units", None), UnitData) and v.units is not run.unit_data:
            cross_file.resolve(v.units, data, parse, None, more)


def _write(run: CudaRun) -> None:
    cache, report, config, tu_of = run.cache, run.report, run.config, run.tu_of
    assert run.disc is not None and config is not None
    if cache is not None and cache.hits:
        report.cache_notes.append(f"{cache.hits} of {cache.hits + cache.misses} translation unit parses from the "
                                  f"parse cache ({cache.folder})")
        report.notes.append(report.cache_notes[-1])
    variant_of = {id(v.of): v for v in run.hip_variants}
    data = {f.path: f.data for f in run.files}
    mentions = Mentions([*data.items(), *((f.path, f.data) for f in run.extra)],
                        run.graph.edges if run.graph is not None else None)
    ordinals: dict[tuple[str, str], int] = defaultdict(int)
    # HIP names the project defines for its own CUDA build (`#define hipLaunchKernelGGL(F, G, B, M, S, ...)
    # F<<<G, B, M, S>>>(__VA_ARGS__)`): a launch written with them is no sign of a HIP source
    cuda_macros = hip_config.cuda_side_macros([*data.items(), *((f.path, f.data) for f in run.extra)])
    metas: list[dict[str, Any] | None] = []
    replaced: set[tuple[str | None, str]] = set()
    misses: list[tuple[int, tuple[Any, ...]]] = []  # (place in metas, render_kernel's arguments)

    def write(meta: dict[str, Any], k: Kernel, text: bytes, units: Any, root: str) -> None:
        done, key = extract_cache.from_cache(cache, run.out_dir, meta, k, text, units, root, run.units, mentions)
        if done is None:
            misses.append((len(metas), (cache, key, run.out_dir, meta, k, text, units, root, run.units, mentions)))
        metas.append(done)
    native_of: dict[str, str | None] = {}
    for k in run.kernels:
        origin = origin_of(k.path, _input_root(k.path, run.disc.roots))
        rel = _rel(k.path, origin.root)
        key = (rel, k.qualified_name)
        kid = dataset.kernel_id(k.qualified_name, origin.repo, rel, ordinals[key])
        ordinals[key] += 1
        text = data[k.path][k.start_offset:k.end_offset]
        meta = _metadata(k, text, origin, kid, tu_of.get(k.path), config)
        if (bf := run.flags_of.get(tu_of.get(k.path) or k.path) or run.flags_of.get(k.path)):
            meta["build_flags"] = bf
        if k.path not in native_of:  # (a file's answer, once per file: it scans the whole file's text)
            native_of[k.path] = hip_config.native_reason(k.path, data[k.path], cuda_macros)
        native = native_of[k.path]
        if native:
            meta["variant"] = {"toolchain": "hip", "defines": [], "reason": native}
        write(meta, k, text, run.unit_data, origin.root)
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
            write(vmeta, vk, vtext, v.units, origin.root)
    for (at, _args), meta in zip(misses, _render_all([args for _at, args in misses], run.opts.jobs if run.units else 1),
                                 strict=True):
        metas[at] = meta
    dataset.merge_index(run.out_dir, metas, replaced)
    if cache is not None and (hits := cache.entry_hits.get(extract_cache.KIND, 0)):
        report.cache_notes.append(f"{hits} of {hits + cache.entry_misses.get(extract_cache.KIND, 0)} kernel "
                                  f"folders from the cache ({cache.folder})")
        report.notes.append(report.cache_notes[-1])
    report.kernels = [m for m in metas if m is not None]


# The render jobs of the running write stage: forked workers read them (nothing of them is pickled).
_RENDER: list[tuple[Any, ...]] = []


def _render_one(i: int) -> dict[str, Any]:
    return extract_cache.render_kernel(*_RENDER[i])


def _render_all(jobs: list[tuple[Any, ...]], workers: int) -> list[dict[str, Any]]:
    """`render_kernel` of each job (the kernel folders the cache did not have), in order; in `workers` forked
    processes when there are enough of them: rendering and writing the units was a serial second and a half
    of a cold MMCV run on two cores. Each folder is the kernel's own (vendored copies are renamed into place,
    whoever comes first), so the files are the same whichever process writes them."""
    if workers <= 1 or len(jobs) < 8:
        return [extract_cache.render_kernel(*job) for job in jobs]
    from miner.units import assemble  # noqa: F401 - imported once here, not once per worker

    _RENDER[:] = jobs
    try:
        with mp.get_context("fork").Pool(min(workers, len(jobs))) as pool:
            return pool.map(_render_one, range(len(jobs)), chunksize=1)
    finally:
        _RENDER.clear()


STAGES: tuple[Stage, ...] = (
    Stage("discover", _always, _discover),  # inputs, file kinds, compile_commands.json; ends a run without kernels
    # Helper headers and launching .cu files outside the inputs: for units, and for libclang's parse.
    Stage("project context", lambda run: run.units or run.opts.frontend != "treesitter", _project_context),
    Stage("configure", _always, _configure),  # include graph, per-file project flags, the parse configuration
    Stage("parse", _always, _parse),  # workers; with the units gate open, the analysis runs in them
    Stage("hip variants", lambda run: run.opts.frontend != "treesitter" and clang_frontend.AVAILABLE, _hip_variants),
    # (closures that only declare what another file defines: gate, units and libclang)
    Stage("cross-file definitions", lambda run: run.units and run.opts.frontend != "treesitter"
          and clang_frontend.AVAILABLE, _cross_file),
    Stage("write", _always, _write),  # kernel folders (units rendered when the units gate is open), the index
)


def run_stages(opts: ExtractOptions, out_dir: Any, progress: Callable[[int], Callable[[], None]]) -> ExtractReport:
    run = CudaRun(opts, out_dir, progress)
    try:
        for stage in STAGES:
            if stage.gate(run):
                stage.step(run)
                if run.done:
                    break
    finally:
        if run.pch_folder is not None:
            run.pch_folder.cleanup()
    if run.cache is not None:
        run.report.parse_errors = run.cache.errors
    return run.report
