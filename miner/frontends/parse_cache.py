"""libclang parse results cached across runs, keyed by content and flags: an unchanged tree is not parsed again.

The key of a translation unit covers the miner's own code and shipped headers, the clang arguments, whether
units are analysed, and every project file the unit reaches by its includes (path, sha256, input or context
file). A change to any of them is a miss. Results are pickled (our own files, in our own cache folder);
`KM_PARSE_CACHE=off` turns the cache off, `KM_PARSE_CACHE=DIR` moves it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from miner.dataset import atomic

ENV = "KM_PARSE_CACHE"
# The stored form of a parse: a ParseResult whose analysis (closures, launches, explicit instantiations) is
# plain data (units.records.TUAnalysis.to_dict). Bumped when that form changes; the code id covers the rest.
FORMAT = 2


def _code_files(root: Path) -> list[str]:
    """The files `code_id` covers, relative to `root` (posix), sorted. `os.walk` with bytecode folders left
    out: `Path.rglob` with an `is_file` per entry took as long as reading and hashing the files (about
    20 ms of every run's start-up, `.pyc` files included)."""
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = Path(folder).relative_to(root)
        for name in files:
            path = rel / name
            if path.suffix in (".py", ".h", ".hpp", ".cuh") or "include" in path.parts:
                found.append(path.as_posix())
    return sorted(found)


@functools.cache
def code_id() -> str:
    """The miner's Python sources and shipped headers: a new version of either parses again."""
    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for rel in _code_files(root):
        h.update(rel.encode() + b"\0" + (root / rel).read_bytes() + b"\0")
    return h.hexdigest()


class ParseCache:
    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.hits = 0
        self.misses = 0
        self.errors = 0  # parses that failed (`store_result` did not store them)
        self.entry_hits: dict[str, int] = {}  # by kind of entry
        self.entry_misses: dict[str, int] = {}

    @classmethod
    def open(cls) -> ParseCache | None:
        value = os.environ.get(ENV, "")
        if value.lower() in ("off", "0", "no"):
            return None
        if value:
            folder = Path(value)
        else:
            base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
            folder = Path(base) / "kernel-miner" / "parse"
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError:
            return None  # an unwritable cache is no cache, not an error
        return cls(folder)

    @staticmethod
    def key(root: str, args: list[str], units: bool, reach: Iterable[str], data: Mapping[str, bytes],
            inputs: set[str], context: frozenset[str]) -> str:
        files = [[p, hashlib.sha256(data.get(p, b"")).hexdigest(), p in inputs, p in context] for p in sorted(reach)]
        text = json.dumps([FORMAT, code_id(), root, args, units, files], separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / key[:2] / f"{key}.pkl"

    def load(self, key: str) -> Any | None:
        try:
            with open(self._path(key), "rb") as fh:
                res = pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
            self.misses += 1
            return None
        self.hits += 1
        return res

    def store(self, key: str, result: Any, path: Path | None = None) -> None:
        try:
            atomic.write_bytes(path or self._path(key), pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL))
        except (OSError, pickle.PicklingError):
            pass

    def store_result(self, key: str, result: Any) -> None:
        """A parse's result, stored unless it failed (`result.error`): a failed parse is tried again."""
        if getattr(result, "error", None):
            self.errors += 1
        else:
            self.store(key, result)

    # Other stages' entries (extract's rendered units) beside the parses, in their own folder and counts:
    # the hit line of the parse cache stays about translation units.
    def _entry_path(self, key: str) -> Path:
        return self.folder / "entries" / key[:2] / f"{key}.pkl"

    def load_entry(self, key: str, kind: str) -> Any | None:
        try:
            with open(self._entry_path(key), "rb") as fh:
                res = pickle.load(fh)
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, ValueError):
            self.entry_misses[kind] = self.entry_misses.get(kind, 0) + 1
            return None
        self.entry_hits[kind] = self.entry_hits.get(kind, 0) + 1
        return res

    def entry_key(self, kind: str, *parts: Any) -> str:
        """A key over the miner's code and `parts` (JSON; anything else by repr)."""
        blob = json.dumps([kind, code_id(), *parts], sort_keys=True, separators=(",", ":"), default=repr)
        return hashlib.sha256(blob.encode()).hexdigest()

    def store_entry(self, key: str, value: Any) -> None:
        self.store(key, value, self._entry_path(key))
