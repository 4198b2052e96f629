"""The compile signature of a Triton kernel: a type for every runtime parameter and a value for every
`tl.constexpr`, each with where it came from.

Triton types arguments when a kernel is called; compiling ahead of time needs them written down. They are
taken, in this order, from an annotation, what the launcher's own code says the argument is (a tensor of a
visible dtype, an int, a float, None: launcher_types.py), the parameter's default, the launch site's
argument expression, the kernel's own use of the parameter (`tl.load(p + offs)` makes `p` a pointer),
and last from rules on the name. Pointers whose element type nothing tells are fp32, scalars i32: such
entries say `fallback`, so a reader knows which compiled variants are guesses.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from miner import lazy_re
from miner.frontends.triton_frontend import TritonKernel
from miner.triton import descriptors

_POINTER_USES = {"load", "store", "atomic_add", "atomic_max", "atomic_min", "atomic_cas", "atomic_xchg",
                 "atomic_and", "atomic_or", "atomic_xor", "make_block_ptr", "make_tensor_descriptor"}
_ANNOTATION_TYPES = {
    "int": "i32", "float": "fp32", "bool": "i1",
    "tl.int1": "i1", "tl.int8": "i8", "tl.int16": "i16", "tl.int32": "i32", "tl.int64": "i64",
    "tl.uint32": "u32", "tl.uint64": "u64", "tl.float16": "fp16", "tl.bfloat16": "bf16", "tl.float32": "fp32",
    "tl.float64": "fp64", "tl.tensor": "*fp32", "torch.Tensor": "*fp32",
}
_FLOAT_NAME = lazy_re.compile(r"(^|_)(eps|epsilon|scale|sm_scale|alpha|beta|gamma|momentum|temperature|softcap|lr|"
                         r"weight_decay|ratio|theta|dropout_p|p_drop|label_smoothing|negative_slope|threshold|"
                         r"lambd|factor|min_val|max_val|base|std|mean|inv_.*|.*_scale|norm)$", re.I)
_POINTER_NAME = lazy_re.compile(r"(^|_)(ptr|ptrs|pointer)$|^p_|_ptr_|Ptr$", re.I)
# Offsets, sizes, counts and strides: added to pointers, never pointers themselves.
_SCALAR_NAME = lazy_re.compile(r"(^|_)(stride|strides|offset|offsets|off|offs|start|end|size|sizes|num|len|length|"
                          r"n|m|k|dim|dims|idx|index|batch|seq|seqlen|rows|cols|row|col|numel|count|total|"
                          r"head|heads|step|pos|chunk|group|groups|block|width|height)(_|$|\d)|^N_|_N$",
                          re.I)
_BOOL_CONST = lazy_re.compile(r"^(IS|HAS|USE|EVEN|ENABLE|RETURN|SAVE|STORE|APPLY|CAUSAL|NEED|DO|WITH|INPLACE|"
                         r"TRAINING|REVERSE|HEAD_FIRST|FUSE|COMPUTE|OUTPUT|LOAD)(_|$)|_(FLAG|ON|ENABLED)$", re.I)
_DTYPE_CONST = lazy_re.compile(r"dtype|_ty$|type$", re.I)


def _pointer_params(fn: ast.FunctionDef, names: set[str]) -> set[str]:
    """Parameters whose value (or a value computed from it) is the pointer operand of a memory op."""
    derived: dict[str, set[str]] = {n: {n} for n in names}  # local name -> params it is computed from
    for n in ast.walk(fn):
        if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
            srcs = {x.id for x in ast.walk(n.value) if isinstance(x, ast.Name)}
            roots = set().union(*(derived.get(s, set()) for s in srcs)) if srcs else set()
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                for x in ast.walk(t):
                    if isinstance(x, ast.Name) and roots:
                        derived.setdefault(x.id, set()).update(roots)
    # Sizes and strides are multiplied, divided and compared; pointers are only offset.
    scalar: set[str] = set()
    for n in ast.walk(fn):
        operands: list[ast.AST] = []
        if isinstance(n, ast.BinOp) and not isinstance(n.op, (ast.Add, ast.Sub)):
            operands = [n.left, n.right]
        elif isinstance(n, ast.AugAssign) and not isinstance(n.op, (ast.Add, ast.Sub)):
            operands = [n.target, n.value]
        elif isinstance(n, ast.Compare):
            operands = [n.left, *n.comparators]
        scalar.update(x.id for x in operands if isinstance(x, ast.Name))
    out: set[str] = set()
    for n in ast.walk(fn):
        if isinstance(n, ast.Call):
            attr = n.func.attr if isinstance(n.func, ast.Attribute) else None
            operand = None
            if attr in _POINTER_USES:
                operand = n.args[0] if n.args else next((k.value for k in n.keywords
                                                         if k.arg in ("pointer", "base")), None)
            if operand is not None:
                for x in ast.walk(operand):
                    if isinstance(x, ast.Name):
                        out |= derived.get(x.id, set())
        elif isinstance(n, ast.Attribute) and n.attr == "dtype" and isinstance(n.value, ast.Name):
            if n.value.id in names:  # `x_ptr.dtype.element_ty`
                out.add(n.value.id)
    return (out - scalar) & names


def _indexed_params(fn: ast.FunctionDef, names: set[str]) -> dict[str, int]:
    """Parameters the kernel indexes with literals (`stride_q[2]`): tuples, with the length the highest
    index shows (pointers are never subscripted in Triton; loaded tensors are locals)."""
    out: dict[str, int] = {}
    for n in ast.walk(fn):
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name) and n.value.id in names \
                and isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, int):
            out[n.value.id] = max(out.get(n.value.id, 0), n.slice.value + 1)
    return out


def printed_params(fn: ast.FunctionDef, names: set[str]) -> set[str]:
    """Parameters passed as the first argument of `print(...)` / `tl.device_print(...)` /
    `tl.static_print(...)`: the prefix, a Python string (Triton makes a string argument a constexpr)."""
    out: set[str] = set()
    for n in ast.walk(fn):
        if not (isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Name) and n.args[0].id in names):
            continue
        f = n.func
        if (isinstance(f, ast.Name) and f.id == "print") or \
                (isinstance(f, ast.Attribute) and f.attr in ("device_print", "static_print")):
            out.add(n.args[0].id)
    return out


def tested_names(fn: ast.FunctionDef) -> set[str]:
    """Names used as a condition (`if HAS_BIAS:`, `x if IS_CAUSAL else y`, `not REVERSE`, `a and B`)."""
    out: set[str] = set()
    for n in ast.walk(fn):
        tests: list[ast.AST] = []
        if isinstance(n, (ast.If, ast.IfExp, ast.While)):
            tests = [n.test]
        elif isinstance(n, ast.BoolOp):
            tests = list(n.values)
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Not):
            tests = [n.operand]
        out.update(t.id for t in tests if isinstance(t, ast.Name))
    return out


def called_by_jit(fns: list[ast.FunctionDef | None]) -> set[str]:
    """Names the given jit functions call (`_helper(...)`, `mod._helper(...)`), each not counting itself."""
    out: set[str] = set()
    for fn in fns:
        if fn is None:
            continue
        for n in ast.walk(fn):
            if isinstance(n, ast.Call):
                name = n.func.id if isinstance(n.func, ast.Name) else \
                    n.func.attr if isinstance(n.func, ast.Attribute) else None
                if name and name != fn.name:
                    out.add(name)
    return out


def role(fn: ast.FunctionDef, launched: bool, called: bool = False) -> str:
    """"kernel" for an entry point (launched, or reading its program id, or returning nothing and called by
    no other jit function); "helper" for a device function: it returns a value to the kernels calling it,
    or it is only called from another jit function (its parameters may be block pointers or tuples no
    launch can pass)."""
    if launched:
        return "kernel"
    if called:  # reading the program id (a swizzle, a debug print) does not make it launchable
        return "helper"
    for n in ast.walk(fn):
        if isinstance(n, ast.Attribute) and n.attr in ("program_id", "num_programs"):
            return "kernel"
    if any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fn)):
        return "helper"
    return "kernel"


def _literal(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _scalar_type(value: Any) -> str | None:
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2**31) <= value < 2**31 else "i64"
    if isinstance(value, float):
        return "fp32"
    return None


def _constexpr_value(name: str, default: str | None, launch_expr: str | None,
                     autotune: dict[str, Any] | None, tested: bool,
                     launch_arg: dict[str, Any] | None = None) -> tuple[Any, str]:
    if launch_arg is not None and launch_expr is not None:
        if "value" in launch_arg:  # a literal reaching the argument through the launcher's own names
            return launch_arg["value"], "launcher_expr"
        if launch_arg.get("type") == "constexpr":  # None
            return None, "launcher_expr"
    for text, origin in ((launch_expr, "launcher"), (default, "default")):
        v = _literal(text)
        if v is not None and isinstance(v, (int, float, bool, str)):
            return v, origin
        if text and re.fullmatch(r"(tl|triton\.language)\.(float16|bfloat16|float32|float64|int32|int64)", text):
            return "tl." + text.rsplit(".", 1)[1], origin
    configs = (autotune or {}).get("configs") or []
    if configs and name in configs[0].get("kwargs", {}):
        return configs[0]["kwargs"][name], "autotune"
    if _DTYPE_CONST.search(name):
        return "tl.float32", "fallback"
    if tested or _BOOL_CONST.search(name):
        return False, "fallback"
    return 64, "fallback"  # a power of two: valid for tl.arange and block shapes


def infer(k: TritonKernel, fn: ast.FunctionDef, launch: dict[str, Any] | None, helper: bool = False,
          module: ast.Module | None = None) -> dict[str, Any]:
    """{"role", "signature": {param: type}, "constexprs": {param: value}, "origins": {param: origin},
    "num_warps", "num_stages"} for compiling `k` ahead of time."""
    launch_args = {a["param"]: a for a in (launch or {}).get("args", []) if a.get("param")}
    exprs = {p: a["expr"] for p, a in launch_args.items()}
    runtime = {p.name for p in k.params if not p.constexpr}
    pointers = _pointer_params(fn, runtime)
    tested = tested_names(fn)
    descs = descriptors.descriptor_params(fn, runtime)
    tuples = _indexed_params(fn, runtime)
    printed = printed_params(fn, runtime)
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    origins: dict[str, str] = {}
    for p in k.params:
        if p.constexpr:
            v, origin = _constexpr_value(p.name, p.default, exprs.get(p.name), k.autotune, p.name in tested,
                                         launch_args.get(p.name))
            signature[p.name], constexprs[p.name], origins[p.name] = "constexpr", v, origin
            continue
        ty, origin = None, "fallback"
        given = launch_args.get(p.name, {}).get("type")
        if given == "tensordesc" or p.name in descs:
            continue  # typed below, once the constexprs its block shape may name are known
        if p.annotation and p.annotation in _ANNOTATION_TYPES:
            ty, origin = _ANNOTATION_TYPES[p.annotation], "annotation"
        elif p.name in printed and p.name not in launch_args:  # a print prefix: a string constexpr
            signature[p.name], constexprs[p.name], origins[p.name] = "constexpr", "", "usage"
            continue
        elif p.name in tuples:  # `stride_x[0]` in the kernel: a tuple argument (`x.stride()` at the call)
            ty = "(" + ", ".join(["i32"] * tuples[p.name]) + ")"
            origin = "launcher_expr" if given == "ints" else "usage"
        elif given == "constexpr":  # None at the call: Triton makes the parameter a constexpr
            signature[p.name], constexprs[p.name], origins[p.name] = "constexpr", None, "launcher_expr"
            continue
        elif given:  # the launcher's own expression (a tensor's dtype, x.stride(0), 1e-6): launcher_types
            ty = given
            origin = "launcher_pointer" if launch_args[p.name].get("elem_known") is False else "launcher_expr"
        elif p.name in pointers and (_POINTER_NAME.search(p.name) or not _SCALAR_NAME.search(p.name)):
            ty, origin = "*fp32", "usage"
        elif _scalar_type(_literal(p.default)):
            ty, origin = _scalar_type(_literal(p.default)), "default"
        elif _scalar_type(_literal(exprs.get(p.name))):
            ty, origin = _scalar_type(_literal(exprs.get(p.name))), "launcher"
        elif _POINTER_NAME.search(p.name):
            ty, origin = "*fp32", "name"
        elif _SCALAR_NAME.search(p.name):  # `stride_mean` is a stride, not a mean
            ty, origin = "i32", "name"
        elif _FLOAT_NAME.search(p.name):
            ty, origin = "fp32", "name"
        else:
            ty = "fp32" if helper else "i32"  # a helper's untyped arguments are mostly loaded values
        signature[p.name], origins[p.name] = ty, origin
    for p_name, (ty, origin) in descriptors.signature_types(fn, runtime, constexprs, module, launch_args).items():
        signature[p_name], origins[p_name] = ty, origin
    signature = {p.name: signature[p.name] for p in k.params if p.name in signature}
    opts = (launch or {}).get("options", {})
    configs = (k.autotune or {}).get("configs") or []
    first = configs[0] if configs else {}

    def option(name: str, default: int) -> int:
        v = _literal(opts.get(name))
        if isinstance(v, int):
            return v
        return int(first.get(name, default))

    return {"role": "helper" if helper else "kernel", "signature": signature, "constexprs": constexprs,
            "origins": origins, "num_warps": option("num_warps", 4), "num_stages": option("num_stages", 3)}
