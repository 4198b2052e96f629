"""The dataset's copy of a vendored header library (units.closure.vendored): a unit that #includes glm
builds from the dataset alone, wherever the project's checkout went.

Copied once per dataset and library content into `<dataset>/vendor/<name>-<hash>/`, laid out as under
the project's include dir (`vendor/glm-1a2b3c4d5e6f/glm/glm.hpp`), so the unit's include lines stay
those the project wrote. The folder name holds the hash of every file copied: a library that changes
gets a new folder, and the build's cache key (which has the include dir) changes with it.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from typing import Any

VENDOR_DIR = "vendor"
_copied: dict[tuple[str, str, tuple[str, ...]], str] = {}  # per process: every kernel of a TU asks


def _files(include_dir: str, parts: list[str]) -> list[str]:
    """Regular files of the parts, relative to include_dir, sorted; links that leave it are skipped."""
    out: list[str] = []
    real_root = os.path.realpath(include_dir)
    for part in parts:
        top = os.path.join(include_dir, part)
        walk = [(include_dir, [], [part])] if os.path.isfile(top) else os.walk(top)
        for dp, _dns, fns in walk:
            for f in fns:
                path = os.path.join(dp, f)
                if os.path.isfile(path) and os.path.realpath(path).startswith(real_root + os.sep):
                    out.append(os.path.relpath(path, include_dir))
    return sorted(set(out))


def carry(out_dir: str, include_dir: str, parts: list[str]) -> str:
    """Copy the parts into the dataset (once per content); the copy's folder relative to `out_dir`."""
    key = (os.path.realpath(out_dir), include_dir, tuple(parts))
    if key in _copied:
        return _copied[key]
    files = _files(include_dir, parts)
    h = hashlib.sha256()
    for rel in files:
        with open(os.path.join(include_dir, rel), "rb") as fh:
            h.update(rel.encode() + b"\0" + hashlib.sha256(fh.read()).digest())
    name = os.path.splitext(parts[0])[0] if parts else "lib"
    rel_dir = f"{VENDOR_DIR}/{name}-{h.hexdigest()[:12]}"
    dst = os.path.join(out_dir, rel_dir)
    if not os.path.isdir(dst):
        # Copied beside and renamed into place: a killed run leaves no half library under that name.
        os.makedirs(os.path.join(out_dir, VENDOR_DIR), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".tmp-", dir=os.path.join(out_dir, VENDOR_DIR))
        try:
            for rel in files:
                os.makedirs(os.path.dirname(os.path.join(tmp, rel)), exist_ok=True)
                shutil.copyfile(os.path.join(include_dir, rel), os.path.join(tmp, rel))
            try:
                os.rename(tmp, dst)
            except OSError:
                if not os.path.isdir(dst):  # another process put the same copy there first: fine
                    raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    _copied[key] = rel_dir
    return rel_dir


def metadata(out_dir: str, entries: list[dict[str, Any]], rel_source) -> list[dict[str, Any]]:
    """closure.vendored of a kernel: each library copied into the dataset, with the include dir the build
    adds relative to the kernel's folder (`../vendor/glm-<hash>`)."""
    out = []
    for e in entries:
        if e.get("wheel"):
            # A wheel's header library (CUTLASS): not carried; the build finds the installed wheel's copy.
            out.append({"library": e["parts"][0] if e["parts"] else "", "wheel": e["wheel"], "include_dir": "",
                        "headers": list(e["headers"]), "defines": list(e.get("defines", [])),
                        "prelude": list(e.get("prelude", [])), "source": _wheel_source(e)})
            continue
        rel_dir = carry(out_dir, e["include_dir"], e["parts"])
        out.append({"library": os.path.splitext(e["parts"][0])[0] if e["parts"] else "",
                    "include_dir": f"../{rel_dir}", "headers": list(e["headers"]),
                    "defines": list(e.get("defines", [])), "prelude": list(e.get("prelude", [])),
                    "source": rel_source(e["include_dir"])})
    return out


def _wheel_source(e: dict[str, Any]) -> str:
    """`nvidia-cutlass==4.2.0.0`: the wheel the parse read the library from, or that it needs, not installed."""
    from miner import cuda_libs

    found = cuda_libs.wheel_of_header(e["headers"][0]) if e["include_dir"] and e["headers"] else None
    return found or f"{e['wheel']} (not installed)"
