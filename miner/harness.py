"""Load a built kernel unit and launch it from Python with torch tensors, through ctypes.

No torch headers are compiled anywhere: a unit is a plain shared library exposing the launcher ABI
(docs/ARCHITECTURE.md), and tensors are passed as raw device pointers (`tensor.data_ptr()`).

    from miner import harness
    unit = harness.load_unit("extracted/saxpy-0123abcd4567", "float")
    unit.launch((n + 255) // 256, 256, out, x, y, 2.0, n)

torch is imported lazily, so this module also works where torch is absent (loading a unit does
not need it; launching on the default stream, tensors and `benchmark` do).

This is the public test API (user-written and generated tests import it as `miner.harness`), and it
holds state those tests share: the loaded-unit cache, the records validate reads (RECORDS) and the
launch hook the oracles set. It stays one module, over the ~400-line guide, so that state has one home.
"""

from __future__ import annotations

import ctypes
import math
import os
import re
import statistics
import struct
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from miner.dataset.folder import KernelFolder

__all__ = [
    "BenchResult",
    "CudaLaunchError",
    "Unit",
    "assert_instantiations_agree",
    "benchmark",
    "cuda_available",
    "load_unit",
    "require_gpu",
]

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

_CTYPES: dict[str, Any] = {
    "pointer": ctypes.c_void_p,
    "int8": ctypes.c_int8,
    "int16": ctypes.c_int16,
    "int32": ctypes.c_int32,
    "int64": ctypes.c_int64,
    "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16,
    "uint32": ctypes.c_uint32,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
    # 16-bit floats travel as their bit pattern: same size and register class in the SysV ABI.
    "half": ctypes.c_uint16,
    "bfloat16": ctypes.c_uint16,
    "bool": ctypes.c_bool,
}

_ATOMICS = re.compile(
    r"\batomic[A-Z]\w*\s*\(|\bcuda::atomic|\b__nv_atomic|\bfastAtomicAdd\b"
    r"|\b(?:atom|red)\.(?:global|shared|gpu|sys|cta|relaxed|release|acquire|acq_rel|add|inc|dec|min|max|and|or"
    r"|xor|exch|cas)\b")


# The torch shim every unit that uses ATen names inlines (miner/units/render.py): it defines atomicAdd
# overloads whether or not the kernel calls them, so its text does not count.
_SHIM = Path(__file__).with_name("frontends") / "include" / "unit" / "km_torch_unit.h"
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


def oracles_enabled() -> bool:
    """Oracles run unless KM_ORACLES=0 (`kernel-miner validate --no-oracles` sets it)."""
    return os.environ.get("KM_ORACLES", "1") != "0"


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


# What the pytest plugin (miner/validate/plugin.py) writes into the result file of a test process.
RECORDS: dict[str, Any] = {
    "loads": [],
    "launches": 0,
    "launch_errors": [],
    "first_launch_s": None,
    "cuda_init_s": None,
    "cuda_prewarmed": False,  # context created before the request, by the fork runner's spare
    "bench": [],
    "oracles": [],
    "current_test": None,  # node id of the running test, set by the plugin
}
_LOADED: list[Unit] = []
# Called as hook(unit, grid, block, smem, stream_handle, args) before every launch: the oracles
# (miner/validate/oracles/) record launches through it to replay them after the test.
_LAUNCH_HOOK: Callable[..., None] | None = None


def set_launch_hook(hook: Callable[..., None] | None) -> Callable[..., None] | None:
    """Install `hook` (or None) to be called before every Unit.launch; returns the previous one."""
    global _LAUNCH_HOOK
    previous, _LAUNCH_HOOK = _LAUNCH_HOOK, hook
    return previous


@dataclass
class Param:
    name: str
    type: str
    ctype: str


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
        if _LAUNCH_HOOK is not None:
            _LAUNCH_HOOK(self, g, b, int(smem), handle, args)
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


def _dim3(v: int | Sequence[int], what: str) -> tuple[int, int, int]:
    dims = [int(v)] if isinstance(v, int) else [int(x) for x in v]
    if not 1 <= len(dims) <= 3 or any(d < 0 for d in dims):
        raise ValueError(f"{what} must be an int or 1 to 3 non-negative ints, got {v!r}")
    return (dims + [1, 1])[0], (dims + [1, 1])[1], (dims + [1, 1])[2]


def _convert(value: Any, p: Param) -> Any:
    kind = p.ctype
    if kind == "struct":
        if not isinstance(value, ctypes.Structure | ctypes.Union):
            raise TypeError(f"parameter {p.name} ({p.type}) is a struct: pass a ctypes.Structure")
        return value
    if kind == "pointer":
        if value is None:
            return ctypes.c_void_p(0)
        if hasattr(value, "data_ptr"):
            if getattr(value, "device", None) is not None and value.device.type != "cuda":
                raise ValueError(f"parameter {p.name}: tensor is on {value.device}, not on a CUDA device")
            _check_element_size(value, p)
            return ctypes.c_void_p(value.data_ptr())
        if isinstance(value, int):
            return ctypes.c_void_p(value)
        raise TypeError(f"parameter {p.name} is a pointer: pass a CUDA tensor, an int address or None")
    if kind not in _CTYPES:
        raise TypeError(f"parameter {p.name}: unsupported ctype {kind!r}")
    if hasattr(value, "item"):
        value = value.item()
    if kind == "half":
        return ctypes.c_uint16(struct.unpack("<H", struct.pack("<e", float(value)))[0])
    if kind == "bfloat16":
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        return ctypes.c_uint16((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16)  # round to nearest even
    if kind in ("float32", "float64"):
        return _CTYPES[kind](float(value))
    if kind == "bool":
        return ctypes.c_bool(bool(value))
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(f"parameter {p.name} is {p.type}: got non-integer {value!r}")
    return _CTYPES[kind](int(value))


# Pointee types whose size is certain; a tensor of another element size is a test bug that makes
# the kernel read past the buffer (e.g. float64 boxes for a `const float *`).
_POINTEE_SIZE = {
    "float": 4, "double": 8, "half": 2, "__half": 2, "Half": 2, "__nv_bfloat16": 2, "nv_bfloat16": 2,
    "BFloat16": 2, "__nv_half": 2, "int": 4, "unsigned": 4, "unsigned int": 4, "int32_t": 4, "uint32_t": 4,
    "long long": 8, "unsigned long long": 8, "int64_t": 8, "uint64_t": 8, "long": 8, "unsigned long": 8,
    "size_t": 8, "short": 2, "unsigned short": 2, "int16_t": 2, "uint16_t": 2,
}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|struct|signed)\b|\b\w+::")


def pointee_size(ctype_text: str) -> int | None:
    """Element size of a single-level pointer type such as `const float* __restrict__`, if known."""
    text = str(ctype_text)
    if text.count("*") != 1 or "[" in text or "(" in text:
        return None
    base = " ".join(_QUALIFIERS.sub(" ", text.replace("*", " ")).split())
    return _POINTEE_SIZE.get(base)


def _check_element_size(value: Any, p: Param) -> None:
    want = pointee_size(p.type)
    have = getattr(getattr(value, "dtype", None), "itemsize", None)
    if want and have and want != have:
        raise TypeError(f"parameter {p.name} is {p.type} ({want}-byte elements) but the tensor is "
                        f"{value.dtype} ({have}-byte elements)")


def _torch() -> Any:
    import torch

    return torch


def _stream_handle(stream: Any) -> int:
    if stream is None:
        torch = _torch()
        return int(torch.cuda.current_stream().cuda_stream)
    if isinstance(stream, int):
        return stream
    handle = getattr(stream, "cuda_stream", None)
    if handle is None:
        raise TypeError("stream must be None, an int handle or an object with .cuda_stream")
    return int(handle)


def cuda_available() -> bool:
    try:
        return bool(_torch().cuda.is_available())
    except ImportError:
        return False


def require_gpu() -> None:
    """Skip the calling test (or, at module level, the whole file) where no CUDA GPU is usable."""
    import pytest

    if not cuda_available():
        pytest.skip("no CUDA GPU", allow_module_level=True)
    if RECORDS["cuda_init_s"] is None:
        # Create the context here, so its cost shows as start-up overhead, not inside a test.
        torch = _torch()
        t0 = time.perf_counter()
        torch.cuda.init()
        torch.zeros(1, device="cuda")
        torch.cuda.synchronize()
        RECORDS["cuda_init_s"] = time.perf_counter() - t0


# --------------------------------------------------------------------------- timing and oracles


@dataclass
class BenchResult:
    name: str
    kernel_ms: float
    ref_ms: float | None
    speedup: float | None
    reps: int
    deterministic: bool | None  # None: not checked (atomics in the unit, or no outputs to compare)
    kernel_ms_all: list[float] = field(default_factory=list)


def benchmark(
    fn: Callable[..., Any],
    ref_fn: Callable[..., Any] | None = None,
    make_inputs: Callable[[], Sequence[Any]] | None = None,
    *,
    outputs: Sequence[int] = (),
    warmup: int = 3,
    reps: int = 30,
    input_sets: int = 3,
    flush_l2: bool = True,
    check_determinism: bool = True,
    name: str | None = None,
) -> BenchResult:
    """Time `fn(*inputs)` against `ref_fn(*inputs)` with CUDA events; median of `reps` runs.

    `make_inputs()` must build fresh random inputs (all-zero float tensors are refused); it is
    called `input_sets` times and runs rotate through the sets. Before every timed run the
    tensors at positions `outputs` are poisoned (all bytes 0xFF, NaN for floats) and L2 is flushed
    by writing a buffer twice its size. Unless the loaded units use atomics, `fn` is also run
    twice on identical inputs and its outputs must match bit for bit, or AssertionError is raised.
    The result is recorded for `kernel-miner validate` (pass_perf, speedup).
    """
    torch = _torch()
    label = name or getattr(fn, "__name__", "kernel")
    sets = [tuple(make_inputs()) for _ in range(max(1, input_sets))] if make_inputs else [()]
    for args in sets:
        for i, a in enumerate(args):
            if isinstance(a, torch.Tensor) and a.is_floating_point() and i not in outputs \
                    and a.numel() > 1 and not bool(a.any()):
                raise ValueError(f"benchmark {label}: input {i} is all zeros; make_inputs must be random")
    flush = None
    if flush_l2:
        l2 = getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0)
        flush = torch.empty(max(2 * int(l2), 1 << 20), dtype=torch.uint8, device="cuda")

    def timed(f: Callable[..., Any]) -> list[float]:
        for i in range(warmup):
            f(*sets[i % len(sets)])
        pairs = []
        for i in range(reps):
            args = sets[i % len(sets)]
            _poison(torch, args, outputs)
            if flush is not None:
                flush.fill_(i & 0xFF)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            f(*args)
            end.record()
            pairs.append((start, end))
        torch.cuda.synchronize()
        return [s.elapsed_time(e) for s, e in pairs]

    k_ms = timed(fn)
    r_ms = timed(ref_fn) if ref_fn is not None else None
    deterministic = None
    if check_determinism and outputs and make_inputs and not any(u.has_atomics for u in _LOADED):
        deterministic = _same_bits_twice(torch, fn, sets[0], outputs)
    k_med = statistics.median(k_ms)
    r_med = statistics.median(r_ms) if r_ms else None
    speedup = (r_med / k_med) if (r_med and k_med > 0) else None
    result = BenchResult(label, k_med, r_med, speedup, reps, deterministic, k_ms)
    rec = asdict(result)
    rec.pop("kernel_ms_all")
    RECORDS["bench"].append(rec)
    if deterministic is False:
        record_oracle({"oracle": "determinism", "source": "benchmark", "name": label, "ok": False})
        raise AssertionError(f"{label}: two runs on identical inputs gave different bits "
                             "(no atomics in the unit, so the kernel is nondeterministic or reads "
                             "uninitialised memory)")
    if deterministic:
        record_oracle({"oracle": "determinism", "source": "benchmark", "name": label, "ok": True})
    return result


def record_oracle(entry: dict[str, Any]) -> None:
    """Keep an oracle result for the validation record (with the running test's node id)."""
    entry.setdefault("test", RECORDS.get("current_test"))
    RECORDS["oracles"].append(entry)


def _poison(torch: Any, args: Sequence[Any], outputs: Sequence[int]) -> None:
    for i in outputs:
        t = args[i]
        if t.is_contiguous():
            t.view(torch.uint8).fill_(0xFF)
        else:
            t.fill_(math.nan if t.is_floating_point() else -1)


def _same_bits_twice(torch: Any, fn: Callable[..., Any], args: Sequence[Any], outputs: Sequence[int]) -> bool:
    results = []
    for _ in range(2):
        fresh = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        _poison(torch, fresh, outputs)
        fn(*fresh)
        torch.cuda.synchronize()
        results.append([fresh[i].contiguous().view(torch.uint8) for i in outputs])
    return all(torch.equal(a, b) for a, b in zip(results[0], results[1], strict=True))


def assert_instantiations_agree(
    kernel_dir: str | Path,
    run: Callable[..., Any],
    make_inputs: Callable[[Any], Sequence[Any]],
    *,
    low: str = "float",
    high: str = "double",
    rtol: float = 1e-4,
    atol: float = 1e-5,
) -> None:
    """Oracle: the `low` and `high` precision instantiations compute the same thing.

    `make_inputs(dtype)` builds inputs in `dtype` (float64 is asked first, then cast down to
    float32 so both see the same values); `run(unit, *inputs)` launches and returns the output
    tensor.
    """
    torch = _torch()
    u_lo, u_hi = load_unit(kernel_dir, low), load_unit(kernel_dir, high)
    hi_inputs = list(make_inputs(torch.float64))
    lo_inputs = [a.to(torch.float32) if isinstance(a, torch.Tensor) and a.dtype == torch.float64 else a
                 for a in hi_inputs]
    out_hi = run(u_hi, *hi_inputs)
    out_lo = run(u_lo, *lo_inputs)
    torch.cuda.synchronize()
    ok = bool(torch.allclose(out_lo.to(torch.float64), out_hi, rtol=rtol, atol=atol, equal_nan=False))
    worst = float((out_lo.to(torch.float64) - out_hi).abs().max()) if out_hi.numel() else 0.0
    record_oracle({"oracle": "instantiations_agree", "source": "test", "name": f"{low} vs {high}",
                   "inst": low, "vs": high, "ok": ok, "max_abs_diff": worst, "rtol": rtol, "atol": atol})
    if not ok:
        raise AssertionError(f"instantiations {low} and {high} disagree: max |diff| {worst:.3g} "
                             f"(rtol {rtol}, atol {atol})")
