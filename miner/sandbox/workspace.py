"""The private working area of one sandboxed child, and the one way results come back out of it.

Layout: WORK/<kernel folder name>/ (a private copy of the kernel folder: the test's cwd),
WORK/home ($HOME), WORK/tmp ($TMPDIR). Only regular files directly inside the result area
(WORK/<kernel>/validation by default) are copied back: no symlinks (a test could point one at a
secret), no folders, each at most MAX_FILE bytes.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

from miner.dataset.atomic import write_bytes

MAX_FILE = 64 << 20
RESULT_AREA = "validation"
_SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", RESULT_AREA)


def make(root: str | os.PathLike[str] | None = None) -> Path:
    """A fresh, empty work area (mode 0700) under `root` (default: the system temp folder)."""
    if root is not None:
        Path(root).mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix="km-sbx-", dir=root))


def copy_in(kernel_dir: Path, work: Path) -> Path:
    """Copy the kernel folder (without its results and bytecode) into `work`; returns the copy."""
    dest = work / kernel_dir.name
    shutil.copytree(kernel_dir, dest, symlinks=True, ignore=_SKIP)
    (dest / RESULT_AREA).mkdir(exist_ok=True)
    return dest


def copy_back(area: Path, dest: Path, max_bytes: int = MAX_FILE) -> list[str]:
    """Copy the regular files of `area` into `dest` (atomically each); returns the names copied."""
    copied = []
    try:
        names = sorted(os.listdir(area))
    except OSError:
        return copied
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        try:
            fd = os.open(area / name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue  # a symlink (ELOOP), a vanished file...
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                continue
            with os.fdopen(fd, "rb", closefd=False) as fh:
                data = fh.read(max_bytes + 1)
        finally:
            os.close(fd)
        if len(data) > max_bytes:
            data = data[:max_bytes] + b"\n[truncated by the sandbox]\n"
        write_bytes(dest / name, data)
        copied.append(name)
    return copied


def remove(work: Path) -> None:
    """Delete a work area whatever the test did to its permissions."""
    def fix(func, path, exc):  # type: ignore[no-untyped-def]
        try:
            os.chmod(os.path.dirname(path), 0o700)
            os.chmod(path, 0o700)
            func(path)
        except OSError:
            pass

    shutil.rmtree(work, onerror=fix)
