"""Symbolic evaluation of the Python expressions that reach nvcc (see `py_build`, which finds them).

An `Index` holds a project's parsed Python build files (classes, module functions, module globals).
`Evaluator.expr` turns an expression into the string flags it can hold: literals, lists, `+`, the CUDA side
of a platform test, names (a function's locals and its `.append`/`.extend`/`+=`, module globals, imports
by name), `self.x` attributes, calls of project functions and methods with parameters bound to the call's
arguments. Anything else (`os.getenv`, `subprocess`) gives nothing: an environment default is not the build.

One exception, for a define's value in an f-string (`f"-DTmax={T_MAX}"`, the way JIT-loaded extensions size
their kernels): the value is read as a scalar (a literal, a name assigned one, `int(...)`, an environment
lookup's default). Where it is a number the build code does not hold (`int(os.environ["T_MAX"])`), the define
gets `ASSUMED_VALUE` and its place says so: without any value the kernel's `Tmax` is undefined and no unit of
it compiles, while the real value is a run-time choice of the user.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

from miner import lazy_re

_MAX_DEPTH = 14
ASSUMED_VALUE = "64"  # a power of two: a valid array extent, loop bound, block size and multiple of a warp's lanes
_NUMBER = object()   # a scalar known to be a number whose value the build code does not hold
_FSTRING_DEFINE = lazy_re.compile(r"^-D\w+=$")

@dataclass
class ProjectClass:
    name: str
    file: str
    node: ast.ClassDef
    bases: list[str]
    methods: dict[str, ast.FunctionDef] = field(default_factory=dict)


@dataclass
class Frame:
    """Where an expression is evaluated: its file, the function that holds it (None: module level), the
    class that defines that function (for super()), the class `self` is bound to, and parameter bindings."""
    file: str
    func: ast.FunctionDef | None = None
    owner: str | None = None
    bound: str | None = None
    params: dict[str, tuple[ast.expr, Frame]] = field(default_factory=dict)


Flag = tuple[str, str]  # (token, "file:line" where it is written)


class Index:
    """The project's Python build files, parsed: classes, module functions and module-level assignments."""

    def __init__(self, root: str, files: dict[str, ast.Module]) -> None:
        self.root = root
        self.files = files
        self.classes: dict[str, list[ProjectClass]] = {}
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
            c = ProjectClass(node.name, path, node, [b.id if isinstance(b, ast.Name) else b.attr
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

    def cls(self, name: str | None, near: str = "") -> ProjectClass | None:
        got = self.classes.get(name or "") or []
        return next((c for c in got if c.file == near), got[0] if got else None)

    def mro(self, name: str | None, near: str = "") -> list[ProjectClass]:
        out: list[ProjectClass] = []
        todo = [(name, near)]
        while todo:
            n, f = todo.pop(0)
            c = self.cls(n, f)
            if c is None or any(c is o for o in out):
                continue
            out.append(c)
            todo += [(b, c.file) for b in c.bases]
        return out


# A platform switch: `WITH_CUDA`, `USE_ROCM`, `CUDA_FOUND`, `BUILD_CUDA_MODULE`, `torch.cuda`, `torch.version.hip`,
# `is_rocm`;
# not an option that merely names CUDA (`GGML_CUDA_FORCE_MMQ`, a header named `CUDAGeneratorImpl.h`).
# (`HIPCONFIG`, the path of ROCm's hipconfig a Makefile tests with `ifdef HIPCONFIG`, names the platform too)
_PLATFORM_WORD = lazy_re.compile(
    r"^(?:\w+_)?(cuda|hip|rocm)(?:_found|_home|_available|_enabled|_compiler|_module|_support"
    r"|_backend|_?config|_toolkit)?$", re.I)


_OR = lazy_re.compile(r"\bOR\b|\bor\b|\|\|")


def _cuda_alternative(condition: str) -> bool:
    """A disjunction (no conjunction) one alternative of which is a CUDA switch (`if (ENABLE_CUDA OR ENABLE_HIP)`,
    the GPU build's test of a project that builds one code for both): it holds in the CUDA build. Read as HIP's, the
    `COMPILE_CUDA=1` it defines was lost."""
    if re.search(r"\bAND\b|\band\b|&&", condition) or not _OR.search(condition):
        return False
    body = re.sub(r"^\s*(?:NOT\b|not\b|!)", "", condition)
    words = [_PLATFORM_WORD.match(a.strip(" ()")) for a in _OR.split(body)]
    return any(m is not None and m.group(1).lower() == "cuda" for m in words)


def platform_of(condition: str) -> str | None:
    """"cuda" when a build condition holds in the CUDA build (`WITH_CUDA`, `not torch.version.hip`), "hip"
    when in the HIP one, None when it says nothing of the platform (an option, a compiler, a version)."""
    neg = bool(re.match(r"\s*(not\b|NOT\b|!)", condition))
    words = [m.group(1).lower() for w in re.findall(r"\w+", condition) if (m := _PLATFORM_WORD.match(w))]
    if not words or re.search(r"\bis\s+None\b|\bNOT\s+DEFINED\b", condition):
        return None
    side = "hip" if any(w in ("hip", "rocm") for w in words) else "cuda"
    if side == "hip" and _cuda_alternative(condition):
        side = "cuda"
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


def own_nodes(func: ast.FunctionDef) -> list[ast.AST]:
    """The nodes of a function body, nested functions and classes left out."""
    out: list[ast.AST] = []
    todo: list[ast.AST] = list(func.body)
    while todo:
        n = todo.pop()
        out.append(n)
        todo += [c for c in ast.iter_child_nodes(n) if not isinstance(c, ast.FunctionDef | ast.ClassDef | ast.Lambda)]
    return out


class Evaluator:
    def __init__(self, index: Index) -> None:
        self.index = index
        self.active: set[tuple[int, str | None]] = set()

    def expr(self, e: ast.AST | None, fr: Frame, depth: int = 0) -> list[Flag]:
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

    def _expr(self, e: ast.AST, fr: Frame, d: int) -> list[Flag]:
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
        if isinstance(e, ast.JoinedStr):
            return self._fstring(e, fr, d)
        return []

    def _fstring(self, e: ast.JoinedStr, fr: Frame, d: int) -> list[Flag]:
        """`f"-DN={n}"`: a flag where every part has a value; a number the build does not hold only as the
        whole value of a define (`ASSUMED_VALUE`)."""
        parts: list[str] = []
        assumed = False
        for v in e.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
                continue
            got = self.scalar(v.value, fr, d) if isinstance(v, ast.FormattedValue) else None
            if got is _NUMBER and _FSTRING_DEFINE.match("".join(parts)) and v is e.values[-1]:
                parts.append(ASSUMED_VALUE)
                assumed = True
            elif isinstance(got, str):
                parts.append(got)
            else:
                return []
        where = f"{fr.file}:{e.lineno}" + (f" (value assumed: {ASSUMED_VALUE}; the build reads it at run time)"
                                            if assumed else "")
        return [("".join(parts), where)]

    def scalar(self, e: ast.AST, fr: Frame, d: int = 0) -> str | object | None:
        """The value an f-string part prints: a string, `_NUMBER` (a number the build code does not hold),
        or None (unknown)."""
        if d > _MAX_DEPTH:
            return None
        if isinstance(e, ast.Constant):
            return None if isinstance(e.value, bool) or e.value is None else str(e.value)
        if isinstance(e, ast.Call):
            f = e.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in ("int", "float") and e.args:
                inner = self.scalar(e.args[0], fr, d + 1)
                return inner if isinstance(inner, str) and re.fullmatch(r"-?[\d.]+", inner) else _NUMBER
            if name == "str" and e.args:
                return self.scalar(e.args[0], fr, d + 1)
            if name in ("get", "getenv") and len(e.args) >= 2 and "environ" in ast.unparse(f) + name:
                return self.scalar(e.args[1], fr, d + 1)
            return None
        if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Mult | ast.Add | ast.Sub | ast.FloorDiv):
            a, b = self.scalar(e.left, fr, d + 1), self.scalar(e.right, fr, d + 1)
            if isinstance(a, str) and isinstance(b, str) and a.lstrip("-").isdigit() and b.lstrip("-").isdigit():
                x, y = int(a), int(b)
                ops = {ast.Mult: x * y, ast.Add: x + y, ast.Sub: x - y, ast.FloorDiv: x // y if y else x}
                return str(ops[type(e.op)])
            return _NUMBER if _NUMBER in (a, b) else None
        if isinstance(e, ast.Name):
            if e.id in fr.params:
                arg, caller = fr.params[e.id]
                return self.scalar(arg, caller, d + 1)
            # every assignment counts here, conditional ones too: the first concrete value is the build's
            # default (`T = 1024` ... `if long: T = 4096`); a number read at run time only where none is
            local = [n for n in own_nodes(fr.func) if e.id in _assigned_names(n)] if fr.func is not None else []
            glob = [n for p, n in self.index.globals.get(e.id, []) if p == fr.file]
            got = [self.scalar(v, fr, d + 1) for n in local for v in _values(n)]
            got += [self.scalar(v, Frame(fr.file), d + 1) for n in glob for v in _values(n)]
            concrete = [g for g in got if isinstance(g, str)]
            return concrete[0] if concrete else _NUMBER if _NUMBER in got else None
        return None

    def _name(self, name: str, fr: Frame, d: int) -> list[Flag]:
        if name in fr.params:
            arg, caller = fr.params[name]
            return self.expr(arg, caller, d)
        if fr.func is not None:
            local = [n for n in own_nodes(fr.func) if name in _assigned_names(n) and self.index.unconditional(n)]
            if local:
                return [f for n in local for v in _values(n) for f in self.expr(v, fr, d)]
        every = self.index.globals.get(name, [])
        own = [(p, n) for p, n in every if p == fr.file]
        glob = [(p, n) for p, n in every if self.index.unconditional(n)]
        # the file's own name: its unconditional values, else the one it sets only under a condition (then the
        # call that reads it runs under that condition too); an import by name: any file's global
        mine = [(p, n) for p, n in glob if p == fr.file] or own or glob
        return [f for p, n in mine for v in _values(n) for f in self.expr(v, Frame(p), d)]

    def _attr(self, e: ast.Attribute, fr: Frame, d: int) -> list[Flag]:
        if not (isinstance(e.value, ast.Name) and e.value.id in ("self", "cls") and fr.bound):
            return []
        out: list[Flag] = []
        for c in self.index.mro(fr.bound, fr.file):
            for st in c.node.body:  # class attributes
                if e.attr in _assigned_names(st):
                    out += [f for v in _values(st) for f in self.expr(v, Frame(c.file, None, c.name, fr.bound), d)]
            for m in c.methods.values():  # self.x = ... in a method
                for n in own_nodes(m):
                    if isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == e.attr
                                                         and isinstance(t.value, ast.Name) and t.value.id == "self"
                                                         for t in n.targets):
                        out += self.expr(n.value, Frame(c.file, m, c.name, fr.bound), d)
            prop = c.methods.get(e.attr)
            if prop is not None and any(isinstance(x, ast.Name) and x.id == "property" for x in prop.decorator_list):
                out += self.returns(prop, Frame(c.file, prop, c.name, fr.bound), d)
        return out

    def _call(self, e: ast.Call, fr: Frame, d: int) -> list[Flag]:
        f = e.func
        if isinstance(f, ast.Name):
            return [x for p, fn in self.index.funcs.get(f.id, [])[:3]
                    for x in self.returns(fn, Frame(p, fn, None, None, self._bind(fn, e, fr)), d)]
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
                return self.returns(m, Frame(c.file, m, c.name, fr.bound, self._bind(m, e, fr, method=True)), d)
        return []

    @staticmethod
    def _bind(fn: ast.FunctionDef, call: ast.Call, fr: Frame,
              method: bool = False) -> dict[str, tuple[ast.expr, Frame]]:
        names = [a.arg for a in fn.args.posonlyargs + fn.args.args][1 if method else 0:]
        out = {n: (a, fr) for n, a in zip(names, call.args, strict=False) if not isinstance(a, ast.Starred)}
        out.update({k.arg: (k.value, fr) for k in call.keywords if k.arg})
        return out

    def returns(self, fn: ast.FunctionDef, fr: Frame, d: int) -> list[Flag]:
        return [f for n in own_nodes(fn) if isinstance(n, ast.Return) and self.index.unconditional(n)
                for f in self.expr(n.value, fr, d)]
