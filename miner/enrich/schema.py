"""The analysis and description JSON schemas (metadata/analysis.schema.json) and checks beyond them."""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema

from miner.schema import load


@cache
def _schema() -> dict[str, Any]:
    return load("analysis")


def _first_error(validator: jsonschema.protocols.Validator, obj: Any) -> str | None:
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    e = errors[0]
    where = "/".join(str(p) for p in e.absolute_path) or "(top)"
    return f"schema: at {where}: {e.message[:300]}"


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
    err = _first_error(jsonschema.Draft202012Validator(_schema()), obj)
    if err:
        raise ValueError(err)
    _check_params(obj, "params", kernel_params)


def check_description(obj: dict[str, Any], kernel_params: list[str]) -> None:
    err = _first_error(jsonschema.Draft202012Validator(_schema()["$defs"]["description"]), obj)
    if err:
        raise ValueError(err)
    _check_params(obj, "parameters", kernel_params)
