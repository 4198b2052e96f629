"""The error model half_vs_float / bf16_vs_float judge by: unit roundoff and ULPs of the reduced type,
inputs perturbed by one roundoff, which differences the model explains, and the measured error statistics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from miner.validate.oracles.capture import _torch

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
# A fourth run ("wide") perturbs by spread_factor * u at random: a smooth output moves about
# spread_factor times as far as under the narrow runs, which the factor already allows, but an output
# behind a branch or a border test (a sample point that leaves the image, a floor() crossing) moves only
# once the input error is wide enough to cross it; several half roundings of an intermediate (roi_align's
# sample coordinates, measured on an H100) reach that far. Its change counts unscaled.
# What is never explained: inf/NaN where float is finite (overflow), or more than max_beyond of the
# compared elements beyond the model (elements near a boundary the perturbations did not reach).
UNIT_ROUNDOFF = {"half": 2.0 ** -11, "bfloat16": 2.0 ** -8}


SIGNIFICAND_BITS = {"half": 11, "bfloat16": 8}


MIN_ULP = {"half": 2.0 ** -24, "bfloat16": 2.0 ** -133}


MODEL: dict[str, float] = {"spread_factor": 8.0, "rel_ulps": 16.0, "abs_scale": 2.0, "max_beyond": 1e-3}


PERTURBATIONS = ("up", "down", "random", "wide")


STATS_SAMPLE = 1 << 22  # percentiles from at most this many elements (a seeded random subset)


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


def perturbation_scale(how: str) -> float:
    """How many roundoffs a perturbation moves the inputs by (the wide run: spread_factor)."""
    return MODEL["spread_factor"] if how == "wide" else 1.0


def _perturbed(values: Any, how: str, u: float, seed: int) -> Any:
    """Float32 values scaled by 1 + u, 1 - u or 1 +- u at random (1 +- spread_factor * u for "wide");
    integral and non-finite values stay."""
    torch = _torch()
    u *= perturbation_scale(how)
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
    return value * (1.0 + sign * u * perturbation_scale(how))
