"""Build one unit into its launcher library when the build stage has not recorded one.

A narrow seam: miner/builder/__init__.py (the build stage) replaces this; validate only needs
`compile_unit(unit_cu) -> Path` raising BuildError with the compiler's first error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

DEFAULT_ARCH = os.environ.get("KM_CUDA_ARCH", "sm_90")


class BuildError(RuntimeError):
    """nvcc is missing, failed, or ran past its time limit."""


def nvcc_command(unit_cu: Path, library: Path, arch: str = DEFAULT_ARCH) -> list[str]:
    return ["nvcc", "-shared", "-Xcompiler", "-fPIC", f"-arch={arch}", "-o", str(library), str(unit_cu)]


def compile_unit(unit_cu: str | Path, *, arch: str = DEFAULT_ARCH, timeout: float = 300) -> Path:
    """Compile `unit_cu` into `libunit.so` beside it; return the library's path."""
    unit_cu = Path(unit_cu)
    if not unit_cu.is_file():
        raise BuildError(f"{unit_cu}: no such unit")
    if shutil.which("nvcc") is None:
        raise BuildError("nvcc not found on PATH")
    library = unit_cu.with_name("libunit.so")
    # Compile to a temp name and rename so a concurrent loader never dlopens half a library.
    fd, tmp = tempfile.mkstemp(prefix=".libunit.", suffix=".so", dir=unit_cu.parent)
    os.close(fd)
    try:
        proc = subprocess.run(nvcc_command(unit_cu, Path(tmp), arch), capture_output=True, text=True,
                              timeout=timeout, start_new_session=True)
        if proc.returncode != 0:
            raise BuildError(first_error(proc.stderr + proc.stdout) or f"nvcc exited {proc.returncode}")
        os.replace(tmp, library)
    except subprocess.TimeoutExpired as exc:
        raise BuildError(f"nvcc ran past {timeout:g} s") from exc
    finally:
        Path(tmp).unlink(missing_ok=True)
    return library


def first_error(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln[:500]
    return lines[0][:500] if lines else ""
