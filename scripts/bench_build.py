#!/usr/bin/env python3
"""Benchmark `kernel-miner build` on a dataset: a cold build (fresh cache) and a warm rebuild.

    python scripts/bench_build.py DIR [--jobs N] [--arch LIST] [--phases] [--measure-torch]

Prints units, cold wall, per-unit average, the CPU seconds of the build and its compilers (cold, per unit:
on a loaded machine the figure that compares), warm wall and warm/cold, the unit.cu line counts (median,
p90, max), beside the cost of building one unit as a torch extension the usual way (measured with
--measure-torch when torch is installed, otherwise the figure from the shared notes, labelled as such).
--phases also prints where the time of one nvcc call goes (nvcc --time), for one unit alone and for one batch.
The dataset's metadata is updated by the builds, as `kernel-miner build` would.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TORCH_NOTES_SECONDS = 128.0  # /work/shared/README.md §2: one unit with <torch/extension.h>, nvcc -c


def run_build(ds: Path, cache: Path, extra: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the build and every compiler it ran, its last line). CPU seconds hardly move with
    the machine's load, where wall seconds on a shared 2-core machine do: both are printed."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    res = subprocess.run([sys.executable, "-m", "miner", "build", str(ds), "--cache-dir", str(cache), *extra],
                         capture_output=True, text=True, env=env, check=False)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if res.returncode not in (0, 1):
        sys.exit(f"bench_build: build failed: {res.stderr.strip()[-500:]}")
    return wall, cpu, res.stdout.strip().splitlines()[-1] if res.stdout.strip() else ""


def statuses(ds: Path) -> dict[str, int]:
    """Build statuses of the instantiations nvcc builds: a kernel with no `build` block (a HIP-only
    variant, which `build` leaves to hipcc) is not counted, so per-unit figures divide by what was built."""
    counts: dict[str, int] = defaultdict(int)
    for p in ds.glob("*/metadata.json"):
        meta = json.loads(p.read_text(encoding="utf-8"))
        if "build" not in meta:
            continue
        for inst in meta.get("instantiations") or []:
            counts[(inst.get("build") or {}).get("status", "none")] += 1
        counts["kernels"] += 1
        counts["kernels_ok"] += bool((meta.get("build") or {}).get("pass_call"))
    return counts


def unit_lines(ds: Path) -> list[int]:
    """Line counts of every rendered unit.cu, sorted: what a closure inlines shows here first."""
    return sorted(len(p.read_text(encoding="utf-8", errors="replace").splitlines())
                  for p in ds.glob("*/units/*/unit.cu"))


def phases(ds: Path, nvcc: str, flags: list[str], k: int) -> None:
    """nvcc --time for one unit alone and for a batch of k: which phases are per call, which per unit."""
    sys.path.insert(0, str(ROOT))
    from miner.builder import batch_source, collect_units
    from miner.dataset import load_metadata

    groups: dict[tuple, list] = defaultdict(list)
    for p in sorted(ds.glob("*/metadata.json")):
        meta = load_metadata(p.parent)
        built, _ = collect_units(p.parent, meta)
        for u in built:
            if u.batchable and (meta["instantiations"][u.index].get("build") or {}).get("status") == "ok":
                # As the scheduler batches: one include set and one command line per batch.
                groups[(frozenset(u.includes), tuple(u.compile_flags), tuple(u.flags))].append(u)
    if not groups:
        print("phases: no built batchable unit to measure")
        return
    units = max(groups.values(), key=len)
    flags = [*flags, *units[0].flags, *units[0].compile_flags]
    with tempfile.TemporaryDirectory() as tmp:
        cases = (("1 unit", batch_source(units[:1])), (f"batch of {len(units[:k])}", batch_source(units[:k])))
        for label, src in cases:
            f = Path(tmp) / "b.cu"
            f.write_text(src, encoding="utf-8")
            csv_path = Path(tmp) / "t.csv"
            csv_path.unlink(missing_ok=True)
            t0 = time.monotonic()
            subprocess.run([nvcc, *flags, str(f), "-o", str(Path(tmp) / "b.so"), "--time", str(csv_path)],
                           capture_output=True, check=False, cwd=tmp)
            wall = time.monotonic() - t0
            per: dict[str, float] = defaultdict(float)
            with open(csv_path, newline="") as fh:
                for row in csv.reader(fh):
                    if len(row) > 6 and re.match(r"\s*[\d.]+\s*$", row[6]):
                        per[row[1].strip()] += float(row[6]) / 1000
            parts = ", ".join(f"{name} {sec:.2f}" for name, sec in sorted(per.items(), key=lambda x: -x[1]))
            print(f"phases, {label}: wall {wall:.2f} s = {parts}")


def torch_cost(ds: Path, nvcc: str) -> float | None:
    try:
        from torch.utils.cpp_extension import include_paths
    except ImportError:
        return None
    unit = next(iter(sorted(ds.glob("*/units/*/unit.cu"))), None)
    if unit is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "ext.cu"
        src.write_text("#include <torch/extension.h>\n" + unit.read_text(encoding="utf-8"), encoding="utf-8")
        cmd = [nvcc, "-c", "-std=c++17", "-arch=sm_90", *[f"-I{p}" for p in include_paths()], str(src),
               "-o", str(Path(tmp) / "ext.o")]
        t0 = time.monotonic()
        subprocess.run(cmd, capture_output=True, check=False, cwd=unit.parent)
        return time.monotonic() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dataset", metavar="DIR")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--arch", default=None, help="passed to kernel-miner build --arch")
    ap.add_argument("--batch-size", type=int, default=None)
    ap.add_argument("--phases", action="store_true", help="also print nvcc --time phases for 1 unit and a batch")
    ap.add_argument("--measure-torch", action="store_true",
                    help="measure one unit compiled with <torch/extension.h> (needs torch installed)")
    args = ap.parse_args()
    ds = Path(args.dataset)
    if not ds.is_dir():
        sys.exit(f"bench_build: {ds}: not a directory")
    extra = ["-j", str(args.jobs)]
    if args.arch:
        extra += ["--arch", args.arch]
    if args.batch_size:
        extra += ["--batch-size", str(args.batch_size)]
    cache = Path(tempfile.mkdtemp(prefix="km-bench-cache-"))
    try:
        cold, cold_cpu, cold_line = run_build(ds, cache, extra)
        warm, warm_cpu, warm_line = run_build(ds, cache, extra)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    c = statuses(ds)
    units = sum(v for k, v in c.items() if k not in ("kernels", "kernels_ok"))
    per_unit = cold / max(1, units)
    calls = re.search(r"(\d+) nvcc calls", cold_line)
    print(f"cold: {cold_line}\nwarm: {warm_line}\n")
    header = ["units", "ok", "kernels ok", "nvcc calls", "cold wall s", "per unit s", "cold cpu s", "cpu/unit s",
              "warm wall s", "cpu warm/cold", "warm/cold"]
    row = [str(units), str(c["ok"]), f"{c['kernels_ok']}/{c['kernels']}", calls.group(1) if calls else "?",
           f"{cold:.1f}", f"{per_unit:.2f}", f"{cold_cpu:.1f}", f"{cold_cpu / max(1, units):.2f}", f"{warm:.2f}",
           f"{100 * warm_cpu / max(cold_cpu, 1e-9):.1f}%", f"{100 * warm / cold:.1f}%"]
    widths = [max(len(h), len(v)) for h, v in zip(header, row, strict=True)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    print("  ".join(v.rjust(w) for v, w in zip(row, widths, strict=True)))
    nvcc = shutil.which("nvcc") or "/usr/local/cuda/bin/nvcc"
    measured = torch_cost(ds, nvcc) if args.measure_torch else None
    if measured is not None:
        label, torch_s = "measured here", measured
    else:
        label, torch_s = "shared notes figure, not measured", TORCH_NOTES_SECONDS
        if args.measure_torch:
            label += "; torch is not installed"
    sizes = unit_lines(ds)
    if sizes:
        print(f"\nunit.cu lines: {len(sizes)} units, median {statistics.median(sizes):.0f}, "
              f"p90 {sizes[min(len(sizes) - 1, int(0.9 * len(sizes)))]}, max {sizes[-1]}")
    print(f"\none unit as a torch extension ({label}): {torch_s:.0f} s  ->  "
          f"{torch_s / per_unit:.0f}x the per-unit time here")
    if args.phases:
        sys.path.insert(0, str(ROOT))
        from miner.builder import BuildOptions

        opts = BuildOptions(arch=args.arch or BuildOptions().arch)
        phases(ds, nvcc, opts.nvcc_flags(), args.batch_size or 12)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
