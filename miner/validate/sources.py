"""Tests kept beside a kernel's source code, copied into its kernel folder before validation.

Convention: the tests of kernel NAME, defined in DIR/file.cu(h), live in DIR/tests/NAME/*.py
(e.g. examples/roi_pool/tests/roi_pool_forward_kernel/test_roi_pool_forward.py). They are ordinary
harness tests written as if they sat in <kernel-id>/tests/ (the kernel folder is
`Path(__file__).resolve().parents[1]`), so the same file works in either place.

`kernel-miner validate` finds the source file from metadata `source.path` (repo-relative) under each
root it is given (default: the current directory) or any parent of it, checks that the file still
holds the kernel's exact text, and copies every .py file of that tests folder into the kernel
folder's tests/ when it is missing there or older than the source copy (a newer copy in the dataset,
e.g. one a person edited, is left alone).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from miner.dataset.folder import KernelFolder


def source_file(kdir: Path, meta: dict[str, Any], roots: list[Path]) -> Path | None:
    """The kernel's defining file under one of `roots` (or their parents), if it holds the kernel text."""
    rel = (meta.get("source") or {}).get("path")
    if not rel:
        return None
    try:
        text = KernelFolder(kdir).kernel_text.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        text = ""
    for root in roots:
        try:
            root = root.resolve()
        except OSError:
            continue
        for base in (root, *root.parents):
            cand = base / rel
            if not cand.is_file():
                continue
            if not text or text in cand.read_text(encoding="utf-8", errors="replace"):
                return cand
            break  # same path, different code: another version of the file
    return None


def sync_tests(kdir: Path, meta: dict[str, Any], roots: list[Path]) -> dict[str, Any] | None:
    """Copy the source-side tests of this kernel into kdir/tests; None where it has none."""
    src = source_file(kdir, meta, roots)
    name = str(meta.get("name") or "")
    if src is None or not name:
        return None
    tdir = src.parent / "tests" / name
    files = sorted(f for f in tdir.glob("*.py") if f.is_file()) if tdir.is_dir() else []
    if not files:
        return None
    dest = kdir / "tests"
    dest.mkdir(exist_ok=True)
    copied = []
    for f in files:
        d = dest / f.name
        if d.exists() and (d.stat().st_mtime >= f.stat().st_mtime or d.read_bytes() == f.read_bytes()):
            continue
        tmp = d.with_name(f".{d.name}.tmp")
        shutil.copyfile(f, tmp)
        tmp.replace(d)
        copied.append(f.name)
    return {"dir": str(tdir), "files": [f.name for f in files], "copied": copied}
