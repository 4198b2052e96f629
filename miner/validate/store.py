"""Reading kernel folders and recording validation results into metadata.json and index.jsonl."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from pathlib import Path
from typing import Any

from miner import dataset


def kernel_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.glob("*/metadata.json"))


def select(dirs: list[Path], patterns: list[str] | None) -> list[Path]:
    if not patterns:
        return dirs
    out = []
    for d in dirs:
        name = _meta_name(d)
        if any(fnmatch.fnmatchcase(d.name, p) or fnmatch.fnmatchcase(name, p) for p in patterns):
            out.append(d)
    return out


def _meta_name(kdir: Path) -> str:
    try:
        return str(load_meta(kdir).get("name", ""))
    except (OSError, ValueError):
        return ""


def load_meta(kdir: Path) -> dict[str, Any]:
    return json.loads((kdir / "metadata.json").read_text(encoding="utf-8"))


def test_files(kdir: Path) -> list[Path]:
    return sorted((kdir / "tests").glob("test_*.py"))


def fingerprint(kdir: Path, meta: dict[str, Any], salt: str = "") -> str:
    """Hash of everything a result depends on: units, tests, the recorded launchers and `salt` (options)."""
    h = hashlib.sha256(salt.encode() + b"\0")
    files = sorted([*kdir.glob("units/*/unit.cu"), *(kdir / "tests").rglob("*.py")])
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
