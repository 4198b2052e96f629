"""Tensor-descriptor parameters (TMA): `desc.load([i, j])` in the kernel, a host `TensorDescriptor` at the call.

Triton types such a parameter `tensordesc<fp16[64, 64]>`: element type and block shape are part of the
compiled variant. The block shape is read, first found, from an autotune pre-hook of the kernel's module
(`nargs["desc"].block_shape = [BLOCK_M, BLOCK_K]`, the pattern Triton's own tutorials use: the names are
the config's constexprs, so the shape follows the constexpr values compiled), then from the launcher's
`TensorDescriptor.from_tensor(t, block_shape=[...])` when its entries are literals, and last as the rank of
the kernel's own `desc.load([...])` offsets with the kernel's power-of-two fallback in every dimension.
"""

from __future__ import annotations

import ast
from typing import Any

_METHODS = {"load", "store", "atomic_add", "atomic_min", "atomic_max", "atomic_and", "atomic_or",
            "atomic_xor", "gather", "scatter"}
FALLBACK_DIM = 64


def descriptor_params(fn: ast.FunctionDef, names: set[str]) -> dict[str, int]:
    """Parameters the kernel calls a descriptor method on directly (`desc.load([b, m, k])`), with the rank
    its offset lists show (0 when none is a literal list)."""
    out: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in _METHODS \
                and isinstance(n.func.value, ast.Name) and n.func.value.id in names:
            rank = len(n.args[0].elts) if n.args and isinstance(n.args[0], (ast.List, ast.Tuple)) else 0
            out[n.func.value.id] = max(out.get(n.func.value.id, 0), rank)
    return out


def _hook_shapes(tree: ast.Module | None) -> dict[str, list[ast.AST]]:
    """`nargs["p"].block_shape = [...]` in any function of the module -> p -> the element expressions,
    each a literal or the name of a config entry (`BLOCK_M = nargs["BLOCK_M"]`, or `nargs["BLOCK_M"]`)."""
    out: dict[str, list[ast.AST]] = {}
    if tree is None:
        return out
    for fn in (n for n in tree.body if isinstance(n, ast.FunctionDef)):
        local: dict[str, ast.AST] = {}
        for n in ast.walk(fn):
            if not isinstance(n, ast.Assign) or len(n.targets) != 1:
                continue
            t = n.targets[0]
            if isinstance(t, ast.Name):
                local[t.id] = n.value
            elif isinstance(t, ast.Attribute) and t.attr == "block_shape" and isinstance(t.value, ast.Subscript) \
                    and isinstance(t.value.slice, ast.Constant) and isinstance(t.value.slice.value, str) \
                    and isinstance(n.value, (ast.List, ast.Tuple)):
                out[t.value.slice.value] = [local.get(e.id, e) if isinstance(e, ast.Name) else e
                                            for e in n.value.elts]
    return out


def _dim(e: ast.AST, constexprs: dict[str, Any]) -> int | None:
    if isinstance(e, ast.Constant) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return e.value
    if isinstance(e, ast.Subscript) and isinstance(e.slice, ast.Constant):  # nargs["BLOCK_M"]
        key = e.slice.value
    elif isinstance(e, ast.Name):
        key = e.id
    else:
        return None
    v = constexprs.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def signature_types(fn: ast.FunctionDef, names: set[str], constexprs: dict[str, Any],
                    module: ast.Module | None, launch_args: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """param -> (`tensordesc<elem[d0, d1]>`, origin) for every descriptor parameter."""
    ranks = descriptor_params(fn, names)
    given = {p for p, a in launch_args.items() if str(a.get("type", "")).startswith("tensordesc") and p in names}
    hooks = _hook_shapes(module)
    out: dict[str, tuple[str, str]] = {}
    for p in sorted(set(ranks) | given):
        arg = launch_args.get(p, {})
        elem = arg.get("elem") or "fp32"
        dims: list[int | None] | None = None
        origin = "usage"
        if p in hooks:
            dims, origin = [_dim(e, constexprs) for e in hooks[p]], "launcher_expr"
        elif arg.get("block_shape"):
            dims = [d if isinstance(d, int) else _dim(ast.Name(id=d), constexprs) for d in arg["block_shape"]]
            origin = "launcher_expr"
        if dims is None or any(d is None for d in dims):
            dims, origin = [FALLBACK_DIM] * max(ranks.get(p, 0), len(dims or []), 1), "usage"
        if not arg.get("elem"):
            origin = "usage"  # the element type is a guess
        out[p] = (f"tensordesc<{elem}[{', '.join(str(d) for d in dims)}]>", origin)
    return out
