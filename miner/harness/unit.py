"""A built unit loaded through ctypes and launched (`load_unit`, `Unit.launch`), the library an
instantiation resolves to, and launcher errors (`CudaLaunchError`)."""

from __future__ import annotations

import ctypes
import os
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import lazy_re
from miner.dataset.folder import KernelFolder
from miner.harness import state
from miner.harness.convert import Param, _convert, _dim3
from miner.harness.device import _stream_handle, _torch
from miner.harness.state import _LOADED, RECORDS

# Names for the cudaError_t values a launcher is likely to return; the rest print as numbers.
CUDA_ERROR_NAMES = {
    1: "cudaErrorInvalidValue",
    2: "cudaErrorMemoryAllocation",
    3: "cudaErrorInitializationError",
    9: "cudaErrorInvalidConfiguration",
    35: "cudaErrorInsufficientDriver",
    98: "cudaErrorInvalidDeviceFunction",
    100: "cudaErrorNoDevice",
    101: "cudaErrorInvalidDevice",
    200: "cudaErrorInvalidKernelImage",
    209: "cudaErrorNoKernelImageForDevice",
    222: "cudaErrorUnsupportedPtxVersion",
    400: "cudaErrorInvalidResourceHandle",
    700: "cudaErrorIllegalAddress",
    701: "cudaErrorLaunchOutOfResources",
    702: "cudaErrorLaunchTimeout",
    710: "cudaErrorAssert",
    715: "cudaErrorIllegalInstruction",
    716: "cudaErrorMisalignedAddress",
    719: "cudaErrorLaunchFailure",
    720: "cudaErrorCooperativeLaunchTooLarge",
    999: "cudaErrorUnknown",
}
# Codes that mean "this machine has no usable GPU", not "the kernel is wrong".
NO_GPU_CODES = frozenset({35, 100})

_ATOMICS = lazy_re.compile(
    r"\batomic[A-Z]\w*\s*\(|\bcuda::atomic|\b__nv_atomic|\bfastAtomicAdd\b"
    r"|\b(?:atom|red)\.(?:global|shared|gpu|sys|cta|relaxed|release|acquire|acq_rel|add|inc|dec|min|max|and|or"
    r"|xor|exch|cas)\b")


# The torch shim every unit that uses ATen names inlines (miner/units/render.py): it defines atomicAdd
# overloads whether or not the kernel calls them, so its text does not count.
_SHIM = Path(__file__).parents[1] / "frontends" / "include" / "unit" / "km_torch_unit.h"
_SHIM_TEXT: list[str] = []


def uses_atomics(source: str) -> bool:
    """True when CUDA source text calls atomics (atomicAdd, cuda::atomic, inline PTX atom./red.).

    The unit text holds the kernel and every helper it calls, so an atomic in a helper counts too
    (the inlined torch shim's unused overloads do not). Such kernels may legitimately give different
    bits from run to run (float addition order).
    """
    if not _SHIM_TEXT:
        try:
            _SHIM_TEXT.append(_SHIM.read_text(encoding="utf-8").strip())
        except OSError:
            _SHIM_TEXT.append("")
    if _SHIM_TEXT[0]:
        source = source.replace(_SHIM_TEXT[0], "")
    return bool(_ATOMICS.search(source))



class CudaLaunchError(RuntimeError):
    """The launcher returned a non-zero cudaError_t (bad configuration, too much shared memory...)."""

    def __init__(self, code: int, symbol: str) -> None:
        self.code = code
        self.symbol = symbol
        self.error_name = CUDA_ERROR_NAMES.get(code, f"cudaError({code})")
        super().__init__(f"CUDA error {code} ({self.error_name}) launching {symbol}")

    @property
    def no_gpu(self) -> bool:
        return self.code in NO_GPU_CODES


@dataclass
class Unit:
    """One instantiation of a kernel, loaded as a shared library."""

    kernel_dir: Path
    inst: str
    symbol: str
    params: list[Param]
    library: Path
    source: str
    _fn: Any = field(repr=False, default=None)

    @property
    def has_atomics(self) -> bool:
        return uses_atomics(self.source)

    def sibling(self, inst: str) -> Unit:
        """Another instantiation of the same kernel, already built (the oracles compare with it)."""
        return load_unit(self.kernel_dir, inst, build=False)

    def convert_arg(self, value: Any, param: Param) -> Any:
        """One kernel argument as the ctypes object the launcher takes."""
        return _convert(value, param)

    def invoke(self, grid: tuple[int, int, int], block: tuple[int, int, int], smem: int, stream: int,
               cargs: Sequence[Any]) -> int:
        """Call the launcher with converted arguments; returns its cudaError_t (no checks, no hooks)."""
        return int(self._fn(*[ctypes.c_uint(v) for v in grid], *[ctypes.c_uint(v) for v in block],
                            ctypes.c_ulong(int(smem)), ctypes.c_void_p(stream), *cargs))

    def launch(
        self,
        grid: int | Sequence[int],
        block: int | Sequence[int],
        *args: Any,
        smem: int = 0,
        stream: Any = None,
        sync: bool = False,
    ) -> None:
        """Launch on `stream` (default: torch's current stream); raise CudaLaunchError on failure.

        Tensors pass their device pointer, python numbers are converted to the parameter's C type.
        The launch is asynchronous like `<<<>>>`: errors inside the kernel (illegal address, trap)
        surface at the next synchronisation, or here if `sync=True`.
        """
        if len(args) != len(self.params):
            names = ", ".join(p.name for p in self.params)
            raise TypeError(f"{self.symbol} takes {len(self.params)} kernel arguments ({names}), "
                            f"got {len(args)}")
        g, b = _dim3(grid, "grid"), _dim3(block, "block")
        cargs = [self.convert_arg(a, p) for a, p in zip(args, self.params, strict=True)]
        handle = _stream_handle(stream)
        if state._LAUNCH_HOOK is not None:
            state._LAUNCH_HOOK(self, g, b, int(smem), handle, args)
        t0 = time.perf_counter()
        rc = self.invoke(g, b, int(smem), handle, cargs)
        if RECORDS["first_launch_s"] is None:
            RECORDS["first_launch_s"] = time.perf_counter() - t0
        RECORDS["launches"] += 1
        if rc != 0:
            err = CudaLaunchError(int(rc), self.symbol)
            RECORDS["launch_errors"].append({"symbol": self.symbol, "code": err.code, "name": err.error_name})
            raise err
        if sync:
            _torch().cuda.synchronize()

    __call__ = launch


def load_unit(kernel_dir: str | Path, inst: str | None = None, *, build: bool = True) -> Unit:
    """Load instantiation `inst` (default: the first) of the kernel folder `kernel_dir`.

    The library is `build.library` from metadata.json; where none is recorded the unit is compiled
    next to its source by the build stage's single-unit path (miner.builder.single) unless `build=False`.
    """
    t0 = time.perf_counter()
    kdir = Path(kernel_dir).resolve()
    folder = KernelFolder(kdir)
    meta = folder.metadata()
    entry = pick_instantiation(meta, inst)
    launcher = entry.get("launcher") or {}
    symbol = launcher.get("symbol")
    if not symbol:
        raise ValueError(f"{kdir.name}: instantiation {entry.get('id')!r} records no launcher.symbol")
    params = [Param(p.get("name", f"arg{i}"), p.get("type", ""), p.get("ctype", "pointer"))
              for i, p in enumerate(launcher.get("params", []))]
    unit_path = folder.unit_path(entry)
    library = library_path(kdir, entry)
    if library is None:
        if not build:
            raise FileNotFoundError(f"{kdir.name}: instantiation {entry['id']!r} is not built")
        from miner.builder.single import build_unit

        library = build_unit(unit_path)
    lib = ctypes.CDLL(str(library), mode=ctypes.RTLD_LOCAL)
    fn = getattr(lib, f"km_launch_{symbol}" if not symbol.startswith("km_launch_") else symbol)
    fn.restype = ctypes.c_int
    fn.argtypes = None  # arguments are converted to exact ctypes objects in Unit.launch
    source = unit_path.read_text(encoding="utf-8", errors="replace") if unit_path.exists() else ""
    unit = Unit(kdir, entry["id"], symbol, params, library, source, fn)
    _LOADED.append(unit)
    RECORDS["loads"].append({"kernel": kdir.name, "inst": unit.inst, "load_s": time.perf_counter() - t0})
    return unit


def pick_instantiation(meta: dict[str, Any], inst: str | None) -> dict[str, Any]:
    insts = meta.get("instantiations") or []
    if not insts:
        raise ValueError(f"{meta.get('id', '?')}: metadata.json has no instantiations")
    if inst is None:
        return insts[0]
    for entry in insts:
        if entry.get("id") == inst:
            return entry
    known = ", ".join(str(e.get("id")) for e in insts)
    raise KeyError(f"{meta.get('id', '?')}: no instantiation {inst!r} (have: {known})")


def toolchain() -> str:
    """`hip` on a ROCm PyTorch (which also names its device `cuda`) or with KM_TOOLCHAIN=hip, else `cuda`.

    torch is not imported for this: a test imports it before loading units; validate's parent process,
    which must not, sets KM_TOOLCHAIN from its --toolchain."""
    chosen = os.environ.get("KM_TOOLCHAIN", "").strip().lower()
    if chosen in ("cuda", "hip"):
        return chosen
    torch = sys.modules.get("torch")
    return "hip" if getattr(getattr(torch, "version", None), "hip", None) else "cuda"


def build_block(entry: dict[str, Any]) -> dict[str, Any]:
    """The instantiation's build record for this platform's toolchain (`build` or `build_hip`)."""
    return entry.get("build_hip" if toolchain() == "hip" else "build") or {}


def library_path(kdir: Path, entry: dict[str, Any]) -> Path | None:
    """The built library of an instantiation, or None when it must still be built."""
    recorded = build_block(entry).get("library")
    if recorded and (kdir / recorded).is_file():
        return kdir / recorded
    folder = KernelFolder(kdir)
    unit_cu = folder.unit_path(entry)
    if toolchain() == "hip":  # HIP units are built by `kernel-miner build --toolchain hip` only
        return None
    local = folder.library_beside(entry)
    if local.is_file() and (not unit_cu.exists() or local.stat().st_mtime >= unit_cu.stat().st_mtime):
        return local
    return None
