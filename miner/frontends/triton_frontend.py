"""Triton frontend: every `@triton.jit` function of a Python file, found with Python's own parser.

Only statements are walked (module, class and function bodies, `if`/`try`/`with` blocks), never
expressions, so the cost stays close to the `ast.parse` itself. Names are resolved through the
file's imports: `import triton as tr` + `@tr.jit`, `from triton import jit` + `@jit`, and
`from triton.language import constexpr` all count; `@numba.jit` or `@torch.jit.script` do not.
"""

from __future__ import annotations

import ast
import bisect
from dataclasses import asdict, dataclass, field
from typing import Any

from miner.pyast import dotted_name

PY_SUFFIXES = {".py"}

# Canonical dotted names a decorator or annotation may resolve to.
_JIT = {"triton.jit", "triton.runtime.jit", "triton.runtime.jit.jit", "triton.runtime.jit.JITFunction"}
_AUTOTUNE = {"triton.autotune", "triton.runtime.autotune", "triton.runtime.autotuner.autotune"}
_HEURISTICS = {"triton.heuristics", "triton.runtime.heuristics", "triton.runtime.autotuner.heuristics"}
_CONSTEXPR = {"triton.language.constexpr", "triton.language.core.constexpr", "tl.constexpr", "constexpr"}
_CONFIG = {"triton.Config", "triton.runtime.Config", "triton.runtime.autotuner.Config"}


@dataclass
class TritonParam:
    name: str
    annotation: str | None
    constexpr: bool
    default: str | None


@dataclass
class TritonKernel:
    """One `@triton.jit` definition; the text runs from its first decorator to the end of its body."""

    name: str
    qualified_name: str
    path: str
    start_offset: int
    end_offset: int
    start_line: int
    end_line: int
    def_line: int
    params: list[TritonParam]
    decorators: list[str]
    jit_options: dict[str, str]
    autotune: dict[str, Any] | None
    heuristics: dict[str, str] | None
    nested: bool
    frontend: str = "python_ast"
    diagnostics: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Names:
    """What the names of one module mean: import aliases to dotted module paths."""

    def __init__(self) -> None:
        self.alias: dict[str, str] = {}  # local name -> dotted target ("tr" -> "triton", "jit" -> "triton.jit")

    def add_import(self, node: ast.Import | ast.ImportFrom) -> None:
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    self.alias[a.asname] = a.name
                else:
                    head = a.name.split(".")[0]
                    self.alias.setdefault(head, head)
            return
        if node.level or not node.module:
            return  # relative imports name project modules, never triton
        for a in node.names:
            if a.name != "*":
                self.alias[a.asname or a.name] = f"{node.module}.{a.name}"

    def dotted(self, node: ast.AST) -> str | None:
        """`tr.language.constexpr` -> "triton.language.constexpr"; None for anything but a name chain."""
        return dotted_name(node, self.alias)


def _is(names: Names, node: ast.AST, wanted: set[str]) -> bool:
    if isinstance(node, ast.Call):
        node = node.func
    d = names.dotted(node)
    return d is not None and d in wanted


def is_constexpr(names: Names, ann: ast.AST | None) -> bool:
    if ann is None:
        return False
    if isinstance(ann, ast.Constant) and isinstance(ann.value, str):  # "tl.constexpr" as a string annotation
        try:
            ann = ast.parse(ann.value, mode="eval").body
        except SyntaxError:
            return False
    d = names.dotted(ann)
    return d is not None and (d in _CONSTEXPR or (d.startswith("triton.") and d.endswith(".constexpr")))


class SourceText:
    """Byte offsets of a file's lines: ast columns are UTF-8 byte offsets."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.starts = [0]
        i = data.find(b"\n")
        while i >= 0:
            self.starts.append(i + 1)
            i = data.find(b"\n", i + 1)

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.starts, offset)

    def segment(self, node: ast.AST) -> str:
        a = self.offset(node.lineno, node.col_offset)
        b = self.offset(node.end_lineno, node.end_col_offset)
        return self.data[a:b].decode("utf-8", "replace")

    def span(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> tuple[int, int]:
        """From the `@` of the first decorator (or `def`) to the end of the body."""
        if node.decorator_list:
            d = node.decorator_list[0]
            a = self.data.rfind(b"@", self.starts[d.lineno - 1], self.offset(d.lineno, d.col_offset))
            a = a if a >= 0 else self.offset(d.lineno, d.col_offset)
        else:
            a = self.offset(node.lineno, node.col_offset)
        return a, self.offset(node.end_lineno, node.end_col_offset)


def walk_statements(body: list[ast.stmt], scope: tuple[str, ...] = ()):
    """(statement, enclosing function/class names) for every statement, depth first, in file order."""
    for node in body:
        yield node, scope
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from walk_statements(node.body, (*scope, node.name))
            continue
        for attr in ("body", "orelse", "finalbody", "handlers", "cases"):
            sub = getattr(node, attr, None)
            if sub:
                yield from walk_statements(sub, scope)


def module_names(tree: ast.Module) -> Names:
    names = Names()
    for node, _scope in walk_statements(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names.add_import(node)
    return names


def _literal(node: ast.AST) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _kwargs(call: ast.Call, src: SourceText) -> dict[str, str]:
    return {k.arg: src.segment(k.value) for k in call.keywords if k.arg}


def _config(names: Names, node: ast.AST, src: SourceText) -> dict[str, Any] | None:
    """One `triton.Config({...}, num_warps=4, num_stages=2)` as values, or None when not literal."""
    if not (isinstance(node, ast.Call) and _is(names, node.func, _CONFIG)):
        return None
    kw = {k.arg: k.value for k in node.keywords if k.arg}
    first = node.args[0] if node.args else kw.pop("kwargs", None)
    values = _literal(first) if first is not None else {}
    if not isinstance(values, dict):
        return None
    out: dict[str, Any] = {"kwargs": values}
    for i, opt in enumerate(("num_warps", "num_stages", "num_ctas")):
        v = kw.get(opt) or (node.args[i + 1] if len(node.args) > i + 1 else None)
        if v is not None:
            lit = _literal(v)
            if isinstance(lit, int):
                out[opt] = lit
    return out


def _autotune(names: Names, call: ast.Call, src: SourceText, assigns: dict[str, ast.AST]) -> dict[str, Any]:
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    configs_node = kw.get("configs") or (call.args[0] if call.args else None)
    key_node = kw.get("key") or (call.args[1] if len(call.args) > 1 else None)
    if isinstance(configs_node, ast.Name) and configs_node.id in assigns:
        configs_node = assigns[configs_node.id]  # configs = [triton.Config(...), ...] at module level
    configs: list[dict[str, Any]] | None = None
    if isinstance(configs_node, (ast.List, ast.Tuple)):
        parsed = [_config(names, e, src) for e in configs_node.elts]
        configs = parsed if all(p is not None for p in parsed) else None
    key = _literal(key_node) if key_node is not None else None
    return {
        "configs": configs,
        "configs_text": src.segment(configs_node) if configs_node is not None else None,
        "key": list(key) if isinstance(key, (list, tuple)) else None,
        "key_text": src.segment(key_node) if key_node is not None else None,
        "options": {k: v for k, v in _kwargs(call, src).items() if k not in ("configs", "key")},
    }


def _heuristics(call: ast.Call, src: SourceText) -> dict[str, str]:
    arg = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "values"), None)
    if isinstance(arg, ast.Dict):
        return {str(_literal(k)): src.segment(v) for k, v in zip(arg.keys, arg.values, strict=True) if k is not None}
    return {"*": src.segment(arg)} if arg is not None else {}


def _params(names: Names, fn: ast.FunctionDef | ast.AsyncFunctionDef, src: SourceText) -> list[TritonParam]:
    a = fn.args
    positional = [*a.posonlyargs, *a.args]
    defaults: list[ast.AST | None] = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = []
    for p, d in [*zip(positional, defaults, strict=True), *zip(a.kwonlyargs, a.kw_defaults, strict=True)]:
        out.append(TritonParam(name=p.arg, annotation=src.segment(p.annotation) if p.annotation else None,
                               constexpr=is_constexpr(names, p.annotation),
                               default=src.segment(d) if d is not None else None))
    return out


def top_level_assigns(tree: ast.Module) -> dict[str, ast.AST]:
    out: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            out[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            out[node.target.id] = node.value
    return out


def kernels_in_tree(tree: ast.Module, src: SourceText, path: str, names: Names | None = None) -> list[TritonKernel]:
    names = names or module_names(tree)
    assigns: dict[str, ast.AST] | None = None
    out: list[TritonKernel] = []
    for node, scope in walk_statements(tree.body):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or not node.decorator_list:
            continue
        if not any(_is(names, d, _JIT) for d in node.decorator_list):
            continue
        if assigns is None:
            assigns = top_level_assigns(tree)
        jit_options: dict[str, str] = {}
        autotune = heuristics = None
        for d in node.decorator_list:
            if not isinstance(d, ast.Call):
                continue
            if _is(names, d.func, _JIT):
                jit_options = _kwargs(d, src)
            elif _is(names, d.func, _AUTOTUNE):
                autotune = _autotune(names, d, src, assigns)
            elif _is(names, d.func, _HEURISTICS):
                heuristics = {**(heuristics or {}), **_heuristics(d, src)}
        start, end = src.span(node)
        out.append(TritonKernel(
            name=node.name, qualified_name=".".join([*scope, node.name]), path=path,
            start_offset=start, end_offset=end, start_line=src.line_of(start), end_line=node.end_lineno,
            def_line=node.lineno, params=_params(names, node, src),
            decorators=[src.segment(d) for d in node.decorator_list], jit_options=jit_options,
            autotune=autotune, heuristics=heuristics, nested=bool(scope)))
    return out


def parse_bytes(data: bytes, path: str) -> tuple[list[TritonKernel], str | None]:
    """Kernels of one Python file, and the syntax error that stopped the parse (None when it parsed)."""
    if b"jit" not in data:  # every way of spelling the decorator contains it
        return [], None
    try:
        tree = ast.parse(data, filename=path)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        return [], f"{path}:{line or '?'}: {type(exc).__name__}: {getattr(exc, 'msg', exc)}"
    return kernels_in_tree(tree, SourceText(data), path), None
