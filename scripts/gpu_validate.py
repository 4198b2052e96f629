#!/usr/bin/env python3
"""Validate the fault fixtures (and any extra datasets) on a GPU and print what happened.

    PYTHONPATH=. python3 scripts/gpu_validate.py [--out DIR] [--examples DIR] [--copies 96]
        [--jobs 8] [--jobs-sweep 2,4,8] [EXTRA_DATASET...]

Phases, each on a fresh copy under a temp folder (the fixtures in the repo stay untouched):
1. faults: tests/fixtures/faults, every kernel's outcome against expected.json;
2. oracles: tests/fixtures/oracles (weak tests that only the oracles fail), against expected.json;
3. examples: `kernel-miner extract examples` (or the already extracted --examples DIR, for machines
   without the extract frontends), validated with the hand-written tests kept beside the sources;
   every kernel must pass;
4. throughput: the good saxpy kernel copied --copies times (library built once), validated with
   the fork runner at each --jobs-sweep value (oracles on), once more without oracles, then a smaller
   batch with the spawn runner; medians of every part of the per-kernel overhead;
5. sanitize: a few kernels under compute-sanitizer memcheck (skipped if it is not installed);
6. extra datasets given on the command line: outcomes, and every half_vs_float / bf16_vs_float
   entry with its measured error (max, p50, p99 in ULPs);
7. sandbox: GPU tests that use CUDA inside the sandbox and then try to escape (network, another
   kernel's folder, $HOME, /proc of the parent) are classified, a CUDA test passes, no other
   kernel's data changes; and the sandbox's cost: confine() and the private copy timed alone, and
   the fork throughput with and without the sandbox at --jobs.
Every phase runs sandboxed (validate's default) unless it says otherwise.
Writes summary.json and table.txt into --out (default $OUT or ./gpu_validate_out).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from miner import sandbox  # noqa: E402
from miner.validate.pipeline import Options as _Options  # noqa: E402
from miner.validate.pipeline import validate_dataset  # noqa: E402


# Every phase runs sandboxed where the machine can build the sandbox; where it cannot (gVisor,
# no user namespaces) the phases still run, without it, and the sandbox phase says why.
def _sandbox_state() -> tuple[bool, str]:
    from miner.sandbox import gpu

    why = sandbox.unavailable()
    if why is None:
        why = gpu.hidden(sandbox.Policy(memory_bytes=0))  # validate drops the memory limit itself if needed
        why = f"it hides the GPU: {why}" if why else None
    return why is None, why or "on"


SANDBOX_OK, SANDBOX_STATE = _sandbox_state()


def Options(**kw: Any) -> _Options:  # noqa: N802 - stands for the pipeline's Options
    kw.setdefault("sandbox", SANDBOX_OK)
    return _Options(**kw)

FAULTS = REPO / "tests" / "fixtures" / "faults"
ORACLES = REPO / "tests" / "fixtures" / "oracles"
SANITIZE_EXPECTED = {"saxpy-good": "passed", "oob-write": "cuda_error", "oob-small": "cuda_error"}


def copy_dataset(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("validation", "*.so", "__pycache__",
                                                            "kernel_wrapper.py", "index.jsonl"))
    return dst


def med(values: list[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return round(statistics.median(vals), 4) if vals else None


def run_phase(root: Path, opts: Options) -> tuple[dict[str, Any], float]:
    t0 = time.time()
    summary = validate_dataset(root, opts)
    return summary["results"], time.time() - t0


def fmt(v: Any, width: int) -> str:
    if isinstance(v, float):
        v = f"{v:.3f}"
    return str("-" if v is None else v)[:width].ljust(width)


def outcome_table(results: dict[str, Any], expected: dict[str, str]) -> tuple[list[str], int]:
    cols = [("kernel", 14), ("expected", 12), ("got", 12), ("ok", 3), ("wall_s", 7), ("start_s", 7),
            ("collect", 7), ("cuda_s", 7), ("load_s", 7), ("launch_s", 8), ("exit_s", 7), ("overhead", 8),
            ("reason", 64)]
    lines = [" ".join(fmt(c, w) for c, w in cols)]
    bad = 0
    for kid in sorted(set(results) | set(expected)):
        r = results.get(kid) or {}
        t = r.get("timing") or {}
        exp = expected.get(kid)
        ok = exp is None or r.get("outcome") == exp
        bad += not ok
        row = [kid, exp, r.get("outcome"), "yes" if ok else "NO", t.get("wall_s"), t.get("process_start_s"),
               t.get("collect_s"), t.get("cuda_init_s"), t.get("load_s"), t.get("first_launch_s"),
               t.get("exit_s"), t.get("overhead_s"),
               (r.get("signal") + ": " if r.get("signal") else "") + str(r.get("reason", ""))]
        lines.append(" ".join(fmt(v, w) for v, (_, w) in zip(row, cols, strict=True)))
    return lines, bad


def pct(values: list[float | None], q: float) -> float | None:
    vals = sorted(v for v in values if v is not None)
    return round(vals[min(len(vals) - 1, int(q * len(vals)))], 4) if vals else None


def throughput(results: dict[str, Any], wall: float, label: str) -> dict[str, Any]:
    timings = [r.get("timing") or {} for r in results.values()]
    n = len(results)
    parts = ("process_start_s", "pytest_start_s", "collect_s", "exit_s")
    other = [t["overhead_s"] - sum(t.get(k) or 0.0 for k in parts) for t in timings if t.get("overhead_s") is not None]
    return {
        "label": label, "kernels": n, "wall_s": round(wall, 2),
        "kernel_tests_per_min": round(60 * n / wall, 1) if wall else None,
        "passed": sum(r["outcome"] == "passed" for r in results.values()),
        "median_process_start_s": med([t.get("process_start_s") for t in timings]),
        "median_pytest_start_s": med([t.get("pytest_start_s") for t in timings]),
        "median_collect_s": med([t.get("collect_s") for t in timings]),
        "median_cuda_init_s": med([t.get("cuda_init_s") for t in timings]),
        "median_load_s": med([t.get("load_s") for t in timings]),
        "median_first_launch_s": med([t.get("first_launch_s") for t in timings]),
        "median_tests_s": med([t.get("tests_s") for t in timings]),
        "median_exit_s": med([t.get("exit_s") for t in timings]),
        "median_other_s": med(other),
        "median_overhead_s": med([t.get("overhead_s") for t in timings]),
        "p90_overhead_s": pct([t.get("overhead_s") for t in timings], 0.9),
        "prewarmed_share": round(sum(bool(t.get("cuda_prewarmed")) for t in timings) / n, 2) if n else None,
        "median_wall_s": med([t.get("wall_s") for t in timings]),
        "speedup_vs_torch_median": med([r.get("speedup") for r in results.values()]),
    }


def say_reduced(results: dict[str, Any], say: Any) -> None:
    """Every reduced-precision oracle entry: verdict and the measured error."""
    for kid, r in sorted(results.items()):
        for e in r.get("oracles") or []:
            if e.get("oracle") in ("half_vs_float", "bf16_vs_float") and e.get("ok") is not None:
                err = e.get("error") or {}
                say(f"   {kid[:34]:34} {e['oracle']:14} {e.get('inst')}/{e.get('vs')} ok={e.get('ok')} "
                    f"beyond={e.get('beyond_model')}/{e.get('compared')} nonfinite={e.get('nonfinite')} "
                    f"max_abs={err.get('max_abs')} max_ulp={err.get('max_ulp')} p50_ulp={err.get('p50_ulp')} "
                    f"p99_ulp={err.get('p99_ulp')}")


# Tests that bring CUDA up inside the sandbox, then try to get out. {port}, {home}, {victim} filled in.
SANDBOX_GPU_TESTS = {
    "gpu-ok": """
import os, torch
def test_cuda_works_inside():
    x = torch.randn(1 << 20, device="cuda")
    assert float((x * 2).sum() - 2 * x.sum()) < 1e-2
    assert "OPENAI_API_KEY" not in os.environ and os.environ["HOME"].endswith("/home")
""",
    "gpu-net": """
import socket, torch
def test_network_after_cuda():
    torch.zeros(1, device="cuda")
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
""",
    "gpu-other": """
import torch
def test_other_kernel_after_cuda():
    torch.zeros(1, device="cuda")
    open("{victim}/metadata.json", "w").write("{{}}")
""",
    "gpu-home": """
import torch
def test_home_after_cuda():
    torch.zeros(1, device="cuda")
    open("{home}", "w").write("x")
""",
    "gpu-memory": """
import torch
def test_host_memory_after_cuda():
    torch.zeros(1, device="cuda")
    hog = []
    for _ in range(192):  # 48 GiB at most: bounded even where validate had to drop the memory limit
        hog.append(bytearray(256 << 20))
""",
}
SANDBOX_GPU_EXPECTED = {"gpu-ok": "passed", "gpu-net": "sandbox_violation", "gpu-other": "sandbox_violation",
                        "gpu-home": "sandbox_violation", "gpu-memory": "sandbox_violation", "victim": "skipped"}


def _hash(root: Path) -> dict[str, str]:
    import hashlib

    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root)
        if p.is_file() and "validation" not in rel.parts and rel.name != "index.jsonl" and ".lock" not in rel.name:
            data = p.read_bytes()
            if rel.name == "metadata.json":
                meta = json.loads(data)
                meta.pop("validation", None)
                data = json.dumps(meta, sort_keys=True).encode()
            out[str(rel)] = hashlib.sha256(data).hexdigest()
    return out


def sandbox_phase(root: Path, args: argparse.Namespace, say: Any) -> dict[str, Any]:
    import socket
    import subprocess

    from miner import sandbox
    from miner.sandbox import workspace

    say()
    if not SANDBOX_OK:
        say(f"== sandbox: NOT USABLE here: {SANDBOX_STATE}")
        return {"available": False, "reason": SANDBOX_STATE, "wrong": 1}
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.settimeout(0.1)
    home = Path.home() / f"km-gpu-sandbox-{os.getpid()}"
    victim = root / "victim"
    for kid, text in SANDBOX_GPU_TESTS.items():
        (root / kid / "tests").mkdir(parents=True)
        (root / kid / "metadata.json").write_text(json.dumps({"schema_version": 1, "id": kid, "name": kid,
                                                              "instantiations": []}))
        (root / kid / "tests" / "test_case.py").write_text(
            text.format(port=listener.getsockname()[1], home=home, victim=victim))
    (victim / "tests").mkdir(parents=True)
    (victim / "metadata.json").write_text(json.dumps({"schema_version": 1, "id": "victim", "name": "victim",
                                                      "instantiations": []}))
    before = _hash(root)
    env_before = os.environ.get("OPENAI_API_KEY")
    os.environ["OPENAI_API_KEY"] = "sk-planted-by-gpu-validate"
    try:
        opts = Options(jobs=args.jobs, timeout=120)
        res, wall = run_phase(root, opts)
    finally:
        if env_before is None:
            os.environ.pop("OPENAI_API_KEY", None)
        else:
            os.environ["OPENAI_API_KEY"] = env_before
    try:
        listener.accept()
        reached = True
    except OSError:
        reached = False
    unchanged = _hash(root) == before
    leaked = any("sk-planted-by-gpu-validate" in p.read_text(errors="replace")
                 for p in root.rglob("*") if p.is_file() and "tests" not in p.parts)
    lines, bad = outcome_table(res, SANDBOX_GPU_EXPECTED)
    bad += reached + (not unchanged) + leaked + home.exists()
    say(f"== sandbox on the GPU: {len(res)} kernels in {wall:.1f} s, {bad} wrong; listener reached: {reached}, "
        f"dataset unchanged: {unchanged}, secret leaked: {leaked}, $HOME written: {home.exists()}")
    for ln in lines:
        say(ln)
    # Cost: confine() in a fresh fork of this process (torch imported, as the zygote's spares are),
    # and the private copy of one kernel folder, each timed alone.
    import torch  # noqa: F401 - make the fork as heavy as the zygote's

    confine_s, copy_s = [], []
    src = root.parent / "faults" / "saxpy-good"
    for _ in range(10):
        work = workspace.make(root.parent / "cost")
        r, w = os.pipe()
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                sandbox.confine(work, sandbox.Policy())
                os.write(w, f"{time.perf_counter() - t0}\n".encode())
            finally:
                os._exit(0)
        os.close(w)
        data = os.read(r, 64)
        os.close(r)
        os.waitpid(pid, 0)
        confine_s.append(float(data or 0))
        t1 = time.perf_counter()
        if src.is_dir():
            workspace.copy_in(src, work)
        copy_s.append(time.perf_counter() - t1)
        workspace.remove(work)
    code = (f"import time, sys; sys.path.insert(0, {str(REPO)!r}); from miner.sandbox import unavailable; "
            "t = time.perf_counter(); unavailable(); print(round(time.perf_counter() - t, 4))")
    probe = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    cost = {"confine_median_s": med(confine_s), "confine_max_s": round(max(confine_s), 4),
            "copy_in_median_s": med(copy_s), "probe_s": probe.stdout.strip()}
    say(f"   sandbox cost: confine() median {cost['confine_median_s']} s (max {cost['confine_max_s']}), "
        f"private copy of saxpy-good median {cost['copy_in_median_s']} s, availability probe {cost['probe_s']} s")
    return {"available": True, "wall_s": round(wall, 2), "wrong": bad, "results": res, "cost": cost,
            "listener_reached": reached, "dataset_unchanged": unchanged, "secret_leaked": leaked}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("extra", nargs="*", type=Path)
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "gpu_validate_out")))
    ap.add_argument("--examples", type=Path, help="dataset already extracted from examples/ (default: extract now)")
    ap.add_argument("--copies", type=int, default=96)
    ap.add_argument("--spawn-copies", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--jobs-sweep", default="2,4", help="fork throughput at each of these --jobs")
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--no-sanitize", action="store_true")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="km-gpu-validate-"))
    report: dict[str, Any] = {}
    text: list[str] = []

    def say(line: str = "") -> None:
        print(line, flush=True)
        text.append(line)

    say(f"== sandbox: {SANDBOX_STATE}" + ("" if SANDBOX_OK else " -> the phases below run without it"))
    # 1. fault fixtures
    faults = copy_dataset(FAULTS, work / "faults")
    expected = json.loads((FAULTS / "expected.json").read_text())
    res, wall = run_phase(faults, Options(jobs=args.jobs, timeout=args.timeout))
    lines, bad = outcome_table(res, expected)
    say(f"== fault fixtures: {len(res)} kernels in {wall:.1f} s, {len(res) - bad} as expected, {bad} wrong")
    for ln in lines:
        say(ln)
    report["faults"] = {"wall_s": round(wall, 2), "wrong": bad, "results": res}

    # 2. oracle fixtures: weak tests that pass; the oracles must fail two of them
    ora = copy_dataset(ORACLES, work / "oracles")
    expected_o = json.loads((ORACLES / "expected.json").read_text())
    res, wall = run_phase(ora, Options(jobs=args.jobs, timeout=args.timeout))
    lines, bad_o = outcome_table(res, expected_o)
    say()
    say(f"== oracle fixtures: {len(res)} kernels in {wall:.1f} s, {len(res) - bad_o} as expected, {bad_o} wrong")
    for ln in lines:
        say(ln)
    for kid, r in sorted(res.items()):
        summ = r.get("oracle_summary") or {}
        say(f"   {kid:14} " + "  ".join(f"{k}={v.get('status')}" for k, v in summ.items() if isinstance(v, dict)))
    say_reduced(res, say)
    report["oracles"] = {"wall_s": round(wall, 2), "wrong": bad_o, "results": res}

    # 3. our example kernels with their hand-written tests (kept beside the sources)
    ex_root = work / "examples"
    if args.examples:
        shutil.copytree(args.examples, ex_root)
    else:
        import subprocess

        subprocess.run([sys.executable, "-m", "miner", "extract", str(REPO / "examples"), "-o", str(ex_root), "-q"],
                       cwd=REPO, check=True)
    res, wall = run_phase(ex_root, Options(jobs=args.jobs, timeout=300, tests_from=[REPO]))
    expected_e = {kid: "passed" for kid in res}
    lines, bad_e = outcome_table(res, expected_e)
    say()
    say(f"== example kernels (examples/*/tests/<kernel>/): {len(res)} kernels in {wall:.1f} s, {bad_e} not passed")
    for ln in lines:
        say(ln)
    for kid, r in sorted(res.items()):
        summ = r.get("oracle_summary") or {}
        say(f"   {kid[:30]:30} tests={r.get('tests')} speedup={r.get('speedup') and round(r['speedup'], 2)} "
            + "  ".join(f"{k}={v.get('status')}" for k, v in summ.items() if isinstance(v, dict)))
    report["examples"] = {"wall_s": round(wall, 2), "not_passed": bad_e, "results": res}

    # 3b. the README's harness example, saved as a test of the mined saxpy kernel, must pass as written
    readme = REPO / "README.md"
    block = readme.read_text().split("## Harness API", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    rd_root = work / "readme"
    saxpy = next(d for d in ex_root.iterdir() if d.name.startswith("saxpy_kernel-"))
    shutil.copytree(saxpy, rd_root / saxpy.name, ignore=shutil.ignore_patterns("validation", "tests"))
    (rd_root / saxpy.name / "tests").mkdir()
    (rd_root / saxpy.name / "tests" / "test_mine.py").write_text(block)
    res, wall = run_phase(rd_root, Options(jobs=1, timeout=120, tests_from=[]))
    r = res[saxpy.name]
    say()
    say(f"== README harness example as a test of {saxpy.name}: {r['outcome']} ({r.get('reason')}), "
        f"speedup {r.get('speedup') and round(r['speedup'], 2)}")
    report["readme"] = {"outcome": r["outcome"], "result": r}

    # 4. throughput: one good kernel, many copies (the library is built once and copied along)
    tp = work / "throughput"
    tp.mkdir()
    src = faults / "saxpy-good"
    for i in range(args.copies):
        shutil.copytree(src, tp / f"saxpy-{i:04d}", ignore=shutil.ignore_patterns("validation"))
    for i in range(args.copies):
        meta_p = tp / f"saxpy-{i:04d}" / "metadata.json"
        meta = json.loads(meta_p.read_text())
        meta.pop("validation", None)
        meta["id"] = meta_p.parent.name
        meta_p.write_text(json.dumps(meta))
    rows = []
    sweep = [int(j) for j in args.jobs_sweep.split(",") if j.strip()] or [args.jobs]
    for j in sweep:
        res, wall = run_phase(tp, Options(jobs=j, timeout=120, force=True))
        rows.append(throughput(res, wall, f"fork, jobs={j}"))
    res, wall = run_phase(tp, Options(jobs=args.jobs, timeout=120, force=True, oracles=False))
    rows.append(throughput(res, wall, f"fork, jobs={args.jobs}, no oracles"))
    res, wall = run_phase(tp, Options(jobs=args.jobs, timeout=120, force=True, sandbox=False))
    rows.append(throughput(res, wall, f"fork, jobs={args.jobs}, no sandbox"))
    spawn_root = work / "throughput-spawn"
    spawn_root.mkdir()
    for i in range(args.spawn_copies):
        shutil.move(str(tp / f"saxpy-{i:04d}"), spawn_root / f"saxpy-{i:04d}")
    res, wall = run_phase(spawn_root, Options(jobs=args.jobs, timeout=120, mode="spawn", force=True))
    rows.append(throughput(res, wall, f"spawn, jobs={args.jobs}"))
    res, wall = run_phase(spawn_root, Options(jobs=args.jobs, timeout=120, mode="spawn", force=True, sandbox=False))
    rows.append(throughput(res, wall, f"spawn, jobs={args.jobs}, no sandbox"))
    say()
    say("== throughput (saxpy-good: 6 tests incl. a 20-rep benchmark vs torch, per kernel)")
    keys = [k for k in rows[0] if k != "label"]
    say(f"{'':28}" + "".join(f"{r['label']:>26}" for r in rows))
    for k in keys:
        say(f"{k:28}" + "".join(f"{str(r[k]):>26}" for r in rows))
    report["throughput"] = rows

    # 5. sanitizer
    if not args.no_sanitize and shutil.which("compute-sanitizer"):
        san = work / "sanitize"
        san.mkdir()
        for kid in SANITIZE_EXPECTED:
            if (FAULTS / kid).is_dir():
                copy_dataset(FAULTS / kid, san / kid)
        res, wall = run_phase(san, Options(jobs=args.jobs, timeout=300, sanitize=True))
        lines, bad = outcome_table(res, {k: v for k, v in SANITIZE_EXPECTED.items() if k in res})
        say()
        say(f"== --sanitize (compute-sanitizer memcheck): {len(res)} kernels in {wall:.1f} s, {bad} wrong")
        for ln in lines:
            say(ln)
        report["sanitize"] = {"wall_s": round(wall, 2), "wrong": bad, "results": res}
    else:
        say("\n== --sanitize skipped (compute-sanitizer not found or --no-sanitize)")

    # 6. extra datasets
    for extra in args.extra:
        root = copy_dataset(extra, work / f"extra-{extra.name}")
        res, wall = run_phase(root, Options(jobs=args.jobs, timeout=120))
        lines, _ = outcome_table(res, {})
        say()
        say(f"== {extra}: {len(res)} kernels in {wall:.1f} s")
        for ln in lines:
            say(ln)
        say_reduced(res, say)
        report[f"extra:{extra}"] = {"wall_s": round(wall, 2), "results": res}

    # 7. the sandbox on a GPU: escapes after CUDA is up, and what it costs
    report["sandbox"] = sandbox_phase(work / "sandbox", args, say)

    # Triage folders of every failure, as one archive (what a person would open first).
    from miner.validate.triage import triage

    debug = work / "debug"
    for name in ("faults", "oracles", "examples", "sanitize"):
        if (work / name).is_dir():
            triage(work / name, debug / name)
    if debug.is_dir():
        shutil.make_archive(str(args.out / "triage"), "gztar", debug)
    (args.out / "summary.json").write_text(json.dumps(report, indent=1, default=str))
    (args.out / "table.txt").write_text("\n".join(text) + "\n")
    shutil.rmtree(work, ignore_errors=True)
    wrong = report["faults"]["wrong"] + report["oracles"]["wrong"] + report["examples"]["not_passed"] \
        + (report["readme"]["outcome"] != "passed") + report["sandbox"]["wrong"] \
        + (report.get("sanitize") or {}).get("wrong", 0)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
