"""`kernel-miner mine LIST -o DS`: many repositories into one dataset, with a resumable ledger."""

from __future__ import annotations

import argparse
import os

from miner.builder.toolchain import DEFAULT_ARCH
from miner.commands import options
from miner.commands._common import add_output_level
from miner.extract import FRONTENDS
from miner.scale.executor import EXECUTORS
from miner.scale.mine import mine

HELP = "mine many repositories (a list file or a folder of checkouts) into one dataset, resumably"
DESCRIPTION = """\
Extract (and with --build / --validate, build and validate) every repository of LIST into the dataset
DS. LIST is a text file with one repository path per line (relative paths are relative to the file;
`#` starts a comment) or a folder whose subfolders are checkouts.

DS/ledger.sqlite records per repository and stage its state, attempts, duration and error, per file
its kernels and errors, per kernel its build and validation outcome. Kill the run at any moment
(even kill -9) and run the same command again: finished work is skipped, nothing is lost or duplicated.
A repository that fails, or runs past --repo-timeout, is recorded and the run goes on; --retry-failed
tries failed stages again.
"""


def _licenses(text: str) -> list[str]:
    out = [s.strip() for s in text.split(",") if s.strip()]
    if not out:
        raise argparse.ArgumentTypeError("expected SPDX ids, e.g. MIT,Apache-2.0")
    return out


def add_license_allow(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--license-allow", type=_licenses, metavar="SPDX,...",
                   help=f"{what} only from repositories whose license is one of these SPDX ids "
                        f"(e.g. MIT,Apache-2.0,BSD-3-Clause); 'unknown' admits repos without a license file")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("repos", metavar="LIST", help="file of repository paths, or a folder of checkouts")
    p.add_argument("-o", "--output-dir", required=True, metavar="DS", help="dataset folder (created if missing)")
    p.add_argument("--build", action="store_true", help="compile every unit with nvcc after extraction")
    p.add_argument("--validate", action="store_true", help="run every kernel's tests (needs a GPU) after the build")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="parser, nvcc or test processes within one repository's stage (default: number of CPUs)")
    p.add_argument("--workers", type=int, default=1, metavar="N",
                   help="repositories processed at once (default: 1; with --executor ray: tasks in flight)")
    p.add_argument("--repo-timeout", type=float, default=3600.0, metavar="SECONDS",
                   help="time budget of one repository over all its stages in this run (default: 3600)")
    p.add_argument("--retry-failed", action="store_true", help="run stages that failed in an earlier run again")
    p.add_argument("--no-units", action="store_true", help="extract kernels only (no closures or units)")
    p.add_argument("--frontend", choices=FRONTENDS, default="auto", help="as for `kernel-miner extract`")
    add_license_allow(p, "mine")
    p.add_argument("--no-sandbox", dest="sandbox", action="store_false",
                   help="--validate runs the tests with your own rights (as `kernel-miner validate --no-sandbox`)")
    p.add_argument("--no-dedupe", dest="dedupe", action="store_false",
                   help="do not mark exact and near duplicates across the dataset at the end of the run")
    p.add_argument("--executor", choices=EXECUTORS, default="local",
                   help="local: child processes of this run; ray: Ray tasks (docs/scale.md)")
    p.add_argument("--ray-address", metavar="ADDR",
                   help="with --executor ray: the cluster to join ('auto', ray://host:10001; default: a local one)")
    p.add_argument("--arch", default=DEFAULT_ARCH, metavar="LIST", help="with --build: nvcc targets")
    p.add_argument("--nvcc", metavar="PATH", help="with --build: the nvcc to use")
    p.add_argument("--cache-dir", metavar="DIR", help="with --build: build cache folder")
    add_output_level(p, "list every failure")


def _dups(d: dict[str, int]) -> str:
    return f"; {d['exact']} exact and {d['near']} near duplicates" if d else ""


def run(args: argparse.Namespace) -> int:
    opts = options.mine_options(args)
    out = options.reporter(args)
    with out.stage_progress() as progress:
        rep = mine(opts, progress)
    out.capped(rep.failures)
    for line in rep.notes:
        out.note(line)
    label = args.output_dir if args.output_dir.endswith("/") else args.output_dir + "/"
    resumed = f", {rep.resumed} interrupted commits finished" if rep.resumed else ""
    out.info(f"{rep.repos} repos: {rep.done} done, {rep.failed} failed, {rep.skipped} skipped{resumed}; "
             f"{rep.kernels} kernels ({rep.new_kernels} new{_dups(rep.duplicates)}) in {rep.seconds:.1f} s -> {label}")
    return 1 if rep.failed else 0
