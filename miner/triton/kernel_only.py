"""The part of a unit the kernel itself needs, for a build whose unit does not import.

A unit carries the kernel and its launcher; the launcher's side (einops, a project's runtime package,
a tensor allocated on the GPU at import) can make the whole module fail to import on the build machine
although the kernel's own code needs none of it. Compiling needs only the jit function, its helpers and
the globals they read: this module keeps the top-level statements that the kernel (decorators included)
reaches by name, transitively, in their original order, and drops the rest. The build says when it
compiled from this reduction (`import: kernel_closure`), so nobody mistakes it for the unit importing.
"""

from __future__ import annotations

import ast

from miner.triton.closure import free_names


def _binds(stmt: ast.stmt) -> set[str]:
    """Module-level names a top-level statement binds."""
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return {a.asname or a.name.split(".")[0] for a in stmt.names}
    out: set[str] = set()
    for n in ast.walk(stmt):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.add(n.id)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not stmt:
            out.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.update(a.asname or a.name.split(".")[0] for a in n.names)
    return out


def reduce(text: str, kernel: str) -> str | None:
    """`text` with only what `kernel` needs; None when the kernel is not a top-level definition or
    nothing would be dropped."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return None
    body = tree.body
    root = next((s for s in body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == kernel),
                None)
    if root is None:
        return None
    binders: dict[str, list[int]] = {}
    for i, s in enumerate(body):
        for n in _binds(s):
            binders.setdefault(n, []).append(i)
    keep: set[int] = {i for i, s in enumerate(body) if isinstance(s, ast.ImportFrom) and s.module == "__future__"}
    todo = [body.index(root)]
    while todo:
        i = todo.pop()
        if i in keep:
            continue
        keep.add(i)
        s = body[i]
        module_level = not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
        for name in free_names(s, module_level=module_level):
            todo += [j for j in binders.get(name, []) if j not in keep]
    if len(keep) == len(body):
        return None
    lines = text.splitlines(keepends=True)
    parts = []
    for i in sorted(keep):
        s = body[i]
        first = min([s.lineno, *(d.lineno for d in getattr(s, "decorator_list", []))])
        parts.append("".join(lines[first - 1:s.end_lineno]))
    out = "\n\n".join(p.rstrip("\n") + "\n" for p in parts)
    ast.parse(out)
    return out
