"""torch, loaded lazily: the current stream, whether a CUDA GPU is usable, skipping tests without one."""

from __future__ import annotations

import time
from typing import Any

from miner.harness.state import RECORDS


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
