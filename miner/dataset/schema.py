"""The JSON schemas shipped in the package, and validation against them."""

from __future__ import annotations

import functools
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jsonschema

from miner.resources import data_dir

SCHEMA_VERSION = "1.0"


@functools.cache
def load(name: str = "kernel") -> dict[str, Any]:
    text = (data_dir("metadata") / f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@functools.cache
def validator(name: str = "kernel", definition: str | None = None) -> jsonschema.protocols.Validator:
    """A validator for schema `name`, or for its `$defs/<definition>` (which may refer to other $defs)."""
    import jsonschema  # only stages that check documents need it: the CLI starts without it

    schema = load(name)
    if definition is not None:
        schema = {**schema["$defs"][definition], "$defs": schema["$defs"]}
    return jsonschema.Draft202012Validator(schema)


def errors(obj: Any, name: str = "kernel", definition: str | None = None) -> list[str]:
    """`path: message` for every way `obj` breaks the schema, in document order; empty when it matches."""
    found = sorted(validator(name, definition).iter_errors(obj), key=lambda e: [str(p) for p in e.absolute_path])
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(top)'}: {e.message[:300]}" for e in found]


def validate(obj: dict[str, Any], name: str = "kernel") -> None:
    """Raise jsonschema.ValidationError when `obj` does not match the schema."""
    import jsonschema

    jsonschema.validate(obj, load(name))
