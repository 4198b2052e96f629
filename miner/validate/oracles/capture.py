"""Launches recorded while a test runs: grid, block, shared memory and a copy of every tensor argument's
whole storage, taken on the launch's stream just before the launch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

PER_UNIT = 2  # recorded launches per instantiation and test: the first ones, before any timing loop


PER_TEST = 4


MAX_BYTES = 1 << 30  # storages larger than this in one launch are not copied


@dataclass
class Buffer:
    snapshot: Any  # uint8 tensor: the storage's bytes just before the launch
    dtype: Any  # dtype of the first tensor that pointed into it
    names: list[str] = field(default_factory=list)  # the parameters that point into it


@dataclass
class ArgRef:
    buffer: int | None  # index into Launch.buffers; None: a plain value
    offset: int = 0  # bytes from the start of the storage
    value: Any = None


@dataclass
class Launch:
    unit: Any
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    smem: int
    stream: int
    number: int  # 1 = the test's first launch of this instantiation
    args: list[ArgRef] = field(default_factory=list)
    buffers: list[Buffer] = field(default_factory=list)
    skip: str | None = None  # why this launch cannot be replayed


def _torch() -> Any:
    import torch

    return torch


def _is_tensor(v: Any) -> bool:
    return hasattr(v, "untyped_storage") and hasattr(v, "data_ptr")


class _OnStream:
    """Run torch work on the launch's stream, so a copy is ordered right before the kernel."""

    def __init__(self, handle: int, device: Any) -> None:
        self.ctx: Any = None
        if getattr(device, "type", None) == "cuda":
            torch = _torch()
            if handle and handle != torch.cuda.current_stream(device).cuda_stream:
                self.ctx = torch.cuda.stream(torch.cuda.ExternalStream(handle, device=device))

    def __enter__(self) -> None:
        if self.ctx is not None:
            self.ctx.__enter__()

    def __exit__(self, *exc: Any) -> None:
        if self.ctx is not None:
            self.ctx.__exit__(*exc)


def _storage_bytes(storage: Any, device: Any) -> Any:
    torch = _torch()
    return torch.empty(0, dtype=torch.uint8, device=device).set_(storage, 0, (storage.nbytes(),), (1,))


def capture(unit: Any, grid: tuple[int, int, int], block: tuple[int, int, int], smem: int, stream: int,
            args: Sequence[Any], number: int, max_bytes: int = MAX_BYTES) -> Launch:
    """Record one launch: its configuration and a copy of every storage its pointers point into."""
    launch = Launch(unit, grid, block, smem, stream, number)
    storages: list[tuple[Any, Any]] = []
    index: dict[tuple[str, int], int] = {}
    for value, p in zip(args, unit.params, strict=True):
        if p.ctype == "struct":
            launch.skip = f"struct parameter {p.name} (may hold pointers)"
            return launch
        if p.ctype != "pointer" or value is None:
            launch.args.append(ArgRef(None, value=value))
            continue
        if not _is_tensor(value):
            launch.skip = f"parameter {p.name} is a raw address (buffer size unknown)"
            return launch
        st = value.untyped_storage()
        if st.nbytes() == 0:
            launch.args.append(ArgRef(None, value=value.data_ptr()))
            continue
        key = (str(value.device), st.data_ptr())
        if key not in index:
            index[key] = len(storages)
            storages.append((st, value))
            launch.buffers.append(Buffer(None, value.dtype))
        i = index[key]
        launch.buffers[i].names.append(p.name)
        launch.args.append(ArgRef(i, offset=value.data_ptr() - st.data_ptr()))
    total = sum(st.nbytes() for st, _ in storages)
    if total > max_bytes:
        launch.skip = f"buffers of {total >> 20} MiB (limit {max_bytes >> 20} MiB)"
        launch.buffers = []
        return launch
    if storages:
        with _OnStream(stream, storages[0][1].device):
            for (st, t), buf in zip(storages, launch.buffers, strict=True):
                buf.snapshot = _storage_bytes(st, t.device).clone()
    return launch


class Recorder:
    """The launch hook: records the first launches of each instantiation during one test."""

    def __init__(self, per_unit: int = PER_UNIT, per_test: int = PER_TEST, max_bytes: int = MAX_BYTES) -> None:
        self.per_unit, self.per_test, self.max_bytes = per_unit, per_test, max_bytes
        self.launches: list[Launch] = []
        self.counts: dict[tuple[str, str], int] = {}
        self.active = True

    def start(self) -> None:
        self.launches, self.counts, self.active = [], {}, True

    def take(self) -> list[Launch]:
        out, self.launches = self.launches, []
        return out

    def __call__(self, unit: Any, grid: tuple[int, int, int], block: tuple[int, int, int], smem: int,
                 stream: int, args: Sequence[Any]) -> None:
        if not self.active:
            return
        key = (str(unit.kernel_dir), str(unit.inst))
        n = self.counts.get(key, 0) + 1
        self.counts[key] = n
        if n > self.per_unit or len(self.launches) >= self.per_test:
            return
        self.launches.append(capture(unit, grid, block, smem, stream, args, n, self.max_bytes))
