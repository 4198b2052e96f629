#!/usr/bin/env python3
"""Triton frontend recall, frontend cost and ahead-of-time build rate on real repositories; prints a table.

    PYTHONPATH=. python3 scripts/triton_corpus.py NAME=PATH [NAME=PATH ...] [--sample 40] [--jobs 2]
        [--work DIR] [--no-build]

Per repository:
- text: lines that look like a `@<anything>.jit` / `@jit` decorator (a plain regex over every .py file),
  split into what is not a Triton kernel definition: inside a string literal (code generators),
  another DSL's jit (cute, gluon, tilelang, numba, jax, torch.jit...), or a file Python cannot parse;
- found: `@triton.jit` definitions the frontend reports; recall = found / Triton decorators in the text;
  every text hit the frontend misses and every kernel the text misses is listed (check them by hand);
- cost: a plain `ast.parse` of every .py file against the frontend over the same files (best of 2);
- build: a deterministic sample of --sample entry kernels (helpers that return a value compile inside
  their callers) compiled ahead of time for sm_90 in child processes; ok rate and failure classes; `old`
  counts kernels that call a Triton API the installed release lacks (removed_triton_api) and `ok %*` is
  the rate without them.
"""

from __future__ import annotations

import argparse
import ast
import collections
import hashlib
import os
import re
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from miner import dataset  # noqa: E402
from miner.frontends import triton_frontend  # noqa: E402
from miner.triton import build as triton_build  # noqa: E402
from miner.triton import extract as triton_extract  # noqa: E402

TEXT = re.compile(rb"^[ \t]*@[ \t]*((?:[A-Za-z_]\w*\.)*)jit\b(?![.\w])", re.M)


def py_files(root: Path) -> list[tuple[str, bytes]]:
    report = triton_extract.TritonReport()
    files, _ = triton_extract.python_files([str(root)], report)
    return files


def string_lines(tree: ast.Module) -> set[int]:
    out: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.end_lineno and n.end_lineno > n.lineno:
            out.update(range(n.lineno, n.end_lineno + 1))
    return out


def recall(files: list[tuple[str, bytes]]) -> dict:
    text_hits = 0
    classes: collections.Counter[str] = collections.Counter()
    missed: list[str] = []
    extra: list[str] = []
    found = 0
    for path, data in files:
        hits = [(data.count(b"\n", 0, m.start()) + 1, m.group(1).decode().rstrip(".")) for m in TEXT.finditer(data)]
        kernels, err = triton_frontend.parse_bytes(data, path)
        found += len(kernels)
        if not hits and not kernels:
            continue
        text_hits += len(hits)
        try:
            tree = ast.parse(data)
        except (SyntaxError, ValueError):
            classes["unparseable file"] += len(hits)
            continue
        strings = string_lines(tree)
        names = triton_frontend.module_names(tree)
        decorator_lines = {ln for k in kernels for ln in range(k.start_line, k.def_line + 1)}
        for line, prefix in hits:
            resolved = names.alias.get(prefix.split(".")[0], prefix.split(".")[0]) if prefix else \
                names.alias.get("jit", "jit")
            if line in strings:
                classes["in a string literal"] += 1
            elif line in decorator_lines:
                classes["triton kernel"] += 1
            elif f"{resolved}.jit" not in triton_frontend._JIT and resolved != "triton.jit":  # gluon, cute...
                classes[f"other jit: {prefix or resolved}"] += 1
            else:
                missed.append(f"{path}:{line}")
        hit_lines = {ln for ln, _ in hits}
        for k in kernels:
            if not hit_lines & set(range(k.start_line, k.def_line + 1)):
                extra.append(f"{path}:{k.def_line} {k.name}")
    triton_text = classes["triton kernel"] + len(missed)
    return {"text": text_hits, "triton_text": triton_text, "found": found, "classes": dict(classes),
            "missed": missed, "extra": extra, "recall": found / triton_text if triton_text else 1.0}


def cost(files: list[tuple[str, bytes]]) -> tuple[float, float]:
    def plain() -> None:
        for _p, d in files:
            try:
                ast.parse(d)
            except (SyntaxError, ValueError):
                pass

    def frontend() -> None:
        for p, d in files:
            triton_frontend.parse_bytes(d, p)

    best = []
    for fn in (plain, frontend):
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        best.append(min(times))
    return best[0], best[1]


def sample_ids(ds: Path, n: int) -> tuple[list[str], int, int]:
    entries, helpers = [], 0
    for kdir in dataset.kernel_dirs(ds):
        meta = dataset.load_metadata(kdir)
        if meta["triton"]["compile"]["role"] == "helper":
            helpers += 1
            continue
        entries.append(meta["id"])
    entries.sort(key=lambda i: hashlib.sha256(i.encode()).hexdigest())
    return sorted(entries[:n]), len(entries), helpers


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("repos", nargs="+", metavar="NAME=PATH")
    ap.add_argument("--sample", type=int, default=40, help="entry kernels compiled per repository")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", default="/tmp/km-triton-corpus", help="datasets and build cache go here")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true", help="list every failure and miss")
    args = ap.parse_args()
    work = Path(args.work)
    rows, notes = [], []
    for spec in args.repos:
        name, _, path = spec.partition("=")
        root = Path(path)
        files = py_files(root)
        rec = recall(files)
        t_ast, t_fe = cost(files)
        ds = work / name
        t0 = time.perf_counter()
        rep = triton_extract.extract([str(root)], dataset.prepare_output(str(ds)), project_root=str(root),
                                     files=files, roots=[os.path.realpath(root)])
        t_extract = time.perf_counter() - t0
        row = {"repo": name, "files": len(files), **rec, "ast_s": t_ast, "frontend_s": t_fe,
               "extract_s": t_extract, "kernels": len(rep.kernels),
               "unresolved": sum(bool(m.get("unresolved")) for m in rep.kernels)}
        if not args.no_build:
            ids, n_entries, n_helpers = sample_ids(ds, args.sample)
            b = triton_build.build_dataset(ds, jobs=args.jobs, selectors=ids, cache_dir=work / "cache")
            row.update(entries=n_entries, helpers=n_helpers, built=b.units, ok=b.ok, build_classes=b.classes,
                       build_s=b.seconds)
            notes += [f"{name}: {f}" for f in b.failures]
        rows.append(row)
        notes += [f"{name}: missed {m}" for m in rec["missed"]]
        notes += [f"{name}: not in text count {e}" for e in rec["extra"]]
    print(f"{'repo':<14}{'files':>6}{'text':>6}{'triton':>7}{'found':>6}{'recall':>8}{'ast s':>7}{'fe s':>7}"
          f"{'ratio':>6}{'unres':>6}{'entry':>6}{'help':>5}{'built':>6}{'ok':>4}{'ok %':>6}{'old':>4}{'ok %*':>6}"
          "  failure classes")
    for r in rows:
        built = r.get("built", 0)
        # Kernels written for an older Triton (an API the installed one lacks) are counted apart: no
        # signature builds them. ok %* is the rate over the others.
        old = r.get("build_classes", {}).get("removed_triton_api", 0)
        print(f"{r['repo']:<14}{r['files']:>6}{r['text']:>6}{r['triton_text']:>7}{r['found']:>6}"
              f"{100 * r['recall']:>7.1f}%{r['ast_s']:>7.2f}{r['frontend_s']:>7.2f}"
              f"{r['frontend_s'] / r['ast_s'] if r['ast_s'] else 0:>6.2f}{r['unresolved']:>6}"
              f"{r.get('entries', 0):>6}{r.get('helpers', 0):>5}{built:>6}{r.get('ok', 0):>4}"
              f"{100 * r.get('ok', 0) / built if built else 0:>5.0f}%{old:>4}"
              f"{100 * r.get('ok', 0) / (built - old) if built > old else 0:>5.0f}%  "
              + ", ".join(f"{k} {v}" for k, v in sorted(r.get("build_classes", {}).items()) if k != "helper"))
    for r in rows:
        print(f"{r['repo']}: text hits that are not Triton kernels: "
              + ", ".join(f"{k} {v}" for k, v in sorted(r["classes"].items()) if k != "triton kernel"))
    for line in notes if args.verbose else notes[:40]:
        print("  " + line[:300])
    return 0


if __name__ == "__main__":
    sys.exit(main())
