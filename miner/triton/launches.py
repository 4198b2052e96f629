"""Launch sites of Triton kernels: `kernel[grid](args, BLOCK=..., num_warps=...)` calls and the Python
function around them (the launcher a unit carries, so a test can call the kernel the way its project does)."""

from __future__ import annotations

import ast
from typing import Any

from miner.frontends.triton_frontend import TritonParam
from miner.triton import launcher_types
from miner.triton.project import Module

_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "grid", "warmup"}


def _callee_name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def grid_kind(node: ast.AST) -> str:
    if isinstance(node, ast.Lambda):
        return "lambda"
    if isinstance(node, (ast.Tuple, ast.List)):
        return "tuple"
    if isinstance(node, ast.Name):
        return "name"
    if isinstance(node, ast.Call):
        return "call"
    return "other"


Func = ast.FunctionDef | ast.AsyncFunctionDef


def _enclosing(tree: ast.Module) -> dict[int, tuple[ast.stmt, str, Func | None]]:
    """id(call node) -> (top-level statement containing it, qualified name of the innermost function,
    that function's node)."""
    out: dict[int, tuple[ast.stmt, str, Func | None]] = {}

    def visit(node: ast.AST, top: ast.stmt, qual: list[str], fn: Func | None) -> None:
        for child in ast.iter_child_nodes(node):
            q, f = qual, fn
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                q = [*qual, child.name]
                f = child if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else f
            if isinstance(child, ast.Call) and isinstance(child.func, ast.Subscript):
                out[id(child)] = (top, ".".join(q), fn)
            visit(child, top, q, f)

    for stmt in tree.body:
        q = [stmt.name] if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) else []
        visit(stmt, stmt, q, stmt if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)) else None)
    return out


def find(mod: Module, kernel: str, params: list[TritonParam]) -> list[dict[str, Any]]:
    """Every `kernel[grid](...)` call in the module, with the statement that holds it (`_stmt`, not JSON)."""
    if f"{kernel}[".encode() not in mod.data and f"{kernel} [".encode() not in mod.data:
        return []
    where = _enclosing(mod.tree)
    out = []
    for call_id, (top, qual, fn) in where.items():
        call = _find_call(top, call_id)
        if call is None or _callee_name(call.func.value) != kernel:
            continue
        out.append(describe(mod, call, top, qual, params, fn))
    out.sort(key=lambda r: r["line"])
    return out


def _find_call(top: ast.stmt, call_id: int) -> ast.Call | None:
    for n in ast.walk(top):
        if id(n) == call_id:
            return n  # type: ignore[return-value]
    return None


def describe(mod: Module, call: ast.Call, top: ast.stmt, qual: str, params: list[TritonParam],
             fn: Func | None = None) -> dict[str, Any]:
    seg = mod.src.segment
    grid = call.func.slice  # type: ignore[union-attr]
    kw = {k.arg: seg(k.value) for k in call.keywords if k.arg}
    given = set(kw)
    free = [p for p in params if p.name not in given]
    # After a `*xs` argument positions no longer say which parameter an expression feeds.
    star = next((i for i, a in enumerate(call.args) if isinstance(a, ast.Starred)), len(call.args))
    args = [{"param": free[i].name if i < len(free) and i < star else None, "expr": seg(a)}
            for i, a in enumerate(call.args)]
    kw_args = [k for k in call.keywords if k.arg and k.arg not in _OPTIONS]
    args += [{"param": k.arg, "expr": seg(k.value)} for k in kw_args]
    # What the launcher's own code says each argument is (tensor dtype, int, float, None): launcher_types.
    launcher_types.arg_values(fn, [*zip(args, [*call.args, *(k.value for k in kw_args)], strict=True)])
    is_top_function = isinstance(top, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    return {
        "launcher": qual or None,
        "line": call.lineno,
        "grid": seg(grid),
        "grid_kind": grid_kind(grid),
        "args": args,
        "options": {k: v for k, v in kw.items() if k in _OPTIONS},
        "starred": any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords),
        "_stmt": top if is_top_function else None,
        "_top_name": top.name if is_top_function else None,
    }
