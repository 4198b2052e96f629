"""Where a kernel's validation time goes on a GPU machine, and kernels/min under variants.

Usage (on the GPU machine, from the repository root):
    PYTHONPATH=. python3 scripts/throughput_probe.py --copies 48 --jobs 1,2,4 --out $OUT

The saxpy-good fault fixture (6 tests, one a 20-repetition benchmark against torch) is copied
--copies times and validated with the fork runner at each --jobs value, once per variant
(environment settings passed to the test workers). It prints kernels/min and, per variant, the
median time of each test, the spare's CUDA context and operator warm-up, and the per-kernel
overhead, then writes probe.json under --out. Needs a CUDA GPU: without one it says so and exits 3.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from miner.validate.pipeline import Options, validate_dataset  # noqa: E402

FAULTS = REPO / "tests" / "fixtures" / "faults"
VARIANTS: dict[str, dict[str, str]] = {
    "default": {},
    "no op warm-up": {"KM_PREWARM_OPS": "0"},
    "all-dtype warm-up": {"KM_PREWARM_OPS": "all"},
    "no prewarm": {"KM_PREWARM_CUDA": "0"},
    "2 spares": {"KM_SPARES": "2"},
    "2 spares no op warm-up": {"KM_SPARES": "2", "KM_PREWARM_OPS": "0"},
    "no sandbox": {"_sandbox": "0"},
    "validate --mps": {"_mps": "1"},
    "8 connections": {"CUDA_DEVICE_MAX_CONNECTIONS": "8"},  # the driver's default; validate's is 1
    "8 connections, --mps": {"CUDA_DEVICE_MAX_CONNECTIONS": "8", "_mps": "1"},
}


def _med(values: list[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


def _dataset(root: Path, copies: int) -> None:
    src = FAULTS / "saxpy-good"
    for i in range(copies):
        dst = root / f"saxpy-{i:04d}"
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("validation"))
        meta_p = dst / "metadata.json"
        meta = json.loads(meta_p.read_text())
        meta.pop("validation", None)
        meta["id"] = dst.name
        meta_p.write_text(json.dumps(meta))


def _per_test(root: Path) -> dict[str, float | None]:
    """Median duration of each test over all copies, from the children's result files."""
    durations: dict[str, list[float]] = {}
    for res in root.glob("*/validation/result.json"):
        data = json.loads(res.read_text())
        for nodeid, t in (data.get("tests") or {}).items():
            durations.setdefault(nodeid.split("::", 1)[-1], []).append(float(t.get("duration") or 0.0))
    return {k: _med(v) for k, v in sorted(durations.items())}


def _row(results: dict[str, Any], wall: float) -> dict[str, Any]:
    timings = [r.get("timing") or {} for r in results.values()]

    def col(key: str) -> float | None:
        return _med([t[key] for t in timings if t.get(key) is not None])

    n = len(results)
    return {"kernels": n, "wall_s": round(wall, 2), "per_min": round(60 * n / wall, 1) if wall else None,
            "passed": sum(r.get("outcome") == "passed" for r in results.values()),
            "tests_s": col("tests_s"), "overhead_s": col("overhead_s"), "cuda_init_s": col("cuda_init_s"),
            "ops_warm_s": col("ops_warm_s"), "collect_s": col("collect_s"), "wall_med_s": col("wall_s")}


def _cpu(before: tuple[Any, Any], after: tuple[Any, Any], summary: dict[str, Any]) -> dict[str, Any]:
    """CPU seconds per kernel: validate's own process (one Python thread of control, so a serial
    bound on kernels/min), and its children (zygotes and test processes, reaped by the end)."""
    n = max(1, len(summary["results"]))

    def cpu(a: Any, b: Any) -> float:
        return round((b.ru_utime - a.ru_utime + b.ru_stime - a.ru_stime) / n, 3)

    return {"parent_cpu_s": cpu(before[0], after[0]), "children_cpu_s": cpu(before[1], after[1])}


def _fault_check(work: Path, copies: int, jobs: int, out: Path, mps: bool = False) -> None:
    """Faulting kernels beside good ones: a fault must stay with its own kernel (MPS shares a server)."""
    root = work / "faults"
    shutil.copytree(FAULTS, root, ignore=shutil.ignore_patterns("validation", "__pycache__", "index.jsonl"))
    expected = json.loads((FAULTS / "expected.json").read_text())
    (root / "expected.json").unlink()
    good = root / "good"
    good.mkdir()
    _dataset(good, copies)
    for d in good.iterdir():
        d.rename(root / d.name)
    good.rmdir()
    t0 = time.time()
    summary = validate_dataset(root, Options(jobs=jobs, timeout=20, force=True, mps=mps))
    wall = time.time() - t0
    res = summary["results"]
    wrong = [(k, expected[k], res.get(k, {}).get("outcome")) for k in expected
             if res.get(k, {}).get("outcome") != expected[k]]
    good_ok = sum(res[k].get("outcome") == "passed" for k in res if k.startswith("saxpy-0"))
    how = "validate --mps" if mps else "MPS on" if os.environ.get("CUDA_MPS_PIPE_DIRECTORY") else "MPS off"
    line = (f"fault check (jobs {jobs}, {how}): "
            f"{len(expected) - len(wrong)}/{len(expected)} fault fixtures as expected, good copies passed "
            f"{good_ok}/{copies}, {wall:.1f} s; wrong: {wrong}")
    print(line, flush=True)
    with (out / "probe.jsonl").open("a") as f:
        f.write(json.dumps({"fault_check": line, "results": {k: v.get("outcome") for k, v in res.items()}}) + "\n")


def _start_mps(work: Path) -> None:
    """A private MPS control daemon; its clients find it through CUDA_MPS_PIPE_DIRECTORY."""
    pipe, log = work / "mps-pipe", work / "mps-log"
    pipe.mkdir()
    log.mkdir()
    os.environ["CUDA_MPS_PIPE_DIRECTORY"] = str(pipe)
    os.environ["CUDA_MPS_LOG_DIRECTORY"] = str(log)
    subprocess.run(["nvidia-cuda-mps-control", "-d"], check=True)
    time.sleep(1.0)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--copies", type=int, default=48)
    ap.add_argument("--jobs", default="1,2,4")
    ap.add_argument("--variants", default=";".join(VARIANTS), help="semicolon list of: " + "; ".join(VARIANTS))
    ap.add_argument("--mps", action="store_true",
                    help="run every variant under a private CUDA MPS daemon (nvidia-cuda-mps-control)")
    ap.add_argument("--profile", action="store_true", help="cProfile validate's own process, per run (profile-N.txt)")
    ap.add_argument("--faults-mps", action="store_true", help="the fault check through validate's own --mps")
    ap.add_argument("--faults", action="store_true",
                    help="first validate the fault fixtures mixed with --copies good kernels at the largest --jobs "
                         "and print each outcome against tests/fixtures/faults/expected.json")
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "throughput_probe_out")))
    args = ap.parse_args()
    try:
        import torch

        if not torch.cuda.is_available():
            raise RuntimeError("torch sees no CUDA GPU")
    except Exception as exc:  # noqa: BLE001 - any reason there is no GPU ends the probe the same way
        print(f"throughput_probe: no GPU here ({exc})", file=sys.stderr)
        return 3
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="km-tput-"))
    root = work / "ds"
    root.mkdir()
    _dataset(root, args.copies)
    validate_dataset(root, Options(jobs=1, timeout=120, force=True))  # builds the unit once; not timed
    if args.mps:
        _start_mps(work)
    if args.faults:
        _fault_check(work, args.copies, max(int(j) for j in args.jobs.split(",")), args.out)
    if args.faults_mps:
        _fault_check(work / "again", args.copies, max(int(j) for j in args.jobs.split(",")), args.out, mps=True)
    names = [n.strip() for n in args.variants.split(";") if n.strip()]
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        print(f"throughput_probe: unknown variant {unknown[0]!r} (known: {', '.join(VARIANTS)})", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []
    for name in names:
        env = VARIANTS[name]
        for jobs in [int(j) for j in args.jobs.split(",")]:
            sandbox = env.get("_sandbox", "1") != "0"
            mps = env.get("_mps") == "1"
            env = {k: v for k, v in env.items() if not k.startswith("_")}
            saved = {k: os.environ.get(k) for k in env}
            os.environ.update(env)
            try:
                t0 = time.time()
                ru0 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
                opts = Options(jobs=jobs, timeout=120, force=True, sandbox=sandbox, mps=mps)
                if args.profile:
                    import cProfile
                    import pstats

                    prof = cProfile.Profile()
                    summary = prof.runcall(validate_dataset, root, opts)
                    stats_out = args.out / f"profile-{len(rows)}.txt"
                    with stats_out.open("w") as fh:
                        pstats.Stats(prof, stream=fh).sort_stats("tottime").print_stats(30)
                else:
                    summary = validate_dataset(root, opts)
                wall = time.time() - t0
                ru1 = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
            finally:
                for k, v in saved.items():
                    os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
            row = {"variant": name, "jobs": jobs, **_row(summary["results"], wall), **_cpu(ru0, ru1, summary),
                   "tests": _per_test(root)}
            rows.append(row)
            print(json.dumps(row), flush=True)
            with (args.out / "probe.jsonl").open("a") as f:
                f.write(json.dumps(row) + "\n")
    keys = ["per_min", "passed", "tests_s", "overhead_s", "cuda_init_s", "ops_warm_s", "wall_med_s", "parent_cpu_s",
            "children_cpu_s"]
    print(f"\n{'variant':16}{'jobs':>5}" + "".join(f"{k:>12}" for k in keys))
    for r in rows:
        print(f"{r['variant']:16}{r['jobs']:>5}" + "".join(f"{str(r[k]):>12}" for k in keys))
    print("\nmedian test durations (s):")
    for r in rows:
        print(f"  {r['variant']}, jobs {r['jobs']}: " + ", ".join(f"{k} {v}" for k, v in r["tests"].items()))
    (args.out / "probe.json").write_text(json.dumps(rows, indent=1))
    if args.mps:
        subprocess.run(["nvidia-cuda-mps-control"], input=b"quit\n", check=False)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
