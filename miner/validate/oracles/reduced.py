"""half_vs_float / bf16_vs_float: a reduced-precision launch and its float partner on the same values
(rounded to the reduced type first) agree within the error model (error_model.py)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from miner import harness, lazy_re
from miner.validate.oracles.capture import ArgRef, Launch, _torch
from miner.validate.oracles.error_model import (
    MODEL,
    PERTURBATIONS,
    UNIT_ROUNDOFF,
    _perturbed,
    _perturbed_scalar,
    compare_reduced,
    error_stats,
    perturbation_scale,
)
from miner.validate.oracles.pairs import _params, _targs
from miner.validate.oracles.replay import _base, _bits, _converted_storages, replay

REDUCED_ORACLE = {"half": "half_vs_float", "bfloat16": "bf16_vs_float"}


# ----- reduced precision (half, bfloat16) vs float

_HALF_NAMES = r"(?:c10::|at::)?Half|__half|half|__nv_half"


_BF16_NAMES = r"(?:c10::|at::)?BFloat16|__nv_bfloat16|nv_bfloat16|bfloat16|__bfloat16"


_REDUCED_RE = {"half": lazy_re.compile(rf"(?<![\w:])(?:{_HALF_NAMES})(?!\w)"),
               "bfloat16": lazy_re.compile(rf"(?<![\w:])(?:{_BF16_NAMES})(?!\w)")}


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
            for how, p_run in zip(PERTURBATIONS, perturbed_runs, strict=True):
                pv = p_run[i].view(f32).double()
                # The model multiplies spread by spread_factor: a run already that wide counts once.
                moved = torch.nan_to_num((pv - hi_v).abs(), nan=0.0, posinf=0.0) / perturbation_scale(how)
                spread = torch.maximum(spread, moved)
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
