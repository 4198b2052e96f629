"""Headers of CUDA libraries that a CUDA toolkit may lack (cuBLAS, cuRAND, ...), found in installed wheels.

NVIDIA publishes each library as a PyPI wheel (`nvidia-curand`, `nvidia-cublas`) whose headers land in
`site-packages/nvidia/<dir>/include` (`nvidia/cu13/include` for CUDA 13). A toolkit installed without
them (a container's nvcc-only toolkit) then compiles code that includes `<curand_kernel.h>` once that
folder is on the include path. One lookup for both users: `build` (units that keep such an include) and
`verify` (original translation units, which include anything).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

# The wheel to install for a library header, by the header's prefix (said in a missing-header error).
_WHEEL_OF = {"curand": "nvidia-curand", "cublas": "nvidia-cublas", "cusparse": "nvidia-cusparse",
             "cufft": "nvidia-cufft", "cusolver": "nvidia-cusolver", "nccl": "nvidia-nccl",
             "cudnn": "nvidia-cudnn", "nvshmem": "nvidia-nvshmem", "npp": "nvidia-npp"}


@functools.lru_cache(maxsize=1)
def wheel_include_dirs() -> tuple[str, ...]:
    """`include` folders of installed CUDA library wheels: `site-packages/nvidia/*/include`."""
    spec = importlib.util.find_spec("nvidia")
    if spec is None or not spec.submodule_search_locations:
        return ()
    out: list[str] = []
    for base in spec.submodule_search_locations:
        out += [str(d) for d in sorted(Path(base).glob("*/include"))]
    return tuple(out)


@functools.lru_cache(maxsize=1)
def wheel_versions() -> str:
    """The CUDA library wheels installed (`nvidia-cublas==13.1.1.3 ...`): part of a compile's cache key,
    since a header they add can turn a failed compile into one that builds."""
    from importlib import metadata

    names = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()
                   if (d.metadata["Name"] or "").lower().startswith("nvidia-"))
    return " ".join(names)


@functools.lru_cache(maxsize=256)
def wheel_of_header(header: str) -> str | None:
    """The installed distribution (`nvidia-curand==10.4.0.35`) whose files hold include/<header>."""
    from importlib import metadata

    for d in metadata.distributions():
        name = d.metadata["Name"] or ""
        if not name.lower().startswith("nvidia-"):
            continue
        if any(str(f).replace("\\", "/").endswith(f"include/{header}") for f in d.files or ()):
            return f"{name}=={d.version}"
    return None


@functools.lru_cache(maxsize=8)
def toolkit_include_dirs(nvcc: str) -> tuple[str, ...]:
    """Where nvcc itself looks for headers, as `nvcc --dryrun` prints them (INCLUDES, SYSTEM_INCLUDES: the
    toolkit's include dir and the CCCL one CUDA 13 moved cub/thrust/cuda:: into). Asked rather than derived
    from nvcc's path: /usr/local/bin/nvcc may be a script that execs the real one. Falls back to
    <nvcc>/../include when the dry run says nothing."""
    out: list[str] = []
    try:
        proc = subprocess.run([nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
                              capture_output=True, text=True, timeout=60, check=False)
        text = proc.stdout + proc.stderr
    except (OSError, subprocess.TimeoutExpired):
        text = ""
    for m in re.finditer(r"^#\$ (?:SYSTEM_)?INCLUDES=(.*)$", text, re.M):
        for tok in shlex.split(m.group(1)):
            d = tok[2:] if tok.startswith("-I") else tok
            if d and not d.startswith("-") and os.path.isdir(d):
                real = os.path.realpath(d)
                if real not in out:
                    out.append(real)
    if not out:
        home = Path(os.path.realpath(nvcc)).parent.parent
        out += [str(d) for d in (home / "include", home / "include" / "cccl") if d.is_dir()]
    return tuple(out)


@dataclass(frozen=True)
class Found:
    header: str
    where: str            # "toolkit" | "wheel" | "missing"
    include_dir: str | None = None
    package: str | None = None   # the wheel, where == "wheel"

    def missing_message(self) -> str:
        """missing_toolkit_header: one line saying what is missing and what would provide it."""
        stem = self.header.split("/", 1)[0].split("_", 1)[0].split(".", 1)[0].lower()
        hint = next((w for p, w in _WHEEL_OF.items() if stem.startswith(p)), None)
        how = f"pip install {hint}" if hint else "install the CUDA library that ships it"
        return (f"missing_toolkit_header: <{self.header}> is in neither the CUDA toolkit nor an installed "
                f"nvidia-* wheel (site-packages/nvidia/*/include); {how}")


def locate(header: str, nvcc: str) -> Found:
    """Where `#include <header>` resolves for nvcc: the toolkit, an installed wheel (whose include dir the
    compile must add), or nowhere."""
    for d in toolkit_include_dirs(nvcc):
        if (Path(d) / header).is_file():
            return Found(header, "toolkit", d)
    for d in wheel_include_dirs():
        if (Path(d) / header).is_file():
            return Found(header, "wheel", d, wheel_of_header(header))
    return Found(header, "missing")
