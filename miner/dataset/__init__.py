"""The dataset directory: kernel ids, kernel folders and their selection, and index.jsonl, all written
atomically. A folder's own layout (which file holds what) is `miner.dataset.folder`."""

from __future__ import annotations

import contextlib
import fcntl
import fnmatch
import hashlib
import json
import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from miner.dataset import atomic
from miner.dataset.folder import KERNEL_TEXT, LIBRARY, METADATA, UNITS, KernelFolder, unit_rel
from miner.errors import NothingToDo, UsageError

__all__ = ["INDEX", "KERNEL_TEXT", "LIBRARY", "METADATA", "UNITS", "IndexRefresher", "KernelFolder", "kernel_dirs",
           "kernel_id", "load_metadata", "locked", "merge_index", "prepare_output", "read_index", "rewrite_index",
           "select", "select_kernels", "unit_rel", "update_many", "update_metadata", "write_index", "write_kernel"]

INDEX = "index.jsonl"


def kernel_id(name: str, repo: str | None, rel_path: str, ordinal: int) -> str:
    """Stable across runs (no line numbers), unique per definition, safe as a folder name.

    The hash covers the exact name, so names that differ only in case never share a folder
    on a case-insensitive file system.
    """
    safe = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_")[:48] or "kernel"
    key = "\0".join([repo or "", rel_path, name, str(ordinal)])
    return f"{safe}-{hashlib.sha256(key.encode('utf-8')).hexdigest()[:12]}"


def prepare_output(out_dir: str) -> Path:
    p = Path(out_dir)
    if p.exists() and not p.is_dir():
        raise UsageError(f"{out_dir}: output path exists and is not a directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"{out_dir}: cannot create output directory: {exc.strerror or exc}") from None
    if not os.access(p, os.W_OK):
        raise UsageError(f"{out_dir}: output directory is not writable")
    return p


@contextlib.contextmanager
def locked(out_dir: Path) -> Iterator[None]:
    """Serialise index updates: shell loops run several miners into one folder."""
    with open(out_dir / ".index.lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def kernel_dirs(out_dir: Path) -> list[Path]:
    """Every kernel folder of a dataset (a folder holding metadata.json), sorted."""
    return sorted(p.parent for p in out_dir.glob(f"*/{METADATA}"))


def select(dirs: list[Path], patterns: Iterable[str]) -> list[Path]:
    """The folders matching any glob pattern by id (`relu_kernel-3a87e40e1ebf`), by the id's name part
    (`relu_kernel`) or by the metadata's kernel name; all of them when there is no pattern."""
    patterns = [p for p in patterns if p]
    if not patterns:
        return list(dirs)

    def hit(text: str) -> bool:
        return any(fnmatch.fnmatchcase(text, p) for p in patterns)

    out = []
    for d in dirs:
        if hit(d.name) or hit(d.name.rsplit("-", 1)[0]):
            out.append(d)
            continue
        try:
            name = load_metadata(d).get("name")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(name, str) and hit(name):
            out.append(d)
    return out


def select_kernels(root: Path, patterns: Iterable[str] = (), *, required: bool = False) -> list[Path]:
    """The kernel folders of `root` that `--kernels` patterns pick, as every stage selects them (`select`);
    with `required`, patterns that match nothing are NothingToDo rather than an empty run."""
    patterns = [p for p in patterns or () if p]
    chosen = select(kernel_dirs(root), patterns)
    if required and patterns and not chosen:
        raise NothingToDo(f"--kernels matched no kernel folder in {root}")
    return chosen


class IndexRefresher:
    """Rewrites index.jsonl at most every `every_s` seconds while a stage records kernels one by one
    (a full rewrite reads every kernel's metadata), so a killed run leaves an index seconds old at worst."""

    def __init__(self, out_dir: Path, every_s: float = 5.0) -> None:
        self.out_dir = out_dir
        self.every_s = every_s
        self._last = time.monotonic()

    def maybe(self) -> None:
        if time.monotonic() - self._last >= self.every_s:
            self.now()

    def now(self) -> None:
        rewrite_index(self.out_dir)
        self._last = time.monotonic()


def read_index(out_dir: Path) -> list[dict[str, Any]]:
    path = out_dir / INDEX
    if not path.exists():
        return []
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            line = line.strip()
            if line:
                with contextlib.suppress(json.JSONDecodeError):
                    out.append(json.loads(line))
    return [r for r in out if isinstance(r, dict)]


def write_index(out_dir: Path, records: list[dict[str, Any]]) -> None:
    text = "".join(json.dumps(r, separators=(",", ":"), ensure_ascii=False) + "\n" for r in records)
    atomic.write_bytes_if_changed(out_dir / INDEX, text.encode("utf-8"))


def write_kernel(out_dir: Path, meta: dict[str, Any], text: bytes) -> None:
    folder = out_dir / meta["id"]
    atomic.write_bytes(folder / KERNEL_TEXT, text)
    atomic.write_json(folder / METADATA, meta)


def merge_index(out_dir: Path, new: list[dict[str, Any]], replaced_paths: set[tuple[str | None, str]]) -> None:
    """Keep earlier runs' kernels from other files; this run's files are replaced whole."""
    with locked(out_dir):
        new_ids = {m["id"] for m in new}
        kept = [
            r for r in read_index(out_dir)
            if r.get("id") not in new_ids
            and (r.get("source", {}).get("repo"), r.get("source", {}).get("path")) not in replaced_paths
        ]
        write_index(out_dir, kept + new)


def load_metadata(kernel_dir: Path) -> dict[str, Any]:
    with open(kernel_dir / METADATA, encoding="utf-8") as fh:
        return json.load(fh)


def update_many(out_dir: Path, changes: Mapping[str, Mapping[str, Any]], *,
                index: bool = True) -> dict[str, dict[str, Any]]:
    """Merge `changes[kernel folder]` into each kernel's metadata.json under the dataset lock, every file
    replaced atomically; returns the merged metadata by folder.

    index=True rewrites index.jsonl once for the whole batch (rewriting it per kernel cost a 150-kernel
    tree seconds). Stages that record kernels one by one as results arrive pass index=False and call
    rewrite_index now and then, for the same reason.
    """
    if not changes:
        return {}
    with locked(out_dir):
        metas: dict[str, dict[str, Any]] = {}
        for folder, update in changes.items():
            meta = load_metadata(out_dir / folder)
            if not isinstance(meta, dict):
                raise ValueError(f"{folder}/{METADATA} is not a JSON object")
            meta.update(update)
            atomic.write_json(out_dir / folder / METADATA, meta)
            metas[folder] = meta
        if index:
            if (out_dir / INDEX).exists():
                by_id = {str(m.get("id", f)): m for f, m in metas.items()}
                records = [by_id.pop(str(r.get("id")), r) for r in read_index(out_dir)]
                write_index(out_dir, records + list(by_id.values()))
            else:
                _rewrite_index(out_dir)
    return metas


def update_metadata(out_dir: Path, kernel_id_: str, update: dict[str, Any]) -> dict[str, Any]:
    """Merge `update` into one kernel's metadata and its index line."""
    return update_many(out_dir, {kernel_id_: update})[kernel_id_]


def rewrite_index(out_dir: Path) -> None:
    """index.jsonl = every kernel folder's current metadata.json, one compact line each, earlier order kept
    (kernels new to the index follow, sorted; folders that are gone or unreadable drop out)."""
    with locked(out_dir):
        _rewrite_index(out_dir)


def _rewrite_index(out_dir: Path) -> None:
    by_id: dict[str, dict[str, Any]] = {}
    for kdir in kernel_dirs(out_dir):
        try:
            meta = load_metadata(kdir)
        except (OSError, ValueError):
            continue
        if isinstance(meta, dict):
            by_id.setdefault(str(meta.get("id", kdir.name)), meta)
    order = [str(r.get("id")) for r in read_index(out_dir) if str(r.get("id")) in by_id]
    order = list(dict.fromkeys(order)) + sorted(k for k in by_id if k not in order)
    write_index(out_dir, [by_id[k] for k in order])
