#!/usr/bin/env python3
"""Faithfulness of the units of whole repositories: extract + build (or reuse a dataset), then
`kernel-miner verify` (optionally on a deterministic sample of translation units), and a table of
identical / differs / original_unbuildable per repo, with the reason of every instantiation that
is not identical, grouped.

    nice -n 10 python3 scripts/verify_corpus.py /work/corpora/llm.c mmcv=/work/corpora/mmcv/mmcv/ops/csrc \\
        --work /tmp/verify --sample 12 --jobs 2
    nice -n 10 python3 scripts/verify_corpus.py --corpus scripts/corpus_repos.txt --only cuda-samples candle \\
        --work /tmp/verify --sample 10 --jobs 2

A repo given as NAME=PATH gets the dataset WORK/NAME; an existing dataset there is reused unless
--rebuild. `--corpus FILE` adds the repos of a mine_corpus.py list (`owner/name@commit dir [subdir]
[extract options]`, checkouts under --root), extracted the way mine_corpus.py extracts them (the
subdir mined, the checkout as --project, the list's options); `--only` keeps some of them by
checkout dir. --sample applies to every repo; --sample-for NAME=N overrides it for one.

Fidelity records of earlier runs are dropped first: the table is this run's. The last row sums the
repos: `identical` is the share of verified built instantiations, `of buildable`
the share of those whose original translation unit compiles here, `with context` the share identical
or `differs` only alone (identical in the original's module context, verify's `fidelity.context`).
"""

from __future__ import annotations

import argparse
import importlib.util
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


def corpus_specs(path: Path, root: Path, only: list[str]) -> list[tuple[str, Path, list[str]]]:
    """(name, target, extract options) per repo of a mine_corpus.py list."""
    spec = importlib.util.spec_from_file_location("mine_corpus", ROOT / "scripts" / "mine_corpus.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up there
    spec.loader.exec_module(mod)
    out = []
    for repo in mod.read_list(path):
        if only and repo.checkout not in only:
            continue
        checkout = root / repo.checkout
        target = checkout / repo.subdir if repo.subdir else checkout
        out.append((repo.checkout, target, ["--project", str(checkout), *repo.options]))
    return out


def clear_fidelity(ds: Path) -> None:
    """Drop the fidelity records of earlier runs (another --sample, older code), so the table counts this
    run only."""
    sys.path.insert(0, str(ROOT))
    from miner import dataset

    changes = {}
    for meta_path in sorted(ds.glob("*/metadata.json")):
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        insts = meta.get("instantiations") or []
        if any("fidelity" in i for i in insts):
            changes[meta_path.parent.name] = {"instantiations": [{k: v for k, v in i.items() if k != "fidelity"}
                                                                 for i in insts]}
    dataset.update_many(ds, changes)


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
                    first = f"identical {_context(ctx)}; alone: {first}"
                    counts["in_context"] += 1
                reasons[f"{fid['status']}: {fid.get('original')}: {first[:200]}"] += 1
    return built, counts, reasons


def _context(ctx: dict) -> str:
    """The module context a `differs` came out identical in (verify's `fidelity.context`), briefly."""
    parts = [f"{ctx[k]} {what}" for k, what in (("instantiations", "other instantiation(s)"),
                                                ("kernels", "other kernel(s) calling the same functions"),
                                                ("headers", "library header(s)")) if ctx.get(k)]
    return "beside the original's " + " and ".join(parts)


def _pct(n: int, d: int) -> str:
    return f"{100 * n / d:.1f}%" if d else "-"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repos", nargs="*", metavar="[NAME=]PATH")
    ap.add_argument("--corpus", type=Path, help="a mine_corpus.py repo list (scripts/corpus_repos.txt)")
    ap.add_argument("--root", type=Path, default=Path("/work/corpora"), help="checkouts of --corpus repos")
    ap.add_argument("--only", nargs="+", action="extend", default=[], metavar="DIR",
                    help="--corpus repos to keep, by checkout dir (repeatable)")
    ap.add_argument("--work", default="/tmp/verify-corpus", help="folder for the datasets (default: %(default)s)")
    ap.add_argument("--sample", type=int, help="translation units verified per repo (default: all)")
    ap.add_argument("--sample-for", action="append", default=[], metavar="NAME=N")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("-X", "--nvcc-flag", action="append", default=[], metavar="FLAG",
                    help="passed to `verify -X` for both sides, e.g. -X=-I/opt/cublas/include where the toolkit "
                         "lacks a library's headers (repeatable)")
    ap.add_argument("--rebuild", action="store_true", help="extract and build again even where a dataset exists")
    ap.add_argument("--json", type=Path, help="write the per-repo counts here")
    ap.add_argument("--cache-dir", help="verify's PTX cache (default: verify's own)")
    args = ap.parse_args()
    per_repo = {k: int(v) for k, v in (s.split("=", 1) for s in args.sample_for)}
    specs: list[tuple[str, Path, list[str], bool]] = []
    for spec in args.repos:
        name, _, path = spec.rpartition("=")
        specs.append((name or Path(path).name, Path(path), [], True))
    if args.corpus:
        specs += [(n, t, o, False) for n, t, o in corpus_specs(args.corpus, args.root, args.only)]
    if not specs:
        ap.error("no repository: give NAME=PATH or --corpus FILE")
    rows = []
    for name, path, options, with_source in specs:
        ds = Path(args.work) / name
        if not path.exists():
            print(f"{name}: missing checkout {path}", file=sys.stderr)
            continue
        if args.rebuild or not any(ds.glob("*/metadata.json")):
            r = miner("extract", str(path), "-o", str(ds), "--build", "-j", str(args.jobs), "-q", *options)
            if r.returncode not in (0, 1):
                print(f"{name}: extract failed: {r.stderr.strip()[:300]}", file=sys.stderr)
                continue
        sample = per_repo.get(name, args.sample)
        # A --corpus repo's dataset records its root (the --project checkout); --source would be the subdir.
        vargs = ["verify", str(ds), "-j", str(args.jobs)] + (["--source", str(path)] if with_source else [])
        vargs += [f"-X={f}" for f in args.nvcc_flag]
        if sample:
            vargs += ["--sample", str(sample)]
        if args.cache_dir:
            vargs += ["--cache-dir", args.cache_dir]
        clear_fidelity(ds)
        r = miner(*vargs)
        if r.returncode not in (0, 1):
            print(f"{name}: verify failed: {r.stderr.strip()[:300]}", file=sys.stderr)
            continue
        built, counts, reasons = tally(ds)
        rows.append((name, built, counts, reasons, r.stdout.strip()))
    print(f"{'repo':<28} {'built':>6} {'verified':>8} " + " ".join(f"{s:>20}" for s in STATUSES)
          + "  identical  of buildable  with context")
    total: Counter[str] = Counter()
    for name, built, counts, _, _ in rows:
        total.update(counts)
        total["built"] += built
        verified = sum(counts[s] for s in STATUSES)
        buildable = verified - counts["original_unbuildable"]
        print(f"{name:<28} {built:>6} {verified:>8} " + " ".join(f"{counts[s]:>20}" for s in STATUSES)
              + f"  {_pct(counts['identical'], verified):>9}  {_pct(counts['identical'], buildable):>12}"
              + f"  {_pct(counts['identical'] + counts['in_context'], verified):>12}")
    verified = sum(total[s] for s in STATUSES)
    buildable = verified - total["original_unbuildable"]
    print(f"{'all':<28} {total['built']:>6} {verified:>8} " + " ".join(f"{total[s]:>20}" for s in STATUSES)
          + f"  {_pct(total['identical'], verified):>9}  {_pct(total['identical'], buildable):>12}"
          + f"  {_pct(total['identical'] + total['in_context'], verified):>12}")
    for name, _, _, reasons, line in rows:
        print(f"\n{name}: {line}")
        for reason, n in reasons.most_common():
            print(f"  {n:>4} x {reason}")
    if args.json:
        data = {name: {"built": built, **{s: counts[s] for s in STATUSES},
                       "differs_identical_in_context": counts["in_context"]} for name, built, counts, _, _ in rows}
        args.json.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
