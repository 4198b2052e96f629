#!/usr/bin/env python3
"""Mine a list of repositories with `kernel-miner extract --build` and print the generalization table.

    python3 scripts/mine_corpus.py scripts/corpus_repos.txt --out /tmp/corpus [--root /work/corpora]
                                   [--jobs 2] [--only NAME ...] [--no-run] [--json FILE] [--failures N]

The list file has one repository a line: `owner/name@commit  checkout-dir  [subdir]  [extract options]`
(`#` starts a comment). checkout-dir is relative to --root; subdir, when given, is what is mined
(huge repos are limited to one part), with the whole checkout as the project context. Each repository
is mined into OUT/<checkout-dir> in its own child process (`--no-run` only re-reads OUT).

HIP-native variants (`variant.toolchain == "hip"`) are left out of every figure (their build is hipcc's) and
counted in the JSON as `hip_variants`. Per repository and overall it prints: kernels found, kernels with a
compiling unit, instantiations whose unit builds, kernels with a recorded launch, template kernels left with
only inferred/none arguments, and of those the ones with no stated reason (metadata `args_missing` says where
the sources hold no concrete arguments at all; the rest are the miner's misses); then the most common failure
classes (first compiler error lines, names masked).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
WEAK_ORIGINS = {"inferred", "none", None}


@dataclass
class Repo:
    ident: str  # owner/name@commit
    checkout: str
    subdir: str = ""
    options: list[str] = field(default_factory=list)


def read_list(path: Path) -> list[Repo]:
    repos = []
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = shlex.split(line)
        if len(parts) < 2 or "@" not in parts[0]:
            sys.exit(f"mine_corpus: error: bad line in {path}: {raw!r} (want owner/name@commit dir [subdir] [options])")
        subdir = parts[2] if len(parts) > 2 and not parts[2].startswith("-") else ""
        options = parts[3:] if subdir else parts[2:]
        repos.append(Repo(parts[0], parts[1], subdir, options))
    return repos


def mine(repo: Repo, root: Path, out: Path, jobs: int) -> tuple[float, str]:
    checkout = root / repo.checkout
    target = checkout / repo.subdir if repo.subdir else checkout
    if not target.exists():
        return 0.0, f"missing checkout {target}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    cmd = [sys.executable, "-m", "miner", "extract", str(target), "-o", str(out), "--project", str(checkout),
           "--build", "--jobs", str(jobs), "-q", *repo.options]
    t0 = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    tail = (res.stderr.strip().splitlines() or [""])[-1] if res.returncode not in (0, 1) else ""
    return time.monotonic() - t0, tail


def load(ds: Path) -> list[dict[str, Any]]:
    metas = []
    for p in sorted(ds.glob("*/metadata.json")):
        try:
            metas.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError):
            continue
    return metas


_QUOTED = re.compile(r'"[^"]*"')
_LOC = re.compile(r"^.*?\(\d+\): ")


def error_class(err: str) -> str:
    """The first error line without its location, quoted names and numbers masked, so like errors group."""
    line = _LOC.sub("", err.strip().splitlines()[0] if err.strip() else "")
    return re.sub(r"\b\d+\b", "N", _QUOTED.sub('"…"', line))[:110]


Tally = tuple[collections.Counter[str], collections.Counter[str], dict[str, list[str]]]


def tally(metas: list[dict[str, Any]]) -> Tally:
    row: collections.Counter[str] = collections.Counter()
    classes: collections.Counter[str] = collections.Counter()
    examples: dict[str, list[str]] = collections.defaultdict(list)
    for m in metas:
        # A HIP-native variant is built by hipcc (`build --toolchain hip`), never by nvcc: counted apart so
        # the CUDA figures are over the kernels nvcc is asked to build.
        if (m.get("variant") or {}).get("toolchain") == "hip":
            row["hip_variants"] += 1
            continue
        row["kernels"] += 1
        insts = m.get("instantiations") or []
        statuses = [(i.get("build") or {}).get("status") for i in insts]
        row["insts"] += len(insts)
        row["insts_ok"] += statuses.count("ok")
        if "ok" in statuses:
            row["compiling"] += 1
        # (a Triton kernel's `kernel[grid](...)` launches are kept under its `triton` record)
        if m.get("launches") or (m.get("triton") or {}).get("launches"):
            row["launched"] += 1
        else:
            # Issue 14: every kernel without a launch states why (metadata launch_missing).
            why = (m.get("launch_missing") or {}).get("reason") or "unstated"
            row[f"no_launch:{why}"] += 1
            if len(examples[f"no_launch:{why}"]) < 3:
                examples[f"no_launch:{why}"].append(str(m.get("name")))
        if m.get("template_params"):
            row["templates"] += 1
            if all(i.get("origin") in WEAK_ORIGINS for i in insts):
                row["weak_args"] += 1
                # A stated reason (metadata args_missing): the sources hold no concrete arguments at all.
                why = (m.get("args_missing") or {}).get("reason")
                if why:
                    row[f"weak_stated:{why}"] += 1
                    if len(examples[f"weak_stated:{why}"]) < 3:
                        examples[f"weak_stated:{why}"].append(str(m.get("name")))
                else:
                    row["weak_silent"] += 1
        for i in insts:
            b = i.get("build") or {}
            if b.get("status") == "failed":
                # A stated reason (the toolkit removed a name the source uses) is its own class.
                stated = b.get("toolkit_removed") or ""
                cls = (("stated: a header the project lacks" if "which the project does not contain" in stated
                        else "stated: a value make's command line gives" if "given on make's command line" in stated
                        else "stated: a value the host computes at run time"
                        if "compiles the source at run time" in stated
                        else "stated: a header nobody here has" if "nor the system has" in stated
                        else "stated: a name the source leaves undeclared" if "declared nowhere:" in stated
                        else "stated: an includer the project lacks" if "is included by no file of" in stated
                        else "stated: the kernel's text as written" if "ill-formed as written" in stated
                        else "stated: another build configuration's" if "switches off in the configuration" in stated
                        else "stated: a function this toolkit defines too" if "and by this toolkit's <" in stated
                        else "stated: a class parameter nothing gives" if "stands in for the class parameter" in stated
                        else "stated: a name this toolkit removed") if stated
                       else error_class(b.get("error") or ""))
                classes[cls] += 1
                if len(examples[cls]) < 3:
                    sym = b.get("missing_symbol") or ""
                    examples[cls].append(f"{m.get('name')}{'(' + sym + ')' if sym else ''}")
    return row, classes, examples


def pct(a: int, b: int) -> str:
    return f"{a}/{b} {100.0 * a / b:5.1f}%" if b else f"{a}/{b}   -  "


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("list", type=Path)
    ap.add_argument("--out", type=Path, required=True, help="folder for the per-repository datasets")
    ap.add_argument("--root", type=Path, default=Path("/work/corpora"), help="where the checkouts are")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", action="append", default=[], help="checkout dir names to mine (repeatable)")
    ap.add_argument("--no-run", action="store_true", help="only tabulate the datasets already in --out")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    ap.add_argument("--failures", type=int, default=15, help="failure classes to print")
    args = ap.parse_args()

    repos = [r for r in read_list(args.list) if not args.only or r.checkout in args.only]
    total: collections.Counter[str] = collections.Counter()
    all_classes: collections.Counter[str] = collections.Counter()
    all_examples: dict[str, list[str]] = collections.defaultdict(list)
    report: dict[str, Any] = {"repos": {}}
    hdr = (f"{'repo':28s} {'kernels':>7s} {'compiling unit':>16s} {'insts built':>17s} {'launched':>15s} "
           f"{'tmpl weak args':>15s} {'weak, no reason':>15s} {'time':>6s}")
    rows = []
    for repo in repos:
        ds = args.out / repo.checkout
        wall, problem = (0.0, "") if args.no_run else mine(repo, args.root, ds, args.jobs)
        row, classes, examples = tally(load(ds))
        total.update(row)
        all_classes.update(classes)
        for k, v in examples.items():
            all_examples[k].extend(v[: 3 - len(all_examples[k])])
        line = (f"{repo.checkout:28s} {row['kernels']:7d} {pct(row['compiling'], row['kernels']):>16s} "
                f"{pct(row['insts_ok'], row['insts']):>17s} {pct(row['launched'], row['kernels']):>15s} "
                f"{pct(row['weak_args'], row['templates']):>15s} {pct(row['weak_silent'], row['templates']):>15s} "
                f"{wall:6.0f}" + (f"  ({problem})" if problem else ""))
        rows.append(line)
        print(line, file=sys.stderr, flush=True)
        report["repos"][repo.ident] = dict(row, seconds=round(wall, 1), subdir=repo.subdir)
    print(hdr)
    for line in rows:
        print(line)
    print(f"{'overall':28s} {total['kernels']:7d} {pct(total['compiling'], total['kernels']):>16s} "
          f"{pct(total['insts_ok'], total['insts']):>17s} {pct(total['launched'], total['kernels']):>15s} "
          f"{pct(total['weak_args'], total['templates']):>15s} {pct(total['weak_silent'], total['templates']):>15s}")
    no_launch = {k.split(":", 1)[1]: n for k, n in total.items() if k.startswith("no_launch:")}
    if no_launch:
        print("\nkernels without a launch, by stated reason (metadata launch_missing):")
        for why, n in sorted(no_launch.items(), key=lambda t: -t[1]):
            print(f"{n:5d}  {why}   e.g. {', '.join(all_examples['no_launch:' + why])}")
    stated = {k.split(":", 1)[1]: n for k, n in total.items() if k.startswith("weak_stated:")}
    if stated:
        print("\ntemplate kernels with only inferred arguments, by stated reason (metadata args_missing):")
        for why, n in sorted(stated.items(), key=lambda t: -t[1]):
            print(f"{n:5d}  {why}   e.g. {', '.join(all_examples['weak_stated:' + why])}")
    print("\nfailure classes (failed instantiations, first error line):")
    for cls, n in all_classes.most_common(args.failures):
        print(f"{n:5d}  {cls}   e.g. {', '.join(all_examples[cls])}")
    report["overall"] = dict(total)
    report["failure_classes"] = dict(all_classes.most_common())
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
