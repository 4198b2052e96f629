"""Oracles that need no LLM, run on the launches a passing test made.

- determinism: the same launch on the same bytes, run twice, leaves the same bytes (not checked
  when the unit's text uses atomics: their float additions legitimately change order);
- instantiations_agree: where the kernel has a float and a double instantiation whose parameters
  differ only float <-> double, the launch run on the other one with the same values converted
  gives the same floating outputs within tolerance and the same integer outputs;
- half_vs_float / bf16_vs_float: where the kernel has a half (bfloat16) instantiation and a float one
  whose parameters differ only half (bfloat16) <-> float, both run the launch on the same values
  (the float side's inputs rounded to the reduced type first) and the reduced run's floating
  outputs must agree with the float run's within an error model (MODEL below): what rounding to the
  reduced type can explain, measured per element by rerunning the float kernel on inputs perturbed
  by one unit roundoff of the reduced type. Only what no rounding explains fails: a non-finite
  value where float is finite (overflow), or more than a few elements beyond the model. The
  measured error (max, median and 99th percentile, absolute and in ULPs of the reduced type) is
  recorded in every entry.

How: while a test runs, a launch hook (harness.set_launch_hook) records the first launches of each
unit: grid, block, shared memory and, for every tensor argument, a copy of its whole storage taken
just before the launch, on the launch's stream. Once the test has passed (the plugin's
pytest_runtest_call, last), each recorded launch is replayed on fresh copies of those bytes: a
pointer keeps its byte offset inside its storage and arguments that share a storage share the copy,
so views and in-place kernels replay exactly. Launches with pointers passed as raw addresses, or with
struct arguments (which may hold pointers), cannot be replayed and are reported as skipped.

Works for any kernel that has tests, whatever the test does: nothing here knows the kernel.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from miner import harness

ORACLES = ("determinism", "instantiations_agree", "half_vs_float", "bf16_vs_float")
PER_UNIT = 2  # recorded launches per instantiation and test: the first ones, before any timing loop
PER_TEST = 4
MAX_BYTES = 1 << 30  # storages larger than this in one launch are not copied
# float vs double: elementwise |lo - hi| <= ATOL_SCALE * max|hi| + RTOL * |hi| over the elements a
# run changed; a few elements may differ beyond that (MAX_MISMATCH of them), since floor/ceil and
# comparisons on rounded values legitimately flip near boundaries (bin edges, argmax ties).
RTOL = 1e-3
ATOL_SCALE = 1e-4
MAX_MISMATCH = 1e-3
# Reduced precision vs float: an error model instead of one fixed tolerance. A correct kernel in half
# differs from the same kernel in float on the same (half-rounded) inputs by the roundings of its
# intermediates. Their effect is measured, not guessed: the float kernel is rerun on its inputs
# (the converted T buffers and T scalars, non-integral values only, so indices and counts stored as
# T stay put) scaled by 1 + u, by 1 - u and by 1 +- u at random (u the reduced type's unit roundoff),
# and `spread` is, per element, the largest change those runs show. That is large where the output
# is sensitive (bilinear interpolation at a coordinate held in half: a coordinate of 50 carries an
# error of 0.03 pixel; a floor() near a cell edge) and zero where it is not. An element is
# explained when |half - float| <= spread_factor * spread + rel_ulps * u * |float| (a few roundings
# of the result, accumulation over some dozens of terms) + abs_scale * u * max|float| (cancellation).
# What is never explained: inf/NaN where float is finite (overflow), or more than max_beyond of the
# compared elements beyond the model (elements near a boundary the perturbation did not reach).
UNIT_ROUNDOFF = {"half": 2.0 ** -11, "bfloat16": 2.0 ** -8}
SIGNIFICAND_BITS = {"half": 11, "bfloat16": 8}
MIN_ULP = {"half": 2.0 ** -24, "bfloat16": 2.0 ** -133}
MODEL: dict[str, float] = {"spread_factor": 8.0, "rel_ulps": 16.0, "abs_scale": 2.0, "max_beyond": 1e-3}
PERTURBATIONS = ("up", "down", "random")
STATS_SAMPLE = 1 << 22  # percentiles from at most this many elements (a seeded random subset)
REDUCED_ORACLE = {"half": "half_vs_float", "bfloat16": "bf16_vs_float"}
KEPT = 16  # oracle entries kept in the validation record (failures first)


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


# --------------------------------------------------------------------------- replay and compare


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


def check_determinism(launch: Launch, first: Sequence[Any], test: str | None = None) -> dict[str, Any]:
    """Second replay of `launch` vs the bytes `first` replay left; every byte must be equal."""
    entry = _base(launch, "determinism", test)
    t0 = time.perf_counter()
    second = replay(launch)
    diffs = []
    for buf, a, b in zip(launch.buffers, first, second, strict=True):
        n = int((_bits(a, buf.dtype) != _bits(b, buf.dtype)).sum())
        if n:
            diffs.append({"buffer": "/".join(buf.names), "mismatched": n, "elements": int(_bits(a, buf.dtype).numel())})
    entry.update(ok=not diffs, time_s=round(time.perf_counter() - t0, 4))
    if diffs:
        entry["diffs"] = diffs
        worst = max(diffs, key=lambda d: d["mismatched"])
        entry["reason"] = (f"two runs on identical inputs differ in {worst['mismatched']} of {worst['elements']} "
                           f"elements of {worst['buffer']} (no atomics in the unit: a race, uninitialised "
                           "memory or a read past a buffer)")
    return entry


# ----- instantiation pairs


def _promote(text: str) -> str:
    return re.sub(r"\bfloat\b", "double", text)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"\s*([*&,<>()])\s*", r"\1", str(text))).strip()


def _targs(entry: dict[str, Any]) -> list[str]:
    args = entry.get("template_args")
    if isinstance(args, dict):
        return [f"{k}={_norm(v)}" for k, v in sorted(args.items())]
    return [_norm(a) for a in (args or [])]


def _params(entry: dict[str, Any]) -> list[tuple[str, str]]:
    params = (entry.get("launcher") or {}).get("params", [])
    return [(_norm(p.get("type", "")), str(p.get("ctype", ""))) for p in params]


def is_pair(lo: dict[str, Any], hi: dict[str, Any]) -> bool:
    """`hi` is `lo` with float replaced by double (template arguments and parameter types)."""
    if _targs(lo) == _targs(hi) or [_promote(a) for a in _targs(lo)] != _targs(hi):
        return False
    lp, hp = _params(lo), _params(hi)
    if len(lp) != len(hp) or not lp:
        return False
    for (lt, lc), (ht, hc) in zip(lp, hp, strict=True):
        if _promote(lt) != ht or "struct" in (lc, hc):
            return False
        if lc != hc and (lc, hc) != ("float32", "float64"):
            return False
    return True


def find_partner(meta: dict[str, Any], inst: str) -> tuple[dict[str, Any], str] | None:
    """The instantiation to compare `inst` with and `inst`'s role ("low": float, "high": double)."""
    insts = meta.get("instantiations") or []
    me = next((e for e in insts if str(e.get("id")) == inst), None)
    if me is None:
        return None
    for other in insts:
        if other is me:
            continue
        if is_pair(me, other):
            return other, "low"
        if is_pair(other, me):
            return other, "high"
    return None


def _meta(unit: Any) -> dict[str, Any]:
    import json

    try:
        return json.loads((unit.kernel_dir / "metadata.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


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


def check_agreement(launch: Launch, ref_after: Sequence[Any], test: str | None = None,
                    meta: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Replay on the float/double partner instantiation and compare; None where no partner exists."""
    torch = _torch()
    found = find_partner(meta if meta is not None else _meta(launch.unit), str(launch.unit.inst))
    if found is None:
        return None
    partner, role = found
    entry = _base(launch, "instantiations_agree", test)
    entry.update(vs=str(partner.get("id")), rtol=RTOL, atol_scale=ATOL_SCALE, max_mismatch=MAX_MISMATCH)
    t0 = time.perf_counter()

    def skipped(reason: str) -> dict[str, Any]:
        entry.update(ok=None, skipped=reason)
        return entry

    try:
        other = launch.unit.sibling(str(partner.get("id")))
    except (OSError, KeyError, ValueError) as exc:
        return skipped(f"{partner.get('id')} not loadable: {exc}")
    conv = _converted_storages(launch, other)
    if isinstance(conv, str):
        return skipped(conv)
    src, dst = (torch.float32, torch.float64) if role == "low" else (torch.float64, torch.float32)
    start, offsets = [], []
    for i, buf in enumerate(launch.buffers):
        if not conv.get(i):
            start.append(buf.snapshot)
            continue
        if buf.dtype != src or buf.snapshot.numel() % src.itemsize:
            return skipped(f"{'/'.join(buf.names)} holds {buf.dtype}, not {src}")
        start.append(buf.snapshot.view(src).to(dst).view(torch.uint8))
    for ref in launch.args:
        if ref.buffer is not None and conv.get(ref.buffer):
            if ref.offset % src.itemsize:
                return skipped("a pointer is not aligned to its element type")
            offsets.append(ref.offset // src.itemsize * dst.itemsize)
        else:
            offsets.append(ref.offset)
    # Dynamic shared memory sized in elements of T: the double partner needs twice as much.
    smem = launch.smem * 2 if role == "low" else launch.smem
    try:
        other_after = replay(launch, other, start, offsets, smem=smem)
    except harness.CudaLaunchError as exc:
        if exc.code == 9 or exc.code == 1:  # configuration the partner cannot take (shared memory)
            return skipped(f"{partner.get('id')} does not launch with this configuration: {exc.error_name}")
        raise RuntimeError(f"oracle instantiations_agree: replaying on {partner.get('id')}: {exc}") from exc
    except RuntimeError as exc:
        raise RuntimeError(f"oracle instantiations_agree: replaying on {partner.get('id')}: {exc}") from exc
    dtypes = [(src, dst) if conv.get(i) else (b.dtype, b.dtype) for i, b in enumerate(launch.buffers)]
    # hi: the double run's output, whichever side the test launched.
    compare = ((lambda a, b, changed: _compare(a, b, changed, RTOL, ATOL_SCALE)) if role == "low" else
               (lambda a, b, changed: _compare(b, a, changed, RTOL, ATOL_SCALE)))
    mismatched, changed_total, max_abs, _nonfinite, worst = _tally(
        launch.buffers, [b.snapshot for b in launch.buffers], ref_after, start, other_after, dtypes, compare)
    entry["time_s"] = round(time.perf_counter() - t0, 4)
    if changed_total == 0:
        return skipped("the launch changed no buffer in either precision")
    ok = mismatched <= MAX_MISMATCH * changed_total
    entry.update(ok=ok, mismatched=mismatched, compared=changed_total, max_abs_diff=max_abs)
    if not ok:
        entry["reason"] = (f"{entry['inst']} and {entry['vs']} disagree on {mismatched} of {changed_total} "
                           f"output elements (worst: {worst}; max |diff| {max_abs:.3g}; rtol {RTOL}, "
                           f"atol {ATOL_SCALE} x max|output|)")
    return entry


# ----- reduced precision (half, bfloat16) vs float

_HALF_NAMES = r"(?:c10::|at::)?Half|__half|half|__nv_half"
_BF16_NAMES = r"(?:c10::|at::)?BFloat16|__nv_bfloat16|nv_bfloat16|bfloat16|__bfloat16"
_REDUCED_RE = {"half": re.compile(rf"(?<![\w:])(?:{_HALF_NAMES})(?!\w)"),
               "bfloat16": re.compile(rf"(?<![\w:])(?:{_BF16_NAMES})(?!\w)")}


def _as_float(text: str, kind: str) -> str:
    return _REDUCED_RE[kind].sub("float", text)


def reduced_kind(lo: dict[str, Any], hi: dict[str, Any]) -> str | None:
    """"half" or "bfloat16" where `lo` is `hi` with float replaced by that type, else None."""
    if _targs(lo) == _targs(hi):
        return None
    for kind in ("half", "bfloat16"):
        if [_as_float(a, kind) for a in _targs(lo)] != _targs(hi):
            continue
        lp, hp = _params(lo), _params(hi)
        if len(lp) != len(hp) or not lp:
            return None
        for (lt, lc), (ht, hc) in zip(lp, hp, strict=True):
            if _as_float(lt, kind) != ht or "struct" in (lc, hc):
                return None
            if lc != hc and (lc, hc) != (kind, "float32"):
                return None
        return kind
    return None


def find_reduced_partners(meta: dict[str, Any], inst: str) -> list[tuple[dict[str, Any], str, str]]:
    """(partner, reduced type, `inst`'s role: "low" = the reduced one, "high" = float) for each pair."""
    insts = meta.get("instantiations") or []
    me = next((e for e in insts if str(e.get("id")) == inst), None)
    if me is None:
        return []
    out = []
    for other in insts:
        if other is me:
            continue
        if (kind := reduced_kind(me, other)) is not None:
            out.append((other, kind, "low"))
        elif (kind := reduced_kind(other, me)) is not None:
            out.append((other, kind, "high"))
    return out


def _reduced_dtype(kind: str) -> Any:
    torch = _torch()
    return torch.float16 if kind == "half" else torch.bfloat16


def round_scalar(value: Any, kind: str) -> Any:
    """A float scalar rounded to the reduced type, so the float side sees the reduced side's value."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return value
    torch = _torch()
    return float(torch.tensor(float(value), dtype=torch.float64).to(_reduced_dtype(kind)).double())


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


def ulps(diff: Any, ref: Any, kind: str) -> Any:
    """|diff| in units in the last place of the reduced type at the reference value's magnitude."""
    torch = _torch()
    _, exp = torch.frexp(ref.abs())
    ulp = torch.ldexp(torch.ones_like(ref), (exp - SIGNIFICAND_BITS[kind]).to(torch.int32)).clamp_min(MIN_ULP[kind])
    return diff / ulp


def explained(lo: Any, hi: Any, spread: Any, kind: str, scale: float) -> Any:
    """Per element: is |lo - hi| within the error model (finite values, float64)?"""
    u = UNIT_ROUNDOFF[kind]
    tol = MODEL["spread_factor"] * spread + MODEL["rel_ulps"] * u * hi.abs() + MODEL["abs_scale"] * u * scale
    return (lo - hi).abs() <= tol


def compare_reduced(lo: Any, hi: Any, changed: Any, kind: str, spread: Any = None) -> tuple[int, float, int]:
    """(elements beyond the error model, max finite |diff|, elements not finite where float is finite)
    over the `changed` mask: `lo` the reduced run, `hi` the float run, `spread` the float kernel's
    per-element sensitivity (None: zero). Matching infinities and NaNs, and NaN in float, are not counted."""
    torch = _torch()
    finite = changed & torch.isfinite(hi)
    nonfinite = finite & ~torch.isfinite(lo)
    both = finite & torch.isfinite(lo)
    scale = float(hi[finite].abs().max()) if bool(finite.any()) else 0.0
    sp = spread if spread is not None else torch.zeros_like(hi)
    beyond = both & ~explained(lo, hi, sp, kind, scale)
    d = (lo - hi).abs()[both]
    return int(beyond.sum()), float(d.max()) if d.numel() else 0.0, int(nonfinite.sum())


def error_stats(diffs: Sequence[Any], refs: Sequence[Any], kind: str) -> dict[str, float]:
    """Max, median and 99th percentile of |reduced - float|, absolute and in ULPs of the reduced type."""
    torch = _torch()
    if not diffs:
        return {}
    d = torch.cat([x.flatten() for x in diffs])
    r = torch.cat([x.flatten() for x in refs])
    if d.numel() == 0:
        return {}
    u = ulps(d, r, kind)
    out = {"max_abs": float(d.max()), "max_ulp": float(u.max())}
    if d.numel() > STATS_SAMPLE:
        g = torch.Generator(device=d.device).manual_seed(0)
        pick = torch.randint(0, d.numel(), (STATS_SAMPLE,), device=d.device, generator=g)
        d, u = d[pick], u[pick]
    ds, us = d.sort().values, u.sort().values
    for name, q in (("p50", 0.5), ("p99", 0.99)):
        k = min(d.numel() - 1, int(q * (d.numel() - 1) + 0.5))
        out[f"{name}_abs"] = float(ds[k])
        out[f"{name}_ulp"] = float(us[k])
    return {k: float(f"{v:.4g}") for k, v in out.items()}


def _perturbed(values: Any, how: str, u: float, seed: int) -> Any:
    """Float32 values scaled by 1 + u, 1 - u or 1 +- u at random; integral and non-finite values stay."""
    torch = _torch()
    if how == "up":
        factor = torch.full_like(values, 1.0 + u)
    elif how == "down":
        factor = torch.full_like(values, 1.0 - u)
    else:
        g = torch.Generator(device=values.device).manual_seed(seed)
        signs = torch.randint(0, 2, values.shape, device=values.device, generator=g).to(values.dtype) * 2 - 1
        factor = 1.0 + u * signs
    keep = ~torch.isfinite(values) | (values == values.round())
    return torch.where(keep, values, values * factor)


def _perturbed_scalar(value: Any, how: str, u: float, index: int) -> Any:
    if isinstance(value, bool) or not isinstance(value, float) or value == round(value):
        return value
    sign = {"up": 1.0, "down": -1.0}.get(how, 1.0 if index % 2 else -1.0)
    return value * (1.0 + sign * u)


def check_reduced(launch: Launch, first: Sequence[Any], partner: dict[str, Any], kind: str, role: str,
                  test: str | None = None) -> dict[str, Any]:
    """Run `launch` on the reduced and the float instantiation from the same values and compare.

    Only storages behind parameters whose type differs between the two (T * with T the template
    type) are converted; integer/index buffers, float buffers that stay float and scalars of other
    types pass unchanged. Float scalars of type T are rounded to the reduced type on both sides.
    """
    torch = _torch()
    entry = _base(launch, REDUCED_ORACLE[kind], test)
    entry.update(vs=str(partner.get("id")), model={"u": UNIT_ROUNDOFF[kind], **MODEL,
                                                     "perturbations": list(PERTURBATIONS)})
    t0 = time.perf_counter()

    def skipped(reason: str) -> dict[str, Any]:
        entry.update(ok=None, skipped=reason, time_s=round(time.perf_counter() - t0, 4))
        return entry

    try:
        other = launch.unit.sibling(str(partner.get("id")))
    except (OSError, KeyError, ValueError) as exc:
        return skipped(f"{partner.get('id')} not loadable: {exc}")
    lo_unit, hi_unit = (launch.unit, other) if role == "low" else (other, launch.unit)
    conv = _converted_storages(launch, other)
    if isinstance(conv, str):
        return skipped(conv)
    red, f32 = _reduced_dtype(kind), torch.float32
    mine = red if role == "low" else f32
    lo_start, hi_start = [], []
    rounded_to_inf = 0
    for i, buf in enumerate(launch.buffers):
        if not conv.get(i):
            lo_start.append(buf.snapshot)
            hi_start.append(buf.snapshot)
            continue
        if buf.dtype != mine or buf.snapshot.numel() % mine.itemsize:
            return skipped(f"{'/'.join(buf.names)} holds {buf.dtype}, not {mine}")
        lo_vals = buf.snapshot.view(mine).to(red)
        if role == "high":
            # Values beyond the reduced range become infinities on both sides alike (the float side
            # runs on the rounded values too), so the comparison stays fair; counted for the record.
            src = buf.snapshot.view(f32)
            rounded_to_inf += int((torch.isfinite(src) & ~torch.isfinite(lo_vals)).sum())
        lo_start.append(lo_vals.view(torch.uint8))
        hi_start.append(lo_vals.to(f32).view(torch.uint8))
    lo_offsets, hi_offsets, lo_args, hi_args = [], [], [], []
    for ref, lp in zip(launch.args, lo_unit.params, strict=True):
        if ref.buffer is not None and conv.get(ref.buffer):
            if ref.offset % mine.itemsize:
                return skipped("a pointer is not aligned to its element type")
            n = ref.offset // mine.itemsize
            lo_offsets.append(n * red.itemsize)
            hi_offsets.append(n * f32.itemsize)
        else:
            lo_offsets.append(ref.offset)
            hi_offsets.append(ref.offset)
        if ref.buffer is None and lp.ctype == kind:
            value = round_scalar(ref.value, kind)
            lo_args.append(ArgRef(None, value=value))
            hi_args.append(ArgRef(None, value=value))
        else:
            lo_args.append(ref)
            hi_args.append(ref)
    # Dynamic shared memory sized in elements of T: the float side needs twice the reduced side's.
    lo_smem, hi_smem = (launch.smem, launch.smem * 2) if role == "low" else (launch.smem, launch.smem)
    runs = []
    for unit, start, offsets, args, smem in ((lo_unit, lo_start, lo_offsets, lo_args, lo_smem),
                                             (hi_unit, hi_start, hi_offsets, hi_args, hi_smem)):
        if role == "low" and unit is launch.unit:
            runs.append(list(first))  # the recorded launch on its own bytes: already replayed
            continue
        shadow = Launch(launch.unit, launch.grid, launch.block, launch.smem, launch.stream, launch.number, args,
                        launch.buffers)
        try:
            runs.append(replay(shadow, unit, start, offsets, smem=smem))
        except harness.CudaLaunchError as exc:
            if exc.code in (1, 9):  # a configuration this side cannot take (shared memory)
                return skipped(f"{unit.inst} does not launch with this configuration: {exc.error_name}")
            raise RuntimeError(f"oracle {entry['oracle']}: replaying on {unit.inst}: {exc}") from exc
        except RuntimeError as exc:
            raise RuntimeError(f"oracle {entry['oracle']}: replaying on {unit.inst}: {exc}") from exc
    lo_after, hi_after = runs
    u = UNIT_ROUNDOFF[kind]
    perturbed_runs = []
    for n, how in enumerate(PERTURBATIONS):
        start = [_perturbed(st.view(f32), how, u, n).view(torch.uint8) if conv.get(i) else st
                 for i, st in enumerate(hi_start)]
        args = [ArgRef(None, value=_perturbed_scalar(a.value, how, u, n)) if a.buffer is None and lp.ctype == kind
                else a for a, lp in zip(hi_args, lo_unit.params, strict=True)]
        shadow = Launch(launch.unit, launch.grid, launch.block, launch.smem, launch.stream, launch.number, args,
                        launch.buffers)
        try:
            perturbed_runs.append(replay(shadow, hi_unit, start, hi_offsets, smem=hi_smem))
        except (harness.CudaLaunchError, RuntimeError) as exc:
            raise RuntimeError(f"oracle {entry['oracle']}: perturbed replay on {hi_unit.inst}: {exc}") from exc
    beyond = compared = nonfinite = 0
    worst = ""
    diffs, refs = [], []
    for i, buf in enumerate(launch.buffers):
        lo_dt, hi_dt = (red, f32) if conv.get(i) else (buf.dtype, buf.dtype)
        lo_a, hi_a = lo_after[i], hi_after[i]
        changed = (_bits(lo_a, lo_dt) != _bits(lo_start[i], lo_dt)) | (_bits(hi_a, hi_dt) != _bits(hi_start[i], hi_dt))
        if conv.get(i) and changed.shape == _bits(hi_a, hi_dt).shape:
            lo_v, hi_v = lo_a.view(red).double(), hi_a.view(f32).double()
            spread = torch.zeros_like(hi_v)
            for p_run in perturbed_runs:
                pv = p_run[i].view(f32).double()
                spread = torch.maximum(spread, torch.nan_to_num((pv - hi_v).abs(), nan=0.0, posinf=0.0))
            n_bad, _, nf = compare_reduced(lo_v, hi_v, changed, kind, spread)
            both = changed & torch.isfinite(hi_v) & torch.isfinite(lo_v)
            diffs.append((lo_v - hi_v).abs()[both])
            refs.append(hi_v[both])
            nonfinite += nf
        else:
            # Not converted (indices, counts, float buffers that stay float): bit for bit, unless a
            # perturbed float run changes that element too (an argmax tie, a count at a boundary).
            lo_b, hi_b = _bits(lo_a, hi_dt), _bits(hi_a, hi_dt)
            moved = torch.zeros_like(changed)
            for p_run in perturbed_runs:
                moved |= _bits(p_run[i], hi_dt) != hi_b
            n_bad, nf = int((changed & (lo_b != hi_b) & ~moved).sum()), 0
        compared += int(changed.sum())
        beyond += n_bad
        if (n_bad or nf) and not worst:
            worst = "/".join(buf.names)
    entry["time_s"] = round(time.perf_counter() - t0, 4)
    if compared == 0:
        return skipped("the launch changed no buffer in either precision")
    stats = error_stats(diffs, refs, kind)
    ok = nonfinite == 0 and beyond <= MODEL["max_beyond"] * compared
    entry.update(ok=ok, mismatched=beyond + nonfinite, beyond_model=beyond, compared=compared,
                 max_abs_diff=stats.get("max_abs", 0.0), nonfinite=nonfinite, error=stats)
    if rounded_to_inf:
        entry["rounded_to_inf"] = rounded_to_inf
    if not ok:
        low_id, high_id = (entry["inst"], entry["vs"]) if role == "low" else (entry["vs"], entry["inst"])
        why = f"{nonfinite} not finite where float is finite (overflow)" if nonfinite else \
            f"{beyond} of {compared} output elements beyond what {kind} rounding explains"
        entry["reason"] = (f"{low_id} ({kind}) and {high_id} (float) disagree: {why} (worst: {worst}; "
                           f"max |diff| {stats.get('max_abs', 0.0):.3g}, {stats.get('max_ulp', 0.0):.3g} ulp, "
                           f"p99 {stats.get('p99_ulp', 0.0):.3g} ulp)")
    return entry


def run(launches: Sequence[Launch], test: str | None = None,
        enabled: Sequence[str] = ORACLES) -> list[dict[str, Any]]:
    """Every enabled oracle on every recorded launch; one entry per oracle and launch."""
    out: list[dict[str, Any]] = []
    metas: dict[str, dict[str, Any]] = {}
    for launch in launches:
        if launch.skip or not launch.buffers:
            reason = launch.skip or "no tensor arguments"
            out += [{**_base(launch, o, test), "ok": None, "skipped": reason} for o in enabled]
            continue
        first = replay(launch)
        if "determinism" in enabled:
            if launch.unit.has_atomics:
                out.append({**_base(launch, "determinism", test), "ok": None, "skipped": "atomics in the unit"})
            else:
                out.append(check_determinism(launch, first, test))
        if "instantiations_agree" in enabled:
            key = str(launch.unit.kernel_dir)
            if key not in metas:
                metas[key] = _meta(launch.unit)
            entry = check_agreement(launch, first, test, metas[key])
            if entry is not None:
                out.append(entry)
        if any(REDUCED_ORACLE[k] in enabled for k in UNIT_ROUNDOFF):
            key = str(launch.unit.kernel_dir)
            if key not in metas:
                metas[key] = _meta(launch.unit)
            for partner, kind, role in find_reduced_partners(metas[key], str(launch.unit.inst)):
                if REDUCED_ORACLE[kind] in enabled:
                    out.append(check_reduced(launch, first, partner, kind, role, test))
    return out


def failure_message(entry: dict[str, Any]) -> str:
    where = f"{entry.get('inst')} launch {entry.get('launch')} <<<{entry.get('grid')}, {entry.get('block')}>>>"
    return f"oracle {entry['oracle']}: {where}: {entry.get('reason', 'failed')}"


# --------------------------------------------------------------------------- the validation record


def summarize(entries: Sequence[dict[str, Any]], enabled: bool) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(summary per oracle, the entries worth keeping) for metadata.json -> validation.

    Summary per oracle: status `failed` (any run failed), `ok` (at least one passed), `skipped`
    (only skipped runs; `reason` says why) or `not_applicable` (never ran, e.g. no float/double
    or half/float pair), with counts.
    """
    summary: dict[str, Any] = {"enabled": enabled}
    for name in ORACLES:
        mine = [e for e in entries if e.get("oracle") == name]
        ok = sum(e.get("ok") is True for e in mine)
        bad = sum(e.get("ok") is False for e in mine)
        skips = [e.get("skipped") for e in mine if e.get("ok") is None]
        status = "failed" if bad else "ok" if ok else "skipped" if skips else \
            ("not_run" if not enabled else "not_applicable")
        s: dict[str, Any] = {"status": status, "passed": ok, "failed": bad, "skipped": len(skips)}
        if status == "skipped":
            s["reason"] = next((r for r in skips if r), "skipped")
        summary[name] = s
    kept: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for e in sorted(entries, key=lambda e: {False: 0, True: 1, None: 2}[e.get("ok")]):
        key = (e.get("oracle"), e.get("inst"), e.get("ok"), e.get("skipped"), e.get("source"))
        if e.get("ok") is not False and key in seen:
            continue
        seen.add(key)
        kept.append(e)
        if len(kept) >= KEPT:
            break
    return summary, kept
