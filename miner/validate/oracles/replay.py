"""A recorded launch replayed on fresh copies of its bytes, and the element-wise comparison of two runs'
outputs (bit patterns, floating tolerance, the per-buffer tally of changed and mismatched elements)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from miner import harness
from miner.validate.oracles.capture import Launch, _torch
from miner.validate.oracles.pairs import _norm


def _sync(tensors: Iterable[Any]) -> None:
    for t in tensors:
        if getattr(t.device, "type", None) == "cuda":
            _torch().cuda.synchronize(t.device)
            return


def _stream_for(buffers: Sequence[Any], fallback: int) -> int:
    for b in buffers:
        if getattr(b.device, "type", None) == "cuda":
            return int(_torch().cuda.current_stream(b.device).cuda_stream)
    return fallback


def replay(launch: Launch, unit: Any = None, start: Sequence[Any] | None = None,
           offsets: Sequence[int] | None = None, smem: int | None = None) -> list[Any]:
    """Run the launch again on fresh copies of `start` (default: the recorded bytes); returns them after."""
    unit = unit or launch.unit
    fresh = [b.clone() for b in (start if start is not None else [x.snapshot for x in launch.buffers])]
    cargs = []
    for i, (ref, p) in enumerate(zip(launch.args, unit.params, strict=True)):
        if ref.buffer is None:
            value = ref.value
        else:
            value = fresh[ref.buffer].data_ptr() + (offsets[i] if offsets is not None else ref.offset)
        cargs.append(unit.convert_arg(value, p))
    rc = unit.invoke(launch.grid, launch.block, launch.smem if smem is None else smem,
                     _stream_for(fresh, launch.stream), cargs)
    if rc != 0:
        raise harness.CudaLaunchError(rc, unit.symbol)
    _sync(fresh)
    return fresh


_INT_OF_SIZE = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}


def _bits(raw: Any, dtype: Any) -> Any:
    """The bytes as integers of the element size of `dtype` (exact comparison, NaN == NaN)."""
    torch = _torch()
    size = getattr(dtype, "itemsize", 1)
    if raw.numel() % size:
        size = 1
    return raw.view(getattr(torch, _INT_OF_SIZE.get(size, "uint8")))


def _floating(raw: Any, dtype: Any) -> bool:
    return bool(getattr(dtype, "is_floating_point", False)) and raw.numel() % dtype.itemsize == 0


def _base(launch: Launch, oracle: str, test: str | None) -> dict[str, Any]:
    return {"oracle": oracle, "source": "replay", "test": test, "inst": str(launch.unit.inst),
            "launch": launch.number, "grid": list(launch.grid), "block": list(launch.block)}


def _converted_storages(launch: Launch, other: Any) -> dict[int, bool] | str:
    """Per recorded storage, whether it sits behind a parameter whose type differs between the two
    instantiations (so its values are converted); a reason to skip when one storage is both."""
    conv: dict[int, bool] = {}
    for ref, lp, op in zip(launch.args, launch.unit.params, other.params, strict=True):
        if ref.buffer is None:
            continue
        c = _norm(lp.type) != _norm(op.type)
        if conv.setdefault(ref.buffer, c) != c:
            return f"one storage is passed as {lp.name} ({lp.type}) and as another parameter type"
    return conv


def _tally(buffers: Sequence[Any], a_before: Sequence[Any], a_after: Sequence[Any], b_before: Sequence[Any],
           b_after: Sequence[Any], dtypes: Sequence[tuple[Any, Any]],
           compare: Callable[[Any, Any, Any], tuple[int, float, int]]) -> tuple[int, int, float, int, str]:
    """Compare two runs buffer by buffer over the elements either run changed: floating buffers with
    `compare(a, b, changed)` on float64 values, the others bit for bit. Returns (mismatched,
    compared, max finite |diff|, not finite, name of the first buffer that disagrees)."""
    mismatched = changed_total = nonfinite = 0
    max_abs = 0.0
    worst = ""
    for i, buf in enumerate(buffers):
        a_dt, b_dt = dtypes[i]
        a_pre, a, b_pre, b = a_before[i], a_after[i], b_before[i], b_after[i]
        changed = (_bits(a, a_dt) != _bits(a_pre, a_dt)) | (_bits(b, b_dt) != _bits(b_pre, b_dt))
        if _floating(a, a_dt) and _floating(b, b_dt) and changed.shape == _bits(b, b_dt).shape:
            n_bad, d, nf = compare(a.view(a_dt).double(), b.view(b_dt).double(), changed)
            max_abs, nonfinite = max(max_abs, d), nonfinite + nf
        else:
            n_bad = int((changed & (_bits(a, a_dt) != _bits(b, b_dt))).sum())
        changed_total += int(changed.sum())
        if n_bad and not worst:
            worst = "/".join(buf.names)
        mismatched += n_bad
    return mismatched, changed_total, max_abs, nonfinite, worst


def _compare(lo: Any, hi: Any, changed: Any, rtol: float, atol_scale: float) -> tuple[int, float, int]:
    """(elements beyond tolerance, max finite |diff| among them, how many of them are not finite):
    `lo` the lower-precision run's values, `hi` the higher one's, both as float64, over the `changed`
    mask. |lo - hi| <= atol_scale * max|hi| + rtol * |hi|; an infinity or NaN where `hi` is finite
    counts, matching infinities and NaNs do not (float vs double)."""
    torch = _torch()
    finite = changed & torch.isfinite(hi)
    scale = float(hi[finite].abs().max()) if bool(finite.any()) else 0.0
    close = torch.isclose(lo, hi, rtol=rtol, atol=atol_scale * scale if scale > 0 else 1e-30, equal_nan=True)
    bad = changed & ~close
    d = (lo - hi).abs()[bad]
    fin = torch.isfinite(d)
    return int(bad.sum()), float(d[fin].max()) if bool(fin.any()) else 0.0, int((~fin).sum())
