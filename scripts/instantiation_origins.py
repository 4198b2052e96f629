#!/usr/bin/env python3
"""Instantiations per origin in a dataset directory, and per-kernel build outcome when built.

    python3 scripts/instantiation_origins.py OUT [--kernel NAME ...] [--compare OTHER_OUT]

Prints one table row per origin (instantiations, kernels having one, units built ok / failed) and
the kernels whose every instantiation is inferred. With --compare, the same table for a second
dataset beside it (before/after a change).
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path
from typing import Any


def load(root: Path) -> list[dict[str, Any]]:
    metas = []
    for p in sorted(root.glob("*/metadata.json")):
        try:
            metas.append(json.loads(p.read_text(encoding="utf-8")))
        except (OSError, json.JSONDecodeError) as exc:
            print(f"skipping {p}: {exc}", file=sys.stderr)
    return metas


def table(metas: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    rows: dict[str, dict[str, int]] = collections.defaultdict(lambda: collections.Counter())
    for m in metas:
        seen = set()
        for inst in m.get("instantiations") or []:
            o = inst.get("origin", "?")
            row = rows[o]
            row["insts"] += 1
            status = (inst.get("build") or {}).get("status")
            if status:
                row[status] += 1
            if o not in seen:
                row["kernels"] += 1
                seen.add(o)
    return rows


def kernel_summary(metas: list[dict[str, Any]]) -> dict[str, int]:
    out = collections.Counter()
    for m in metas:
        out["kernels"] += 1
        statuses = [(i.get("build") or {}).get("status") for i in m.get("instantiations") or []]
        if any(s == "ok" for s in statuses):
            out["with a unit that builds"] += 1
        elif any(statuses):
            out["no unit builds"] += 1
        if all(i.get("origin") == "inferred" for i in m.get("instantiations") or [{}]):
            out["only inferred"] += 1
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", type=Path)
    ap.add_argument("--compare", type=Path, help="a second dataset to show beside the first")
    ap.add_argument("--kernel", action="append", default=[], help="print this kernel's instantiations")
    args = ap.parse_args()
    roots = [args.dataset] + ([args.compare] if args.compare else [])
    cols = ("insts", "kernels", "ok", "failed", "timeout", "skipped")
    for root in roots:
        metas = load(root)
        rows = table(metas)
        print(f"== {root}  ({len(metas)} kernels)")
        print(f"{'origin':15s}" + "".join(f"{c:>9s}" for c in cols))
        total: collections.Counter[str] = collections.Counter()
        for origin in sorted(rows, key=lambda o: -rows[o]["insts"]):
            print(f"{origin:15s}" + "".join(f"{rows[origin][c]:9d}" for c in cols))
            total.update(rows[origin])
        print(f"{'total':15s}{total['insts']:9d}{'':9s}" + "".join(f"{total[c]:9d}" for c in cols[2:]))
        for k, v in kernel_summary(metas).items():
            print(f"  {k}: {v}")
        for m in metas:
            if m["name"] in args.kernel:
                print(f"  {m['name']} ({m['id']}):")
                for inst in m.get("instantiations") or []:
                    b = inst.get("build") or {}
                    err = (b.get("error") or "")[:100]
                    print(f"    {inst['origin']:13s} {inst['id']:45s} {b.get('status', '-'):8s} {err}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
