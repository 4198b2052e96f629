"""Reading kernel folders and recording validation results into metadata.json and index.jsonl."""

from __future__ import annotations

import fnmatch
import hashlib
import json
from pathlib import Path
from typing import Any

from miner.atomic import write_json, write_text


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


def fingerprint(kdir: Path, meta: dict[str, Any]) -> str:
    """Hash of everything a result depends on: units, tests and the recorded launchers."""
    h = hashlib.sha256()
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
    """Write the validation block into the kernel's metadata.json now (atomically)."""
    meta = load_meta(kdir)
    meta["validation"] = validation
    write_json(kdir / "metadata.json", meta)
    return meta


def rewrite_index(root: Path) -> None:
    """index.jsonl = every kernel's current metadata, one compact line each, old order kept."""
    by_id: dict[str, dict[str, Any]] = {}
    for kdir in kernel_dirs(root):
        try:
            meta = load_meta(kdir)
        except (OSError, ValueError):
            continue
        by_id[str(meta.get("id", kdir.name))] = meta
    order: list[str] = []
    index = root / "index.jsonl"
    if index.is_file():
        for line in index.read_text(encoding="utf-8").splitlines():
            try:
                kid = str(json.loads(line).get("id"))
            except (ValueError, AttributeError):
                continue
            if kid in by_id and kid not in order:
                order.append(kid)
    order += sorted(k for k in by_id if k not in order)
    text = "".join(json.dumps(by_id[k], separators=(",", ":"), ensure_ascii=False) + "\n" for k in order)
    write_text(index, text)
