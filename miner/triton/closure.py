"""Closure of a Triton kernel: the module-level definitions its text needs, across project modules.

Starting from the kernel (and its launcher), every free name is looked up where Python would find it:
a top-level `def`/class/assignment of the same module (taken, and closed over in turn), an import
of a project module (followed into that file), or an import of anything else (`triton`, `torch`,
`math`, libdevice: kept as an import line). What cannot be found is listed as unresolved.
"""

from __future__ import annotations

import ast
import builtins
import copy
import os
import re
import textwrap
from dataclasses import dataclass, field

from miner.frontends.triton_frontend import _AUTOTUNE, _HEURISTICS, _JIT, _is
from miner.triton.project import Module, Project

_BUILTINS = set(dir(builtins)) | {"__name__", "__file__", "__doc__", "__spec__", "__package__"}


@dataclass
class Piece:
    module: str  # path
    stmt: ast.stmt
    name: str
    kind: str  # jit | function | class | assign | block | import

    @property
    def key(self) -> tuple[str, int]:
        return self.module, self.stmt.lineno


@dataclass
class Closure:
    pieces: list[Piece] = field(default_factory=list)  # definitions, dependencies before dependants
    imports: list[str] = field(default_factory=list)  # import lines for external modules
    aliases: list[str] = field(default_factory=list)  # `bar = foo` for `from x import foo as bar`
    unresolved: list[dict[str, str]] = field(default_factory=list)
    dropped_decorators: list[str] = field(default_factory=list)
    # module path -> {name: unit name}: a project definition that shadows an import of the same name
    # elsewhere in the unit (`F = TypeVar("F")` beside `import torch.nn.functional as F`) is renamed in
    # the pieces of its own module, since a unit is one namespace.
    renames: dict[str, dict[str, str]] = field(default_factory=dict)


def free_names(node: ast.AST, module_level: bool = False) -> list[str]:
    """Names a definition reads but does not bind itself, in first-use order (an over-approximation:
    a local that shadows a global still counts, which at worst pulls in one definition too many).

    module_level: `node` is a top-level `if`/`try`/assignment, whose stores are module globals: a name
    it both reads and assigns (`if device == 'cpu': device = 'cuda'`) still needs its earlier binding."""
    loads: dict[str, None] = {}
    bound: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            if isinstance(n.ctx, ast.Load):
                loads.setdefault(n.id, None)
            elif not module_level:
                bound.add(n.id)
        elif isinstance(n, ast.arg):
            bound.add(n.arg)
        elif isinstance(n, (ast.Global, ast.Nonlocal)):
            bound.difference_update(n.names)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n is not node:
            bound.add(n.name)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            bound.update(a.asname or a.name.split(".")[0] for a in n.names)
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        bound.discard(node.name)  # recursion reads the module-level name
    return [n for n in loads if n not in bound and n not in _BUILTINS]


def _kind(mod: Module, stmt: ast.stmt) -> str:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return "jit" if any(_is(mod.names, d, _JIT) for d in stmt.decorator_list) else "function"
    if isinstance(stmt, ast.ClassDef):
        return "class"
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return "import"
    if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return "assign"
    return "block"


def is_triton_decorator(mod: Module, d: ast.AST) -> bool:
    return _is(mod.names, d, _JIT | _AUTOTUNE | _HEURISTICS)


def _import_line(node: ast.Import | ast.ImportFrom, name: str) -> str | None:
    """The import statement binding `name`, alone: `import torch`, `from triton.language.extra import libdevice`."""
    for a in node.names:
        local = a.asname or a.name.split(".")[0]
        if local != name:
            continue
        if isinstance(node, ast.Import):
            return f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
        mod = "." * node.level + (node.module or "")
        return f"from {mod} import {a.name}" + (f" as {a.asname}" if a.asname else "")
    return None


class _Closer:
    def __init__(self, project: Project) -> None:
        self.project = project
        self.out = Closure()
        self.taken: dict[tuple[str, int], Piece] = {}
        self.order: list[Piece] = []
        self.provider: dict[str, str] = {}  # unit-level name -> module path that provides it
        self.visiting: set[tuple[str, str]] = set()
        self.module_deps: dict[str, list[str]] = {}  # module -> project modules it takes names from

    def add_root(self, mod: Module, stmt: ast.stmt, name: str) -> None:
        self._take(mod, stmt, name)

    def _take(self, mod: Module, stmt: ast.stmt, name: str) -> None:
        piece = Piece(mod.path, stmt, name, _kind(mod, stmt))
        if piece.key in self.taken:
            return
        self.taken[piece.key] = piece
        node: ast.AST = stmt
        if piece.kind == "jit":
            kept = [d for d in stmt.decorator_list if is_triton_decorator(mod, d)]
            self.out.dropped_decorators += [mod.src.segment(d) for d in stmt.decorator_list if d not in kept]
            node = copy.copy(stmt)
            node.decorator_list = kept
        for n in free_names(node, module_level=piece.kind in ("assign", "block")):
            self._resolve(mod, n, stmt)
        self.order.append(piece)  # after its dependencies: they were resolved first

    def _resolve(self, mod: Module, name: str, user: ast.stmt) -> None:
        key = (mod.path, name)
        if key in self.visiting:
            return
        self.visiting.add(key)
        where = f"{mod.path}:{user.lineno}"
        stmts = mod.defs.get(name) or []
        if not stmts:
            self.out.unresolved.append({"symbol": name, "where": where,
                                        "reason": "not defined at module level nor imported"})
            return
        defines = any(not isinstance(st, (ast.Import, ast.ImportFrom)) for st in stmts)
        prev = self.provider.setdefault(name, mod.path) if defines else mod.path
        if prev.startswith("import ") and defines:
            self._rename(mod.path, name)
        elif prev != mod.path:
            self.out.unresolved.append({"symbol": name, "where": where,
                                        "reason": f"two modules define it; the unit keeps the one from {prev}"})
            return
        # Every statement that binds the name, in file order, as the module ran them: `device = probe()`
        # and a later `if device == 'cpu': device = 'cuda'` both matter.
        for stmt in stmts:
            if isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self._resolve_import(mod, stmt, name, where)
            else:
                self._take(mod, stmt, name)

    def _rename(self, module: str, name: str) -> None:
        mod = self.project.module(module)
        stmts = (mod.defs.get(name) or []) if mod else []
        if not stmts or not all(isinstance(st, (ast.Assign, ast.AnnAssign, ast.FunctionDef, ast.AsyncFunctionDef,
                                                ast.ClassDef)) for st in stmts):
            # bound inside a try/if (an import fallback): renaming its Names would miss the import's alias
            self.out.unresolved.append({"symbol": name, "where": module,
                                        "reason": "defined here and imported elsewhere: one name in the unit"})
            return
        stem = os.path.basename(os.path.dirname(module) if module.endswith("__init__.py") else module)
        stem = re.sub(r"\W", "_", stem.removesuffix(".py"))
        self.out.renames.setdefault(module, {})[name] = f"_{stem}_{name}"

    def _resolve_import(self, mod: Module, stmt: ast.Import | ast.ImportFrom, name: str, where: str) -> None:
        if isinstance(stmt, ast.ImportFrom):
            target = self.project.resolve_module(stmt.module or "", stmt.level, mod)
            alias = next(a for a in stmt.names if (a.asname or a.name) == name)
            if target is not None:
                sub = self.project.module(target)
                inner = sub.binding(alias.name) if sub else None
                if sub is not None and inner is not None:
                    deps = self.module_deps.setdefault(mod.path, [])
                    if sub.path not in deps:
                        deps.append(sub.path)
                    self._resolve(sub, alias.name, stmt)
                    if alias.asname and alias.asname != alias.name:
                        self.out.aliases.append(f"{alias.asname} = {alias.name}")
                    return
                pkg = self.project.resolve_module(f"{stmt.module}.{alias.name}" if stmt.module else alias.name,
                                                  stmt.level, mod)
                reason = ("a project module imported whole: the unit cannot carry it" if pkg else
                          f"not found in {target}")
                self.out.unresolved.append({"symbol": name, "where": where, "reason": reason})
                return
            if stmt.level:
                rel = "." * stmt.level + (stmt.module or "")
                self.out.unresolved.append({"symbol": name, "where": where,
                                            "reason": f"relative import of a module outside the project ({rel})"})
                return
        else:
            dotted = next(a.name for a in stmt.names if (a.asname or a.name.split(".")[0]) == name)
            if self.project.resolve_module(dotted, 0, mod) is not None:
                self.out.unresolved.append({"symbol": name, "where": where,
                                            "reason": "a project module imported whole: the unit cannot carry it"})
                return
        line = _import_line(stmt, name)
        # One namespace for the whole unit: `F` imported as torch.nn.functional in one module and
        # assigned (F = TypeVar("F")) in another cannot both hold. Say so; the unit keeps both lines.
        prev = self.provider.setdefault(name, f"import {line}")
        if prev != f"import {line}" and not prev.startswith("import "):
            if prev == mod.path:  # the module imports and defines it itself: its own order decides
                self.out.unresolved.append({"symbol": name, "where": where,
                                            "reason": f"imported here ({line}) and defined in {prev}: "
                                                      "one name in the unit"})
            else:
                self._rename(prev, name)
        if line and line not in self.out.imports:
            self.out.imports.append(line)


def close(project: Project, mod: Module, roots: list[tuple[ast.stmt, str]]) -> Closure:
    """The closure of `roots` (top-level statements of `mod`, with their names)."""
    c = _Closer(project)
    for stmt, name in roots:
        c.provider.setdefault(name, mod.path)
        c.add_root(mod, stmt, name)
    c.out.pieces = _import_order(c.order, c.module_deps, mod.path)
    return c.out


def _import_order(pieces: list[Piece], deps: dict[str, list[str]], root: str) -> list[Piece]:
    """Modules after the modules they import from, each module's pieces in file order: the order in
    which the original modules ran, so definitions used at import time (decorators, class bodies,
    module-level calls) exist when they are used. An import cycle is broken where it closes."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(m: str) -> None:
        if m in seen:
            return
        seen.add(m)
        for d in deps.get(m, []):
            visit(d)
        order.append(m)

    for m in [root, *dict.fromkeys(p.module for p in pieces)]:
        visit(m)
    rank = {m: i for i, m in enumerate(order)}
    return sorted(pieces, key=lambda p: (rank[p.module], p.stmt.lineno, p.stmt.col_offset))


def piece_text(project: Project, p: Piece, renames: dict[str, str] | None = None) -> str:
    """Source of a piece as the unit shows it: jit functions lose decorators that are not Triton's
    (a project's `@libentry()` wrapper would drag its whole runtime in), nested code is dedented, and
    names in `renames` (this piece's module's shadowing definitions) take their unit names."""
    mod = project.module(p.module)
    assert mod is not None
    stmt = p.stmt
    if p.kind == "jit":
        kept = [d for d in stmt.decorator_list if is_triton_decorator(mod, d)]
        def_start = mod.src.offset(stmt.lineno, 0)
        end = mod.src.offset(stmt.end_lineno, stmt.end_col_offset)
        body = _renamed(mod, stmt, def_start, end, renames)
        decos = "".join(f"@{mod.src.segment(d)}\n" for d in kept)
        return decos + textwrap.dedent(body)
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        a, b = mod.src.span(stmt)
    else:
        a, b = mod.src.offset(stmt.lineno, stmt.col_offset), mod.src.offset(stmt.end_lineno, stmt.end_col_offset)
    line_start = mod.src.starts[mod.src.line_of(a) - 1]
    return textwrap.dedent(_renamed(mod, stmt, line_start, b, renames))


def _renamed(mod: Module, stmt: ast.stmt, start: int, end: int, renames: dict[str, str] | None) -> str:
    """mod.data[start:end] with every Name in `renames` replaced (by position, never by text search)."""
    data = mod.data[start:end]
    if renames:
        spots = sorted({(mod.src.offset(n.lineno, n.col_offset), n.id) for n in ast.walk(stmt)
                        if isinstance(n, ast.Name) and n.id in renames}, reverse=True)
        for off, name in spots:
            if start <= off < end:
                i = off - start
                data = data[:i] + renames[name].encode() + data[i + len(name.encode()):]
    return data.decode("utf-8", "replace")
