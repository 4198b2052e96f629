"""Per-kernel resource usage from clang's `-Rpass-analysis=kernel-resource-usage` remarks (hipcc)."""

from __future__ import annotations

from typing import Any

from miner import lazy_re

_NAME = lazy_re.compile(r"remark: Function Name: (\S+)")
_FIELD = lazy_re.compile(r"remark:\s+([A-Za-z][A-Za-z ]*?)(?: \[([^\]]+)\])?: (\d+)")
_KEYS = {
    "SGPRs": "sgprs", "VGPRs": "vgprs", "AGPRs": "agprs", "ScratchSize": "scratch_bytes",
    "Occupancy": "occupancy", "SGPRs Spill": "sgpr_spill", "VGPRs Spill": "vgpr_spill", "LDS Size": "lds_bytes",
}


def parse_remarks(log: str, arch: str) -> dict[str, dict[str, Any]]:
    """{"<mangled kernel>@<arch>": sgprs, vgprs, agprs, scratch_bytes (per lane), occupancy (waves per
    SIMD), sgpr_spill, vgpr_spill, lds_bytes (per block)}. With several --offload-arch targets the
    remarks do not say which target they are for: the first report of a kernel, the first arch's, is kept."""
    entries: dict[str, dict[str, Any]] = {}
    current: dict[str, Any] | None = None
    for line in log.splitlines():
        if m := _NAME.search(line):
            key = f"{m.group(1)}@{arch}"
            current = None if key in entries else entries.setdefault(key, {"kernel": m.group(1), "arch": arch})
        elif current is not None and (m := _FIELD.search(line)) and m.group(1) in _KEYS:
            current[_KEYS[m.group(1)]] = int(m.group(3))
    return entries
