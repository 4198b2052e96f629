"""HIP runtime headers a CUDA unit gets from nvcc without naming them, to be named in its HIP unit.

A CUDA header often brings others with it: with CUDA 13, `<cooperative_groups/reduce.h>` pulls in
`cuda_bf16.h` through CCCL, so a unit that includes it and uses `__nv_bfloat16` compiles with nvcc. The
mapping renames `__nv_bfloat16` and that include, but HIP's `<hip/hip_cooperative_groups.h>` does not
bring `<hip/hip_bf16.h>`: the HIP unit would stop at `use of undeclared identifier '__hip_bfloat16'`.

Which headers those are is asked of the preprocessor that compiled the CUDA unit (`nvcc -M` of each
`#include <...>` the unit names, less what an empty file pulls in), never listed by hand; each one that the
hipify mapping maps to a HIP runtime header (`hip/...`, part of every HIP install) is included in the HIP
unit right after the include that brought it, followed by `#line` so that compiler messages keep the CUDA
unit's line numbers. Without nvcc there is nothing to ask, and nothing is added.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from functools import lru_cache
from pathlib import Path

from miner import lazy_re
from miner.dataset import atomic

_INCLUDE = lazy_re.compile(r"^[ \t]*#[ \t]*include[ \t]*<([^<>\s]+)>", re.M)
_FORMAT = "km-implied-1"


@lru_cache(maxsize=1)
def nvcc() -> str | None:
    return shutil.which("nvcc") or next((str(p) for p in (Path(os.environ.get("CUDA_HOME") or "/usr/local/cuda")
                                                          / "bin" / "nvcc",) if os.access(p, os.X_OK)), None)


@lru_cache(maxsize=1)
def identity() -> str:
    """What the added headers depend on besides the unit text: the nvcc asked (path and file), or none.
    Part of the HIP translation's cache key."""
    path = nvcc()
    if path is None:
        return "nvcc: none"
    st = Path(path).resolve().stat()
    return f"nvcc: {Path(path).resolve()} {st.st_size} {st.st_mtime_ns}"


def _closure(header: str | None) -> frozenset[str]:
    """Toolkit-relative paths of every header `#include <header>` brings with nvcc (None: an empty file,
    i.e. what nvcc always includes). Empty when nvcc fails (a header it does not have)."""
    from miner import cuda_libs  # lazy: only a HIP translation that misses its cache asks nvcc

    path = nvcc()
    if path is None:
        return frozenset()
    with tempfile.TemporaryDirectory(prefix="km-implied-") as tmp:
        src = Path(tmp) / "h.cu"
        src.write_text(f"#include <{header}>\n" if header else "\n", encoding="utf-8")
        try:
            out = subprocess.run([path, "-M", "-x", "cu", "-std=c++17", str(src)], capture_output=True, text=True,
                                 timeout=120, check=False, cwd=tmp)
        except (OSError, subprocess.TimeoutExpired):
            return frozenset()
    if out.returncode != 0:
        return frozenset()
    roots = sorted(cuda_libs.toolkit_include_dirs(path), key=len, reverse=True)
    found: set[str] = set()
    for tok in out.stdout.replace("\\\n", " ").split():
        real = os.path.realpath(tok)
        for root in roots:
            if real.startswith(root + os.sep):
                found.add(real[len(root) + 1:])
                break
    return frozenset(found)


class Implied:
    """Closures per header, kept in memory and in the build cache (an nvcc -M costs about a second)."""

    def __init__(self, cache_root: Path | None) -> None:
        self.cache_root = cache_root
        self.memo: dict[str | None, frozenset[str]] = {}

    def closure(self, header: str | None) -> frozenset[str]:
        if header in self.memo:
            return self.memo[header]
        key = hashlib.sha256(f"{_FORMAT}\0{identity()}\0{header}".encode()).hexdigest()
        path = self.cache_root / "hipify" / "implied" / f"{key[:32]}.json" if self.cache_root else None
        result: frozenset[str] | None = None
        if path is not None:
            try:
                result = frozenset(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError):
                result = None
        if result is None:
            result = _closure(header)
            if path is not None:
                atomic.write_json(path, sorted(result))
        self.memo[header] = result
        return result

    def add(self, cuda_text: str, hip_text: str, mapping: dict[str, str]) -> str:
        """hip_text with the HIP runtime headers that the CUDA unit's includes bring under nvcc and the
        HIP unit does not include yet, each after the include that brings it."""
        if nvcc() is None or "#" not in cuda_text:
            return hip_text
        included = set(_INCLUDE.findall(hip_text))
        lines = hip_text.split("\n")
        cuda_lines = cuda_text.split("\n")
        if len(lines) != len(cuda_lines):
            return hip_text   # the translation keeps lines one for one; anything else is left alone
        base: frozenset[str] | None = None
        inserts: dict[int, list[str]] = {}
        for n, line in enumerate(cuda_lines):
            m = _INCLUDE.match(line)
            if not m:
                continue
            if base is None:
                base = self.closure(None)
            for rel in sorted(self.closure(m.group(1)) - base):
                target = mapping.get(rel)
                if target and target.startswith("hip/") and target not in included:
                    included.add(target)
                    inserts.setdefault(n, []).append(target)
        if not inserts:
            return hip_text
        out: list[str] = []
        for n, line in enumerate(lines):
            out.append(line)
            if n in inserts:
                out += [f"#include <{t}>  // kernel-miner: nvcc brings it with <{_INCLUDE.match(cuda_lines[n])[1]}>"
                        for t in inserts[n]]
                out.append(f"#line {n + 2}")
        return "\n".join(out)
