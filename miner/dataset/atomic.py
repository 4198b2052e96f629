"""Atomic file writes: a reader, or a run killed mid-write, never sees half a file."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_bytes(path: str | os.PathLike[str], data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_bytes_if_changed(path: str | os.PathLike[str], data: bytes) -> bool:
    """write_bytes unless the file already holds exactly these bytes (a rerun that changes nothing then
    writes nothing, and the file keeps its mtime); True when it wrote."""
    try:
        with open(path, "rb") as fh:
            if fh.read(len(data) + 1) == data:
                return False
    except OSError:
        pass
    write_bytes(path, data)
    return True


def write_text(path: str | os.PathLike[str], text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


def dumps(obj: Any) -> str:
    return json.dumps(obj, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def write_json(path: str | os.PathLike[str], obj: Any) -> None:
    write_text(path, dumps(obj))
