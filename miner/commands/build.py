"""`kernel-miner build`: compile every standalone unit of a dataset with nvcc."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from miner.builder import DEFAULT_ARCH, DEFAULT_BATCH, DEFAULT_TIMEOUT, BuildOptions, build_dataset
from miner.builder.toolchains import TOOLCHAINS, Toolchain
from miner.commands import options
from miner.commands import verify as verify_cmd
from miner.commands._common import add_kernels, add_output_level
from miner.errors import NothingToDo, UsageError
from miner.reporter import Reporter

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
    p.add_argument("-j", "--jobs", type=int, default=options.default_jobs(), metavar="N",
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


def run(args: argparse.Namespace) -> int:
    return execute(options.build_options(args), options.reporter(args))


def execute(run: options.BuildRun, rep: Reporter, summaries: list[dict[str, Any]] | None = None) -> int:
    """The build stage with resolved options: Triton units, then each toolchain, then --verify.
    `summaries` (extract --build's run record) gets one entry per build (extract.build_record.summary)."""
    languages = _languages(run.dataset, run.selectors)
    rc = 0
    if "triton" in languages:
        rc = _build_triton(run, rep)
        if summaries is not None:
            summaries.append({"name": "triton"})
        if "cuda" not in languages:
            return rc
    chains = [(TOOLCHAINS[name](""), opts) for name, opts in run.chains]
    for tc, _opts in chains:  # every compiler found before anything is built
        tc.locate(run.compilers.get(tc.compiler), run.hip_path)
    for tc, opts in chains:
        rc = max(rc, _build_one(run, rep, tc, opts, len(chains) > 1 or tc.name != "cuda", summaries))
    nvcc = next((tc.path for tc, _ in chains if tc.name == "cuda"), None)
    if run.verify is not None and nvcc:
        vrep = verify_cmd.verify(run.dataset, run.verify, nvcc, run.selectors, rep)
        verify_cmd.report(vrep, rep)
        rc = max(rc, 0 if vrep.counts["identical"] == vrep.verified else 1)
    return rc


def _build_one(run: options.BuildRun, rep: Reporter, tc: Toolchain, opts: BuildOptions, label: bool,
               summaries: list[dict[str, Any]] | None = None) -> int:
    try:
        with rep.progress(f"compiling ({tc.compiler})") as progress:
            res = build_dataset(run.dataset, opts, tc.path, run.selectors, progress, toolchain=tc)
    except OSError as exc:  # an unwritable dataset or cache folder, a full disk
        where = f"{exc.filename}: " if exc.filename else ""
        raise UsageError(f"build: {where}{exc.strerror or exc}") from None
    if res.kernels == 0:
        raise NothingToDo(f"{run.dataset}: no kernels" + (" match --kernels" if run.selectors else ""))
    if res.units == 0:
        raise NothingToDo(f"{run.dataset}: no units to build (kernels have no rendered instantiations)")
    if summaries is not None:
        from miner.extract.build_record import summary

        summaries.append(summary(tc.name, tc.compiler, label, res))
    prefix = f"{tc.name}: " if label else ""
    rep.capped([prefix + line for line in res.failures], "build failed")
    findings = f", {res.with_findings} of them with portability findings" if tc.name == "hip" else ""
    rep.info(f"{prefix}{res.ok}/{res.units} units built{findings} ({res.failed} failed, {res.timeout} timed out, "
             f"{res.skipped} skipped, {res.cached} cached); {res.kernels_ok}/{res.kernels} kernels compile; "
             f"{res.nvcc_calls} {tc.compiler} calls in {res.seconds:.1f} s")
    return 0 if res.failed + res.timeout + res.skipped == 0 else 1


def _languages(out_dir: Path, selectors: list[str]) -> set[str]:
    from miner import dataset

    out = set()
    for kdir in dataset.select_kernels(out_dir, selectors):
        try:
            out.add(dataset.load_metadata(kdir).get("language") or "cuda")
        except (OSError, ValueError, AttributeError):
            continue
    return out or {"cuda"}


def _build_triton(run: options.BuildRun, rep: Reporter) -> int:
    """Triton units: an ahead-of-time compile for the first --arch entry, in child processes."""
    from miner.triton import build as triton_build

    arch = run.arch or DEFAULT_ARCH

    if triton_build.triton_release() == "unavailable":
        raise UsageError("the dataset holds Triton kernels but the 'triton' package is not installed "
                         "(pip install 'kernel-miner[triton]')")
    with rep.progress("compiling triton") as progress:
        res = triton_build.build_dataset(run.dataset, arch=arch, jobs=run.jobs, timeout=run.timeout,
                                         selectors=run.selectors, force=run.force,
                                         cache_dir=run.cache_dir / "triton" if run.cache_dir else None,
                                         progress=progress)
    rep.capped(res.failures, "build failed")
    classes = ", ".join(f"{k} {v}" for k, v in sorted(res.classes.items())) or "none"
    rep.info(f"{res.ok}/{res.units} Triton units compiled for {arch} ({res.failed} failed, {res.timeout} "
             f"timed out, {res.skipped} skipped, {res.cached} cached; classes: {classes}) in {res.seconds:.1f} s")
    return 0 if res.failed + res.timeout == 0 else 1
