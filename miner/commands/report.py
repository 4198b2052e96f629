"""`kernel-miner report DS`: a self-contained HTML page with plots and a kernel table."""

from __future__ import annotations

import argparse
from pathlib import Path

from miner.commands import options
from miner.scale.report import write_report

HELP = "write a self-contained HTML report of a dataset (plots and a browsable kernel table)"
DESCRIPTION = """\
Write DS/report.html (or --out FILE): kernels per repository, build and validation outcomes,
instantiation origins, registers and shared memory of the built units, speedups, duplicate clusters,
time per stage (from a `mine` ledger), and a table of every kernel to filter and sort. One file with
inline SVG and script: it opens offline and can be mailed. Links in the table point into DS.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="DS", help="dataset folder")
    p.add_argument("--out", metavar="FILE", help="where to write the page (default: DS/report.html)")
    p.add_argument("-q", "--quiet", action="store_true", help="print errors only")


def run(args: argparse.Namespace) -> int:
    out, data = write_report(Path(args.dataset), Path(args.out) if args.out else None)
    options.reporter(args).info(f"{data['metas']} kernels from {len(data['per_repo'])} repositories -> {out}")
    return 0
