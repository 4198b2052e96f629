"""Kernels launched only from sources the build generates: a translation unit `#include`s a file that is not
in the tree, and a script beside it (`*.py`, CMake, shell) writes a file of that name.

Such a kernel is named nowhere in the mined sources (`launch_missing: not_referenced` would call it dead
code), yet its launches exist once the generator has run (an extension whose `setup.py` runs a Python script
that writes `*_forward.cu` with one launch per template combination). The miner does not run project
scripts; it states the reason instead (`launch_missing: generated_source`, `args_missing:
generated_launcher`), naming the missing files and the scripts that write them.
"""

from __future__ import annotations

import os
import re
from typing import Any

from miner import lazy_re

_NOT_FOUND = lazy_re.compile(r"'([^']+)' file not found")
_SCRIPTS = (".py", ".cmake", ".sh", ".txt", ".in")
_MAX_SCRIPT = 1_000_000  # bytes: a larger file is no generator script


def missing_includes(meta: dict[str, Any]) -> list[str]:
    """Project-style includes (`"x.cu"`, not `<...>` system headers) the kernel's parse did not find."""
    out = []
    for msg in (meta.get("diagnostics") or {}).get("messages", []):
        m = _NOT_FOUND.search(msg)
        if m and "/" not in m.group(1) and os.path.splitext(m.group(1))[1] in (".cu", ".cuh", ".h", ".inc", ".inl"):
            out.append(m.group(1))
    return list(dict.fromkeys(out))


def writers(meta: dict[str, Any], root: str) -> dict[str, list[str]]:
    """For each missing include, the scripts beside the kernel's file or its translation unit that name it
    (paths relative to `root`); only the missing files some script names."""
    missing = missing_includes(meta)
    if not missing:
        return {}
    ctx = meta.get("parse_context") or {}
    dirs = {os.path.dirname(os.path.join(root, p)) for p in (meta["source"]["path"], ctx.get("translation_unit"))
            if p}
    out: dict[str, list[str]] = {}
    for d in sorted(dirs):
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for n in names:
            path = os.path.join(d, n)
            if not (n.endswith(_SCRIPTS) or n == "CMakeLists.txt") or not os.path.isfile(path) \
                    or os.path.getsize(path) > _MAX_SCRIPT:
                continue
            try:
                text = open(path, encoding="utf-8", errors="replace").read()
            except OSError:
                continue
            for inc in missing:
                if re.search(rf"(?<![\w.]){re.escape(inc)}\b", text):
                    out.setdefault(inc, []).append(os.path.relpath(path, root))
    return out


def launch_missing(name: str, found: dict[str, list[str]]) -> dict[str, Any]:
    """The `launch_missing` block of a kernel named nowhere whose translation unit lacks generated files."""
    files = ", ".join(sorted(found))
    scripts = ", ".join(sorted({s for lst in found.values() for s in lst}))
    return {"reason": "generated_source",
            "detail": f"{name} is named nowhere in the mined sources, but its translation unit includes {files}, "
                      f"which the tree lacks and {scripts} writes: its launches are in sources the build "
                      "generates (the miner runs no project script)",
            "mentions": sorted({s for lst in found.values() for s in lst})[:5]}
