#!/usr/bin/env python3
"""Every libclang error the parse stubs cause on a tree, grouped by message.

Parses each translation unit the way `kernel-miner extract` does (same discovery, include graph,
stub and shims) and prints error counts per file and the most common messages, so gaps in
miner/frontends/include show up before they hide a kernel or a launch.

    python3 scripts/parse_diagnostics.py /work/corpora/mmcv/mmcv/ops/csrc [-D X] [--top 40]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from miner.frontends.config import ParseConfig, clang_args  # noqa: E402
from miner.source import include_graph  # noqa: E402
from miner.source.discover import discover  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="+")
    ap.add_argument("-D", dest="defines", action="append", default=[])
    ap.add_argument("-I", dest="include_dirs", action="append", default=[])
    ap.add_argument("--top", type=int, default=40, help="messages to print")
    ap.add_argument("--files", action="store_true", help="also print errors per file")
    ap.add_argument("--show", default=None, help="print every error whose message matches this regex")
    args = ap.parse_args()
    args.paths = [os.path.abspath(p) for p in args.paths]

    import clang.cindex as ci

    disc = discover(args.paths)
    inc = [os.path.realpath(d) for d in args.include_dirs]
    graph = include_graph.build(disc.files, inc)
    config = ParseConfig(include_dirs=inc + graph.auto_include_dirs, defines=args.defines)
    roots = include_graph.parse_roots(disc.files, graph)
    index = ci.Index.create()
    by_msg: collections.Counter[str] = collections.Counter()
    by_file: collections.Counter[str] = collections.Counter()
    seen: set[tuple[str, int, int, str]] = set()
    total = 0
    t0 = time.time()
    for root in roots:
        tu = index.parse(root, args=clang_args(config, root), options=0x200)
        n = 0
        for d in tu.diagnostics:
            if d.severity < ci.Diagnostic.Error:
                continue
            loc = d.location
            key = (loc.file.name if loc.file else "", loc.line, loc.column, d.spelling)
            if key in seen:  # a header's error counts once, not once per includer
                continue
            seen.add(key)
            n += 1
            # Names and types vary; the shape of the message groups the same gap together.
            by_msg[re.sub(r"'[^']*'", "'…'", d.spelling) if not args.show else d.spelling] += 1
            if args.show and re.search(args.show, d.spelling):
                print(f"{key[0]}:{key[1]}:{key[2]}: {d.spelling}")
        by_file[os.path.relpath(root, os.path.commonpath(args.paths + [root]))] = n
        total += n
    print(f"{len(roots)} translation units, {total} distinct errors, {time.time() - t0:.1f} s")
    if args.files:
        for f, n in by_file.most_common():
            if n:
                print(f"{n:6d}  {f}")
    for msg, n in by_msg.most_common(args.top):
        print(f"{n:6d}  {msg}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
