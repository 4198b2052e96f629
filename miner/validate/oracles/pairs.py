"""Instantiation pairs: two instantiations of one kernel whose parameters differ only in a floating type,
and the instantiation's metadata a replay needs."""

from __future__ import annotations

import re
from typing import Any

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
    from miner.dataset.folder import KernelFolder

    try:
        return KernelFolder(unit.kernel_dir).metadata()
    except (OSError, ValueError):
        return {}
