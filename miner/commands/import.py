"""`kernel-miner import`: mine the code of TritonBench / GEAK records as a source."""

from __future__ import annotations

import argparse

from miner import dataset
from miner.commands import options
from miner.commands._common import add_output_level
from miner.errors import UsageError

HELP = "mine the Triton kernels of a TritonBench JSON list (records with `code`) or GEAK JSONL (`label`)"
DESCRIPTION = """\
Each record's code is mined as a file of its own, named <list file>#<index> in metadata source.path;
repo, commit and license come from the record's fields of those names when present. The kernels get
folders, metadata and standalone units exactly as `kernel-miner extract --language triton` gives them.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", metavar="FILE", help="train_crawl.json-style JSON list, or GEAK-style JSONL")
    p.add_argument("-o", "--output-dir", required=True, metavar="DIR", help="dataset folder to write")
    p.add_argument("--format", choices=("auto", "tritonbench", "geak"), default="auto",
                   help="auto: a JSON list is TritonBench's, anything else JSONL (GEAK)")
    p.add_argument("--no-units", action="store_true", help="only the kernels: no closure, launches or units")
    add_output_level(p, "also list each kernel")


def run(args: argparse.Namespace) -> int:
    from miner.formats import tritonbench

    out = dataset.prepare_output(args.output_dir)
    rep = tritonbench.import_records(args.file, out, args.format, units=not args.no_units)
    term = options.reporter(args)
    for line in rep.failures:
        term.error(line)
    if not rep.kernels and not rep.failures:
        raise UsageError(f"{args.file}: no @triton.jit definitions in any record")
    for m in rep.kernels:
        term.detail(f"{m['id']}  {m['source']['path']}:{m['source']['start_line']}-{m['source']['end_line']}")
    term.info(f"{len(rep.kernels)} kernels from {rep.files} records ({len(rep.failures)} failed) -> {args.output_dir}")
    return 1 if rep.failures else 0
