"""Validation results: what a result depends on, whether it is current, and recording it (through
miner.dataset, which owns the folders and their selection)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from miner import dataset


def fingerprint(kdir: Path, meta: dict[str, Any], salt: str = "") -> str:
    """Hash of everything a result depends on: units, tests, the recorded launchers and `salt` (options)."""
    h = hashlib.sha256(salt.encode() + b"\0")
    folder = dataset.KernelFolder(kdir)
    files = sorted([*folder.unit_sources(), *folder.tests_dir.rglob("*.py")])
    for f in files:
        h.update(str(f.relative_to(kdir)).encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    h.update(json.dumps(meta.get("instantiations", []), sort_keys=True).encode())
    return h.hexdigest()[:16]


def finished(meta: dict[str, Any], fp: str) -> bool:
    v = meta.get("validation") or {}
    return bool(v.get("outcome")) and v.get("fingerprint") == fp


def record(kdir: Path, validation: dict[str, Any]) -> dict[str, Any]:
    """Write the validation block into the kernel's metadata.json now (atomically, under the dataset lock)."""
    return dataset.update_many(kdir.parent, {kdir.name: {"validation": validation}}, index=False)[kdir.name]


def rewrite_index(root: Path) -> None:
    dataset.rewrite_index(root)
