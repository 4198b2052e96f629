#!/usr/bin/env python3
"""Kill `kernel-miner mine` with SIGKILL at random points, resume, and compare with an uninterrupted run.

    nice -n 10 python scripts/stress_mine.py /work/corpora/llm.c tests/fixtures/repos/* --rounds 3 --jobs 2

Each round starts a fresh dataset and kills runs of the same command until one finishes by itself,
then checks the dataset file by file against the reference: kernels lost, duplicated, differing.
Prints one row per round and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def snapshot(ds: Path) -> dict[str, bytes]:
    out = {}
    for p in sorted(ds.rglob("*")):
        rel = p.relative_to(ds).as_posix()
        if p.is_file() and not rel.startswith((".", "ledger.sqlite")) and "/." not in rel:
            out[rel] = p.read_bytes()
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repos", nargs="+", help="repository folders")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-kills", type=int, default=12, help="kills per round at most")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--no-units", action="store_true")
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--keep", metavar="DIR", help="work here instead of a temporary folder")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    work = Path(args.keep or tempfile.mkdtemp(prefix="km-stress-"))
    work.mkdir(parents=True, exist_ok=True)
    lst = work / "repos.txt"
    lst.write_text("".join(os.path.abspath(r) + "\n" for r in args.repos), encoding="utf-8")
    extra = ["-j", str(args.jobs), "-q"] + (["--no-units"] if args.no_units else [])
    env = dict(os.environ, PYTHONPATH=str(ROOT))

    def cmd(ds: Path) -> list[str]:
        return [sys.executable, "-m", "miner", "mine", str(lst), "-o", str(ds), *extra]

    t0 = time.monotonic()
    ref = work / "ref"
    subprocess.run(cmd(ref), env=env, cwd=ROOT)
    full = time.monotonic() - t0
    expected = snapshot(ref)
    n_ref = len((ref / "index.jsonl").read_text().splitlines())
    print(f"seed {seed}; reference: {n_ref} kernels, {len(expected)} files, {full:.1f} s")
    print(f"{'round':>5} {'kills':>5} {'runs':>4} {'kernels':>7} {'lost':>4} {'dup':>3} {'differ':>6} {'extra':>5} "
          f"{'attempts':>8} {'s':>6}")
    bad = 0
    for rnd in range(args.rounds):
        ds = work / f"ds{rnd}"
        kills = runs = 0
        r0 = time.monotonic()
        while kills < args.max_kills:
            proc = subprocess.Popen(cmd(ds), env=env, cwd=ROOT)
            runs += 1
            time.sleep(rng.uniform(0.02, 1.0) * full)
            if proc.poll() is not None:
                break
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
        subprocess.run(cmd(ds), env=env, cwd=ROOT)
        runs += 1
        got = snapshot(ds)
        ids = [json.loads(x)["id"] for x in (ds / "index.jsonl").read_text().splitlines()]
        lost = len(set(expected) - set(got))
        extra_files = len(set(got) - set(expected))
        differ = sum(1 for k in expected if k in got and got[k] != expected[k])
        dup = len(ids) - len(set(ids))
        db = sqlite3.connect(ds / "ledger.sqlite")
        attempts = db.execute("SELECT COALESCE(SUM(attempts), 0) FROM stages").fetchone()[0]
        db.close()
        bad += bool(lost or differ or dup or extra_files)
        print(f"{rnd:>5} {kills:>5} {runs:>4} {len(ids):>7} {lost:>4} {dup:>3} {differ:>6} {extra_files:>5} "
              f"{attempts:>8} {time.monotonic() - r0:>6.1f}")
    print("OK: every round matches the reference" if not bad else f"FAILED: {bad} rounds differ ({work})")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
