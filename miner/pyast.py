"""Small helpers over Python's `ast`, shared by the Triton frontend and the generated-test checks."""

from __future__ import annotations

import ast
from collections.abc import Mapping


def dotted_name(node: ast.AST, alias: Mapping[str, str] | None = None) -> str | None:
    """`a.b.c` -> "a.b.c" (its head looked up in `alias` if given); None for anything but a name chain."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(alias.get(node.id, node.id) if alias is not None else node.id)
    return ".".join(reversed(parts))
