"""Headers of CUDA libraries that a CUDA toolkit may lack (cuBLAS, cuRAND, ...), found in installed wheels.

NVIDIA publishes each library as a PyPI wheel (`nvidia-curand`, `nvidia-cublas`) whose headers land in
`site-packages/nvidia/<dir>/include` (`nvidia/cu13/include` for CUDA 13). A toolkit installed without
them (a container's nvcc-only toolkit) then compiles code that includes `<curand_kernel.h>` once that
folder is on the include path. One lookup for both users: `build` (units that keep such an include) and
`verify` (original translation units, which include anything).

Header-only template libraries published as wheels too (CUTLASS and CuTe: `nvidia-cutlass`, headers in
`site-packages/cutlass_library/source/include/{cutlass,cute}`) are found the same way (`HEADER_LIBRARIES`):
code that includes `cutlass/cutlass.h` from a git submodule a plain checkout lacks is parsed against the
wheel's copy, its units keep the `#include`s, and the build adds the wheel's include dir.
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
             "cudnn": "nvidia-cudnn", "nvshmem": "nvidia-nvshmem", "npp": "nvidia-npp",
             "cutlass": "nvidia-cutlass", "cute": "nvidia-cutlass"}


@dataclass(frozen=True)
class HeaderLibrary:
    """A header-only library a wheel ships (CUTLASS/CuTe): the include folders (`cutlass/`, `cute/`) found under
    `<package>/<subdir>` of the installed package, the names and macro prefixes its users write."""

    wheel: str               # the distribution to pip install
    package: str             # the import package that holds the headers (found with find_spec, never imported)
    subdir: str              # the include dir inside it
    parts: tuple[str, ...]   # the top-level include folders: `#include <cutlass/...>`, `<cute/...>`
    names: frozenset[str]    # namespaces a unit that needs it names
    macro_prefixes: tuple[str, ...]
    label: str               # how a reason names it


HEADER_LIBRARIES = (HeaderLibrary("nvidia-cutlass", "cutlass_library", "source/include", ("cutlass", "cute"),
                                  frozenset({"cutlass", "cute"}), ("CUTLASS_", "CUTE_"), "CUTLASS"),)


def header_library_of(spelled: str) -> HeaderLibrary | None:
    """The wheel library an include spelled `cutlass/gemm/gemm.h` (or `cute/tensor.hpp`) belongs to."""
    top = spelled.lstrip("./").split("/", 1)
    if len(top) < 2:
        return None
    return next((lib for lib in HEADER_LIBRARIES if top[0] in lib.parts), None)


@functools.lru_cache(maxsize=8)
def header_library_dir(lib: HeaderLibrary) -> str | None:
    """The installed wheel's include dir of `lib`, None where the wheel is not installed. The package is found,
    not imported (cutlass_library's import pulls its Python dependencies)."""
    try:
        spec = importlib.util.find_spec(lib.package)
    except (ImportError, ValueError):
        return None
    for base in (spec.submodule_search_locations or []) if spec is not None else []:
        d = Path(base) / lib.subdir
        if all((d / part).is_dir() for part in lib.parts):
            return os.path.realpath(str(d))
    return None


@functools.lru_cache(maxsize=64)
def header_library_cache_tag(include_dir: str) -> str:
    """A macro name that holds the version of the wheel whose include dir this is (`KM_WHEEL_nvidia_cutlass_4_2_0_0`):
    defined in the parse of the translation units parsed with it, so that the parse cache, keyed by the parse's
    arguments, does not serve a parse made with another release of the headers."""
    from importlib import metadata

    for lib in HEADER_LIBRARIES:
        if header_library_dir(lib) == include_dir:
            try:
                version = metadata.version(lib.wheel)
            except metadata.PackageNotFoundError:
                version = "unknown"
            return "KM_WHEEL_" + re.sub(r"\W", "_", f"{lib.wheel}_{version}")
    return "KM_WHEEL_unknown"


def needs_message(lib: HeaderLibrary) -> str:
    """What a unit that keeps the library's includes says when the wheel is not installed."""
    return f"needs {lib.label}: pip install {lib.wheel}"


@functools.lru_cache(maxsize=1)
def wheel_include_dirs() -> tuple[str, ...]:
    """`include` folders of installed CUDA library wheels: `site-packages/nvidia/*/include`."""
    spec = importlib.util.find_spec("nvidia")
    out: list[str] = []
    for base in spec.submodule_search_locations if spec is not None and spec.submodule_search_locations else ():
        out += [str(d) for d in sorted(Path(base).glob("*/include"))]
    # Header-only libraries of other wheels (CUTLASS): after the CUDA libraries', so a project's own copy, on an
    # -I of its own, wins.
    out += [d for lib in HEADER_LIBRARIES if (d := header_library_dir(lib)) is not None and d not in out]
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
        lib = header_library_of(self.header)
        if lib is not None:
            return (f"missing_toolkit_header: <{self.header}> {needs_message(lib)} (the tree holds no copy of "
                    f"{lib.label}, typically a git submodule the checkout lacks; the wheel's headers are found as "
                    f"site-packages/{lib.package}/{lib.subdir})")
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
