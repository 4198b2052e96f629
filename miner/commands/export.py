"""`kernel-miner export DS --format parquet|jsonl`: shards `datasets.load_dataset` reads, and a dataset card."""

from __future__ import annotations

import argparse
from pathlib import Path

from miner.commands import options
from miner.commands._common import add_output_level
from miner.commands.mine import add_license_allow
from miner.scale.export import FORMATS, export

RECORD_FORMATS = ("tritonbench", "geak")

HELP = "write a dataset as Parquet or JSONL shards plus a dataset card (README.md)"
DESCRIPTION = """\
Write one row per kernel (exact text, standalone units, build and validation outcomes, license,
duplicate cluster, full metadata) to OUT/data/train-NNNNN-of-NNNNN.{parquet,jsonl} and a dataset card
OUT/README.md. Load it with
  datasets.load_dataset("parquet", data_files="OUT/data/*.parquet", split="train")
Duplicates are marked first (as `kernel-miner mine` does at the end of a run) unless --no-dedupe.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="DS", help="dataset folder (from mine or extract)")
    p.add_argument("--format", choices=(*FORMATS, *RECORD_FORMATS), default="parquet",
                   help="shard format (default: parquet); tritonbench (a JSON list, OUT/tritonbench.json) or geak "
                        "(JSONL, OUT/geak.jsonl): the Triton kernels as those tools' records")
    p.add_argument("--out", metavar="DIR", help="output folder (default: DS/export)")
    add_license_allow(p, "export kernels")
    p.add_argument("--drop-duplicates", action="store_true",
                   help="leave out kernels that duplicate another (exactly or nearly); originals stay")
    p.add_argument("--no-dedupe", dest="dedupe", action="store_false",
                   help="do not (re)compute duplicate clusters before exporting")
    add_output_level(p, "also print the files written")


def run(args: argparse.Namespace) -> int:
    ds = Path(args.dataset)
    out = Path(args.out) if args.out else ds / "export"
    if args.format in RECORD_FORMATS:
        return _records(args, ds, out)
    if args.dedupe and ds.is_dir():
        from miner.scale.dedupe import dedupe_dataset

        dedupe_dataset(ds)
    rep = export(ds, out, args.format, args.license_allow, args.drop_duplicates)
    term = options.reporter(args)
    for f in rep.files:
        term.detail(str(out / f))
    left = []
    if rep.skipped_license:
        left.append(f"{rep.skipped_license} not in --license-allow")
    if rep.skipped_duplicates:
        left.append(f"{rep.skipped_duplicates} duplicates")
    extra = f" ({', '.join(left)} left out)" if left else ""
    term.info(f"{rep.rows} kernels{extra} -> {out}/ ({len(rep.files)} {args.format} files, README.md)")
    if rep.rows == 0:
        term.error("no kernel was exported")
        return 1
    return 0


def _records(args: argparse.Namespace, ds: Path, out: Path) -> int:
    """TritonBench / GEAK records of the Triton kernels (miner/formats/tritonbench.py)."""
    from miner.errors import UsageError
    from miner.formats import tritonbench

    if not ds.is_dir():
        raise UsageError(f"{args.dataset}: not a dataset directory")
    target = out / ("tritonbench.json" if args.format == "tritonbench" else "geak.jsonl")
    n, tests = tritonbench.export_records(ds, args.format, str(target))
    if n == 0:
        raise UsageError(f"{args.dataset}: no Triton kernels with a unit to export")
    options.reporter(args).info(f"{n} {args.format} records ({tests} with a test whose output depends on the kernel) "
                                f"-> {target}")
    return 0
