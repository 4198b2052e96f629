"""`kernel-miner validate`: build what is missing, run each kernel's tests isolated, record results."""

from __future__ import annotations

import os
import shlex
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from miner import __version__, dataset, sandbox
from miner.builder.single import build_unit
from miner.errors import BuildError, UsageError
from miner.harness import build_block, library_path, toolchain
from miner.reporter import Reporter, silent
from miner.validate import oracles, store
from miner.validate.mps import MpsDaemon
from miner.validate.process import (
    NOT_FAILED,
    ForkRunner,
    Job,
    RawResult,
    SpawnRunner,
    Verdict,
    kill_active,
    policy_for_tests,
    run_test_process,
)
from miner.validate.sources import sync_tests
from miner.validate.wrapper import write_wrappers

LOG_DIR = "validation"  # inside each kernel folder: stdout.txt, stderr.txt, result.json
INDEX_EVERY_S = 5.0


@dataclass
class Options:
    jobs: int = 4
    timeout: float = 120.0
    sanitize: bool = False
    force: bool = False
    kernels: list[str] | None = None
    mode: str = "fork"
    build_timeout: float = 300.0
    oracles: bool = True
    tests_from: list[Path] | None = None  # roots for source-side tests (miner/validate/sources.py); None: cwd
    sandbox: bool = True  # False: --no-sandbox, tests run with the user's own rights
    limits: dict[str, int] | None = None  # Policy fields (memory_bytes, file_bytes, processes)
    mps: bool = False  # first pass under a private CUDA MPS daemon; what did not pass runs again alone (mps.py)
    # Hardware work queues per test process (CUDA_DEVICE_MAX_CONNECTIONS); 0: the driver's default (8).
    # Each queue is a channel the driver sets up while it creates a context, one process after another:
    # with 1, context creation at 4 jobs on an H100 went from 1.06 s to 0.25 s and validation from 187 to
    # 305-310 kernels/min (docs/harness.md). The cost: streams of one test share one queue, so kernels
    # that must run at the same time on two streams to make progress need 0.
    cuda_connections: int = 1

    def cuda_env(self) -> dict[str, str]:
        """What the test processes' environment gets for CUDA; a value the user set wins."""
        if self.cuda_connections <= 0 or "CUDA_DEVICE_MAX_CONNECTIONS" in os.environ:
            return {}
        return {"CUDA_DEVICE_MAX_CONNECTIONS": str(self.cuda_connections)}

    def connections(self) -> str | None:
        """The work-queue setting the tests ran with (recorded); None: the driver's default."""
        return os.environ.get("CUDA_DEVICE_MAX_CONNECTIONS") or self.cuda_env().get("CUDA_DEVICE_MAX_CONNECTIONS")

    def policy(self, root: Path) -> sandbox.Policy | None:
        if not self.sandbox:
            return None
        return policy_for_tests(self.timeout, (str(root),), limits=self.limits)

    @property
    def salt(self) -> str:
        """What, besides the files, a recorded result depends on (see store.fingerprint)."""
        # A HIP run loads other libraries: its results are not the CUDA run's (CUDA salts unchanged).
        return ("oracles" if self.oracles else "no-oracles") + ("+hip" if toolchain() == "hip" else "")


def build_missing(kdir: Path, meta: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Compile each instantiation that has no library yet. Returns {built, compiled, failed}."""
    info: dict[str, Any] = {"built": [], "compiled": [], "failed": {}}
    for inst in meta.get("instantiations") or []:
        iid = str(inst.get("id"))
        if meta.get("language") == "triton":
            # Triton compiles at the first launch; an ahead-of-time build that failed is final.
            status = (inst.get("build") or {}).get("status")
            if status in ("failed", "timeout"):
                info["failed"][iid] = (inst.get("build") or {}).get("error") or f"build {status}"
            else:
                info["built"].append(iid)
            continue
        if library_path(kdir, inst) is not None:
            info["built"].append(iid)
            continue
        block = build_block(inst)
        status = block.get("status")
        if status in ("failed", "timeout"):
            info["failed"][iid] = block.get("error") or f"build {status}"
            continue
        if toolchain() == "hip":
            info["failed"][iid] = "no HIP library: run kernel-miner build --toolchain hip"
            continue
        try:
            build_unit(dataset.KernelFolder(kdir).unit_path(inst), timeout=timeout)
        except BuildError as exc:
            info["failed"][iid] = str(exc)
            continue
        info["built"].append(iid)
        info["compiled"].append(iid)
    return info


def repro_command(kdir: Path, sanitize: bool, use_oracles: bool = True) -> str:
    cmd = "python -m pytest -p miner.validate.plugin -p no:cacheprovider -c /dev/null --rootdir . " \
          "--import-mode=importlib tests"
    if sanitize:
        cmd = "compute-sanitizer --tool memcheck " + cmd
    if not use_oracles:
        cmd = "KM_ORACLES=0 " + cmd
    return f"cd {shlex.quote(str(kdir))} && {cmd}"


def _timing(raw: RawResult) -> dict[str, Any]:
    res = raw.result or {}
    h = res.get("harness") or {}
    tests_s = sum(float(t.get("duration", 0.0)) for t in (res.get("tests") or {}).values())
    start = res.get("child_start")
    out = {
        "wall_s": round(raw.wall_s, 4),
        "process_start_s": round(start - raw.t_request, 4) if start else None,
        "pytest_start_s": round(res["session_start"] - start, 4) if start and res.get("session_start") else None,
        "collect_s": round(res["collected_at"] - res["session_start"], 4)
        if res.get("collected_at") and res.get("session_start") else None,
        "exit_s": round(raw.t_request + raw.wall_s - res["session_end"], 4) if res.get("session_end") else None,
        "load_s": round(sum(x.get("load_s", 0.0) for x in h.get("loads", [])), 4) if h.get("loads") else None,
        "cuda_init_s": h.get("cuda_init_s"),
        "cuda_prewarmed": bool(h.get("cuda_prewarmed")),
        "ops_warm_s": h.get("ops_warm_s"),
        "first_launch_s": h.get("first_launch_s"),
        "tests_s": round(tests_s, 4),
        "overhead_s": round(max(0.0, raw.wall_s - tests_s), 4),
    }
    return out


def make_record(kdir: Path, verdict: Verdict, raw: RawResult | None, build: dict[str, Any],
                fp: str, opts: Options, mode: str) -> dict[str, Any]:
    h = ((raw.result or {}).get("harness") or {}) if raw else {}
    launches_ok = int(h.get("launches", 0)) - len(h.get("launch_errors", []))
    bench = h.get("bench", [])
    speedups = [b["speedup"] for b in bench if b.get("speedup")]
    pass_exe = verdict.outcome == "passed"
    rel = lambda p: str(p.relative_to(kdir))  # noqa: E731
    log = kdir / LOG_DIR
    oracle_summary, oracle_entries = oracles.summarize(h.get("oracles", []), opts.oracles)
    return {
        "outcome": verdict.outcome,
        "reason": verdict.reason,
        "signal": verdict.signal,
        "test": verdict.test,
        "exit_code": raw.returncode if raw else None,
        "pass_call": bool(build["built"]) and launches_ok > 0
        and verdict.outcome not in ("cuda_error", "crashed", "timeout", "build_failed"),
        "pass_exe": pass_exe,
        "pass_perf": (pass_exe and min(speedups) >= 1.0) if speedups else None,
        "speedup": min(speedups) if speedups else None,
        "tests": verdict.counts,
        "bench": bench,
        "oracles": oracle_entries,
        "oracle_summary": oracle_summary,
        "build": build,
        "timing": _timing(raw) if raw else None,
        "sanitize": opts.sanitize,
        "sandbox": opts.sandbox,
        "violations": verdict.violations,
        "mode": "spawn" if opts.sanitize else mode,
        "cuda_connections": opts.connections(),
        "command": repro_command(kdir, opts.sanitize, opts.oracles),
        "logs": {k: rel(log / f) for k, f in (("stdout", "stdout.txt"), ("stderr", "stderr.txt"),
                                             ("result", "result.json"))} if raw else None,
        "fingerprint": fp,
        "validated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "tool": f"kernel-miner {__version__}",
    }


def validate_one(kdir: Path, opts: Options, runner: Any,
                 test_sources: dict[str, Any] | None = None) -> tuple[dict[str, Any], RawResult | None]:
    rec, raw = _validate_one(kdir, opts, runner)
    if test_sources:
        rec["test_sources"] = test_sources
    return rec, raw


def _validate_one(kdir: Path, opts: Options, runner: Any) -> tuple[dict[str, Any], RawResult | None]:
    policy = opts.policy(kdir.parent)
    meta = dataset.load_metadata(kdir)
    fp = store.fingerprint(kdir, meta, opts.salt)
    build = build_missing(kdir, meta, opts.build_timeout)
    write_wrappers(kdir, meta)
    if not build["built"] and build["failed"]:
        first = next(iter(build["failed"].items()))
        verdict = Verdict("build_failed", f"{first[0]}: {first[1]}")
        return make_record(kdir, verdict, None, build, fp, opts, runner.mode), None
    if not dataset.KernelFolder(kdir).test_files():
        return make_record(kdir, Verdict("skipped", "no tests"), None, build, fp, opts, runner.mode), None
    job = Job(kdir, kdir / LOG_DIR, opts.timeout, opts.sanitize, env={"KM_ORACLES": "1" if opts.oracles else "0"},
              policy=policy)
    done = run_test_process(job, runner)
    return make_record(kdir, done.verdict, done.raw, build, fp, opts, runner.mode), done.raw


def validate_dataset(root: Path, opts: Options, reporter: Reporter | None = None) -> dict[str, Any]:
    """Validate every selected kernel of `root`; returns {"results": {id: validation}, "cached": n}.

    Each recorded result is reported as it lands (`reporter.item`: outcome, kernel id, reason)."""
    rep = reporter or silent()
    root = root.resolve()  # children run elsewhere (their own cwd, a private copy): never a relative path
    if opts.sandbox and (why := sandbox.unavailable()):
        raise UsageError(f"cannot build the test sandbox here ({why}); --no-sandbox runs the tests with "
                         "your own rights")
    dirs = dataset.select_kernels(root, opts.kernels or ())
    todo, cached = [], 0
    roots = opts.tests_from if opts.tests_from is not None else [Path.cwd()]
    sources: dict[Path, dict[str, Any] | None] = {}
    for kdir in dirs:
        try:
            meta = dataset.load_metadata(kdir)
            sources[kdir] = sync_tests(kdir, meta, roots) if roots else None
            done = store.finished(meta, store.fingerprint(kdir, meta, opts.salt))
        except (OSError, ValueError):
            done = False  # a broken folder gets its `error` outcome from validate_one
        if not opts.force and done:
            cached += 1
        else:
            todo.append(kdir)
    results: dict[str, dict[str, Any]] = {}
    lock = threading.Lock()
    last_index = [time.time()]
    runner: Any = None
    stopping = threading.Event()  # set when interrupted: results of killed children are not recorded
    if todo and opts.sandbox:
        _check_gpu_inside(opts, root, rep)
    needs_fork = opts.mode == "fork" and not opts.sanitize
    daemon = MpsDaemon() if opts.mps and needs_fork and todo else None
    rerun: list[Path] = []  # kernels that did not pass under MPS: run again alone
    if todo:
        if daemon is not None:
            try:
                env = daemon.__enter__()
            except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
                raise UsageError(f"--mps: cannot start a CUDA MPS daemon ({exc}); run without --mps") from None
            runner = ForkRunner(min(opts.jobs, len(todo)), opts.policy(root), {**env, **opts.cuda_env()},
                                mode="fork+mps")
        elif needs_fork:
            runner = ForkRunner(min(opts.jobs, len(todo)), opts.policy(root), opts.cuda_env())
        else:
            runner = SpawnRunner(opts.cuda_env())

    def work(kdir: Path) -> None:
        try:
            rec, _ = validate_one(kdir, opts, runner, sources.get(kdir))
        except Exception as exc:  # noqa: BLE001 - one kernel's broken folder must not stop the run
            rec = {"outcome": "error", "reason": f"validate: {type(exc).__name__}: {exc}",
                   "pass_call": False, "pass_exe": False, "pass_perf": None,
                   "validated_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        with lock:
            if stopping.is_set():
                return
            if getattr(runner, "mode", "") == "fork+mps" and rec["outcome"] != "passed":
                # A neighbour's fault may have caused it, even a skip (the server then refuses new clients,
                # which a test takes for "no GPU"): only a run alone counts.
                rerun.append(kdir)
                return
            store.record(kdir, rec)
            results[kdir.name] = rec
            rep.item(rec["outcome"], kdir.name, rec.get("reason", ""))
            if time.time() - last_index[0] > INDEX_EVERY_S:
                store.rewrite_index(root)
                last_index[0] = time.time()

    def run_all(kdirs: list[Path]) -> None:
        pool = ThreadPoolExecutor(max_workers=max(1, opts.jobs))
        try:
            for fut in [pool.submit(work, kdir) for kdir in kdirs]:
                fut.result()
        except BaseException:
            stopping.set()
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            kill_active()
            if isinstance(runner, ForkRunner):
                runner.close()

    t0 = time.time()
    try:
        try:
            run_all(todo)
        finally:
            if daemon is not None:
                daemon.__exit__(None, None, None)
        if rerun:
            runner = ForkRunner(min(opts.jobs, len(rerun)), opts.policy(root))
            run_all(sorted(rerun))
    finally:
        if dirs:
            store.rewrite_index(root)
    return {"results": results, "cached": cached, "selected": len(dirs), "wall_s": time.time() - t0}


def _check_gpu_inside(opts: Options, root: Path, rep: Reporter) -> None:
    """Refuse to run where the sandbox would hide the GPU (every GPU test would only skip).

    The memory limit is the one part the driver is known to mind: without an explicit
    --memory-limit it is dropped (with a note) when that alone makes CUDA work inside."""
    from miner.sandbox import gpu

    policy = opts.policy(root)
    assert policy is not None
    why = gpu.hidden(policy)
    if why is None:
        return
    explicit = "memory_bytes" in (opts.limits or {})
    if not explicit:
        policy.memory_bytes = 0
        if gpu.hidden(policy) is None:
            opts.limits = {**(opts.limits or {}), "memory_bytes": 0}
            rep.note(f"CUDA fails inside the sandbox under the memory limit ({why}); running without RLIMIT_DATA")
            return
    raise UsageError(f"the test sandbox hides the GPU here ({why}, while CUDA works outside it); "
                     "--no-sandbox runs the tests with your own rights")


def failing(outcome: str) -> bool:
    return outcome not in NOT_FAILED
