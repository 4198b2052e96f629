"""`kernel-miner extract`: every __global__ kernel, exactly, with metadata."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from miner.commands import options
from miner.commands._common import add_output_level
from miner.extract import FRONTENDS, LANGUAGES, ExtractReport, extract
from miner.reporter import Reporter

HELP = "extract every __global__ kernel from files or directories into a dataset folder"
DESCRIPTION = """\
Extract every __global__ kernel from CUDA/HIP sources. Directories are searched recursively for
.cu .cuh .hip .h .hpp .cpp .cc files; headers are parsed together with the files that include them,
so a kernel defined in a .cuh sees the macros and types its real includer provides.

Output: DIR/<kernel-id>/kernel.cu (the exact definition text), DIR/<kernel-id>/metadata.json
(validated by metadata/kernel.schema.json) and DIR/index.jsonl (one line per kernel).
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="*", metavar="PATH", help="source files or directories to mine")
    p.add_argument("--input-file", action="append", default=[], metavar="FILE",
                   help="a source file or directory to mine (same as PATH; may be repeated)")
    p.add_argument("-o", "--output-dir", required=True, metavar="DIR",
                   help="dataset folder to write (created if missing; other runs' kernels are kept)")
    p.add_argument("-I", "--include-dir", action="append", default=[], metavar="DIR",
                   help="extra include directory for parsing (repeatable)")
    p.add_argument("-D", "--define", action="append", default=[], metavar="NAME[=VALUE]",
                   help="preprocessor define, e.g. -D MMCV_WITH_CUDA (repeatable); recorded in metadata")
    p.add_argument("--compile-commands", metavar="FILE",
                   help="compile_commands.json whose per-file -I/-D/-include/-std flags are used for parsing")
    p.add_argument("-j", "--jobs", type=int, default=options.default_jobs(), metavar="N",
                   help="parallel parser processes (default: number of CPUs)")
    p.add_argument("--frontend", choices=FRONTENDS, default="auto",
                   help="auto: libclang, plus tree-sitter for files libclang cannot parse and for "
                        "kernels in inactive #if branches; clang or treesitter: only that one")
    p.add_argument("--language", choices=LANGUAGES, default="auto",
                   help="auto: .py files are searched for @triton.jit kernels and CUDA/HIP sources for __global__ "
                        "ones; cuda or triton: only that language")
    p.add_argument("--no-units", action="store_true",
                   help="only extract kernels: skip the dependency closure, launch sites, instantiations "
                        "and the rendered standalone units (units/<inst>/unit.cu)")
    p.add_argument("--project", metavar="DIR",
                   help="the project the inputs belong to: helper headers they include and the .cu files that "
                        "launch their kernels are looked up there when they lie outside the inputs "
                        "(default: the inputs' git checkout, else their folder)")
    p.add_argument("--build", action="store_true",
                   help="then compile the units with nvcc, as `kernel-miner build DIR` does (cached by content; an "
                        "unchanged rerun into the same folder compiles and writes nothing)")
    p.add_argument("--arch", default=None, metavar="LIST",
                   help="with --build: targets, as for `kernel-miner build --arch` (default: sm_90,compute_90 for "
                        "cuda, gfx90a for hip)")
    p.add_argument("--toolchain", default=None, metavar="LIST",
                   help="with --build: cuda, hip or cuda,hip, as for `kernel-miner build --toolchain` (default: cuda)")
    add_output_level(p, "also list skipped files and each kernel")


@dataclass
class Context:
    """What the stages of one extract run share: resolved options, the terminal, results so far."""

    run: options.ExtractRun
    rep: Reporter
    report: ExtractReport | None = None
    rc: int = 0
    builds: list[dict[str, Any]] = field(default_factory=list)  # the build stage's summaries (build_record)


@dataclass(frozen=True)
class Stage:
    name: str
    gate: Callable[[Context], bool]  # whether this run includes the stage
    step: Callable[[Context], None]


def _extract(ctx: Context) -> None:
    with ctx.rep.progress("parsing") as progress:
        ctx.report = extract(ctx.run.extract, progress)
    _say_extract(ctx, ctx.report)


def _say_extract(ctx: Context, report: ExtractReport) -> None:
    for line in report.failures:
        ctx.rep.error(line)
    for line in report.notes:
        ctx.rep.detail_note(line)
    for m in report.kernels:
        src = m["source"]
        ctx.rep.detail(f"{m['id']}  {src['path']}:{src['start_line']}-{src['end_line']}  [{m['frontend']}]")
    ctx.rep.info(f"{len(report.kernels)} kernels from {report.files} files "
                 f"({len(report.failures)} failed) -> {ctx.run.output_label}")
    ctx.rc = 1 if report.failures else 0


def _build(ctx: Context) -> None:
    from miner.commands import build as build_command

    run = options.extract_build_run(ctx.run)
    ctx.rc = max(ctx.rc, build_command.execute(run, ctx.rep, ctx.builds))


def _replay(ctx: Context, record: Any) -> bool:
    """An unchanged `extract --build` rerun (extract/build_record.py): the recorded summaries, nothing run."""
    t0 = time.monotonic()
    report = record.replay()
    if report is None:
        return False
    ctx.report = report
    _say_extract(ctx, report)
    for b in record.prev.get("build") or []:
        prefix = f"{b['name']}: " if b["label"] else ""
        ctx.rep.capped([prefix + line for line in b["failures"]], "build failed")
        ctx.rep.info(f"{prefix}{b['ok']}/{b['units']} units built ({b['failed']} failed, {b['timeout']} timed out, "
                     f"{b['skipped']} skipped; unchanged since the last run into this folder: nothing compiled "
                     f"or placed); {b['kernels_ok']}/{b['kernels']} kernels compile; 0 {b['compiler']} calls in "
                     f"{time.monotonic() - t0:.1f} s")
        ctx.rc = max(ctx.rc, 0 if b["failed"] + b["timeout"] + b["skipped"] == 0 else 1)
    return True


# The run in order; a stage runs when its gate says so (--no-units is the units gate inside the extract
# stage: ExtractOptions.units).
STAGES: tuple[Stage, ...] = (
    Stage("extract", lambda ctx: True, _extract),
    Stage("build", lambda ctx: bool(ctx.run.build and ctx.report and ctx.report.kernels), _build),
)


def run(args: argparse.Namespace) -> int:
    ctx = Context(options.extract_options(args), options.reporter(args))
    record = None
    if ctx.run.build:  # a whole `extract --build` recorded: an unchanged rerun checks its outputs and returns
        from miner.extract import build_record

        record = build_record.open_record(ctx.run)
        if record is not None and _replay(ctx, record):
            return ctx.rc
    for stage in STAGES:
        if stage.gate(ctx):
            stage.step(ctx)
    if record is not None:
        build_record.save(record, ctx.report, ctx.builds)
    return ctx.rc
