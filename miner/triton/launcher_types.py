"""Types of a launch's argument expressions, read from the launcher's own code.

The launcher usually says what each argument is: `out = torch.empty(n, dtype=torch.float16)` is an fp16
tensor, `x.stride(0)`, `x.numel()`, `M, N = x.shape` are ints, `1e-6` a float, `None` a constexpr None,
and a name the launcher calls `.stride()` / `.shape` / `.contiguous()` on is a tensor. Those facts are
what Triton itself specializes on at the call, so they beat every rule on the kernel's side; they are
recorded as origin `launcher_expr` (`launcher_pointer` when a tensor's element type is not visible).

A value is one of: ("tensor", elem | None), ("int", n | None), ("int64", None), ("float", x | None),
("bool", b | None), ("none", None), ("dtype", elem | None), ("const", literal): the second part is the
literal value where a single one reaches the name (a constexpr's value at the call). A name bound twice
to different kinds is unknown: this is a flow-insensitive read of one function, so it answers only
where no path through the launcher disagrees.
"""

from __future__ import annotations

import ast
from typing import Any

Value = tuple[str, Any]

# torch dtype attribute -> Triton element type.
TORCH_DTYPES = {
    "float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
    "float64": "fp64", "double": "fp64", "int32": "i32", "int": "i32", "int64": "i64", "long": "i64",
    "int16": "i16", "short": "i16", "int8": "i8", "uint8": "u8", "bool": "i1", "uint32": "u32",
    "uint64": "u64", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}
_TL_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "int32": "i32",
              "int64": "i64", "int16": "i16", "int8": "i8", "uint8": "u8", "int1": "i1"}
_CREATE = {"empty", "zeros", "ones", "full", "rand", "randn", "empty_strided", "tensor", "as_tensor",
           "arange", "randint", "randperm", "linspace"}
_CREATE_LIKE = {"empty_like", "zeros_like", "ones_like", "full_like", "rand_like", "randn_like", "clone"}
_NEW = {"new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"}
# Tensor methods that keep the element type (views, copies, layout changes).
_SAME = {"view", "reshape", "contiguous", "t", "transpose", "permute", "flatten", "squeeze", "unsqueeze",
         "expand", "expand_as", "clone", "detach", "view_as", "reshape_as", "narrow", "select", "flip",
         "movedim", "unflatten", "repeat", "requires_grad_", "zero_", "fill_", "cuda", "mT", "T", "unfold",
         "diagonal", "as_strided", "index_select", "masked_fill", "cpu"}
_CAST = {"float": "fp32", "half": "fp16", "bfloat16": "bf16", "double": "fp64", "int": "i32", "long": "i64",
         "bool": "i1", "short": "i16", "char": "i8", "byte": "u8"}
_INT_METHODS = {"stride", "size", "numel", "dim", "element_size", "nelement", "ndimension", "get_device"}
_INT_FUNCS = {"len", "int", "cdiv", "next_power_of_2", "ceil", "floor", "prod", "ceil_div", "round"}
# Attribute reads and method calls only a tensor answers: the name is a tensor.
_TENSOR_USES = {"stride", "numel", "shape", "dtype", "contiguous", "is_contiguous", "device", "data_ptr",
                "element_size", "view", "reshape", "ndim", "dim", "size", "new_empty", "new_zeros",
                "transpose", "permute", "unsqueeze", "squeeze", "is_cuda", "storage_offset", "flatten"}


def dtype_of(node: ast.AST, env: dict[str, Value]) -> str | None:
    """`torch.float16` / `tl.float16` / `x.dtype` / a name bound to one -> the Triton element type."""
    if isinstance(node, ast.Attribute):
        if isinstance(node.value, ast.Name) and node.value.id == "torch":
            return TORCH_DTYPES.get(node.attr)
        if isinstance(node.value, ast.Name) and node.value.id in ("tl", "triton.language"):
            return _TL_DTYPES.get(node.attr)
        if node.attr == "dtype":
            v = value_of(node.value, env)
            return v[1] if v and v[0] == "tensor" else None
    if isinstance(node, ast.Name):
        v = env.get(node.id)
        return v[1] if v and v[0] == "dtype" else None
    return None


def _kw(call: ast.Call, name: str) -> ast.AST | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _literal_int(v: Value | None) -> int | None:
    return v[1] if v is not None and v[0] == "int" and isinstance(v[1], int) else None


def _descriptor(node: ast.Call, env: dict[str, Value]) -> Value | None:
    """`TensorDescriptor.from_tensor(t, block_shape)` / `TensorDescriptor(base, shape, strides, block_shape)`
    -> ("desc", (element type of t, block shape when every entry is a literal))."""
    f = node.func
    tail = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
    owner = f.value if isinstance(f, ast.Attribute) else None
    owner_name = owner.attr if isinstance(owner, ast.Attribute) else owner.id if isinstance(owner, ast.Name) else ""
    if tail == "from_tensor" and owner_name == "TensorDescriptor":
        base, shape = _kw(node, "tensor"), _kw(node, "block_shape")
        base = base if base is not None else (node.args[0] if node.args else None)
        shape = shape if shape is not None else (node.args[1] if len(node.args) > 1 else None)
    elif tail == "TensorDescriptor":
        base, shape = _kw(node, "base"), _kw(node, "block_shape")
        base = base if base is not None else (node.args[0] if node.args else None)
        shape = shape if shape is not None else (node.args[3] if len(node.args) > 3 else None)
    else:
        return None
    t = value_of(base, env)
    dims = None
    if isinstance(shape, ast.Name):
        shape = None
    if isinstance(shape, (ast.List, ast.Tuple)):
        # A literal, or a name the kernel's constexprs may give (`block_shape=[BLOCK_M, BLOCK_K]`).
        vals = [_literal_int(value_of(e, env)) if not isinstance(e, ast.Name) or _literal_int(value_of(e, env))
                is not None else e.id for e in shape.elts]
        if all(v is not None for v in vals):
            dims = vals
    return ("desc", (t[1] if t and t[0] == "tensor" else None, dims))


def _call(node: ast.Call, env: dict[str, Value]) -> Value | None:
    desc = _descriptor(node, env)
    if desc is not None:
        return desc
    f = node.func
    name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
    recv = value_of(f.value, env) if isinstance(f, ast.Attribute) else None
    on_torch = isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and f.value.id == "torch"
    if name == "float" and isinstance(f, ast.Name):
        return ("float", None)
    if name in ("bool",) and isinstance(f, ast.Name):
        return ("bool", None)
    if name in _INT_FUNCS and not (recv and recv[0] == "tensor"):
        return ("int", None)
    if name in ("max", "min") and isinstance(f, ast.Name):
        kinds = {(value_of(a, env) or ("?",))[0] for a in node.args}
        return ("int", None) if kinds == {"int"} else ("float", None) if kinds <= {"int", "float"} and kinds else None
    dt_node = _kw(node, "dtype")
    if on_torch and name in _CREATE:
        if dt_node is not None:
            return ("tensor", dtype_of(dt_node, env))
        if name in ("randint", "randperm"):
            return ("tensor", "i64")
        if name == "arange":  # ints in, int64 out (torch's rule); a float bound makes it fp32
            kinds = {(value_of(a, env) or ("?",))[0] for a in node.args}
            return ("tensor", "i64" if kinds == {"int"} else None)
        return ("tensor", "fp32" if name not in ("tensor", "as_tensor") else None)  # torch's default dtype
    if on_torch and name in _CREATE_LIKE and node.args:
        if dt_node is not None:
            return ("tensor", dtype_of(dt_node, env))
        src = value_of(node.args[0], env)
        return ("tensor", src[1] if src and src[0] == "tensor" else None)
    if recv is None or recv[0] != "tensor":
        return None
    if name in _NEW:
        return ("tensor", dtype_of(dt_node, env) if dt_node is not None else recv[1])
    if name in ("stride", "size") and not node.args:
        return ("ints", None)  # a tuple of ints: the kernel indexes it (`stride_x[0]`)
    if name in _INT_METHODS and (node.args or name not in ("stride", "size")):
        return ("int", None)
    if name == "data_ptr":
        return ("int64", None)
    if name in _CAST:
        return ("tensor", _CAST[name])
    if name in ("to", "view", "type") and node.args:
        dt = dtype_of(node.args[0], env)
        if dt is not None:
            return ("tensor", dt)
        if name == "view":
            return ("tensor", recv[1])
        return ("tensor", dtype_of(dt_node, env) if dt_node is not None else None) if name == "to" else None
    if name == "to":
        return ("tensor", dtype_of(dt_node, env) if dt_node is not None else recv[1])
    if name in _SAME:
        return ("tensor", recv[1])
    return None


def value_of(node: ast.AST | None, env: dict[str, Value]) -> Value | None:
    """What `node` evaluates to, as far as the launcher's text shows; None when it does not."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        v = node.value
        if v is None:
            return ("none", None)
        if isinstance(v, bool):
            return ("bool", v)
        if isinstance(v, int):
            return ("int", v)
        if isinstance(v, float):
            return ("float", v)
        return ("const", v)
    if isinstance(node, ast.Name):
        return env.get(node.id)
    if isinstance(node, ast.Call):
        return _call(node, env)
    if isinstance(node, ast.Attribute):
        if node.attr in ("T", "mT", "data", "real"):
            v = value_of(node.value, env)
            return v if v and v[0] == "tensor" else None
        if node.attr == "shape":
            v = value_of(node.value, env)
            return ("ints", None) if v and v[0] == "tensor" else None
        if node.attr in ("ndim",):
            v = value_of(node.value, env)
            return ("int", None) if v and v[0] == "tensor" else None
        dt = dtype_of(node, env)
        if dt is not None:
            return ("dtype", dt)
        return None
    if isinstance(node, ast.Subscript):
        base = node.value
        if isinstance(base, ast.Attribute) and base.attr == "shape" and not isinstance(node.slice, ast.Slice):
            return ("int", None)
        if isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and \
                base.func.attr in ("stride", "size") and not base.args and not isinstance(node.slice, ast.Slice):
            return ("int", None)
        if isinstance(base, ast.Attribute) and base.attr == "shape":
            return ("ints", None)
        v = value_of(base, env)
        return v if v and v[0] == "tensor" else None
    if isinstance(node, ast.BinOp):
        a, b = value_of(node.left, env), value_of(node.right, env)
        if a is None or b is None:
            return None
        kinds = {a[0], b[0]}
        if "tensor" in kinds:
            return None  # broadcasting arithmetic: the result's dtype follows promotion rules
        if kinds <= {"int", "bool"}:
            return ("float", None) if isinstance(node.op, ast.Div) else ("int", None)
        if kinds <= {"int", "float", "bool"}:
            return ("float", None)
        return None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = value_of(node.operand, env)
        if v and v[0] in ("int", "float"):
            return (v[0], -v[1] if isinstance(node.op, ast.USub) and v[1] is not None else v[1])
        return None
    if isinstance(node, ast.IfExp):
        a, b = value_of(node.body, env), value_of(node.orelse, env)
        return a if a == b else None
    return None


def _merge(env: dict[str, Value | None], name: str, v: Value | None) -> None:
    """A name bound to two different kinds is unknown (None), for good."""
    if name in env and env[name] != v:
        old = env[name]
        # The same kind with two details (a tensor's element type, an int's value): keep the kind only.
        if old and v and old[0] == v[0]:
            env[name] = (old[0], None)
        else:
            env[name] = None
        return
    env[name] = v


def environment(fn: ast.FunctionDef | ast.AsyncFunctionDef | None) -> dict[str, Value]:
    """Name -> value for the launcher's parameters and local assignments (in source order)."""
    env: dict[str, Value | None] = {}
    if fn is None:
        return {}
    args = fn.args
    positional = [*args.posonlyargs, *args.args]
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    for a, d in [*zip(positional, defaults, strict=True), *zip(args.kwonlyargs, args.kw_defaults, strict=True)]:
        ann = ast.unparse(a.annotation) if a.annotation is not None else ""
        v: Value | None = None
        if ann in ("torch.Tensor", "Tensor"):
            v = ("tensor", None)
        elif ann == "int":
            v = ("int", None)
        elif ann == "float":
            v = ("float", None)
        elif ann == "bool":
            v = ("bool", None)
        elif d is not None:
            dv = value_of(d, {})
            v = dv if dv and dv[0] in ("int", "float", "bool") else None
        if v is not None:
            env[a.arg] = v
    _tensor_uses(fn, env, {a.arg for a in [*positional, *args.kwonlyargs]})
    assigns = sorted((n for n in ast.walk(fn) if isinstance(n, (ast.Assign, ast.AnnAssign))),
                     key=lambda n: (n.lineno, n.col_offset))
    for _ in range(2):  # a second pass sees names assigned from names bound later in the text (loops)
        for n in assigns:
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if n.value is None:
                continue
            for t in targets:
                _bind(t, n.value, env)
    for n in ast.walk(fn):  # loop variables and augmented targets: bound to something this read does not follow
        if isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
            for x in ast.walk(n.target):
                if isinstance(x, ast.Name):
                    env[x.id] = None
    # A name the launcher calls `.stride()` / `.shape` on is a tensor, whatever function returned it.
    _tensor_uses(fn, env)
    return {k: v for k, v in env.items() if v is not None}


def _tensor_uses(fn: ast.AST, env: dict[str, Value | None], only: set[str] | None = None) -> None:
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and n.attr in _TENSOR_USES and isinstance(n.value, ast.Name):
            name = n.value.id
            if name in ("torch", "self", "ctx", "triton", "tl", "np") or (only is not None and name not in only):
                continue
            if env.get(name) is None:
                env[name] = ("tensor", None)


def _bind(target: ast.AST, value: ast.AST, env: dict[str, Value | None]) -> None:
    snapshot = {k: v for k, v in env.items() if v is not None}
    if isinstance(target, ast.Name):
        _merge(env, target.id, value_of(value, snapshot))
    elif isinstance(target, (ast.Tuple, ast.List)):
        names = [e for e in target.elts]
        shape_like = (isinstance(value, ast.Attribute) and value.attr == "shape") or (
            isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute)
            and value.func.attr in ("size", "stride") and not value.args)
        if shape_like:
            for e in names:
                if isinstance(e, ast.Name):
                    _merge(env, e.id, ("int", None))
        elif isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(names):
            for e, v in zip(names, value.elts, strict=True):
                _bind(e, v, env)
        else:
            for e in names:
                for x in ast.walk(e):
                    if isinstance(x, ast.Name):
                        env[x.id] = None


def signature_entry(v: Value | None) -> tuple[str, Any] | None:
    """A launch argument's value -> (Triton type, constexpr value or None): `*fp16`, `i32`, `fp32`, ...;
    ("constexpr", None) for a None argument (Triton makes it a constexpr)."""
    if v is None:
        return None
    kind, detail = v
    if kind == "tensor":
        return ("*" + (detail or "fp32"), None)
    if kind == "int":
        return ("i32", None)
    if kind == "int64":
        return ("i64", None)
    if kind == "float":
        return ("fp32", None)
    if kind == "bool":
        return ("i1", None)
    if kind == "none":
        return ("constexpr", None)
    if kind == "ints":  # the length is the kernel's: signature.py counts its indices
        return ("ints", None)
    if kind == "desc":  # the block shape and element type are filled in by descriptors.py
        return ("tensordesc", None)
    return None


def _const_value(node: ast.AST, env: dict[str, Value]) -> Any:
    """A constexpr's value at the call: a literal through the launcher's names, a `tl.float16`, or, for
    `a if cond else b` of two such values, the first (one variant the project runs)."""
    if isinstance(node, ast.IfExp):
        return _const_value(node.body, env)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "tl" \
            and node.attr in _TL_DTYPES:
        return f"tl.{node.attr}"
    v = value_of(node, env)
    if v is not None and v[0] in ("int", "float", "bool", "const") and v[1] is not None:
        return v[1]
    return None


def arg_values(fn: ast.FunctionDef | ast.AsyncFunctionDef | None,
               nodes: list[tuple[dict[str, Any], ast.AST]]) -> None:
    """Annotate each launch argument entry (param, expr) with what the launcher gives it: `type` (a Triton
    type; `*fp32` with `elem_known: false` when a tensor's element type is not visible) and `value` (a
    literal reaching it through the launcher's names, for a constexpr)."""
    env = environment(fn)
    for entry, node in nodes:
        v = value_of(node, env)
        e = signature_entry(v)
        c = _const_value(node, env)
        if c is not None and not isinstance(node, ast.Constant):
            entry["value"] = c
        if e is None:
            continue
        entry["type"] = e[0]
        if v is not None and v[0] == "tensor" and v[1] is None:
            entry["elem_known"] = False
        if v is not None and v[0] == "desc":
            entry["elem"], entry["block_shape"] = v[1]
