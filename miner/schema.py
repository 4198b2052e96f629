"""The JSON schemas shipped in the package, and validation against them."""

from __future__ import annotations

import functools
import json
from typing import Any

import jsonschema

from miner.resources import data_dir

SCHEMA_VERSION = "1.0"


@functools.cache
def load(name: str = "kernel") -> dict[str, Any]:
    text = (data_dir("metadata") / f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def validate(obj: dict[str, Any], name: str = "kernel") -> None:
    """Raise jsonschema.ValidationError when `obj` does not match the schema."""
    jsonschema.validate(obj, load(name))
