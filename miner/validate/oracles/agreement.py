"""instantiations_agree: a float launch and its double partner, same values converted, give the same
floating outputs within tolerance and the same integer outputs."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from miner import harness
from miner.validate.oracles.capture import Launch, _torch
from miner.validate.oracles.pairs import _meta, find_partner
from miner.validate.oracles.replay import _base, _compare, _converted_storages, _tally, replay

# float vs double: elementwise |lo - hi| <= ATOL_SCALE * max|hi| + RTOL * |hi| over the elements a
# run changed; a few elements may differ beyond that (MAX_MISMATCH of them), since floor/ceil and
# comparisons on rounded values legitimately flip near boundaries (bin edges, argmax ties).
RTOL = 1e-3


ATOL_SCALE = 1e-4


MAX_MISMATCH = 1e-3


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
