"""The Python modules of a project: parsed once, their top-level bindings, and where imports lead."""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field

from miner.frontends.triton_frontend import Names, SourceText, module_names

_BINDING = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Assign, ast.AnnAssign, ast.AugAssign,
            ast.Import, ast.ImportFrom, ast.If, ast.Try, ast.With, ast.For)
if hasattr(ast, "TryStar"):
    _BINDING = (*_BINDING, ast.TryStar)


def bound_names(stmt: ast.stmt) -> set[str]:
    """Names a top-level statement binds in its module (compound statements: every branch)."""
    out: set[str] = set()
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {stmt.name}
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        for a in stmt.names:
            if a.name != "*":
                out.add(a.asname or a.name.split(".")[0])
        return out
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.For, ast.With)):
        targets = (stmt.targets if isinstance(stmt, ast.Assign) else
                   [stmt.target] if not isinstance(stmt, ast.With) else
                   [i.optional_vars for i in stmt.items if i.optional_vars is not None])
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name):
                    out.add(n.id)
        if isinstance(stmt, (ast.For, ast.With)):
            for s in stmt.body:
                out |= bound_names(s)
        return out
    for attr in ("body", "orelse", "finalbody", "handlers"):
        for s in getattr(stmt, attr, None) or []:
            if isinstance(s, ast.ExceptHandler):
                for inner in s.body:
                    out |= bound_names(inner)
            else:
                out |= bound_names(s)
    return out


@dataclass
class Module:
    path: str
    data: bytes
    tree: ast.Module
    src: SourceText
    names: Names
    package: str  # dotted package the module lives in ("" when unknown), for relative imports
    defs: dict[str, list[ast.stmt]] = field(default_factory=dict)  # name -> top-level statements binding it

    def binding(self, name: str) -> ast.stmt | None:
        """The last top-level statement binding `name` (what the module sees after import)."""
        lst = self.defs.get(name)
        return lst[-1] if lst else None


class Project:
    """Parses modules on demand and resolves `import a.b` / `from .x import y` to files under `root`."""

    def __init__(self, root: str) -> None:
        self.root = os.path.realpath(root)
        self._mods: dict[str, Module | None] = {}
        self._bases: list[str] | None = None

    def module(self, path: str, data: bytes | None = None) -> Module | None:
        path = os.path.realpath(path)
        if path in self._mods:
            return self._mods[path]
        mod = None
        try:
            if data is None:
                with open(path, "rb") as fh:
                    data = fh.read()
            tree = ast.parse(data, filename=path)
        except (OSError, SyntaxError, ValueError):
            tree = None
        if tree is not None:
            mod = Module(path=path, data=data, tree=tree, src=SourceText(data), names=module_names(tree),
                         package=self._package_of(path))
            for stmt in tree.body:
                if isinstance(stmt, _BINDING):
                    for n in bound_names(stmt):
                        mod.defs.setdefault(n, []).append(stmt)
        self._mods[path] = mod
        return mod

    def rel(self, path: str) -> str:
        return os.path.relpath(path, self.root) if path.startswith(self.root + os.sep) else os.path.basename(path)

    def _package_of(self, path: str) -> str:
        parts: list[str] = []
        d = os.path.dirname(path)
        while os.path.isfile(os.path.join(d, "__init__.py")) and d.startswith(self.root):
            parts.append(os.path.basename(d))
            d = os.path.dirname(d)
        return ".".join(reversed(parts))

    def _search_bases(self) -> list[str]:
        """Folders an absolute import may start from: the root, src/ and python/ layouts, and every folder
        holding a top-level package (found once, two levels deep)."""
        if self._bases is None:
            bases = [self.root]
            for sub in ("src", "python", "lib"):
                if os.path.isdir(os.path.join(self.root, sub)):
                    bases.append(os.path.join(self.root, sub))
            self._bases = bases
        return self._bases

    def resolve_module(self, dotted: str, level: int, importer: Module) -> str | None:
        """File of module `dotted` (relative to `importer` when level > 0) inside the project, or None."""
        if level:
            base = os.path.dirname(importer.path)
            for _ in range(level - 1):
                base = os.path.dirname(base)
            candidates = [base]
        else:
            candidates = self._search_bases()
        rel = dotted.replace(".", os.sep) if dotted else ""
        for b in candidates:
            stem = os.path.join(b, rel) if rel else b
            for f in (stem + ".py", os.path.join(stem, "__init__.py")):
                if os.path.isfile(f) and os.path.realpath(f).startswith(self.root + os.sep):
                    return os.path.realpath(f)
        return None
