"""Every command's options resolved in one place: argparse values in, one checked, typed object out.

Each `*_options(args)` turns a command's parsed arguments into the one object its `run` passes down
(a usage error is raised here, before any work starts); `build_run(...)` is the keyword form that
`extract --build` uses, so no command re-runs another command's argparse. Defaults live in the
constants the argparse help prints, never in two places. Not a command: miner/cli.py loads only the
names in its COMMANDS list.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from miner.commands._common import check_numbers, kernel_patterns
from miner.errors import InputError, UsageError
from miner.reporter import Reporter

# The stages' own option types are loaded by the resolver that needs them: a command loads only what it runs
# (`validate` starts in a fiftieth of a second, not the builder's and verifier's third).
if TYPE_CHECKING:
    from miner.builder import BuildOptions
    from miner.enrich.config import EnrichConfig
    from miner.extract import ExtractOptions
    from miner.scale.mine import MineOptions
    from miner.verify.driver import VerifyOptions


def default_jobs() -> int:
    """--jobs of the compile and parse stages: one per CPU."""
    return os.cpu_count() or 1


# ---------------------------------------------------------------------------------------------- verify


@dataclass
class VerifyRun:
    dataset: Path
    opts: VerifyOptions
    nvcc: str | None  # --nvcc as given (found at run time)
    selectors: list[str]


def verify_settings(args: argparse.Namespace, prefix: str = "") -> VerifyOptions:
    """The verify options of `verify` (prefix "") or `build --verify` (prefix "verify_")."""
    from miner.verify.driver import VerifyOptions

    get = lambda name: getattr(args, prefix + name)  # noqa: E731
    flag = prefix.replace("_", "-")
    if get("sample") is not None and get("sample") < 1:
        raise UsageError(f"--{flag}sample must be at least 1")
    if not get("timeout") > 0:
        raise UsageError(f"--{flag}timeout must be positive")
    source = get("source")
    if source is not None and not Path(source).is_dir():
        raise UsageError(f"{source}: --{flag}source is not a directory")
    return VerifyOptions(jobs=args.jobs, timeout=get("timeout"), sample=get("sample"),
                         source=Path(source).resolve() if source else None,
                         cache_dir=Path(get("cache_dir")) if get("cache_dir") else None, force=get("force"),
                         extra_flags=list(getattr(args, "nvcc_flag", []) or []))


def verify_options(args: argparse.Namespace) -> VerifyRun:
    dataset = Path(args.dataset)
    if not dataset.is_dir():
        raise UsageError(f"{args.dataset}: not a dataset directory")
    check_numbers(args, at_least_one=("jobs",))
    return VerifyRun(dataset, verify_settings(args), args.nvcc, kernel_patterns(args.kernels))


# ----------------------------------------------------------------------------------------------- build


@dataclass
class BuildRun:
    dataset: Path
    selectors: list[str]
    chains: list[tuple[str, BuildOptions]]  # toolchain name and its options, in --toolchain order
    compilers: dict[str, str | None]  # --nvcc / --hipcc as given (found at run time)
    arch: str | None  # --arch as given (Triton builds for its first entry)
    jobs: int
    timeout: float
    force: bool
    cache_dir: Path | None
    verify: VerifyOptions | None = None  # build --verify
    hip_path: str | None = None  # --hip-path: a ROCm prefix of its own (else $KM_HIP_PATH, else hipcc on PATH)


def build_run(dataset: str | Path, *, toolchain: str | None = None, arch: str | None = None,
              jobs: int | None = None, timeout: float | None = None, batch_size: int | None = None,
              force: bool = False, kernels: Iterable[str] | None = None, nvcc_flags: Iterable[str] = (),
              cache_dir: str | None = None, nvcc: str | None = None, hipcc: str | None = None,
              verify: VerifyOptions | None = None, hip_path: str | None = None) -> BuildRun:
    """The build command's options from keywords (None: the default `kernel-miner build --help` shows)."""
    from miner.builder import DEFAULT_BATCH, DEFAULT_TIMEOUT, BuildOptions
    from miner.builder.toolchains import TOOLCHAINS, parse_names, split_arch

    ns = argparse.Namespace(jobs=default_jobs() if jobs is None else jobs,
                            batch_size=DEFAULT_BATCH if batch_size is None else batch_size,
                            timeout=DEFAULT_TIMEOUT if timeout is None else timeout)
    out_dir = Path(dataset)
    if not out_dir.is_dir():
        raise UsageError(f"{dataset}: not a dataset directory")
    check_numbers(ns, at_least_one=("jobs", "batch_size"), positive=("timeout",))
    names = parse_names(toolchain or "cuda")
    arches = split_arch(arch, names)
    chains: list[tuple[str, BuildOptions]] = []
    for name in names:  # every --arch checked before anything runs
        opts = BuildOptions(arch=arches[name], jobs=ns.jobs, timeout=ns.timeout, batch_size=ns.batch_size,
                            force=force, extra_flags=list(nvcc_flags),
                            cache_dir=Path(cache_dir) if cache_dir else None)
        TOOLCHAINS[name]("").flags(opts)
        chains.append((name, opts))
    return BuildRun(out_dir, kernel_patterns(kernels), chains, {"nvcc": nvcc, "hipcc": hipcc}, arch, ns.jobs,
                    ns.timeout, force, Path(cache_dir) if cache_dir else None, verify, hip_path)


def build_options(args: argparse.Namespace) -> BuildRun:
    run = build_run(args.dataset, toolchain=args.toolchain, arch=args.arch, jobs=args.jobs, timeout=args.timeout,
                    batch_size=args.batch_size, force=args.force, kernels=args.kernels,
                    nvcc_flags=args.nvcc_flag, cache_dir=args.cache_dir, nvcc=args.nvcc, hipcc=args.hipcc,
                    hip_path=getattr(args, "hip_path", None))
    if args.verify:
        run.verify = verify_settings(args, prefix="verify_")
    return run


# --------------------------------------------------------------------------------------------- extract


@dataclass
class ExtractRun:
    extract: ExtractOptions
    output_label: str  # DIR as typed, with a trailing slash, for the summary line
    build: bool = False  # --build: the build stage's gate
    build_arch: str | None = None  # --arch / --toolchain for that stage (None: build's defaults)
    build_toolchain: str | None = None


def extract_options(args: argparse.Namespace) -> ExtractRun:
    from miner.extract import ExtractOptions  # the parser stack, loaded by the commands that parse only

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
    from miner.extract import isolated

    isolated.parse_timeout()  # (a bad KM_PARSE_TIMEOUT is said before anything is written)
    opts = ExtractOptions(paths=paths, out_dir=args.output_dir, include_dirs=args.include_dir,
                          defines=args.define, compile_commands=args.compile_commands,
                          jobs=args.jobs, frontend=args.frontend, units=not args.no_units, project=args.project,
                          language=args.language)
    label = args.output_dir if args.output_dir.endswith("/") else args.output_dir + "/"
    return ExtractRun(opts, label, args.build, args.arch, args.toolchain)


def extract_build_run(run: ExtractRun) -> BuildRun:
    """`extract --build`'s build options, resolved once the dataset folder exists (after the extract stage)."""
    return build_run(run.extract.out_dir, arch=run.build_arch, toolchain=run.build_toolchain, jobs=run.extract.jobs)


# -------------------------------------------------------------------------------------------- validate


@dataclass
class ValidateRun:
    root: Path
    patterns: list[str]
    toolchain: str  # auto | cuda | hip
    jobs: int
    timeout: float
    sanitize: bool
    force: bool
    mode: str
    oracles: bool
    tests_from: list[Path] | None
    sandbox: bool
    limits: dict[str, int] = field(default_factory=dict)
    mps: bool = False  # a first pass under a private CUDA MPS daemon
    cuda_connections: int = 1  # CUDA_DEVICE_MAX_CONNECTIONS of the test processes; 0: the driver's default


def validate_options(args: argparse.Namespace) -> ValidateRun:
    import shutil

    root = Path(args.dir)
    if not root.is_dir():
        raise InputError(f"{root}: not a directory")
    check_numbers(args, at_least_one=("jobs",), positive=("timeout",))
    if args.cuda_connections < 0:
        raise UsageError(f"--cuda-connections must be 0 or more, got {args.cuda_connections}")
    if args.sanitize and shutil.which("compute-sanitizer") is None:
        raise UsageError("--sanitize needs compute-sanitizer on PATH")
    if args.sandbox:
        check_sandbox()
    return ValidateRun(root, kernel_patterns(args.kernels), args.toolchain, args.jobs, args.timeout, args.sanitize,
                       args.force, args.mode, args.oracles, args.tests_from, args.sandbox, _limits(args), args.mps,
                       args.cuda_connections)


def _limits(args: argparse.Namespace) -> dict[str, int]:
    gib = 1 << 30
    out = {"file_bytes": int(args.file_limit * gib), "processes": args.process_limit}
    if args.memory_limit is not None:
        out["memory_bytes"] = int(args.memory_limit * gib)
    if min(out.values()) <= 0:
        raise UsageError("--memory-limit, --file-limit and --process-limit must be positive")
    return out


def check_sandbox() -> None:
    """A usage error where the test sandbox cannot be built here (validate, mine --validate)."""
    from miner.sandbox import unavailable

    why = unavailable()
    if why:
        raise UsageError(f"cannot build the test sandbox here ({why}); it needs Linux with unprivileged "
                         "user namespaces and mount_setattr (5.12+). --no-sandbox runs the tests with your "
                         "own rights")


# ------------------------------------------------------------------------------------------ mine, enrich


def mine_options(args: argparse.Namespace) -> MineOptions:
    import sys

    from miner.scale.mine import MineOptions

    check_numbers(args, at_least_one=("jobs", "workers"), positive=("repo_timeout",))
    if args.build and args.no_units:
        raise UsageError("--build needs units: drop --no-units")
    if args.validate and args.no_units:
        raise UsageError("--validate needs units: drop --no-units")
    if args.ray_address and args.executor != "ray":
        raise UsageError("--ray-address applies to --executor ray only")
    if args.validate and args.sandbox:
        check_sandbox()
    return MineOptions(repos=args.repos, out_dir=args.output_dir, build=args.build, validate=args.validate,
                       jobs=args.jobs, workers=args.workers, repo_timeout=args.repo_timeout,
                       retry_failed=args.retry_failed, units=not args.no_units, frontend=args.frontend,
                       license_allow=args.license_allow, executor=args.executor, ray_address=args.ray_address,
                       arch=args.arch, nvcc=args.nvcc, cache_dir=args.cache_dir, dedupe=args.dedupe,
                       sandbox=args.sandbox, argv=sys.argv[1:])


def enrich_options(args: argparse.Namespace) -> EnrichConfig:
    """--config's TOML file, then the environment, then these options (miner/enrich/config.py merges them)."""
    # Imported here so `kernel-miner --help` works without the optional `llm` extra installed.
    try:
        from miner.enrich.config import build_config
    except ModuleNotFoundError as exc:
        raise UsageError(f"enrich needs the llm extra ({exc.name} missing): pip install 'kernel-miner[llm]'") from None
    cli = {k: getattr(args, k) for k in ("model", "base_url", "concurrency", "max_attempts", "stages",
                                          "max_requests", "max_tokens", "completion_tokens", "timeout",
                                          "test_timeout", "force", "sandbox")}
    cli["kernels"] = kernel_patterns(args.kernels) or None  # None: the --config file's list, if any
    return build_config(cli, args.config)


def reporter(args: argparse.Namespace) -> Reporter:
    """The terminal's owner for this run, at the level of -q/-v."""
    return Reporter.from_args(args)
