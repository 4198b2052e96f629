"""Content-addressed cache of model answers: the same request is never sent twice."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from miner.dataset.atomic import write_json


def request_key(model: str, messages: list[dict[str, str]], params: dict[str, Any]) -> str:
    canon = json.dumps({"model": model, "messages": messages, "params": params},
                       sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


class ResponseCache:
    """One JSON file per answer under `root/<key[:2]>/<key>.json`; writes are atomic."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict[str, Any] | None:
        path = self._path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
            # A damaged entry is treated as absent and is overwritten by the next answer.
            return None
        return entry if isinstance(entry, dict) and "content" in entry else None

    def put(self, key: str, entry: dict[str, Any]) -> None:
        write_json(self._path(key), entry)
