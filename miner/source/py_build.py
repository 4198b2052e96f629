"""The nvcc flags a project's Python build code computes, read without running it.

Projects rarely write their nvcc flags as one literal list beside their sources. A build helper class
returns them from a method (`def nvcc_flags(self): return ["-O3"] + extra + super().nvcc_flags()`), a
base class in another file adds the define every CUDA source needs (`return ["-DWITH_CUDA"]`), and
`CUDAExtension(..., extra_compile_args={"nvcc": self.nvcc_flags()})` sits in a third place. This module
indexes the project's Python build files (those that mention nvcc or a torch extension), finds the
expressions that reach nvcc (the sinks) and the build scopes that name a source, and has
`py_eval.Evaluator` read each sink's value symbolically.

Which flags a source gets: those of the build scopes that name it (a class whose methods name its path,
e.g. `sources_files()`, evaluated with `self` bound to that class; an extension call whose `sources`
name it). A source nothing names gets nothing from here (docs/units.md, "The project's own nvcc flags").
"""

from __future__ import annotations

import ast
import functools
import os
import re

from miner import lazy_re
from miner.source.py_eval import Evaluator, Flag, Frame, Index, platform_of

__all__ = ["Flag", "index_of", "platform_of", "script_flags", "source_flags"]

_CHEAP = lazy_re.compile(r"nvcc|CUDAExtension|cpp_extension|extra_cuda_cflags")
_SKIP_DIRS = {"test", "tests", "doc", "docs", "third_party", "3rdparty", "thirdparty", "build", "dist",
              "node_modules", "site-packages", "__pycache__", "venv"}
_MAX_FILES = 600       # Python files looked at per project (cheap text test first)
_MAX_BYTES = 400_000
# Where an expression's value goes to nvcc.
_SINK_KEYWORDS = {"extra_cuda_cflags"}
_EXTENSION_CALLS = {"CUDAExtension", "CppExtension", "load", "load_inline", "Extension"}
# Functions whose name says they compute nvcc flags: roots even when the call that passes them to
# nvcc is written elsewhere (a setup.py that calls `ext.nvcc_flags()` on an object it cannot name).
_NVCC_FUNC = lazy_re.compile(r"^_*(get_|extra_|build_)*(nvcc|cuda)_?(c?flags|args|compile_args|options)$", re.I)


def _sinks(node: ast.AST, index: Index) -> list[ast.expr]:
    """Expressions under `node` whose value is passed to nvcc (`args['nvcc'] += [...]` under a
    non-platform condition is an option, not one)."""
    out: list[ast.expr] = []
    for n in ast.walk(node):
        if not isinstance(n, ast.Dict | ast.Assign | ast.AugAssign | ast.Call) or not _counts(n, index):
            continue
        if isinstance(n, ast.Dict):
            out += [v for k, v in zip(n.keys, n.values, strict=True)
                    if isinstance(k, ast.Constant) and k.value == "nvcc"]
        elif isinstance(n, ast.Assign | ast.AugAssign):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if any(_is_nvcc_item(t) for t in targets):
                out.append(n.value)
        elif isinstance(n, ast.Call):
            out += [k.value for k in n.keywords if k.arg in _SINK_KEYWORDS]
            f = n.func
            if isinstance(f, ast.Attribute) and f.attr in ("append", "extend") and _is_nvcc_item(f.value):
                out += n.args[-1:]
    return out


def _counts(n: ast.AST, index: Index) -> bool:
    """Whether the statement holding `n` runs in every CUDA build, or builds an extension."""
    st: ast.AST | None = n
    while st is not None and not isinstance(st, ast.stmt):
        st = index.parents.get(id(st))
    return st is None or index.unconditional(st) or _holds_extension_call(st)


def _holds_extension_call(n: ast.AST) -> bool:
    """A statement that builds the extension (`ext = CUDAExtension(..., extra_compile_args={...})`): its
    own flags count whatever condition selects it (a build script builds each extension under one)."""
    return any(isinstance(c, ast.Call) and (c.func.id if isinstance(c.func, ast.Name) else
                                             c.func.attr if isinstance(c.func, ast.Attribute) else "")
               in _EXTENSION_CALLS for c in ast.walk(n))


def _is_nvcc_item(t: ast.AST) -> bool:
    return isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and t.slice.value == "nvcc"


def _enclosing(tree: ast.Module) -> dict[int, tuple[ast.FunctionDef | None, str | None]]:
    """id(node) -> (the function, the class) that holds it."""
    out: dict[int, tuple[ast.FunctionDef | None, str | None]] = {}

    def walk(n: ast.AST, func: ast.FunctionDef | None, cls: str | None) -> None:
        for c in ast.iter_child_nodes(n):
            if isinstance(c, ast.ClassDef):
                walk(c, None, c.name)
            elif isinstance(c, ast.FunctionDef):
                walk(c, c, cls)
            else:
                out[id(c)] = (func, cls)
                walk(c, func, cls)
    walk(tree, None, None)
    return out


def _frame_at(index: Index, path: str, node: ast.AST, bound: str | None = None) -> Frame:
    func, cls = _enclosing_of(index, path).get(id(node), (None, None))
    return Frame(path, func, cls, bound or cls)


@functools.cache
def _enclosing_cached(root: str, path: str) -> dict[int, tuple[ast.FunctionDef | None, str | None]]:
    return _enclosing(index_of(root).files[path])


def _enclosing_of(index: Index, path: str) -> dict[int, tuple[ast.FunctionDef | None, str | None]]:
    return _enclosing_cached(index.root, path)


@functools.cache
def index_of(root: str) -> Index:
    """The Python build files under the project root, parsed once per run."""
    files: dict[str, ast.Module] = {}
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x.lower() not in _SKIP_DIRS and not x.startswith("."))
        for name in sorted(names):
            if not name.endswith(".py") or len(files) >= _MAX_FILES:
                continue
            path = os.path.join(d, name)
            try:
                if os.path.getsize(path) > _MAX_BYTES:
                    continue
                with open(path, encoding="utf-8", errors="replace") as fh:
                    text = fh.read()
                if _CHEAP.search(text):
                    files[path] = ast.parse(text)
            except (OSError, SyntaxError, ValueError):
                continue
    return Index(root, files)


def script_flags(root: str, path: str, skip: list[tuple[tuple[int, int], tuple[int, int]]]) -> list[Flag]:
    """The flags every nvcc sink of one build script passes (outside `skip`: other extensions' calls),
    each evaluated where it is written (`self` bound to its own class)."""
    index = index_of(root)
    tree = index.files.get(path)
    if tree is None:
        return []
    ev = Evaluator(index)
    out: list[Flag] = []
    for s in _sinks(tree, index):
        at = (getattr(s, "lineno", 0), getattr(s, "col_offset", 0))
        if not any(a <= at < b for a, b in skip):
            out += ev.expr(s, _frame_at(index, path, s))
    return out


def _names(s: str, rel: str, script_dir: str) -> bool:
    """A string of a build file that names the source at `rel` (relative to the project root): a path with
    a folder that the source's path ends with, or a bare file name where the script lies above the source."""
    s = s.strip().replace("\\", "/").lstrip("./")
    if not s:
        return False
    if "/" in s:
        return rel == s or rel.endswith("/" + s)
    return os.path.basename(rel) == s and (script_dir == "" or rel.startswith(script_dir + "/"))


def _shared_dirs(script_dir: str, rel: str) -> int:
    """How many leading folders a script's folder shares with a source's path (both relative to the root)."""
    n = 0
    for a, b in zip(script_dir.split("/") if script_dir else [], rel.split("/")[:-1], strict=False):
        if a != b:
            break
        n += 1
    return n


_SOURCE_EXT = (".cu", ".cpp", ".cc", ".cxx", ".c", ".hip")


@functools.cache
def _scopes(root: str) -> list[tuple[str, str, ast.AST, tuple[str, ...]]]:
    """(file, script dir relative to root, class or extension call, the source-like strings it holds)."""
    out: list[tuple[str, str, ast.AST, tuple[str, ...]]] = []
    for path, tree in index_of(root).files.items():
        script_dir = os.path.relpath(os.path.dirname(path), root).replace(os.sep, "/").lstrip(".")
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                f = node.func
                if (f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else "") \
                        not in _EXTENSION_CALLS:
                    continue
            elif not isinstance(node, ast.ClassDef):
                continue
            strings = tuple(c.value for c in ast.walk(node) if isinstance(c, ast.Constant)
                            and isinstance(c.value, str) and c.value.strip().endswith(_SOURCE_EXT))
            if strings:
                out.append((path, script_dir, node, strings))
    return out


@functools.cache
def source_flags(root: str, source: str) -> tuple[list[Flag], list[str]]:
    """(flags, scopes) the project's Python build code gives `source`: the nvcc sinks of every class whose
    body names it (evaluated with `self` bound to that class, through its bases) and of every extension
    call whose arguments name it. Scopes are `file (Class)` / `file:line`, relative to the root."""
    index = index_of(root)
    rel = os.path.relpath(source, root).replace(os.sep, "/")
    ev = Evaluator(index)
    flags: list[Flag] = []
    scopes: list[str] = []
    naming = [sc for sc in _scopes(root) if any(_names(s, rel, sc[1]) for s in sc[3])]
    # `sources=["cuda/k.cu"]` is relative to where the script runs: of scripts in several versions of one
    # project (`v4/src/model.py`, `v5/src/model.py`, each beside its own `cuda/k.cu`), the nearest names it.
    near = max((_shared_dirs(sc[1], rel) for sc in naming), default=0)
    for path, script_dir, node, _strings in naming:
        if _shared_dirs(script_dir, rel) < near:
            continue
        shown = os.path.relpath(path, root)
        if isinstance(node, ast.ClassDef):
            seen: set[str] = set()
            for c in index.mro(node.name, path):
                for s in _sinks(c.node, index):
                    flags += ev.expr(s, _frame_at(index, c.file, s, node.name))
                for name, m in c.methods.items():  # the nearest override of each nvcc-flags method
                    if _NVCC_FUNC.match(name) and name not in seen:
                        seen.add(name)
                        flags += ev.returns(m, Frame(c.file, m, c.name, node.name), 0)
            scopes.append(f"{shown} ({node.name})")
        else:
            for s in _sinks(node, index):
                flags += ev.expr(s, _frame_at(index, path, s))
            scopes.append(f"{shown}:{getattr(node, 'lineno', 0)}")
    return flags, scopes
