"""The SQLite ledger of a `mine` run: what was done per repo, stage, file and kernel, so a killed run resumes.

Every state change is one committed transaction (journal + synchronous=FULL), so `kill -9` at any moment
leaves the ledger at the last finished step. The dataset folders are the data; the ledger says which of
them a repo has committed and which stages are finished.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

LEDGER = "ledger.sqlite"
STAGES = ("extract", "build", "validate")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS repos (
  key TEXT PRIMARY KEY,          -- real path of the checkout
  ordinal INTEGER NOT NULL,      -- position in the LIST when first seen (export and index order)
  path TEXT NOT NULL,
  license TEXT,
  files INTEGER,
  kernels INTEGER,
  note TEXT,
  updated REAL
);
CREATE TABLE IF NOT EXISTS stages (
  repo TEXT NOT NULL,
  stage TEXT NOT NULL,           -- extract | build | validate
  state TEXT NOT NULL,           -- running | committing | done | failed | skipped
  attempts INTEGER NOT NULL DEFAULT 0,
  started REAL,
  seconds REAL,
  error TEXT,
  detail TEXT,                   -- JSON: counts the stage reported
  PRIMARY KEY (repo, stage)
);
CREATE TABLE IF NOT EXISTS files (
  repo TEXT NOT NULL,
  path TEXT NOT NULL,            -- relative to the repo
  kernels INTEGER NOT NULL,
  error TEXT,
  PRIMARY KEY (repo, path)
);
CREATE TABLE IF NOT EXISTS kernels (
  id TEXT PRIMARY KEY,
  repo TEXT NOT NULL,
  path TEXT,
  name TEXT,
  start_line INTEGER,
  build TEXT,                    -- ok | failed | none (no unit compiled) | NULL (not built)
  validation TEXT,               -- the validate outcome, NULL before
  error TEXT                     -- e.g. an id another repo already holds
);
CREATE INDEX IF NOT EXISTS kernels_repo ON kernels(repo);
CREATE TABLE IF NOT EXISTS runs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  started REAL NOT NULL,
  finished REAL,
  argv TEXT,
  executor TEXT
);
"""


class Ledger:
    def __init__(self, ds: Path) -> None:
        self.path = ds / LEDGER
        self.db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self.db.row_factory = sqlite3.Row
        self.db.execute("PRAGMA synchronous=FULL")
        self.db.executescript(_SCHEMA)

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield self.db
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    # runs -----------------------------------------------------------------------------------------------
    def start_run(self, argv: list[str], executor: str) -> int:
        with self.tx() as db:
            cur = db.execute("INSERT INTO runs(started, argv, executor) VALUES (?,?,?)",
                             (time.time(), json.dumps(argv), executor))
            return int(cur.lastrowid or 0)

    def finish_run(self, run_id: int) -> None:
        with self.tx() as db:
            db.execute("UPDATE runs SET finished=? WHERE id=?", (time.time(), run_id))

    # repos ----------------------------------------------------------------------------------------------
    def add_repos(self, keys: Iterable[tuple[str, str]]) -> None:
        with self.tx() as db:
            n = db.execute("SELECT COALESCE(MAX(ordinal), -1) FROM repos").fetchone()[0]
            for key, path in keys:
                if db.execute("SELECT 1 FROM repos WHERE key=?", (key,)).fetchone() is None:
                    n += 1
                    db.execute("INSERT INTO repos(key, ordinal, path, updated) VALUES (?,?,?,?)",
                               (key, n, path, time.time()))

    def repo(self, key: str) -> dict[str, Any]:
        row = self.db.execute("SELECT * FROM repos WHERE key=?", (key,)).fetchone()
        return dict(row) if row else {}

    def repos(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM repos ORDER BY ordinal")]

    # stages ---------------------------------------------------------------------------------------------
    def stage(self, repo: str, stage: str) -> dict[str, Any]:
        row = self.db.execute("SELECT * FROM stages WHERE repo=? AND stage=?", (repo, stage)).fetchone()
        return dict(row) if row else {}

    def stages(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM stages ORDER BY repo, stage")]

    def begin_stage(self, repo: str, stage: str) -> int:
        """Mark a stage running and count the attempt; returns the attempt number."""
        with self.tx() as db:
            db.execute("INSERT OR IGNORE INTO stages(repo, stage, state) VALUES (?,?,'running')", (repo, stage))
            db.execute("UPDATE stages SET state='running', attempts=attempts+1, started=?, seconds=NULL, "
                       "error=NULL WHERE repo=? AND stage=?", (time.time(), repo, stage))
            return int(db.execute("SELECT attempts FROM stages WHERE repo=? AND stage=?",
                                  (repo, stage)).fetchone()[0])

    def end_stage(self, repo: str, stage: str, state: str, seconds: float | None,
                  error: str | None = None, detail: dict[str, Any] | None = None) -> None:
        with self.tx() as db:
            db.execute("INSERT OR IGNORE INTO stages(repo, stage, state) VALUES (?,?,?)", (repo, stage, state))
            db.execute("UPDATE stages SET state=?, seconds=?, error=?, detail=? WHERE repo=? AND stage=?",
                       (state, None if seconds is None else round(seconds, 3), error,
                        json.dumps(detail) if detail is not None else None, repo, stage))

    # kernels and files ----------------------------------------------------------------------------------
    def kernel_ids(self, repo: str) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM kernels WHERE repo=? ORDER BY id", (repo,))]

    def owner(self, kernel_id: str) -> str | None:
        row = self.db.execute("SELECT repo FROM kernels WHERE id=?", (kernel_id,)).fetchone()
        return row[0] if row else None

    def kernels(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM kernels ORDER BY repo, path, start_line, id")]

    def files(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.db.execute("SELECT * FROM files ORDER BY repo, path")]

    def set_kernel_outcomes(self, rows: Iterable[tuple[str | None, str | None, str]]) -> None:
        """(build, validation, id) per kernel."""
        with self.tx() as db:
            db.executemany("UPDATE kernels SET build=?, validation=? WHERE id=?", list(rows))
