"""`kernel-miner verify`: prove without a GPU that each built unit compiles to the original kernel."""

from __future__ import annotations

import argparse
from pathlib import Path

from miner.builder import find_nvcc
from miner.commands import options
from miner.commands._common import add_kernels, add_output_level
from miner.errors import NothingToDo, UsageError
from miner.reporter import Reporter
from miner.verify.driver import DEFAULT_TIMEOUT, STATUSES, VerifyOptions, VerifyReport, verify_dataset

HELP = "compare each built unit's PTX with the original translation unit's (no GPU needed)"
DESCRIPTION = """\
For every instantiation whose unit built, compile the original translation unit that defines or
includes the kernel (the mined -D/-I, the repo's headers, the CUDA toolkit, torch's headers where the
code includes torch) and the unit to PTX for the same target, cut out the kernel's .entry and the
functions and globals it reaches, normalize position-dependent names, and compare. Recorded per
instantiation in metadata.json -> instantiations[i].fidelity: status identical | differs |
original_unbuildable | unit_unbuildable, the original file, the entry, and the first differing lines.

A template the original TU never instantiates with the unit's arguments is instantiated by a
wrapper that includes the original file and appends the unit's explicit instantiation.
Compiles are cached by content; one original compile serves all kernels of its TU.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="DIR", help="dataset folder written by `kernel-miner extract --build`")
    add_verify_options(p)
    p.add_argument("--nvcc", metavar="PATH", help="nvcc to use (default: nvcc on PATH, $CUDA_HOME/bin/nvcc)")
    p.add_argument("-j", "--jobs", type=int, default=2, metavar="N", help="parallel nvcc processes (default: 2)")
    add_kernels(p, "verify")
    p.add_argument("-X", "--nvcc-flag", action="append", default=[], metavar="FLAG",
                   help="extra nvcc flag for both sides, e.g. -X=-DNDEBUG (repeatable)")
    add_output_level(p, "also print every instantiation that is not identical")


def add_verify_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """Options `build --verify` shares (prefixed there: --verify-sample ...)."""
    p.add_argument(f"--{prefix}sample", type=int, metavar="N",
                   help="verify only N original translation units, a deterministic sample (default: all)")
    p.add_argument(f"--{prefix}source", metavar="DIR",
                   help="the directory the dataset's source paths are relative to "
                        "(default: parse_context.root recorded by extract)")
    p.add_argument(f"--{prefix}timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"limit per nvcc call (default: {DEFAULT_TIMEOUT:g}; an original that includes torch "
                        f"takes minutes)")
    p.add_argument(f"--{prefix}cache-dir", metavar="DIR",
                   help="PTX cache (default: $XDG_CACHE_HOME/kernel-miner/verify)")
    p.add_argument(f"--{prefix}force", action="store_true", help="ignore cached PTX and compile again")


def summary(rep: VerifyReport) -> str:
    ctx = f" ({rep.context_identical} identical in the original's module context)"

    def part(s: str) -> str:
        return f"{rep.counts[s]} {s}" + (ctx if s == "differs" and rep.context_identical else "")

    parts = ", ".join(part(s) for s in STATUSES if rep.counts[s] or s != "unit_unbuildable")
    sample = f" (sample of {rep.tus}/{rep.tus_total} translation units)" if rep.tus < rep.tus_total else ""
    return (f"{rep.verified}/{rep.instantiations} built instantiations verified{sample}: {parts}; "
            f"{rep.nvcc_calls} nvcc calls, {rep.cached} cached, in {rep.seconds:.1f} s")


def report(res: VerifyReport, rep: Reporter) -> None:
    rep.capped(res.notes, "verify")
    rep.info(summary(res))


def verify(dataset: Path, opts: VerifyOptions, nvcc: str, selectors: list[str], rep: Reporter) -> VerifyReport:
    try:
        with rep.progress("verifying") as progress:
            return verify_dataset(dataset, opts, nvcc, selectors, progress)
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        raise UsageError(f"verify: {where}{exc.strerror or exc}") from None


def run(args: argparse.Namespace) -> int:
    run = options.verify_options(args)
    rep = options.reporter(args)
    res = verify(run.dataset, run.opts, find_nvcc(run.nvcc), run.selectors, rep)
    if res.instantiations == 0:
        raise NothingToDo(f"{args.dataset}: no built instantiations to verify (run `kernel-miner build` first)")
    report(res, rep)
    return 0 if res.counts["identical"] == res.verified else 1
