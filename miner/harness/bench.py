"""Timing against a reference with CUDA events and the determinism check (`benchmark`), and the
instantiations-agree oracle."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from miner.harness.device import _torch
from miner.harness.state import _LOADED, RECORDS, record_oracle
from miner.harness.unit import load_unit


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
