"""`kernel-miner triage DIR --out debug/`: one reproducible folder per failed kernel."""

from __future__ import annotations

import argparse
from pathlib import Path

from miner.commands import options
from miner.errors import InputError, NothingToDo, UsageError

HELP = "gather unit, wrapper, tests, logs and a repro.sh for every kernel that failed validation"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="a dataset directory that `validate` has run on")
    parser.add_argument("--out", required=True, metavar="OUT", help="folder receiving one subfolder per failure")
    parser.add_argument("--timeout", type=float, default=120.0, help="time limit written into repro.sh")


def run(args: argparse.Namespace) -> int:
    from miner import dataset
    from miner.validate.triage import triage

    root, out = Path(args.dir), Path(args.out)
    if not root.is_dir():
        raise InputError(f"{root}: not a directory")
    if out.exists() and not out.is_dir():
        raise UsageError(f"{out}: exists and is not a directory")
    if not dataset.kernel_dirs(root):
        raise NothingToDo(f"{root}: no kernel folders (*/metadata.json)")
    written = triage(root, out, args.timeout)
    options.reporter(args).result(f"{len(written)} failure(s) -> {out}")
    return 0
