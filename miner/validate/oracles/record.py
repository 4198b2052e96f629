"""The oracles run over a test's recorded launches, and their entries summarized into the validation record."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from miner.validate.oracles.agreement import check_agreement
from miner.validate.oracles.capture import Launch
from miner.validate.oracles.determinism import check_determinism
from miner.validate.oracles.error_model import UNIT_ROUNDOFF
from miner.validate.oracles.pairs import _meta
from miner.validate.oracles.reduced import REDUCED_ORACLE, check_reduced, find_reduced_partners
from miner.validate.oracles.replay import _base, replay

ORACLES = ("determinism", "instantiations_agree", "half_vs_float", "bf16_vs_float")


KEPT = 16  # oracle entries kept in the validation record (failures first)


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
