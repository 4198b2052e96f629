"""The state tests of one process share: the records validate reads (RECORDS), the loaded units and the
launch hook the oracles set. One home, so every module of the harness sees the same objects."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from miner.harness.unit import Unit


def oracles_enabled() -> bool:
    """Oracles run unless KM_ORACLES=0 (`kernel-miner validate --no-oracles` sets it)."""
    return os.environ.get("KM_ORACLES", "1") != "0"


# What the pytest plugin (miner/validate/plugin.py) writes into the result file of a test process.
RECORDS: dict[str, Any] = {
    "loads": [],
    "launches": 0,
    "launch_errors": [],
    "first_launch_s": None,
    "cuda_init_s": None,
    "cuda_prewarmed": False,  # context created before the request, by the fork runner's spare
    "bench": [],
    "oracles": [],
    "current_test": None,  # node id of the running test, set by the plugin
}
_LOADED: list[Unit] = []
# Called as hook(unit, grid, block, smem, stream_handle, args) before every launch: the oracles
# (miner/validate/oracles/) record launches through it to replay them after the test.
_LAUNCH_HOOK: Callable[..., None] | None = None


def set_launch_hook(hook: Callable[..., None] | None) -> Callable[..., None] | None:
    """Install `hook` (or None) to be called before every Unit.launch; returns the previous one."""
    global _LAUNCH_HOOK
    previous, _LAUNCH_HOOK = _LAUNCH_HOOK, hook
    return previous

def record_oracle(entry: dict[str, Any]) -> None:
    """Keep an oracle result for the validation record (with the running test's node id)."""
    entry.setdefault("test", RECORDS.get("current_test"))
    RECORDS["oracles"].append(entry)
