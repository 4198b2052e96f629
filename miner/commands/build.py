"""`kernel-miner build`: compile every standalone unit of a dataset with nvcc."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from miner.builder import DEFAULT_ARCH, DEFAULT_BATCH, DEFAULT_TIMEOUT, BuildOptions, build_dataset
from miner.builder.toolchains import TOOLCHAINS, Toolchain, parse_names, split_arch
from miner.commands import verify as verify_cmd
from miner.commands._common import add_kernels, add_output_level, check_numbers, kernel_patterns
from miner.errors import NothingToDo, UsageError
from miner.progress import progress_bar

HELP = "compile every standalone unit (units/<inst>/unit.cu) with nvcc (and/or as HIP with hipcc) into a loadable .so"
DESCRIPTION = """\
Compile every unit a dataset holds into units/<inst>/libunit.so (a shared library exposing the
unit's extern "C" km_launch_<symbol>), and record in metadata.json, per instantiation, `build`:
status (ok | failed | timeout | skipped), library, symbol, arch, the first compiler error, the
symbol the closure lacked, ptxas resource usage and timing; per kernel, a `build` summary with
pass_call (true when any instantiation compiled).

--toolchain hip translates each unit into units/<inst>/unit.hip (torch.utils.hipify's mapping, the
launcher ABI unchanged), builds it with hipcc (HIP_PLATFORM=amd, --arch gfx90a by default) into
libunit_hip.so and records `build_hip` beside `build`: the same fields plus the HIP unit, its
portability findings (unmapped API, inline PTX, cuBLAS/cuDNN, wave64 hazards), `portable` for a unit
that built, `error_class` for one that failed, and clang's resource remarks (VGPRs, SGPRs, LDS,
scratch, occupancy). A unit that builds but has findings is counted apart from the clean ones.

Units are compiled in batches (one nvcc call for several units) and results are cached by content,
so an unchanged tree rebuilds almost instantly. A unit that fails in a batch is recompiled alone:
its recorded error is always its own.
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("dataset", metavar="DIR", help="dataset folder written by `kernel-miner extract`")
    p.add_argument("--toolchain", default="cuda", metavar="LIST",
                   help=f"compilers to build with, comma-separated: {', '.join(TOOLCHAINS)} (default: cuda)")
    p.add_argument("--arch", default=None, metavar="LIST",
                   help=f"comma-separated targets: sm_NN (real arch) and compute_NN (embedded PTX) for cuda "
                        f"(default: {DEFAULT_ARCH}), gfxNNN for hip (default: {TOOLCHAINS['hip'].default_arch}); "
                        f"e.g. sm_80,gfx90a,gfx942")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="parallel nvcc processes (default: number of CPUs)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"limit per nvcc call; the whole process group is killed (default: {DEFAULT_TIMEOUT:g})")
    p.add_argument("--nvcc", metavar="PATH", help="nvcc to use (default: nvcc on PATH, $CUDA_HOME/bin/nvcc)")
    p.add_argument("--hipcc", metavar="PATH", help="hipcc to use (default: hipcc on PATH, $ROCM_PATH/bin/hipcc)")
    p.add_argument("--hip-path", metavar="DIR",
                   help="a ROCm install to build HIP with, its hipcc, headers and device libraries (default: "
                        "$KM_HIP_PATH); e.g. /opt/rocm-trixie from KM_HIP=trixie scripts/install.sh")
    p.add_argument("--force", action="store_true", help="ignore cached results and compile everything again")
    add_kernels(p, "build")
    p.add_argument("--batch-size", type=int, default=DEFAULT_BATCH, metavar="K",
                   help=f"units compiled together in one nvcc call (default: {DEFAULT_BATCH}; 1 disables batching)")
    p.add_argument("--cache-dir", metavar="DIR",
                   help="build cache (default: $XDG_CACHE_HOME/kernel-miner/build)")
    p.add_argument("-X", "--nvcc-flag", action="append", default=[], metavar="FLAG",
                   help="extra compiler flag, e.g. -X=-DNDEBUG (repeatable; given to every toolchain; "
                        "part of the cache key)")
    p.add_argument("--verify", action="store_true",
                   help="then run `kernel-miner verify` on the built units (options: --verify-sample ...)")
    verify_cmd.add_verify_options(p, prefix="verify-")
    add_output_level(p, "also print every unit that failed")


def options_namespace(dataset: str, **given: object) -> argparse.Namespace:
    """This command's arguments with their defaults, for `extract --build`; None leaves a default."""
    p = argparse.ArgumentParser(add_help=False)
    add_arguments(p)
    args = p.parse_args([dataset])
    for key, value in given.items():
        if value is not None:
            setattr(args, key, value)
    return args


def run(args: argparse.Namespace) -> int:
    out_dir = Path(args.dataset)
    if not out_dir.is_dir():
        raise UsageError(f"{args.dataset}: not a dataset directory")
    check_numbers(args, at_least_one=("jobs", "batch_size"), positive=("timeout",))
    selectors = kernel_patterns(args.kernels)
    names = parse_names(args.toolchain)
    arches = split_arch(args.arch, names)
    chains: list[tuple[Toolchain, BuildOptions]] = []
    for name in names:  # every --arch checked before anything runs
        opts = BuildOptions(arch=arches[name], jobs=args.jobs, timeout=args.timeout, batch_size=args.batch_size,
                            force=args.force, extra_flags=list(args.nvcc_flag),
                            cache_dir=Path(args.cache_dir) if args.cache_dir else None)
        tc = TOOLCHAINS[name]("")
        tc.flags(opts)
        chains.append((tc, opts))
    languages = _languages(out_dir, selectors)
    rc = 0
    if "triton" in languages:
        rc = _build_triton(args, out_dir, selectors)
        if "cuda" not in languages:
            return rc
    vopts = verify_cmd.options(args, prefix="verify_") if getattr(args, "verify", False) else None
    for tc, _opts in chains:  # every compiler found before anything is built
        tc.locate(getattr(args, tc.compiler, None), getattr(args, "hip_path", None))
    for tc, opts in chains:
        rc = max(rc, _build_one(args, out_dir, selectors, tc, opts, label=len(chains) > 1 or tc.name != "cuda"))
    nvcc = next((tc.path for tc, _ in chains if tc.name == "cuda"), None)
    if vopts is not None and nvcc:
        vrep = verify_cmd.verify(out_dir, vopts, nvcc, selectors, args.quiet)
        verify_cmd.report(vrep, args.verbose, args.quiet)
        rc = max(rc, 0 if vrep.counts["identical"] == vrep.verified else 1)
    return rc


def _build_one(args: argparse.Namespace, out_dir: Path, selectors: list[str], tc: Toolchain, opts: BuildOptions,
               label: bool) -> int:
    try:
        with progress_bar(f"compiling ({tc.compiler})", disable=args.quiet) as progress:
            rep = build_dataset(out_dir, opts, tc.path, selectors, progress, toolchain=tc)
    except OSError as exc:  # an unwritable dataset or cache folder, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        raise UsageError(f"build: {where}{exc.strerror or exc}") from None
    if rep.kernels == 0:
        raise NothingToDo(f"{args.dataset}: no kernels" + (" match --kernels" if selectors else ""))
    if rep.units == 0:
        raise NothingToDo(f"{args.dataset}: no units to build (kernels have no rendered instantiations)")
    prefix = f"{tc.name}: " if label else ""
    shown = rep.failures if args.verbose else rep.failures[:10]
    for line in shown:
        print(f"kernel-miner: build failed: {prefix}{line}", file=sys.stderr)
    if len(rep.failures) > len(shown):
        print(f"kernel-miner: ... and {len(rep.failures) - len(shown)} more (-v lists all)", file=sys.stderr)
    if not args.quiet:
        findings = f", {rep.with_findings} of them with portability findings" if tc.name == "hip" else ""
        print(f"{prefix}{rep.ok}/{rep.units} units built{findings} ({rep.failed} failed, {rep.timeout} timed out, "
              f"{rep.skipped} skipped, {rep.cached} cached); {rep.kernels_ok}/{rep.kernels} kernels compile; "
              f"{rep.nvcc_calls} {tc.compiler} calls in {rep.seconds:.1f} s")
    return 0 if rep.failed + rep.timeout + rep.skipped == 0 else 1


def _languages(out_dir: Path, selectors: list[str]) -> set[str]:
    from miner import dataset

    out = set()
    for kdir in dataset.select_kernels(out_dir, selectors):
        try:
            out.add(dataset.load_metadata(kdir).get("language") or "cuda")
        except (OSError, ValueError, AttributeError):
            continue
    return out or {"cuda"}


def _build_triton(args: argparse.Namespace, out_dir: Path, selectors: list[str]) -> int:
    """Triton units: an ahead-of-time compile for the first --arch entry, in child processes."""
    from miner.triton import build as triton_build

    arch = args.arch or DEFAULT_ARCH

    if triton_build.triton_release() == "unavailable":
        raise UsageError("the dataset holds Triton kernels but the 'triton' package is not installed "
                         "(pip install 'kernel-miner[triton]')")
    with progress_bar("compiling triton", disable=args.quiet) as progress:
        rep = triton_build.build_dataset(out_dir, arch=arch, jobs=args.jobs, timeout=args.timeout,
                                         selectors=selectors, force=args.force,
                                         cache_dir=Path(args.cache_dir) / "triton" if args.cache_dir else None,
                                         progress=progress)
    shown = rep.failures if args.verbose else rep.failures[:10]
    for line in shown:
        print(f"kernel-miner: build failed: {line}", file=sys.stderr)
    if len(rep.failures) > len(shown):
        print(f"kernel-miner: ... and {len(rep.failures) - len(shown)} more (-v lists all)", file=sys.stderr)
    if not args.quiet:
        classes = ", ".join(f"{k} {v}" for k, v in sorted(rep.classes.items())) or "none"
        print(f"{rep.ok}/{rep.units} Triton units compiled for {arch} ({rep.failed} failed, {rep.timeout} "
              f"timed out, {rep.skipped} skipped, {rep.cached} cached; classes: {classes}) in {rep.seconds:.1f} s")
    return 0 if rep.failed + rep.timeout == 0 else 1
