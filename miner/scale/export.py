"""A dataset folder as JSONL or Parquet shards that `datasets.load_dataset` reads, plus a dataset card.

One row per kernel: scalar columns for filtering (repo, license, build and validation outcomes,
dedupe cluster), the exact kernel text, its standalone units' text, and the whole metadata as JSON
so nothing the stages recorded is lost. The Parquet schema is fixed (SCHEMA), so shards of one export,
and exports of different datasets, concatenate.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import dataset
from miner.dataset import atomic
from miner.errors import UsageError

FORMATS = ("parquet", "jsonl")
SHARD_ROWS = 20_000

# (column, arrow type name, description): the card's schema table is generated from this list.
COLUMNS: list[tuple[str, str, str]] = [
    ("id", "string", "kernel id: `<name>-<12 hex>`, stable across runs"),
    ("name", "string", "kernel name"),
    ("qualified_name", "string", "name with namespaces"),
    ("repo", "string", "git remote URL of the source repository (null for a tree that is not a git checkout)"),
    ("commit", "string", "commit of the source repository"),
    ("license", "string", "SPDX id of the repository's license (null when no license file was found)"),
    ("path", "string", "file path relative to the repository root"),
    ("start_line", "int32", "first line of the definition"),
    ("end_line", "int32", "last line of the definition"),
    ("sha256", "string", "sha256 of the exact kernel text"),
    ("code", "string", "the exact `__global__` definition text"),
    ("signature", "string", "the kernel's signature"),
    ("is_template", "bool", "the kernel is a template"),
    ("frontend", "string", "parser that found it: clang or treesitter"),
    ("units", "list<struct>", "standalone units: id, template arguments (JSON), instantiation origin, "
                              "unit.cu text, build status"),
    ("build_ok", "bool", "at least one unit compiled with nvcc (null: not built)"),
    ("validation", "string", "validate outcome: passed, failed, error, timeout, crashed, cuda_error, ... "
                             "(null: not validated)"),
    ("speedup", "float64", "reference time / kernel time from the kernel's benchmark test, when measured"),
    ("cluster", "string", "dedupe cluster: id of its first member"),
    ("duplicate_of", "string", "id of the kernel this one duplicates (exact or near), null for originals"),
    ("duplicate_kind", "string", "exact (same normalized text) or near (MinHash Jaccard >= threshold)"),
    ("metadata", "string", "the kernel's whole metadata.json as JSON text"),
]


def arrow_schema() -> Any:
    import pyarrow as pa

    unit = pa.struct([("id", pa.string()), ("template_args", pa.string()), ("origin", pa.string()),
                      ("code", pa.string()), ("build", pa.string())])
    types = {"string": pa.string(), "int32": pa.int32(), "bool": pa.bool_(), "float64": pa.float64(),
             "list<struct>": pa.list_(unit)}
    return pa.schema([(name, types[t]) for name, t, _ in COLUMNS])


@dataclass
class ExportReport:
    rows: int = 0
    skipped_license: int = 0
    skipped_duplicates: int = 0
    files: list[str] = field(default_factory=list)
    licenses: dict[str, int] = field(default_factory=dict)
    stats: dict[str, dict[str, int]] = field(default_factory=dict)


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def row(kdir: Path, meta: dict[str, Any]) -> dict[str, Any]:
    src = meta.get("source") or {}
    units = []
    for inst in meta.get("instantiations") or []:
        unit_rel = inst.get("unit")
        units.append({"id": str(inst.get("id")), "template_args": json.dumps(inst.get("template_args") or {}),
                      "origin": inst.get("origin"), "code": _read(kdir / unit_rel) if unit_rel else None,
                      "build": (inst.get("build") or {}).get("status")})
    build = meta.get("build")
    val = meta.get("validation") if isinstance(meta.get("validation"), dict) else {}
    dd = meta.get("dedupe") or {}
    speedup = val.get("speedup")
    return {
        "id": meta.get("id", kdir.name), "name": meta.get("name"), "qualified_name": meta.get("qualified_name"),
        "repo": src.get("repo"), "commit": src.get("commit"), "license": src.get("license"),
        "path": src.get("path"), "start_line": src.get("start_line"), "end_line": src.get("end_line"),
        "sha256": src.get("sha256"), "code": _read(kdir / dataset.KERNEL_TEXT), "signature": meta.get("signature"),
        "is_template": bool(meta.get("template_params")), "frontend": meta.get("frontend"), "units": units,
        "build_ok": build.get("pass_call") if isinstance(build, dict) else None,
        "validation": val.get("outcome"), "speedup": float(speedup) if isinstance(speedup, (int, float)) else None,
        "cluster": dd.get("cluster"), "duplicate_of": dd.get("duplicate_of"), "duplicate_kind": dd.get("kind"),
        "metadata": json.dumps(meta, ensure_ascii=False, sort_keys=True),
    }


def _kernels(ds: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """Kernels in index order (then folders the index lacks), each once."""
    seen: set[str] = set()
    ids = [str(r.get("id")) for r in dataset.read_index(ds)]
    ids += sorted(d.name for d in dataset.kernel_dirs(ds) if d.name not in set(ids))
    for kid in ids:
        if kid in seen or not (ds / kid / dataset.METADATA).is_file():
            continue
        seen.add(kid)
        try:
            meta = dataset.load_metadata(ds / kid)
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict):
            yield ds / kid, meta


def _ledger_trees(ds: Path) -> dict[str, str]:
    """Kernel id -> the folder name of the repository a `mine` run took it from (for trees without a remote)."""
    import sqlite3

    from miner.scale.ledger import LEDGER

    if not (ds / LEDGER).is_file():
        return {}
    db = sqlite3.connect(f"file:{ds / LEDGER}?mode=ro", uri=True)
    try:
        return {kid: os.path.basename(repo) for kid, repo in db.execute("SELECT id, repo FROM kernels")}
    except sqlite3.Error:
        return {}
    finally:
        db.close()


def _count(stats: dict[str, dict[str, int]], key: str, value: Any) -> None:
    bucket = stats.setdefault(key, {})
    label = "null" if value is None else str(value)
    bucket[label] = bucket.get(label, 0) + 1


def export(ds: Path, out: Path, fmt: str, license_allow: list[str] | None = None,
           drop_duplicates: bool = False) -> ExportReport:
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if not ds.is_dir() or not (ds / dataset.INDEX).exists() and not dataset.kernel_dirs(ds):
        raise UsageError(f"{ds}: not a dataset folder (no index.jsonl, no kernel folders)")
    if fmt == "parquet":
        try:
            import pyarrow as pa
            import pyarrow.parquet as pq
        except ImportError:
            raise UsageError("--format parquet needs pyarrow: pip install 'kernel-miner[export]'") from None
    rep = ExportReport()
    trees = _ledger_trees(ds)
    rows: list[dict[str, Any]] = []
    for kdir, meta in _kernels(ds):
        r = row(kdir, meta)
        if license_allow and (r["license"] or "unknown") not in license_allow:
            rep.skipped_license += 1
            continue
        if drop_duplicates and r["duplicate_of"]:
            rep.skipped_duplicates += 1
            continue
        rows.append(r)
        lic = r["license"] or "unknown"
        rep.licenses[lic] = rep.licenses.get(lic, 0) + 1
        for key in ("frontend", "build_ok", "validation", "duplicate_kind"):
            _count(rep.stats, key, r[key])
        _count(rep.stats, "repo", r["repo"] or trees.get(r["id"]) or "(not a git checkout)")
    rep.rows = len(rows)
    out.mkdir(parents=True, exist_ok=True)
    data = out / "data"
    # Written beside the old shards, then swapped in: an interrupted export leaves the previous one whole.
    tmp = Path(tempfile.mkdtemp(prefix=".data.", dir=out))
    try:
        n = max(1, -(-len(rows) // SHARD_ROWS))
        for i in range(n):
            chunk = rows[i * SHARD_ROWS:(i + 1) * SHARD_ROWS]
            name = f"train-{i:05d}-of-{n:05d}.{fmt}"
            if fmt == "parquet":
                table = pa.Table.from_pylist(chunk, schema=arrow_schema())
                pq.write_table(table, tmp / name, compression="zstd")
            else:
                with open(tmp / name, "w", encoding="utf-8") as fh:
                    for r in chunk:
                        fh.write(json.dumps(r, ensure_ascii=False) + "\n")
            rep.files.append(f"data/{name}")
        old = out / f".data.old.{os.getpid()}"
        if data.exists():
            os.rename(data, old)
        os.rename(tmp, data)
        shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    from miner.scale.card import write_card

    atomic.write_text(out / "README.md", write_card(ds, rep, fmt, license_allow, drop_duplicates))
    return rep
