"""Move one repo's extraction from its staging folder into the dataset, idempotently.

The ledger marks the stage `committing` (with the staging folder) before anything moves, so a run killed
half way through finishes the same moves when it resumes: a kernel folder is either still in staging
(moved then) or already in place (left alone). Replaced and stale folders go through a trash folder, so
the dataset never shows half a kernel folder.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

from miner import dataset
from miner.scale.ledger import Ledger

STAGING = ".staging"
TRASH = ".trash"


def _discard(ds: Path, folder: Path) -> None:
    trash = ds / TRASH
    trash.mkdir(exist_ok=True)
    tmp = trash / f"{folder.name}.{uuid.uuid4().hex[:8]}"
    os.rename(folder, tmp)
    shutil.rmtree(tmp, ignore_errors=True)


def commit_extract(ds: Path, ledger: Ledger, repo: str, staging: Path, result: dict[str, Any]) -> dict[str, Any]:
    """Kernel folders of `result` moved from staging into ds, index.jsonl and ledger updated.
    Returns the stage detail (counts, collisions)."""
    kept: list[dict[str, Any]] = []
    collisions: list[str] = []
    for k in result["kernels"]:
        src, dst = staging / k["id"], ds / k["id"]
        owner = ledger.owner(k["id"])
        if owner not in (None, repo):
            collisions.append(k["id"])
            continue
        if src.is_dir():
            if dst.exists():
                _discard(ds, dst)
            os.rename(src, dst)
        if (dst / dataset.METADATA).is_file():
            kept.append(k)
    new_ids = {k["id"] for k in kept}
    stale = [kid for kid in ledger.kernel_ids(repo) if kid not in new_ids]
    for kid in stale:
        if (ds / kid).exists():
            _discard(ds, ds / kid)
    with dataset.locked(ds):
        metas = [dataset.load_metadata(ds / k["id"]) for k in kept]
        drop = new_ids | set(stale)
        records = [r for r in dataset.read_index(ds) if r.get("id") not in drop]
        dataset.write_index(ds, records + metas)
    files = list(result.get("files") or [])
    licenses = sorted({str(k.get("license")) for k in kept if k.get("license")})
    detail = {"kernels": len(kept), "files": result.get("n_files", 0), "failures": len(result.get("failures") or []),
              "collisions": collisions}
    with ledger.tx() as db:
        db.execute("DELETE FROM kernels WHERE repo=?", (repo,))
        db.executemany("INSERT INTO kernels(id, repo, path, name, start_line) VALUES (?,?,?,?,?)",
                       [(k["id"], repo, k["path"], k["name"], k["start_line"]) for k in kept])
        for kid in collisions:
            other = ledger.owner(kid)
            files.append({"path": next(k["path"] for k in result["kernels"] if k["id"] == kid), "kernels": 0,
                          "error": f"kernel id {kid} is already held by {other} (same remote, path and name)"})
        # A new extraction makes the repo's later stages stale.
        db.execute("DELETE FROM stages WHERE repo=? AND stage IN ('build', 'validate')", (repo,))
        db.execute("DELETE FROM files WHERE repo=?", (repo,))
        db.executemany("INSERT OR REPLACE INTO files(repo, path, kernels, error) VALUES (?,?,?,?)",
                       [(repo, f["path"], f["kernels"], f["error"]) for f in files])
        db.execute("UPDATE stages SET state='done', seconds=COALESCE(seconds, ?), detail=? "
                   "WHERE repo=? AND stage='extract'", (result.get("seconds"), json.dumps(detail), repo))
        db.execute("UPDATE repos SET files=?, kernels=?, license=?, updated=? WHERE key=?",
                   (result.get("n_files", 0), len(kept), ",".join(licenses) or None, time.time(), repo))
    shutil.rmtree(staging, ignore_errors=True)
    return detail


def sweep(ds: Path) -> None:
    """Staging and trash left by a killed run removed (call after recovering the commits it left)."""
    for base in (ds / STAGING, ds / TRASH):
        if not base.is_dir():
            continue
        for p in base.iterdir():
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)


def sort_index(ds: Path, ledger: Ledger) -> None:
    """index.jsonl in LIST order, then path, line and id: the same bytes whatever order repos finished in."""
    rank = {r["key"]: r["ordinal"] for r in ledger.repos()}
    where = {k["id"]: (rank.get(k["repo"], 1 << 30), k["path"] or "", k["start_line"] or 0, k["id"])
             for k in ledger.kernels()}
    with dataset.locked(ds):
        records = dataset.read_index(ds)
        unique = list({str(r.get("id")): r for r in records}.values())
        unique.sort(key=lambda r: where.get(str(r.get("id")), (1 << 30, "", 0, str(r.get("id")))))
        if unique != records:
            dataset.write_index(ds, unique)
