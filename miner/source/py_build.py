"""The nvcc flags a project's Python build code computes, read without running it.

Projects rarely write their nvcc flags as one literal list beside their sources. A build helper class
returns them from a method (`def nvcc_flags(self): return ["-O3"] + extra + super().nvcc_flags()`), a
base class in another file adds the define every CUDA source needs (`return ["-DWITH_CUDA"]`), and
`CUDAExtension(..., extra_compile_args={"nvcc": self.nvcc_flags()})` sits in a third place. This module
indexes the project's Python build files (those that mention nvcc or a torch extension) and evaluates
the expressions that reach nvcc symbolically: string literals, lists, `+`, both branches of `if`,
names (a function's locals and its `.append`/`.extend`/`+=`, module globals, imports by name),
`self.x` attributes, calls of project functions and methods (`self.m()` from the class that names the
source, `super().m()` from the defining class's bases, parameters bound to the call's arguments).
Calls of anything else (`os.getenv`, `subprocess`) say nothing: an environment default is not the build.

Which flags a source gets: those of the build scopes that name it (a class whose methods name its path,
e.g. `sources_files()`, evaluated with `self` bound to that class; an extension call whose `sources`
name it). A source nothing names gets nothing from here (docs/units.md, "The project's own nvcc flags").
"""

from __future__ import annotations

import ast
import functools
import os
import re
from dataclasses import dataclass, field

_CHEAP = re.compile(r"nvcc|CUDAExtension|cpp_extension|extra_cuda_cflags")
_SKIP_DIRS = {"test", "tests", "doc", "docs", "third_party", "3rdparty", "thirdparty", "build", "dist",
              "node_modules", "site-packages", "__pycache__", "venv"}
_MAX_FILES = 600       # Python files looked at per project (cheap text test first)
_MAX_BYTES = 400_000
_MAX_DEPTH = 14
# Where an expression's value goes to nvcc.
_SINK_KEYWORDS = {"extra_cuda_cflags"}
_EXTENSION_CALLS = {"CUDAExtension", "CppExtension", "load", "load_inline", "Extension"}
# Functions whose name says they compute nvcc flags: roots even when the call that passes them to
# nvcc is written elsewhere (a setup.py that calls `ext.nvcc_flags()` on an object it cannot name).
_NVCC_FUNC = re.compile(r"^_*(get_|extra_|build_)*(nvcc|cuda)_?(c?flags|args|compile_args|options)$", re.I)


@dataclass
class _Class:
    name: str
    file: str
    node: ast.ClassDef
    bases: list[str]
    methods: dict[str, ast.FunctionDef] = field(default_factory=dict)


@dataclass
class _Frame:
    """Where an expression is evaluated: its file, the function that holds it (None: module level), the
    class that defines that function (for super()), the class `self` is bound to, and parameter bindings."""
    file: str
    func: ast.FunctionDef | None = None
    owner: str | None = None
    bound: str | None = None
    params: dict[str, tuple[ast.expr, _Frame]] = field(default_factory=dict)


Flag = tuple[str, str]  # (token, "file:line" where it is written)


class Index:
    """The project's Python build files, parsed: classes, module functions and module-level assignments."""

    def __init__(self, root: str, files: dict[str, ast.Module]) -> None:
        self.root = root
        self.files = files
        self.classes: dict[str, list[_Class]] = {}
        self.funcs: dict[str, list[tuple[str, ast.FunctionDef]]] = {}
        self.globals: dict[str, list[tuple[str, ast.AST]]] = {}
        self.parents: dict[int, ast.AST] = {}
        for path, tree in files.items():
            for node in tree.body:
                self._top(path, node)
            for node in ast.walk(tree):
                for child in ast.iter_child_nodes(node):
                    self.parents[id(child)] = node

    def unconditional(self, node: ast.AST) -> bool:
        """Whether a statement runs in the CUDA build whatever the options: every `if` above it selects the
        platform and it lies in the CUDA branch (`if torch.version.hip: ... else: <here>`). A flag added
        under any other condition (a debug switch, a version test, an optional library, win32) is an
        option of the build, not what it always passes."""
        child, parent = node, self.parents.get(id(node))
        while parent is not None:
            if isinstance(parent, ast.If) and (child in parent.body or child in parent.orelse):
                side = _platform(parent.test)
                if side is None or (side == "cuda") != (child in parent.body):
                    return False
            child, parent = parent, self.parents.get(id(parent))
        return True

    def _top(self, path: str, node: ast.stmt) -> None:
        if isinstance(node, ast.ClassDef):
            c = _Class(node.name, path, node, [b.id if isinstance(b, ast.Name) else b.attr
                                               for b in node.bases if isinstance(b, ast.Name | ast.Attribute)])
            c.methods = {m.name: m for m in node.body if isinstance(m, ast.FunctionDef)}
            self.classes.setdefault(node.name, []).append(c)
        elif isinstance(node, ast.FunctionDef):
            self.funcs.setdefault(node.name, []).append((path, node))
        elif isinstance(node, ast.If | ast.Try | ast.With):
            for sub in ast.iter_child_nodes(node):
                if isinstance(sub, ast.stmt):
                    self._top(path, sub)
        else:
            for name in _assigned_names(node):
                self.globals.setdefault(name, []).append((path, node))

    def cls(self, name: str | None, near: str = "") -> _Class | None:
        got = self.classes.get(name or "") or []
        return next((c for c in got if c.file == near), got[0] if got else None)

    def mro(self, name: str | None, near: str = "") -> list[_Class]:
        out: list[_Class] = []
        todo = [(name, near)]
        while todo:
            n, f = todo.pop(0)
            c = self.cls(n, f)
            if c is None or any(c is o for o in out):
                continue
            out.append(c)
            todo += [(b, c.file) for b in c.bases]
        return out


# A platform switch: `WITH_CUDA`, `USE_ROCM`, `CUDA_FOUND`, `torch.cuda`, `torch.version.hip`, `is_rocm`;
# not an option that merely names CUDA (`GGML_CUDA_FORCE_MMQ`, a header named `CUDAGeneratorImpl.h`).
_PLATFORM_WORD = re.compile(r"^(?:\w+_)?(cuda|hip|rocm)(?:_found|_home|_available|_enabled|_compiler)?$", re.I)


def platform_of(condition: str) -> str | None:
    """"cuda" when a build condition holds in the CUDA build (`WITH_CUDA`, `not torch.version.hip`), "hip"
    when in the HIP one, None when it says nothing of the platform (an option, a compiler, a version)."""
    neg = bool(re.match(r"\s*(not\b|NOT\b|!)", condition))
    words = [m.group(1).lower() for w in re.findall(r"\w+", condition) if (m := _PLATFORM_WORD.match(w))]
    if not words or re.search(r"\bis\s+None\b|\bNOT\s+DEFINED\b", condition):
        return None
    side = "hip" if any(w in ("hip", "rocm") for w in words) else "cuda"
    return ({"cuda": "hip", "hip": "cuda"}[side]) if neg else side


def _platform(test: ast.expr) -> str | None:
    return platform_of(ast.unparse(test))


def _assigned_names(node: ast.AST) -> list[str]:
    """Names a statement gives a value to: `x = ...`, `x += ...`, `x.extend(...)`/`x.append(...)`."""
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    if (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Attribute)
            and node.value.func.attr in ("append", "extend", "insert") and isinstance(node.value.func.value, ast.Name)):
        return [node.value.func.value.id]
    return []


def _values(node: ast.AST) -> list[ast.expr]:
    """The value expressions of an assignment-like statement (`_assigned_names`)."""
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        return [node.value] if node.value is not None else []
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        return list(node.value.args[-1:])
    return []


def _own_nodes(func: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of a function body, nested functions and classes left out."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(func.body)
    while todo:
        n = todo.pop()
        out.append(n)
        todo += [c for c in ast.iter_child_nodes(n) if not isinstance(c, ast.FunctionDef | ast.ClassDef | ast.Lambda)]
    return out


class _Eval:
    def __init__(self, index: Index) -> None:
        self.index = index
        self.active: set[tuple[int, str | None]] = set()

    def expr(self, e: ast.AST | None, fr: _Frame, depth: int = 0) -> list[Flag]:
        if e is None or depth > _MAX_DEPTH:
            return []
        key = (id(e), fr.bound)
        if key in self.active:
            return []
        self.active.add(key)
        try:
            return self._expr(e, fr, depth + 1)
        finally:
            self.active.discard(key)

    def _expr(self, e: ast.AST, fr: _Frame, d: int) -> list[Flag]:
        if isinstance(e, ast.Constant):
            return [(e.value, f"{fr.file}:{e.lineno}")] if isinstance(e.value, str) else []
        if isinstance(e, ast.List | ast.Tuple | ast.Set):
            return [f for x in e.elts for f in self.expr(x, fr, d)]
        if isinstance(e, ast.Starred):
            return self.expr(e.value, fr, d)
        if isinstance(e, ast.BinOp):
            if not isinstance(e.op, ast.Add):
                return []
            if any(isinstance(x, ast.Constant | ast.JoinedStr) and not isinstance(getattr(x, "value", None), list)
                   for x in (e.left, e.right)) and not isinstance(e.left, ast.List | ast.Tuple):
                # string concatenation: a flag only where both parts are written (`"-DN=" + n` is not one)
                both = [x.value for x in (e.left, e.right) if isinstance(x, ast.Constant) and isinstance(x.value, str)]
                return [("".join(both), f"{fr.file}:{e.lineno}")] if len(both) == 2 else []
            return self.expr(e.left, fr, d) + self.expr(e.right, fr, d)
        if isinstance(e, ast.IfExp):
            side = _platform(e.test)  # `a if cond else b`: the CUDA side of a platform test, else neither
            return self.expr(e.body if side == "cuda" else e.orelse, fr, d) if side else []
        if isinstance(e, ast.BoolOp):
            return [f for x in e.values for f in self.expr(x, fr, d)]
        if isinstance(e, ast.ListComp | ast.GeneratorExp | ast.SetComp):
            # a filter over flags (`[x for x in args if x]`) keeps some of them: take its source
            g = e.generators[0]
            same = isinstance(e.elt, ast.Name) and isinstance(g.target, ast.Name) and e.elt.id == g.target.id
            return self.expr(g.iter, fr, d) if same else []
        if isinstance(e, ast.Name):
            return self._name(e.id, fr, d)
        if isinstance(e, ast.Attribute):
            return self._attr(e, fr, d)
        if isinstance(e, ast.Call):
            return self._call(e, fr, d)
        return []

    def _name(self, name: str, fr: _Frame, d: int) -> list[Flag]:
        if name in fr.params:
            arg, caller = fr.params[name]
            return self.expr(arg, caller, d)
        if fr.func is not None:
            local = [n for n in _own_nodes(fr.func) if name in _assigned_names(n) and self.index.unconditional(n)]
            if local:
                return [f for n in local for v in _values(n) for f in self.expr(v, fr, d)]
        glob = [(p, n) for p, n in self.index.globals.get(name, []) if self.index.unconditional(n)]
        mine = [(p, n) for p, n in glob if p == fr.file] or glob  # an import by name: any file's global
        return [f for p, n in mine for v in _values(n) for f in self.expr(v, _Frame(p), d)]

    def _attr(self, e: ast.Attribute, fr: _Frame, d: int) -> list[Flag]:
        if not (isinstance(e.value, ast.Name) and e.value.id in ("self", "cls") and fr.bound):
            return []
        out: list[Flag] = []
        for c in self.index.mro(fr.bound, fr.file):
            for st in c.node.body:  # class attributes
                if e.attr in _assigned_names(st):
                    out += [f for v in _values(st) for f in self.expr(v, _Frame(c.file, None, c.name, fr.bound), d)]
            for m in c.methods.values():  # self.x = ... in a method
                for n in _own_nodes(m):
                    if isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == e.attr
                                                         and isinstance(t.value, ast.Name) and t.value.id == "self"
                                                         for t in n.targets):
                        out += self.expr(n.value, _Frame(c.file, m, c.name, fr.bound), d)
            prop = c.methods.get(e.attr)
            if prop is not None and any(isinstance(x, ast.Name) and x.id == "property" for x in prop.decorator_list):
                out += self.returns(prop, _Frame(c.file, prop, c.name, fr.bound), d)
        return out

    def _call(self, e: ast.Call, fr: _Frame, d: int) -> list[Flag]:
        f = e.func
        if isinstance(f, ast.Name):
            return [x for p, fn in self.index.funcs.get(f.id, [])[:3]
                    for x in self.returns(fn, _Frame(p, fn, None, None, self._bind(fn, e, fr)), d)]
        if not isinstance(f, ast.Attribute):
            return []
        target = f.value
        if isinstance(target, ast.Name) and target.id in ("self", "cls") and fr.bound:
            classes = self.index.mro(fr.bound, fr.file)
        elif isinstance(target, ast.Call) and isinstance(target.func, ast.Name) and target.func.id == "super":
            owner = self.index.cls(fr.owner, fr.file)
            classes = self.index.mro(fr.owner, fr.file)[1:] if owner else []
        else:
            return []
        for c in classes:
            m = c.methods.get(f.attr)
            if m is not None:
                return self.returns(m, _Frame(c.file, m, c.name, fr.bound, self._bind(m, e, fr, method=True)), d)
        return []

    @staticmethod
    def _bind(fn: ast.FunctionDef, call: ast.Call, fr: _Frame,
              method: bool = False) -> dict[str, tuple[ast.expr, _Frame]]:
        names = [a.arg for a in fn.args.posonlyargs + fn.args.args][1 if method else 0:]
        out = {n: (a, fr) for n, a in zip(names, call.args, strict=False) if not isinstance(a, ast.Starred)}
        out.update({k.arg: (k.value, fr) for k in call.keywords if k.arg})
        return out

    def returns(self, fn: ast.FunctionDef, fr: _Frame, d: int) -> list[Flag]:
        return [f for n in _own_nodes(fn) if isinstance(n, ast.Return) and self.index.unconditional(n)
                for f in self.expr(n.value, fr, d)]


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


def _frame_at(index: Index, path: str, node: ast.AST, bound: str | None = None) -> _Frame:
    func, cls = _enclosing_of(index, path).get(id(node), (None, None))
    return _Frame(path, func, cls, bound or cls)


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
    ev = _Eval(index)
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
    ev = _Eval(index)
    flags: list[Flag] = []
    scopes: list[str] = []
    for path, script_dir, node, strings in _scopes(root):
        if not any(_names(s, rel, script_dir) for s in strings):
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
                        flags += ev.returns(m, _Frame(c.file, m, c.name, node.name), 0)
            scopes.append(f"{shown} ({node.name})")
        else:
            for s in _sinks(node, index):
                flags += ev.expr(s, _frame_at(index, path, s))
            scopes.append(f"{shown}:{getattr(node, 'lineno', 0)}")
    return flags, scopes
