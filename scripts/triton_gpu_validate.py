#!/usr/bin/env python3
"""Validate Triton units against their projects' own PyTorch references on a GPU, and print a table.

    PYTHONPATH=. python3 scripts/triton_gpu_validate.py NAME=DATASET [NAME=DATASET ...] [--jobs 4] [--out DIR]
    PYTHONPATH=. python3 scripts/triton_gpu_validate.py --prepare DST NAME=DATASET ...   # here, without a GPU

--prepare copies the kernel folders that carry a reference test (metadata triton.reference, written by
extract when a project keeps `<base>_ref`/`naive_<base>`/... beside the launcher) into DST/NAME/, so only
those travel to the GPU machine. Without --prepare every dataset is copied to a temp folder, validated
there with `kernel-miner validate`'s pipeline (each test file in its own process group, the unit loaded
through importlib in that child), and the outcome counts per dataset are printed and written to
DIR/triton_gpu.json and DIR/triton_gpu.txt (DIR: --out, else $OUT, else ./triton_gpu_out).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from miner.validate.pipeline import Options, validate_dataset  # noqa: E402

OUTCOMES = ["passed", "failed", "error", "timeout", "crashed", "cuda_error", "build_failed", "skipped"]


def _pairs(args: list[str]) -> list[tuple[str, Path]]:
    out = []
    for a in args:
        name, sep, path = a.partition("=")
        if not sep:
            raise SystemExit(f"kernel-miner: error: {a}: expected NAME=DATASET")
        out.append((name, Path(path)))
    return out


def prepare(dst: Path, datasets: list[tuple[str, Path]]) -> None:
    for name, src in datasets:
        n = 0
        for meta_path in sorted(src.glob("*/metadata.json")):
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            if not (meta.get("triton") or {}).get("reference"):
                continue
            target = dst / name / meta_path.parent.name
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(meta_path.parent, target, ignore=shutil.ignore_patterns("validation", "__pycache__"))
            n += 1
        print(f"{name}: {n} kernels with a reference test -> {dst / name}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="+", metavar="NAME=DATASET")
    ap.add_argument("--prepare", metavar="DST", help="copy the kernels with a reference test into DST/NAME")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=180.0)
    ap.add_argument("--out", default=os.environ.get("OUT") or "triton_gpu_out")
    args = ap.parse_args()
    datasets = _pairs(args.datasets)
    if args.prepare:
        prepare(Path(args.prepare), datasets)
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, dict] = {}
    lines = [f"{'dataset':<14} {'kernels':>7} " + " ".join(f"{o:>12}" for o in OUTCOMES) + f" {'seconds':>8}"]
    details: list[str] = []
    with tempfile.TemporaryDirectory(prefix="km-triton-gpu-") as tmp:
        for name, src in datasets:
            root = Path(tmp) / name
            shutil.copytree(src, root, ignore=shutil.ignore_patterns("validation", "__pycache__"))
            t0 = time.time()
            # No sandbox: its namespaces hid the GPU from the test children on the GPU machine
            # (every test skipped with "no CUDA GPU" in the first run).
            res = validate_dataset(root, Options(jobs=args.jobs, timeout=args.timeout, oracles=False,
                                                 sandbox=False, tests_from=[]))["results"]
            secs = time.time() - t0
            counts = collections.Counter(r["outcome"] for r in res.values())
            summary[name] = {"kernels": len(res), "counts": dict(counts), "seconds": round(secs, 1),
                             "kernels_detail": {k: {"outcome": r["outcome"], "reason": r["reason"][:300],
                                                    "pass_call": r["pass_call"], "pass_exe": r["pass_exe"]}
                                                for k, r in sorted(res.items())}}
            lines.append(f"{name:<14} {len(res):>7} " + " ".join(f"{counts.get(o, 0):>12}" for o in OUTCOMES)
                         + f" {secs:>8.1f}")
            for k, r in sorted(res.items()):
                details.append(f"{name}/{k}: {r['outcome']}: {r['reason'][:200]}")
    text = "\n".join(lines + [""] + details) + "\n"
    print(text)
    (out / "triton_gpu.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    (out / "triton_gpu.txt").write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
