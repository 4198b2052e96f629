#!/usr/bin/env python3
"""Compare two `extract` output folders: the same entries, every file byte for byte, except that JSON files
(metadata.json, index.jsonl lines) are compared as data with their timing keys dropped.

    python3 scripts/compare_extract.py BASE_OUT BRANCH_OUT [--show 20]

Exit 0 when they agree, 1 with the differing paths (and the first differing keys of a JSON file) otherwise.
Used to check that a speed change keeps the output: run base and branch on the same tree, then this.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

# Keys whose values are measured durations, not output: dropped before JSON is compared.
TIMING_KEYS = {"seconds", "elapsed", "elapsed_s", "duration", "duration_s", "timings", "wall_s", "cpu_s"}
_LOCK_FILES = {".index.lock"}


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _files(root: str) -> set[str]:
    out = set()
    for d, _dirs, files in os.walk(root):
        for f in files:
            if f not in _LOCK_FILES:
                out.add(os.path.relpath(os.path.join(d, f), root))
    return out


def _json_docs(data: bytes, path: str) -> list[Any] | None:
    """The file as JSON documents (one per line for .jsonl), None when it is not JSON."""
    try:
        text = data.decode("utf-8")
        if path.endswith(".jsonl"):
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        if path.endswith(".json"):
            return [json.loads(text)]
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    return None


def _first_diff(a: Any, b: Any, where: str = "") -> str:
    if type(a) is not type(b):
        return f"{where or '/'}: {type(a).__name__} vs {type(b).__name__}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{where}/{k}: only in {'branch' if k not in a else 'base'}"
            if a[k] != b[k]:
                return _first_diff(a[k], b[k], f"{where}/{k}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{where or '/'}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_diff(x, y, f"{where}[{i}]")
    return f"{where or '/'}: {str(a)[:80]!r} vs {str(b)[:80]!r}"


def compare(base: str, branch: str) -> list[str]:
    """One line per difference (a missing entry, a differing file)."""
    fa, fb = _files(base), _files(branch)
    out = [f"only in base: {p}" for p in sorted(fa - fb)] + [f"only in branch: {p}" for p in sorted(fb - fa)]
    for p in sorted(fa & fb):
        with open(os.path.join(base, p), "rb") as f:
            a = f.read()
        with open(os.path.join(branch, p), "rb") as f:
            b = f.read()
        if a == b:
            continue
        ja, jb = _json_docs(a, p), _json_docs(b, p)
        if ja is not None and jb is not None:
            sa, sb = _strip(ja), _strip(jb)
            if sa != sb:
                one = len(sa) == len(sb) == 1  # (a .json file: its one document, not a list of them)
                out.append(f"differs: {p} ({_first_diff(sa[0], sb[0]) if one else _first_diff(sa, sb)})")
            continue
        out.append(f"differs: {p}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base")
    ap.add_argument("branch")
    ap.add_argument("--show", type=int, default=20, help="differences printed (all are counted)")
    args = ap.parse_args(argv)
    for d in (args.base, args.branch):
        if not os.path.isdir(d):
            print(f"compare_extract: not a folder: {d}", file=sys.stderr)
            return 2
    diffs = compare(args.base, args.branch)
    n = len(_files(args.base))
    if not diffs:
        print(f"identical: {n} files (timing keys aside)")
        return 0
    for line in diffs[:args.show]:
        print(line)
    print(f"{len(diffs)} differences over {n} base files")
    return 1


if __name__ == "__main__":
    sys.exit(main())
