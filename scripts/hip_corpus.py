#!/usr/bin/env python3
"""HIP portability of built datasets: how many units that nvcc builds hipcc builds too, why the rest fail,
and whether every kernel the source writes for HIP has its HIP-native variant.

    python3 scripts/hip_corpus.py OUT [OUT ...] [--source DIR ...] [--errors N] [--timing --jobs 2]

Each OUT must have been built with `kernel-miner build OUT --toolchain cuda,hip`. --source gives the
mined tree of each OUT (same order): with it, the kernels "written for HIP" are counted independently of
the extractor: a kernel whose definition or any closure piece (the unit's `// ... from FILE:LINE`
comments) lies inside an `#if` on a HIP guard in its source file, or whose unit text tests one.
--timing rebuilds each OUT as HIP twice into a fresh cache (cold, then warm) and reports wall and CPU
seconds (the build and its compilers) and the load average: on a shared machine wall time measures the load.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from miner.frontends.hip_config import guards  # noqa: E402  (the same guard pattern the extractor uses)

_PIECE = re.compile(r"^// .* from (\S+?):(\d+)$", re.M)
_KERNEL = re.compile(r"^// the kernel, (\S+?):(\d+)$", re.M)
# The c10 shim inlined into units has HIP branches of its own: they say nothing about the mined code. It is
# cut from its first line to the first closure piece, not matched as text: a dataset rendered by an older
# miner carries an older shim, whose HIP branches would make every unit look written for HIP.
_SHIM_FIRST = (ROOT / "miner" / "frontends" / "include" / "unit" / "km_torch_unit.h").read_text(
    encoding="utf-8").splitlines()[0]
_FIRST_PIECE = re.compile(r"^// (?:.* from \S+?:\d+|the kernel, \S+?:\d+)$", re.M)
_DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif)\b(.*)$")


def load(root: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(root.glob("*/metadata.json"))]


def _hip_guard(cond: str) -> bool:
    """A condition that tests a HIP guard, unless it is OR-ed with a macro the CUDA side defines as well
    (`defined(__NVCC__) || defined(__HIP__)` is the same code on both sides)."""
    return bool(guards(f"#if {cond}".encode())) and not re.search(r"__NVCC__|__CUDACC__|__CUDA_ARCH__", cond)


def guarded_lines(text: str) -> tuple[set[int], set[int]]:
    """1-based lines inside an #if on a HIP guard (either branch), and the lines such a block leaves out
    of the HIP configuration (`#ifndef G` before its #else, `#ifdef G` after it)."""
    stack: list[tuple[bool, bool | None]] = []   # (tests a HIP guard, branch taken with the guards on)
    dependent: set[int] = set()
    excluded: set[int] = set()
    for n, line in enumerate(text.splitlines(), 1):
        m = _DIRECTIVE.match(line)
        if m:
            kind, cond = m.group(1), m.group(2)
            hip = _hip_guard(cond)
            if kind in ("if", "ifdef", "ifndef"):
                active = (kind == "ifdef") if hip and kind != "if" else None
                stack.append((hip, active))
            elif kind == "elif" and stack:
                stack[-1] = (stack[-1][0] or hip, None)
            elif kind == "else" and stack:
                hip0, active = stack[-1]
                stack[-1] = (hip0, None if active is None else not active)
            elif kind == "endif" and stack:
                stack.pop()
            continue
        if any(h for h, _ in stack):
            dependent.add(n)
        if any(a is False for _, a in stack):
            excluded.add(n)
    return dependent, excluded


class Sources:
    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.cache: dict[str, tuple[set[int], set[int]]] = {}

    def hip_lines(self, rel: str) -> tuple[set[int], set[int]]:
        if self.root is None:
            return set(), set()
        if rel not in self.cache:
            hits = [self.root / rel] if (self.root / rel).is_file() else sorted(self.root.rglob(Path(rel).name))
            self.cache[rel] = (guarded_lines(hits[0].read_text(encoding="utf-8", errors="replace")) if hits
                               else (set(), set()))
        return self.cache[rel]


def _without_shim(text: str) -> str:
    start = text.find(_SHIM_FIRST)
    if start < 0:
        return text
    end = _FIRST_PIECE.search(text, start)
    return text[:start] + (text[end.start():] if end else "")


def written_for_hip(out: Path, m: dict[str, Any], src: Sources) -> bool:
    """The source writes this kernel's HIP form differently from its CUDA form (and does not leave it out
    of the HIP configuration altogether, as MMCV's fp16 specializations under #ifndef MMCV_WITH_HIP)."""
    if m["source"]["start_line"] in src.hip_lines(m["source"]["path"])[1]:
        return False
    for inst in m.get("instantiations") or []:
        try:
            text = _without_shim((out / m["id"] / inst["unit"]).read_text(encoding="utf-8"))
        except (OSError, KeyError):
            continue
        if any(_hip_guard(c) for c in re.findall(r"^\s*#\s*(?:if|ifdef|ifndef|elif)\b(.*)$", text, re.M)):
            return True
        for rx in (_PIECE, _KERNEL):
            for f, line in rx.findall(text):
                # A piece's comment names its first line; a branch inside it shows in the unit text above.
                if int(line) in src.hip_lines(f)[0]:
                    return True
    return False


def measure(out: Path, src: Sources, n_errors: int) -> dict[str, Any]:
    metas = load(out)
    row: dict[str, Any] = collections.Counter()
    classes: collections.Counter[str] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()
    variants_of = {m["variant"].get("of") for m in metas if m.get("variant")}
    missing: list[str] = []
    for m in metas:
        v = m.get("variant")
        if v:
            row["variants"] += 1
            row["variants_native"] += not v.get("of")
            for inst in m.get("instantiations") or []:
                b = inst.get("build_hip") or {}
                row["variant_units"] += 1
                row["variant_units_ok"] += b.get("status") == "ok"
            continue
        row["kernels"] += 1
        if src.root is not None and written_for_hip(out, m, src):
            row["written_for_hip"] += 1
            if m["id"] in variants_of:
                row["written_for_hip_with_variant"] += 1
            else:
                missing.append(m["name"])
        for inst in m.get("instantiations") or []:
            c, h = inst.get("build") or {}, inst.get("build_hip") or {}
            row["units"] += 1
            row["cuda_ok"] += c.get("status") == "ok"
            row["hip_ok"] += h.get("status") == "ok"
            if c.get("status") != "ok":
                continue
            if h.get("status") == "ok":
                row["both_ok"] += 1
                row["both_ok_with_findings"] += bool(h.get("portability"))
            elif h:
                cls = h.get("error_class", "other") if h.get("status") == "failed" else h.get("status", "?")
                classes[cls] += 1
                first = re.sub(r"^\S+?:\d+:\d+: ", "", h.get("error") or "")
                errors[f"[{cls}] {first[:150]}"] += 1
            else:
                row["hip_not_built"] += 1
    return {"row": row, "classes": classes, "errors": errors.most_common(n_errors), "missing": missing}


def timing(out: Path, jobs: int) -> tuple[list[tuple[float, float, float]], int]:
    """(wall s, CPU s of the build and its compilers, 1-min load average at the end) of a cold and a warm
    HIP build into a fresh cache. On a shared machine the wall time depends on the other jobs; the CPU
    seconds much less so."""
    runs: list[tuple[float, float, float]] = []
    with tempfile.TemporaryDirectory(prefix="km-hip-timing-") as cache:
        for _ in range(2):
            t0, r0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-m", "miner", "build", str(out), "--toolchain", "hip", "-q",
                            "-j", str(jobs), "--cache-dir", cache], cwd=ROOT, check=False)
            r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
            runs.append((time.monotonic() - t0, cpu, os.getloadavg()[0]))
    units = sum(len(m.get("instantiations") or []) for m in load(out))
    return runs, units


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("datasets", nargs="+", type=Path)
    ap.add_argument("--source", action="append", type=Path, default=[])
    ap.add_argument("--errors", type=int, default=8, help="distinct first errors listed per dataset")
    ap.add_argument("--timing", action="store_true", help="cold and warm HIP build into a fresh cache")
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    print("| dataset | CUDA units ok | also HIP ok | % | ...with findings | HIP failures by class | "
          "written for HIP | with variant | variants (native) | variant units ok |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    details = []
    for i, out in enumerate(args.datasets):
        src = Sources(args.source[i] if i < len(args.source) else None)
        r = measure(out, src, args.errors)
        row = r["row"]
        pct = 100.0 * row["both_ok"] / row["cuda_ok"] if row["cuda_ok"] else 0.0
        cls = ", ".join(f"{k} {v}" for k, v in r["classes"].most_common()) or "none"
        wfh = str(row["written_for_hip"]) if src.root else "-"
        print(f"| {out.name} | {row['cuda_ok']}/{row['units']} | {row['both_ok']} | {pct:.1f}% | "
              f"{row['both_ok_with_findings']} | {cls} | {wfh} | {row['written_for_hip_with_variant']} | "
              f"{row['variants']} ({row['variants_native']}) | {row['variant_units_ok']}/{row['variant_units']} |")
        details.append((out, r))
    for out, r in details:
        print(f"\n{out.name}: first errors of the units nvcc builds and hipcc does not")
        for text, n in r["errors"]:
            print(f"  {n:4d}  {text}")
        if r["missing"]:
            print(f"  written for HIP without a variant: {', '.join(sorted(set(r['missing'])))}")
    if args.timing:
        print("\n| dataset | HIP units | cold wall | per unit | cold CPU | CPU per unit | warm wall | warm/cold | "
              "load (1 min, end of cold / warm) |\n|---|---|---|---|---|---|---|---|---|")
        for out in args.datasets:
            ((cold, cold_cpu, cold_load), (warm, _warm_cpu, warm_load)), units = timing(out, args.jobs)
            n = max(units, 1)
            print(f"| {out.name} | {units} | {cold:.1f} s | {cold / n:.2f} s | {cold_cpu:.1f} s | "
                  f"{cold_cpu / n:.2f} s | {warm:.1f} s | {100 * warm / cold:.1f}% | "
                  f"{cold_load:.1f} / {warm_load:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
