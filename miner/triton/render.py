"""A Triton unit: one standalone Python module holding the kernel, its closure and its launcher."""

from __future__ import annotations

import ast

from miner.triton.closure import Closure, piece_text
from miner.triton.project import Project

# Imports every Triton unit may use without its source saying so: `tl` is the universal spelling.
BASE_IMPORTS = ["import triton", "import triton.language as tl"]


def render(project: Project, closure: Closure, header: list[str]) -> str:
    """Imports, then the closure's definitions, then `alias = name` lines for renamed imports. The text
    is parsed back before it is returned: a unit that is not valid Python is a bug here, not a build failure."""
    imports = list(dict.fromkeys([*BASE_IMPORTS, *closure.imports]))
    # `from __future__ import annotations` of any source module: its class bodies may name classes not
    # yet defined in annotations (`_registries: ClassVar[dict[str, Registry]]`); it must come first.
    futures = sorted({a.name for path in dict.fromkeys(p.module for p in closure.pieces)
                      for node in (project.module(path).tree.body if project.module(path) else [])
                      if isinstance(node, ast.ImportFrom) and node.module == "__future__" for a in node.names})
    if futures:
        imports.insert(0, f"from __future__ import {', '.join(futures)}")
    # The closure's import order: every definition follows what it needs (a decorator's
    # `configs=get_configs()` runs when the module is imported, so order matters).
    blocks: list[str] = []
    current = None
    for p in closure.pieces:
        text = piece_text(project, p, closure.renames.get(p.module)).rstrip() + "\n"
        if p.module != current:
            current = p.module
            text = f"# --- from {project.rel(p.module)}\n" + text
        blocks.append(text)
    parts = ["\n".join(f"# {h}" for h in header), "\n".join(imports), *blocks]
    if closure.aliases:
        parts.append("\n".join(dict.fromkeys(closure.aliases)))
    text = "\n\n\n".join(p.rstrip() for p in parts if p) + "\n"
    ast.parse(text)
    return text
