"""Which nvcc, which version (part of every cache key) and which flags: the build's fixed inputs."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from miner.errors import UsageError
from miner.targets import NVCC_ARCH

DEFAULT_ARCH = NVCC_ARCH
DEFAULT_BATCH = 12
DEFAULT_TIMEOUT = 300.0


def find_executable(name: str, explicit: str | None, homes: list[str | None], hint: str) -> str:
    """`explicit` (a path or a name on PATH), else `name` on PATH, else <home>/bin/<name>; a UsageError
    saying how to provide one when none is found."""
    if explicit:
        path = shutil.which(explicit) or (explicit if os.access(explicit, os.X_OK) and Path(explicit).is_file()
                                          else None)
        if not path:
            raise UsageError(f"{name} not found or not executable: {explicit}")
        return str(Path(path).resolve())
    found = shutil.which(name)
    for home in homes:
        if not found and home and os.access(Path(home) / "bin" / name, os.X_OK):
            found = str(Path(home) / "bin" / name)
    if not found:
        raise UsageError(f"{name} not found: {hint}")
    return str(Path(found).resolve())


def find_nvcc(explicit: str | None = None) -> str:
    """The nvcc to use, or a UsageError saying how to provide one."""
    return find_executable("nvcc", explicit,
                           [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"],
                           "install the CUDA toolkit, put nvcc on PATH or pass --nvcc PATH")


def toolchain_id(nvcc: str) -> str:
    """`nvcc --version` plus the host compiler's version line: both change the output."""
    try:
        out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"cannot run {nvcc} --version: {exc}") from None
    if out.returncode != 0 or "release" not in out.stdout:
        raise UsageError(f"{nvcc} --version failed: {(out.stderr or out.stdout).strip()[:200]}")
    host = ""
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx:
        try:
            host = subprocess.run([cxx, "--version"], capture_output=True, text=True, timeout=30,
                                  check=False).stdout.splitlines()[0]
        except (OSError, subprocess.TimeoutExpired, IndexError):
            host = ""
    return out.stdout.strip() + "\n" + host


def nvcc_release(tool_id: str) -> str:
    m = re.search(r"release [\d.]+, V([\d.]+)", tool_id)
    return m.group(1) if m else "unknown"


def gencode_flags(arch: str) -> list[str]:
    """`sm_90,compute_90` -> -gencode flags; sm_X is a real arch, compute_X embeds PTX."""
    flags: list[str] = []
    items = [a.strip() for a in arch.split(",") if a.strip()]
    if not items:
        raise UsageError("--arch is empty")
    for item in items:
        m = re.fullmatch(r"(sm|compute)_(\d+[a-z]?)", item)
        if not m:
            raise UsageError(f"--arch: {item!r} is not sm_NN or compute_NN (e.g. sm_90, sm_90a, compute_90)")
        kind, num = m.groups()
        flags += ["-gencode", f"arch=compute_{num},code={kind}_{num}"]
    return flags


@dataclass
class BuildOptions:
    arch: str = DEFAULT_ARCH
    jobs: int = 2
    timeout: float = DEFAULT_TIMEOUT
    batch_size: int = DEFAULT_BATCH
    force: bool = False
    extra_flags: list[str] = field(default_factory=list)
    cache_dir: Path | None = None

    def nvcc_flags(self) -> list[str]:
        # Host code is only launch stubs: optimising it buys nothing and costs host-compile time.
        return ["-shared", "-Xcompiler", "-fPIC", "-Xcompiler", "-O0", *gencode_flags(self.arch),
                "-Xptxas", "-v", *self.extra_flags]
