"""The repositories a `mine` run covers: a LIST file of paths, or a folder whose subfolders are checkouts."""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from miner.errors import UsageError


@dataclass(frozen=True)
class Repo:
    key: str  # real path when it exists, else the path as given made absolute: the ledger's key
    path: str  # as the LIST gave it (absolute)
    exists: bool

    @property
    def slug(self) -> str:
        """A short file-name-safe name for staging folders and logs."""
        base = re.sub(r"[^A-Za-z0-9_.-]+", "_", os.path.basename(self.key.rstrip(os.sep)))[:40] or "repo"
        return f"{base}-{hashlib.sha256(self.key.encode()).hexdigest()[:10]}"


def _repo(path: str) -> Repo:
    absolute = os.path.abspath(path)
    exists = os.path.isdir(absolute)
    return Repo(key=os.path.realpath(absolute) if exists else absolute, path=absolute, exists=exists)


def read_list(spec: str) -> list[Repo]:
    """Repos in LIST order, each once. In a file, one path a line (`#` starts a comment; relative paths
    are relative to the file's folder). A folder: its subfolders, sorted by name (hidden ones skipped)."""
    p = Path(spec)
    if p.is_dir():
        paths = sorted(str(c) for c in p.iterdir() if c.is_dir() and not c.name.startswith("."))
        if not paths:
            raise UsageError(f"{spec}: folder holds no checkouts (subfolders)")
    elif p.is_file():
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise UsageError(f"{spec}: cannot read the repository list: {exc}") from None
        paths = []
        for line in text.splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                paths.append(line if os.path.isabs(line) else str(p.parent / line))
        if not paths:
            raise UsageError(f"{spec}: the repository list is empty")
    else:
        raise UsageError(f"{spec}: no such file or folder")
    out: dict[str, Repo] = {}
    for path in paths:
        r = _repo(path)
        out.setdefault(r.key, r)
    return list(out.values())
