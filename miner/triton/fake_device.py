"""The build target as a device, for unit modules that ask for a GPU when they are imported.

Projects probe the device at import time (`torch.cuda.get_device_capability()[0] >= 8` to pick a
config list, `triton.runtime.driver.active.get_current_target()`, `get_device_properties(...)
.multi_processor_count`). On the build machine there is no GPU, so those imports fail before any kernel
is compiled. While the unit is imported in the build's child process, and only when no GPU is present,
these queries answer as the compile target (an sm_XY NVIDIA GPU with the properties of an H100 for
sm_90): the answers the code would get on the machine the PTX is built for. Every query answered is
recorded (`device_queries` in the build record), so a reader knows the module's import-time choices
were made for the target, not for a real device. Nothing that allocates or launches is faked.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

_GIB = 1 << 30
# Per target: streaming multiprocessors, memory, shared memory per block (opt-in), and a name.
_PROPS = {
    80: (108, 80 * _GIB, 166912, "NVIDIA A100 (kernel-miner build target sm_80)"),
    89: (128, 24 * _GIB, 101376, "NVIDIA L4 (kernel-miner build target sm_89)"),
    90: (132, 80 * _GIB, 232448, "NVIDIA H100 (kernel-miner build target sm_90)"),
}


def _props(arch: int) -> SimpleNamespace:
    sms, mem, smem, name = _PROPS.get(arch, _PROPS[90])
    return SimpleNamespace(name=name, major=arch // 10, minor=arch % 10, multi_processor_count=sms,
                           total_memory=mem, max_shared_memory_per_block_optin=smem, warp_size=32,
                           L2_cache_size=50 * (1 << 20), regs_per_multiprocessor=65536, gcnArchName="")


def _gpu_present() -> bool:
    try:
        import torch

        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001 - no torch, or a broken one: no device either way
        return False


class _Driver:
    """What `triton.runtime.driver.active` answers at import time without a GPU."""

    def __init__(self, arch: int, record: list[str]) -> None:
        self.arch, self.record = arch, record

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        self.record.append("triton.runtime.driver.active.get_current_target")
        return GPUTarget("cuda", self.arch, 32)

    def get_active_torch_device(self) -> Any:
        import torch

        self.record.append("triton.runtime.driver.active.get_active_torch_device")
        return torch.device("cuda", 0)

    def get_current_device(self) -> int:
        self.record.append("triton.runtime.driver.active.get_current_device")
        return 0

    def get_device_interface(self) -> Any:
        import torch

        self.record.append("triton.runtime.driver.active.get_device_interface")
        return torch.cuda

    @property
    def utils(self) -> Any:
        def get_device_properties(_dev: int = 0) -> dict[str, Any]:
            self.record.append("triton.runtime.driver.active.utils.get_device_properties")
            p = _props(self.arch)
            return {"multiprocessor_count": p.multi_processor_count,
                    "max_shared_mem": p.max_shared_memory_per_block_optin, "max_num_regs": 65536,
                    "warpSize": 32, "sm_clock_rate": 1980000, "mem_clock_rate": 2619000, "mem_bus_width": 5120}

        return SimpleNamespace(get_device_properties=get_device_properties)


@contextlib.contextmanager
def installed(arch: int, record: list[str]) -> Iterator[None]:
    """Answer device queries as the target `arch` (90 for sm_90) while the block runs; no-op with a GPU."""
    if _gpu_present():
        yield
        return
    import torch
    from triton.runtime import driver  # the DriverConfig object (it shadows the submodule's name)

    cuda = torch.cuda

    def answer(name: str, value: Any) -> Any:
        def f(*_a: Any, **_k: Any) -> Any:
            record.append(f"torch.cuda.{name}")
            return value() if callable(value) else value
        return f

    fakes = {
        "is_available": answer("is_available", True),
        "device_count": answer("device_count", 1),
        "current_device": answer("current_device", 0),
        "get_device_capability": answer("get_device_capability", (arch // 10, arch % 10)),
        "get_device_properties": answer("get_device_properties", lambda: _props(arch)),
        "get_device_name": answer("get_device_name", lambda: _props(arch).name),
        "get_arch_list": answer("get_arch_list", [f"sm_{arch}"]),
    }
    saved = {n: getattr(cuda, n) for n in fakes if hasattr(cuda, n)}
    saved_active = driver._active
    for n, f in fakes.items():
        setattr(cuda, n, f)
    driver.set_active(_Driver(arch, record))  # type: ignore[arg-type]
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(cuda, n, f)
        driver._active = saved_active
