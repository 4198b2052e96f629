"""Load a built kernel unit and launch it from Python with torch tensors, through ctypes.

No torch headers are compiled anywhere: a unit is a plain shared library exposing the launcher ABI
(docs/ARCHITECTURE.md), and tensors are passed as raw device pointers (`tensor.data_ptr()`).

    from miner import harness
    unit = harness.load_unit("extracted/saxpy-0123abcd4567", "float")
    unit.launch((n + 255) // 256, 256, out, x, y, 2.0, n)

torch is imported lazily, so this package also works where torch is absent (loading a unit does
not need it; launching on the default stream, tensors and `benchmark` do).

This is the public test API (user-written and generated tests import it as `miner.harness`): every
name tests use is imported here, so `harness.X` is the same object wherever it is defined. The state
those tests share (the loaded units, the records validate reads, RECORDS, and the launch hook the
oracles set) has one home, `state`.

Modules, one job each:
  state    RECORDS, the loaded units, the launch hook, oracle records, KM_ORACLES
  convert  kernel arguments as the launcher's ctypes objects (`Param`, `pointee_size`)
  device   torch loaded lazily, the current stream, `cuda_available`, `require_gpu`
  unit     `load_unit`, `Unit.launch`, the library of an instantiation, `CudaLaunchError`, `uses_atomics`
  bench    `benchmark` (CUDA-event timing, determinism), `assert_instantiations_agree`
"""

from miner.harness.bench import BenchResult, assert_instantiations_agree, benchmark
from miner.harness.convert import Param, _check_element_size, _convert, pointee_size
from miner.harness.device import cuda_available, require_gpu
from miner.harness.state import RECORDS, oracles_enabled, record_oracle, set_launch_hook
from miner.harness.unit import (
    CUDA_ERROR_NAMES,
    NO_GPU_CODES,
    CudaLaunchError,
    Unit,
    build_block,
    library_path,
    load_unit,
    pick_instantiation,
    toolchain,
    uses_atomics,
)

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
# Imported for `harness.X` users (validate, the oracles, tests), not part of `from miner.harness import *`.
_REEXPORTED = (CUDA_ERROR_NAMES, NO_GPU_CODES, Param, RECORDS, _check_element_size, _convert, build_block,
               library_path, oracles_enabled, pick_instantiation, pointee_size, record_oracle, set_launch_hook,
               toolchain, uses_atomics)
