"""Exact and near duplicates across a dataset's kernels: forks and vendored copies are common.

Exact: the sha256 of the kernel text with comments removed and whitespace collapsed. Near: MinHash
signatures over token 5-grams of that text, candidates from datasketch's LSH, kept when the estimated
Jaccard similarity reaches the threshold. Kernels joined by either relation form a cluster; the first
member in index order (for `mine` datasets: LIST order, path, line) is the one the others are
`duplicate_of`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from miner import dataset, lazy_re
from miner.errors import UsageError

THRESHOLD = 0.8
NUM_PERM = 128
SHINGLE = 5
_SEED = 1  # fixed: the same signatures on every machine and run

_COMMENT = lazy_re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRING = lazy_re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'')
_TOKEN = lazy_re.compile(r"[A-Za-z_]\w*|\d[\w.]*|\S")


def normalize(text: str) -> str:
    """Comments out, whitespace collapsed; string literals kept (a comment marker inside one is text)."""
    out, pos = [], 0
    for m in _STRING.finditer(text):
        out.append(_COMMENT.sub(" ", text[pos:m.start()]))
        out.append(m.group(0))
        pos = m.end()
    out.append(_COMMENT.sub(" ", text[pos:]))
    return " ".join("".join(out).split())


def _shingles(tokens: list[str]) -> set[bytes]:
    if len(tokens) <= SHINGLE:
        return {" ".join(tokens).encode()}
    return {" ".join(tokens[i:i + SHINGLE]).encode() for i in range(len(tokens) - SHINGLE + 1)}


@dataclass
class Item:
    id: str
    text: str


def clusters(items: Iterable[Item], threshold: float = THRESHOLD) -> dict[str, dict[str, Any]]:
    """The `dedupe` block of every item, by id; items in canonical order (the first of a cluster wins)."""
    try:
        from datasketch import MinHash, MinHashLSH
    except ImportError:
        raise UsageError("dedupe needs the 'datasketch' package: pip install 'kernel-miner[export]'") from None
    items = list(items)
    order = {it.id: i for i, it in enumerate(items)}
    parent = {it.id: it.id for it in items}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a: str, b: str) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            first, second = (ra, rb) if order[ra] < order[rb] else (rb, ra)
            parent[second] = first

    norm_hash: dict[str, str] = {}
    first_of_hash: dict[str, str] = {}
    exact_of: dict[str, str] = {}
    lsh = MinHashLSH(threshold=threshold, num_perm=NUM_PERM)
    sigs: dict[str, Any] = {}
    near: dict[str, tuple[str, float]] = {}
    for it in items:
        norm = normalize(it.text)
        h = hashlib.sha256(norm.encode()).hexdigest()
        norm_hash[it.id] = h
        if h in first_of_hash:
            exact_of[it.id] = first_of_hash[h]
            union(first_of_hash[h], it.id)
            continue
        first_of_hash[h] = it.id
        mh = MinHash(num_perm=NUM_PERM, seed=_SEED)
        mh.update_batch(sorted(_shingles(_TOKEN.findall(norm))))
        best: tuple[str, float] | None = None
        for other in sorted(lsh.query(mh), key=order.__getitem__):
            sim = mh.jaccard(sigs[other])
            if sim >= threshold and (best is None or sim > best[1]):
                best = (other, sim)
        if best is not None:
            near[it.id] = best
            union(best[0], it.id)
        lsh.insert(it.id, mh)
        sigs[it.id] = mh
    out: dict[str, dict[str, Any]] = {}
    sizes: dict[str, int] = {}
    for it in items:
        sizes[find(it.id)] = sizes.get(find(it.id), 0) + 1
    for it in items:
        root = find(it.id)
        rec: dict[str, Any] = {"cluster": root, "cluster_size": sizes[root], "normalized_sha256": norm_hash[it.id],
                               "duplicate_of": None, "kind": None, "similarity": None}
        if root != it.id:
            rec["duplicate_of"] = root
            if it.id in exact_of:
                rec["kind"], rec["similarity"] = "exact", 1.0
            else:
                rec["kind"] = "near"
                rec["similarity"] = round(near[it.id][1], 3) if it.id in near else None
        out[it.id] = rec
    return out


def dedupe_dataset(ds: Path, threshold: float = THRESHOLD) -> dict[str, int]:
    """Record `dedupe` in every kernel's metadata (index order decides which copy is the original)."""
    records = dataset.read_index(ds)
    known = {str(r.get("id")) for r in records}
    extra = [d.name for d in dataset.kernel_dirs(ds) if d.name not in known]
    ids = [str(r.get("id")) for r in records] + extra
    items = []
    for kid in ids:
        try:
            text = (ds / kid / dataset.KERNEL_TEXT).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        items.append(Item(kid, text))
    blocks = clusters(items, threshold)
    changes = {}
    for kid, block in blocks.items():
        try:
            old = dataset.load_metadata(ds / kid).get("dedupe")
        except (OSError, ValueError):
            continue
        if old != block:
            changes[kid] = {"dedupe": block}
    dataset.update_many(ds, changes)
    return {"kernels": len(blocks), "clusters": len({b["cluster"] for b in blocks.values()}),
            "exact": sum(1 for b in blocks.values() if b["kind"] == "exact"),
            "near": sum(1 for b in blocks.values() if b["kind"] == "near"), "changed": len(changes)}
