#!/usr/bin/env python3
"""Faithfulness of the units of whole repositories: extract + build (or reuse a dataset), then
`kernel-miner verify` (optionally on a deterministic sample of translation units), and a table of
identical / differs / original_unbuildable per repo, with the reason of every instantiation that
is not identical, grouped.

    nice -n 10 python3 scripts/verify_corpus.py /work/corpora/llm.c mmcv=/work/corpora/mmcv/mmcv/ops/csrc \\
        --work /tmp/verify --sample 12 --jobs 2

A repo given as NAME=PATH gets the dataset WORK/NAME; an existing dataset there is reused unless
--rebuild. --sample applies to every repo; --sample-for NAME=N overrides it for one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATUSES = ("identical", "differs", "original_unbuildable", "unit_unbuildable")


def miner(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "miner", *args], env=env, capture_output=True, text=True,
                          check=False)


def tally(ds: Path) -> tuple[int, Counter[str], Counter[str]]:
    built = 0
    counts: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    for meta_path in sorted(ds.glob("*/metadata.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        for inst in meta.get("instantiations") or []:
            if (inst.get("build") or {}).get("status") != "ok":
                continue
            built += 1
            fid = inst.get("fidelity")
            if not fid:
                continue
            counts[fid["status"]] += 1
            if fid["status"] != "identical":
                first = fid.get("error") or next((ln for ln in fid.get("first_diff") or [] if ln[:1] in "+-"), "")
                ctx = fid.get("context") or {}
                if ctx.get("status") == "identical":
                    first = (f"identical beside the original's {ctx['instantiations']} other "
                             f"instantiation(s); alone: {first}")
                reasons[f"{fid['status']}: {first[:200]}"] += 1
    return built, counts, reasons


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repos", nargs="+", metavar="[NAME=]PATH")
    ap.add_argument("--work", default="/tmp/verify-corpus", help="folder for the datasets (default: %(default)s)")
    ap.add_argument("--sample", type=int, help="translation units verified per repo (default: all)")
    ap.add_argument("--sample-for", action="append", default=[], metavar="NAME=N")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--rebuild", action="store_true", help="extract and build again even where a dataset exists")
    args = ap.parse_args()
    per_repo = {k: int(v) for k, v in (s.split("=", 1) for s in args.sample_for)}
    rows = []
    for spec in args.repos:
        name, _, path = spec.rpartition("=")
        name = name or Path(path).name
        ds = Path(args.work) / name
        if args.rebuild or not any(ds.glob("*/metadata.json")):
            r = miner("extract", path, "-o", str(ds), "--build", "-j", str(args.jobs), "-q")
            if r.returncode not in (0, 1):
                print(f"{name}: extract failed: {r.stderr.strip()[:300]}", file=sys.stderr)
                continue
        sample = per_repo.get(name, args.sample)
        vargs = ["verify", str(ds), "-j", str(args.jobs), "--source", path]
        if sample:
            vargs += ["--sample", str(sample)]
        r = miner(*vargs)
        if r.returncode not in (0, 1):
            print(f"{name}: verify failed: {r.stderr.strip()[:300]}", file=sys.stderr)
            continue
        built, counts, reasons = tally(ds)
        rows.append((name, built, counts, reasons, r.stdout.strip()))
    print(f"{'repo':<14} {'built':>6} {'verified':>8} " + " ".join(f"{s:>20}" for s in STATUSES) + "  identical")
    for name, built, counts, _, _ in rows:
        verified = sum(counts.values())
        pct = f"{100 * counts['identical'] / verified:.1f}%" if verified else "-"
        print(f"{name:<14} {built:>6} {verified:>8} " + " ".join(f"{counts[s]:>20}" for s in STATUSES) + f"  {pct}")
    for name, _, _, reasons, line in rows:
        print(f"\n{name}: {line}")
        for reason, n in reasons.most_common():
            print(f"  {n:>4} x {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
