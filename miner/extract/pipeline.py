"""The extract job: discover → parse (libclang, tree-sitter) → provenance → dataset folder."""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict
from collections.abc import Callable
from typing import Any

from miner import dataset
from miner.errors import NothingToDo, UsageError
from miner.extract import cache as extract_cache
from miner.extract.metadata import _input_root, _metadata, _project_flags, _rel
from miner.extract.options import CUDA_SUFFIXES, FRONTENDS, LANGUAGES, ExtractOptions, ExtractReport
from miner.extract.parse import _cached_parse, _parse_all
from miner.extract.unit_data import UnitData
from miner.frontends import clang_frontend, hip_config
from miner.frontends.config import ParseConfig, framework_overlay
from miner.frontends.parse_cache import ParseCache
from miner.source import build_flags, compile_db, context, include_graph
from miner.source.discover import discover
from miner.source.provenance import origin_of
from miner.units.mentions import Mentions


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
        hip_parse = _cached_parse(cache, graph, {f.path: f.data for f in [*files, *extra]}, inputs, opts.units,
                                  jobs=opts.jobs)
        hip_variants = (hip_config.variants(files, extra, graph, parse_config, kernels, tu_of, inputs, units,
                                            UnitData, hip_parse)
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
