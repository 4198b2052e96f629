"""`kernel-miner validate DIR`: run every kernel's tests isolated and record the outcomes."""

from __future__ import annotations

import argparse
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

from miner.commands import options
from miner.commands._common import add_kernels
from miner.errors import NOT_VERIFIED, NothingToDo
from miner.reporter import Reporter

HELP = "run each kernel's tests in an isolated process and record pass/fail/crash per kernel"
DESCRIPTION = HELP + """.

Exit codes: 0 every kernel run passed; 1 some kernel did not pass and was no skip (failed, error,
timeout, crashed, cuda_error, build_failed, sandbox_violation); 7 none failed but some were skipped: their
tests did not run here (every test skipped, e.g. no CUDA GPU, or the kernel has no tests), so nothing about
them was verified; 2 usage or configuration error; 3 nothing to do (no kernel selected); 130 interrupted.
Kernels already validated (not rerun) do not count."""
# A skipped kernel is no failure, but no pass either: a dataset user scripting `validate && publish` must not
# take "every test skipped for lack of a GPU" for success, so it gets a code of its own below failures.
EXIT_NOT_VERIFIED = NOT_VERIFIED


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="dataset directory (kernel folders with metadata.json)")
    # Measured on an H100 with the sandbox on (docs/harness.md, scripts/throughput_probe.py): with one
    # work queue per process (--cuda-connections 1) 4 jobs validated 305-310 kernels/min; with the driver's
    # 8 queues 2/3/4/6 jobs gave 179/193/193/187. Context creation serializes in the driver, so 4 stays.
    parser.add_argument("--jobs", "-j", type=int, default=min(4, os.cpu_count() or 1),
                        help="kernels tested at once (default: 4, or the number of CPUs if fewer)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds one kernel's tests may run before its process group is killed")
    parser.add_argument("--sanitize", action="store_true",
                        help="run each kernel's tests under compute-sanitizer memcheck")
    parser.add_argument("--force", action="store_true", help="re-run kernels already validated")
    add_kernels(parser, "validate")
    parser.add_argument("--mode", choices=("fork", "spawn"), default="fork",
                        help="fork: children of a warm worker that has torch imported (fast); "
                             "spawn: a fresh interpreter per kernel")
    parser.add_argument("--mps", action="store_true",
                        help="first pass under a private CUDA MPS daemon (faster child start when several jobs "
                             "share one GPU); every kernel that does not pass there is run again alone "
                             "without MPS, and that result is recorded (a fault can spread to MPS neighbours)")
    parser.add_argument("--cuda-connections", type=int, default=1, metavar="N",
                        help="hardware work queues of each test process (CUDA_DEVICE_MAX_CONNECTIONS; default 1: "
                             "the driver creates contexts one process after another and 1 queue makes that ~4x "
                             "faster; 0: the driver's default of 8, for tests whose kernels must run concurrently "
                             "on two streams to make progress). A value set in the environment wins")
    parser.add_argument("--no-oracles", dest="oracles", action="store_false",
                        help="do not replay each passing test's launches for the determinism and "
                             "float/double agreement oracles (on by default)")
    parser.add_argument("--tests-from", action="append", metavar="DIR", type=Path,
                        help="look for tests kept beside the kernels' sources (SRC_DIR/tests/<kernel name>/"
                             "test_*.py) under DIR or its parents and copy them into the kernel folders "
                             "(repeatable; default: the current directory)")
    parser.add_argument("--no-sandbox", dest="sandbox", action="store_false",
                        help="run the tests with your own rights: no namespaces, no private copy, no "
                             "rlimits (the environment is still filtered); for machines without "
                             "unprivileged user namespaces")
    parser.add_argument("--memory-limit", type=float, default=None, metavar="GIB",
                        help="sandbox: heap and private mappings of a test process (RLIMIT_DATA; default "
                             "half the RAM, at most 32)")
    parser.add_argument("--file-limit", type=float, default=2.0, metavar="GIB",
                        help="sandbox: largest file a test may write (default 2)")
    parser.add_argument("--process-limit", type=int, default=512, metavar="N",
                        help="sandbox: processes and threads of one kernel's tests (default 512)")
    parser.add_argument("--toolchain", choices=("auto", "cuda", "hip"), default="auto",
                        help="which build's libraries the tests load: cuda (build, libunit.so) or hip (build_hip, "
                             "libunit_hip.so, for a ROCm PyTorch); auto: $KM_TOOLCHAIN, else cuda")
    parser.add_argument("--quiet", "-q", action="store_true", help="only the summary line")


def run(args: argparse.Namespace) -> int:
    return execute(options.validate_options(args), options.reporter(args))


def execute(run: options.ValidateRun, rep: Reporter) -> int:
    from miner.validate.pipeline import Options, validate_dataset

    if run.toolchain != "auto":  # read by the harness here and in every test process
        os.environ["KM_TOOLCHAIN"] = run.toolchain
    opts = Options(jobs=run.jobs, timeout=run.timeout, sanitize=run.sanitize, force=run.force,
                   kernels=run.patterns or None, mode=run.mode, oracles=run.oracles, tests_from=run.tests_from,
                   sandbox=run.sandbox, limits=run.limits, mps=run.mps,
                   cuda_connections=run.cuda_connections)
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        summary = validate_dataset(run.root, opts, rep)
    except KeyboardInterrupt:
        rep.error("interrupted; results recorded so far are kept")
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    if not summary["selected"]:
        raise NothingToDo(f"{run.root}: no kernel folders (*/metadata.json)" +
                          (" match --kernels" if run.patterns else ""))
    counts = Counter(r["outcome"] for r in summary["results"].values())
    parts = [f"{n} {k}" for k, n in sorted(counts.items())]
    if summary["cached"]:
        parts.append(f"{summary['cached']} already validated")
    rep.result(f"{summary['selected']} kernels: {', '.join(parts)} -> {run.root}")
    return _exit_code(counts, rep)


def _exit_code(counts: Counter[str], rep: Reporter) -> int:
    """1 when any kernel failed; else 7 (with a line saying so) when any kernel skipped; else 0."""
    from miner.validate.pipeline import failing

    if any(failing(outcome) for outcome in counts):
        return 1
    if counts.get("skipped"):
        rep.result(f"not verified: {counts['skipped']} kernel(s) skipped, their tests did not run (no CUDA GPU, or "
                   f"no tests); exit code {EXIT_NOT_VERIFIED}, not 0")
        return EXIT_NOT_VERIFIED
    return 0


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt
