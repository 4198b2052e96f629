"""`kernel-miner extract`: every __global__ kernel, exactly, with metadata."""

from __future__ import annotations

import argparse
import os
import sys

from miner.commands._common import add_output_level, check_numbers
from miner.errors import UsageError
from miner.extract import FRONTENDS, LANGUAGES, ExtractOptions, extract
from miner.progress import progress_bar

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
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
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
                   help="then compile the units with nvcc, as `kernel-miner build DIR` does (cached by content)")
    p.add_argument("--arch", default=None, metavar="LIST",
                   help="with --build: targets, as for `kernel-miner build --arch` (default: sm_90,compute_90 for "
                        "cuda, gfx90a for hip)")
    p.add_argument("--toolchain", default=None, metavar="LIST",
                   help="with --build: cuda, hip or cuda,hip, as for `kernel-miner build --toolchain` (default: cuda)")
    add_output_level(p, "also list skipped files and each kernel")


def run(args: argparse.Namespace) -> int:
    paths = list(args.paths) + list(args.input_file)
    if not paths:
        raise UsageError("no input: give PATH arguments or --input-file")
    check_numbers(args, at_least_one=("jobs",))
    if args.build and args.no_units:
        raise UsageError("--build needs units: drop --no-units")
    if args.arch and not args.build:
        raise UsageError("--arch applies to --build only")
    if args.toolchain and not args.build:
        raise UsageError("--toolchain applies to --build only")
    opts = ExtractOptions(paths=paths, out_dir=args.output_dir, include_dirs=args.include_dir,
                          defines=args.define, compile_commands=args.compile_commands,
                          jobs=args.jobs, frontend=args.frontend, units=not args.no_units, project=args.project,
                          language=args.language)
    with progress_bar("parsing", disable=args.quiet) as progress:
        report = extract(opts, progress)
    for line in report.failures:
        print(f"kernel-miner: error: {line}", file=sys.stderr)
    if args.verbose:
        for line in report.notes:
            print(f"kernel-miner: note: {line}", file=sys.stderr)
        for m in report.kernels:
            src = m["source"]
            print(f"{m['id']}  {src['path']}:{src['start_line']}-{src['end_line']}  [{m['frontend']}]")
    if not args.quiet:
        out = args.output_dir if args.output_dir.endswith("/") else args.output_dir + "/"
        print(f"{len(report.kernels)} kernels from {report.files} files "
              f"({len(report.failures)} failed) -> {out}")
    rc = 1 if report.failures else 0
    if args.build and report.kernels:
        from miner.commands import build as build_command

        rc = max(rc, build_command.run(build_command.options_namespace(
            args.output_dir, arch=args.arch, toolchain=args.toolchain, jobs=args.jobs, quiet=args.quiet,
            verbose=args.verbose)))
    return rc
