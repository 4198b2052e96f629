"""The extract job: discover → parse (libclang, tree-sitter) → provenance → dataset folder."""

from __future__ import annotations

import os
from collections.abc import Callable

from miner import dataset
from miner.errors import NothingToDo, UsageError
from miner.extract.options import FRONTENDS, LANGUAGES, ExtractOptions, ExtractReport


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
    # An unchanged rerun into the same folder: its outputs checked, the recorded report (extract/run_record.py).
    from miner.extract.run_record import RunRecord

    record = RunRecord.open(opts, out_dir)
    if record is not None and (done := record.replay()) is not None:
        return done
    report = _extract_all(opts, out_dir, progress)
    if record is not None:
        record.save(report)
    return report


def _extract_all(opts: ExtractOptions, out_dir, progress: Callable[[int], Callable[[], None]]) -> ExtractReport:
    """Triton and CUDA/HIP inputs into `out_dir`."""
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
    """The CUDA/HIP sources through the stage list of miner/extract/stages.py (imported here: an unchanged
    rerun never loads the parser stack)."""
    from miner.extract.stages import run_stages

    return run_stages(opts, out_dir, progress)
