"""A ROCm/HIP install in a prefix of its own (`--hip-path DIR`, `$KM_HIP_PATH`): where its hipcc, HIP headers
and AMDGPU device libraries are, and the environment that makes that hipcc use them.

Two layouts are accepted: a ROCm install (`/opt/rocm`: bin/hipcc, include/hip, amdgcn/bitcode) and Debian
packages unpacked with `dpkg-deb -x` into DIR (DIR/usr/bin/hipcc, DIR/usr/include/hip, the device libraries
in clang's resource folder DIR/usr/lib/llvm-N/lib/clang/N/amdgcn/bitcode), as `KM_HIP=trixie
scripts/install.sh` makes. hipcc would otherwise take HIP_PATH from its own location but ROCM_PATH and the
device libraries from fixed system paths, i.e. mix the prefix's headers with another release's bitcode.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from miner.errors import UsageError

ENV_VAR = "KM_HIP_PATH"


@dataclass(frozen=True)
class RocmPrefix:
    root: Path                  # the folder holding bin/hipcc and include/hip
    hipcc: Path
    device_libs: Path | None    # amdgcn/bitcode; None leaves hipcc/clang to their default search

    def env(self) -> dict[str, str]:
        """HIP_PATH / ROCM_PATH / DEVICE_LIB_PATH for this prefix: hipcc (perl and C++ drivers alike) turns
        them into --hip-path / --rocm-path / --hip-device-lib-path for clang."""
        env = {"HIP_PATH": str(self.root), "ROCM_PATH": str(self.root)}
        if self.device_libs is not None:
            env["DEVICE_LIB_PATH"] = str(self.device_libs)
        return env


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", str(path)))


def _device_libs(root: Path) -> Path | None:
    """amdgcn/bitcode of this prefix: ROCm's own place first, else the newest clang resource folder's
    (Debian's rocm-device-libs-N), else a multiarch lib folder's."""
    own = root / "amdgcn" / "bitcode"
    if (own / "ockl.bc").is_file():
        return own
    patterns = ("lib/llvm-*/lib/clang/*/amdgcn/bitcode/ockl.bc", "llvm/lib/clang/*/amdgcn/bitcode/ockl.bc",
                "lib/*/amdgcn/bitcode/ockl.bc")
    found = [p.parent for pattern in patterns for p in root.glob(pattern)]
    return max(found, key=_version_key) if found else None


def resolve(prefix: str) -> RocmPrefix:
    """The ROCm install in `prefix` (DIR or DIR/usr), or a UsageError in one line saying what is missing."""
    base = Path(prefix).expanduser()
    if not base.is_dir():
        raise UsageError(f"--hip-path / ${ENV_VAR}: {prefix}: not a directory")
    for root in (base, base / "usr"):
        hipcc = root / "bin" / "hipcc"
        if (root / "include" / "hip" / "hip_runtime.h").is_file() and os.access(hipcc, os.X_OK):
            return RocmPrefix(root.resolve(), hipcc.resolve(), _device_libs(root.resolve()))
    raise UsageError(f"--hip-path / ${ENV_VAR}: {prefix}: no bin/hipcc with include/hip/hip_runtime.h there "
                     f"(nor under usr/); give a ROCm install or a folder made by KM_HIP=trixie scripts/install.sh")


def configured(explicit: str | None = None) -> RocmPrefix | None:
    """The prefix named by --hip-path, else by $KM_HIP_PATH, else None (hipcc as found on PATH / ROCM_PATH)."""
    prefix = explicit or os.environ.get(ENV_VAR)
    return resolve(prefix) if prefix else None
