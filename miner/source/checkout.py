"""Where a source tree's project begins: the git checkout that holds it. Kept apart from miner.source.context (which
brings the parser stack) so that the whole-run record's key (miner.extract.run_inputs) can ask before any import
of it."""

from __future__ import annotations

import os


def project_root(path: str) -> str:
    """The git checkout that holds `path`, else the folder of `path` (or `path` if it is one)."""
    start = path if os.path.isdir(path) else os.path.dirname(path)
    d = start
    while True:
        if os.path.exists(os.path.join(d, ".git")):
            return d
        parent = os.path.dirname(d)
        if parent == d:
            return start
        d = parent
