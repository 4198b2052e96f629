#!/usr/bin/env python3
"""Benchmark: full `kernel-miner extract` of a tree vs the floor (tree-sitter parsing alone).

    python scripts/bench_extract.py /path/to/mmcv/mmcv/ops/csrc [--jobs 2] [--repeat 3] [--project DIR]
    python scripts/bench_extract.py TREE --build [--jobs 2] [--repeat 1]

Both are measured in the same run on the same files; the table shows wall time, CPU time (user + system
of the process and its parse workers: on a machine other jobs load, wall times swell several-fold, CPU
times much less), peak memory of the extract process, kernels found and the ratios to the floor (wall,
CPU). Cold runs get an empty parse cache (KM_PARSE_CACHE, miner/frontends/parse_cache.py); the rerun
row extracts the unchanged tree again with the cache the cold run filled, into a fresh output folder
and into the folder that run wrote (the usual rerun: nothing to write), and shows their share of the
cold time.

--build measures `extract --build` instead: a cold run (fresh parse and build caches: XDG_CACHE_HOME and
KM_PARSE_CACHE in an empty folder, a fresh output folder), then the unchanged tree again into the cold run's
folder (the whole-run record, extract/build_record.py) and into a fresh folder with the warm caches; each
rerun's wall and CPU time as a share of the cold run's, and the build's summary line of each.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

CUDA_SUFFIXES = (".cu", ".cuh", ".hip")


def cuda_files(root: str) -> list[str]:
    out = []
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if not x.startswith(".")]
        out += [os.path.join(d, f) for f in files if f.endswith(CUDA_SUFFIXES)]
    return sorted(out)


FLOOR = """
import sys, tree_sitter, tree_sitter_cuda
p = tree_sitter.Parser(tree_sitter.Language(tree_sitter_cuda.language()))
for f in sys.argv[1:]:
    p.parse(open(f, "rb").read())
"""


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def floor_seconds(files: list[str]) -> tuple[float, float]:
    """tree-sitter alone, measured like extract: a fresh process that reads and parses every file.
    Wall and CPU seconds."""
    c, t = _children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-c", FLOOR, *files], check=True)
    return time.perf_counter() - t, _children_cpu() - c


def extract_run(root: str, jobs: int, extra: tuple[str, ...] = (), cache: str | None = None,
                out_dir: str | None = None, xdg: str | None = None) -> tuple[float, float, str, float]:
    """Wall seconds, peak RSS (MB) of the child, its summary line and CPU seconds (its workers' too);
    a fresh parse cache and a fresh output folder unless given (`xdg`: XDG_CACHE_HOME, the build cache's)."""
    with tempfile.TemporaryDirectory() as scratch, tempfile.TemporaryDirectory() as fresh:
        out = out_dir or scratch
        env = dict(os.environ, KM_PARSE_CACHE=cache or fresh)
        if xdg:
            env["XDG_CACHE_HOME"] = xdg
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        cpu = _children_cpu()
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "miner", "extract", root, "-o", out, "-j", str(jobs), *extra],
                              capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t
        cpu = _children_cpu() - cpu
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        if proc.returncode not in (0, 1):
            sys.exit(f"extract failed: {proc.stderr.strip()}")
        return wall, max(peak, before) / 1024.0, proc.stdout.strip().splitlines()[-1], cpu


def build_rows(root: str, jobs: int, repeat: int, project: tuple[str, ...]) -> None:
    """`extract --build`: cold (fresh caches and folder) vs the rerun into its folder and into a fresh one."""
    extra = ("--build", *project)
    cold, same, fresh = [], [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as xdg, tempfile.TemporaryDirectory() as out:
            cache = os.path.join(xdg, "parse")
            cold.append(extract_run(root, jobs, extra, cache=cache, out_dir=out, xdg=xdg))
            same.append(extract_run(root, jobs, extra, cache=cache, out_dir=out, xdg=xdg))
            fresh.append(extract_run(root, jobs, extra, cache=cache, xdg=xdg))
    print(f"tree: {root}  (extract --build, jobs={jobs}, median of {repeat})")
    print(f"{'measure':<44}{'wall s':>9}{'cpu s':>9}{'wall % cold':>13}{'cpu % cold':>12}")
    cw = statistics.median(r[0] for r in cold)
    cc = statistics.median(r[3] for r in cold)
    for label, rs in (("cold (fresh caches, fresh folder)", cold), ("rerun into the same folder", same),
                      ("rerun into a fresh folder, warm caches", fresh)):
        w, c = statistics.median(r[0] for r in rs), statistics.median(r[3] for r in rs)
        print(f"{label:<44}{w:>9.2f}{c:>9.2f}{100 * w / cw:>12.1f}%{100 * c / cc:>11.1f}%")
    for label, rs in (("cold", cold), ("same folder", same), ("fresh folder", fresh)):
        print(f"build said ({label}): {rs[-1][2]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--project", help="passed to extract (a subfolder of a checkout that is not a git clone: "
                                      "its headers outside ROOT)")
    ap.add_argument("--build", action="store_true",
                    help="measure extract --build: cold vs rerun into the same folder and into a fresh one")
    args = ap.parse_args()
    project = ("--project", args.project) if args.project else ()
    if args.build:
        build_rows(args.root, args.jobs, args.repeat, project)
        return 0
    files = cuda_files(args.root)
    floors = [floor_seconds(files) for _ in range(args.repeat)]
    runs = [extract_run(args.root, args.jobs, ("--no-units", *project)) for _ in range(args.repeat)]
    full = [extract_run(args.root, args.jobs, project) for _ in range(args.repeat)]
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as out:
        extract_run(args.root, args.jobs, project, cache=cache, out_dir=out)  # fills the cache and `out`
        rerun = [extract_run(args.root, args.jobs, project, cache=cache) for _ in range(args.repeat)]
        same = [extract_run(args.root, args.jobs, project, cache=cache, out_dir=out) for _ in range(args.repeat)]
    floor = statistics.median(f[0] for f in floors)
    floor_cpu = statistics.median(f[1] for f in floors)
    print(f"tree: {args.root}  ({len(files)} CUDA files, jobs={args.jobs}, median of {args.repeat})")
    print(f"{'measure':<38}{'wall s':>9}{'cpu s':>9}{'peak MB':>10}{'x floor':>9}{'cpu x':>8}")
    print(f"{'tree-sitter parse only (floor)':<38}{floor:>9.2f}{floor_cpu:>9.2f}{'':>10}{1.0:>9.1f}{1.0:>8.1f}")

    def row(label: str, rs: list[tuple[float, float, str, float]], cold: float | None = None) -> float:
        wall = statistics.median(r[0] for r in rs)
        cpu = statistics.median(r[3] for r in rs)
        tail = f"   {100 * wall / cold:.1f} % of cold" if cold else ""
        print(f"{label:<38}{wall:>9.2f}{cpu:>9.2f}{max(r[1] for r in rs):>10.0f}{wall / floor:>9.1f}"
              f"{cpu / floor_cpu:>8.1f}{tail}")
        return wall

    row("extract --no-units (libclang+ts)", runs)
    fwall = row("extract with units (closure+render)", full)
    row("rerun, unchanged tree (parse cache)", rerun, fwall)
    row("rerun into the same output folder", same, fwall)
    print(f"extract said: {runs[-1][2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
