"""The analysis and description JSON schemas (metadata/analysis.schema.json) and checks beyond them."""

from __future__ import annotations

from typing import Any

from miner.dataset.schema import errors


def _check(obj: dict[str, Any], definition: str | None) -> None:
    found = errors(obj, "analysis", definition)
    if found:
        raise ValueError(f"schema: at {found[0]}")


def _check_params(obj: dict[str, Any], key: str, kernel_params: list[str]) -> None:
    if not kernel_params:
        return
    got = [p.get("name") for p in obj.get(key, [])]
    missing = [n for n in kernel_params if n not in got]
    extra = [n for n in got if n not in kernel_params]
    if missing or extra:
        raise ValueError(f"{key} must list exactly the kernel's parameters {kernel_params}; "
                         f"missing {missing}, unknown {extra}")


def check_analysis(obj: dict[str, Any], kernel_params: list[str]) -> None:
    _check(obj, None)
    _check_params(obj, "params", kernel_params)


def check_description(obj: dict[str, Any], kernel_params: list[str]) -> None:
    _check(obj, "description")
    _check_params(obj, "parameters", kernel_params)
