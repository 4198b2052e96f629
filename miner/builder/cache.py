"""Content-addressed build results: a unit's key covers everything that changes its output (unit text,
local headers, nvcc flags, nvcc and host compiler versions), so a key seen before needs no nvcc call."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from miner.builder.unit_split import Unit
from miner.dataset import atomic

CACHE_FORMAT = "km-build-3"


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kernel-miner" / "build"


def unit_key(unit: Unit, flags: list[str], tool_id: str) -> str:
    h = hashlib.sha256()
    for part in (CACHE_FORMAT, tool_id, "\0".join(flags), "\0".join(unit.flags), unit.text):
        h.update(part.encode("utf-8"))
        h.update(b"\0")
    for p in unit.local_headers:
        try:
            h.update(p.read_bytes())
        except OSError:
            h.update(b"<missing>")
    return h.hexdigest()


class Cache:
    """Content-addressed results: units/<key>.json and objects/<batch>.so."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "tmp").mkdir(parents=True, exist_ok=True)

    def _unit_path(self, key: str) -> Path:
        return self.root / "units" / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        try:
            rec = json.loads(self._unit_path(key).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        if rec.get("status") == "ok" and not (self.root / rec.get("object", "")).is_file():
            return None
        return rec

    def put(self, key: str, rec: dict[str, Any]) -> None:
        atomic.write_json(self._unit_path(key), rec)

    def store_object(self, built: Path, batch_key: str) -> str:
        rel = f"objects/{batch_key[:2]}/{batch_key}.so"
        dst = self.root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        os.replace(built, dst)
        return rel

    def tmpdir(self) -> Path:
        return Path(tempfile.mkdtemp(prefix="b-", dir=self.root / "tmp"))
