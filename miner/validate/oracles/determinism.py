"""Determinism: the same launch on the same bytes, run twice, leaves the same bytes."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from miner.validate.oracles.capture import Launch
from miner.validate.oracles.replay import _base, _bits, replay


def check_determinism(launch: Launch, first: Sequence[Any], test: str | None = None) -> dict[str, Any]:
    """Second replay of `launch` vs the bytes `first` replay left; every byte must be equal."""
    entry = _base(launch, "determinism", test)
    t0 = time.perf_counter()
    second = replay(launch)
    diffs = []
    for buf, a, b in zip(launch.buffers, first, second, strict=True):
        n = int((_bits(a, buf.dtype) != _bits(b, buf.dtype)).sum())
        if n:
            diffs.append({"buffer": "/".join(buf.names), "mismatched": n, "elements": int(_bits(a, buf.dtype).numel())})
    entry.update(ok=not diffs, time_s=round(time.perf_counter() - t0, 4))
    if diffs:
        entry["diffs"] = diffs
        worst = max(diffs, key=lambda d: d["mismatched"])
        entry["reason"] = (f"two runs on identical inputs differ in {worst['mismatched']} of {worst['elements']} "
                           f"elements of {worst['buffer']} (no atomics in the unit: a race, uninitialised "
                           "memory or a read past a buffer)")
    return entry
