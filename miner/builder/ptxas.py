"""Per-kernel resource usage (registers, shared/constant memory, stack, spills) from `ptxas -v`."""

from __future__ import annotations

import re
import shutil
import subprocess
from typing import Any

from miner import lazy_re

_ENTRY = lazy_re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_PROPS = lazy_re.compile(r"Function properties for (\S+)")
_FRAME = lazy_re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = lazy_re.compile(r"Used (\d+) registers")


def parse_resources(log: str) -> dict[str, dict[str, Any]]:
    """ptxas -v output -> {"<mangled entry>@<arch>": registers, shared/constant bytes, stack, spills}."""
    entries: dict[str, dict[str, Any]] = {}
    entry: str | None = None
    arch = ""
    props: str | None = None
    frames: dict[tuple[str, str], tuple[int, int, int]] = {}
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            arch = m.group(2)
            entry = f"{m.group(1)}@{arch}"
            entries.setdefault(entry, {"kernel": m.group(1), "arch": arch})
        elif m := _PROPS.search(line):
            props = m.group(1)
        elif (m := _FRAME.search(line)) and props:
            frames[(props, arch)] = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        elif (m := _USED.search(line)) and entry:
            r = entries[entry]
            r["registers"] = int(m.group(1))
            sm = re.search(r"(\d+) bytes smem", line)
            cm = re.search(r"(\d+) bytes cmem\[0\]", line)
            bar = re.search(r"used (\d+) barriers", line)
            r["shared_bytes"] = int(sm.group(1)) if sm else 0
            r["constant_bytes"] = int(cm.group(1)) if cm else 0
            if bar:
                r["barriers"] = int(bar.group(1))
    for r in entries.values():
        stack, stores, loads = frames.get((r["kernel"], r["arch"]), (0, 0, 0))
        r.update(stack_bytes=stack, spill_stores=stores, spill_loads=loads)
    return entries


def demangle(names: list[str]) -> dict[str, str]:
    """Readable kernel names, without the batch namespace (its mangling is a build detail)."""
    tool = shutil.which("c++filt")
    out = {n: n for n in names}
    if tool and names:
        try:
            res = subprocess.run([tool], input="\n".join(names) + "\n", capture_output=True, text=True,
                                 timeout=30, check=False)
            lines = res.stdout.splitlines()
            if res.returncode == 0 and len(lines) == len(names):
                out = dict(zip(names, lines, strict=True))
        except (OSError, subprocess.TimeoutExpired):
            pass
    return {k: re.sub(r"\bkm_b\d+_::", "", v) for k, v in out.items()}


def pick_resources(entries: dict[str, dict[str, Any]], kernel_name: str) -> dict[str, Any] | None:
    """The unit's own kernel among its entries (a mangled name holds `<len><name>`)."""
    if not entries:
        return None
    # The first real arch of --arch is the one reported (ptxas assembles them in that order).
    needle = f"{len(kernel_name)}{kernel_name}"
    chosen = next((r for r in entries.values() if needle in r["kernel"] or r["kernel"] == kernel_name),
                  next(iter(entries.values())))
    r = dict(chosen)
    r["kernel"] = demangle([r["kernel"]])[r["kernel"]]
    return r
