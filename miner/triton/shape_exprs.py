"""The expression half of the shape reader (`miner/triton/shapes.py`): the symbolic value of an expression.

Attribute and subscript reads of `.shape`, arithmetic with broadcasting, torch and einops calls, methods
on tensors, and calls into other functions of the unit (`_enter`, which runs the statement half on them).
"""

from __future__ import annotations

import ast
from typing import Any

from miner.triton.shape_model import Dim, Shape, broadcast, closed, literal, set_factors, unify
from miner.triton.shape_ops import (
    Const,
    Items,
    Param,
    Product,
    RankOf,
    ShapeOf,
    Starred,
    _cat,
    _dims_of,
    _einsum,
    _groups,
    _is_tensor,
    _matmul,
    _method,
    _sizelike,
    _tensor_side,
    _view,
    as_dim,
    as_shape,
)

# Methods and functions whose result has their (first) tensor argument's shape.
_SAME = {"float", "half", "bfloat16", "double", "to", "type", "type_as", "contiguous", "clone", "detach",
         "exp", "exp2", "log", "log1p", "sigmoid", "tanh", "relu", "silu", "gelu", "softplus", "abs", "neg",
         "sqrt", "rsqrt", "pow", "square", "clamp", "clamp_min", "clamp_max", "masked_fill", "cumsum",
         "cumprod", "softmax", "log_softmax", "sin", "cos", "reciprocal", "sign", "floor", "round", "erf",
         "logsigmoid", "elu", "leaky_relu", "dropout", "layer_norm", "group_norm", "rms_norm", "normalize",
         "tril", "triu", "flip", "roll", "empty_like", "zeros_like", "ones_like", "randn_like", "rand_like",
         "full_like", "fill_", "zero_", "requires_grad_", "cpu", "cuda", "nan_to_num", "sub_", "mul_", "add_",
         "div_", "exp_", "sigmoid_", "silu_", "relu_"}
_BINARY = {"add", "sub", "mul", "div", "maximum", "minimum", "addcmul", "addcdiv", "lerp", "where", "true_divide"}
_MODULES = {"torch", "F", "nn", "functional", "tl", "triton", "math", "np", "einops"}
_MAX_DEPTH = 3


class Expressions:
    """Mixed into `shapes.Reader`, which provides `env`, `funcs`, `classes`, `stack` and `run`."""

    env: dict[str, Any]
    funcs: dict[str, ast.FunctionDef]
    classes: dict[str, ast.ClassDef]
    stack: list[str]

    # --- expressions
    def _expr(self, node: ast.expr | None) -> Any:
        if node is None:
            return None
        if isinstance(node, ast.Constant):
            return Const(node.value)
        if isinstance(node, ast.Name):
            return self.env.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self._expr(node.value)
            if node.attr == "shape" and (s := as_shape(base)) is not None:
                return ShapeOf(s)
            if node.attr == "ndim" and (s := as_shape(base)) is not None:
                return RankOf(s)
            if node.attr in ("T", "mT") and (s := as_shape(base)) is not None and s.rank is not None:
                return closed(s.dims[:-2] + s.dims[-2:][::-1])
            return None
        if isinstance(node, ast.Subscript):
            return self._subscript(node)
        if isinstance(node, (ast.Tuple, ast.List)):
            return Items([Starred(self._expr(e.value)) if isinstance(e, ast.Starred) else self._expr(e)
                          for e in node.elts])
        if isinstance(node, ast.BinOp):
            return self._binop(node)
        if isinstance(node, ast.UnaryOp):
            v = self._expr(node.operand)
            if isinstance(node.op, ast.USub) and isinstance(v, Const) and isinstance(v.value, (int, float)):
                return Const(-v.value)
            return v if isinstance(v, (Shape, Param)) else None
        if isinstance(node, ast.IfExp):
            t = self._truth(node.test)
            if t is True or t is False:
                return self._expr(node.body if t else node.orelse)
            v = self._expr(node.body)
            return v if v is not None else self._expr(node.orelse)
        if isinstance(node, ast.Call):
            return self._call(node)
        return None

    def _binop(self, node: ast.BinOp) -> Any:
        a, b = self._expr(node.left), self._expr(node.right)
        if isinstance(node.op, ast.MatMult):
            return _matmul(as_shape(a), as_shape(b))
        if _is_tensor(a) or _is_tensor(b):
            return broadcast(_tensor_side(a), _tensor_side(b))
        if isinstance(node.op, ast.Mult) and (_sizelike(a) or _sizelike(b)) and \
                all(_sizelike(x) or (isinstance(x, Param) and x.kind is None) for x in (a, b)):
            da = a.dims if isinstance(a, Product) else [as_dim(a)]
            db = b.dims if isinstance(b, Product) else [as_dim(b)]
            if None not in da and None not in db:
                return Product([d for d in [*da, *db] if d is not None])
        return None

    def _subscript(self, node: ast.Subscript) -> Any:
        base = self._expr(node.value)
        idx = node.slice
        if isinstance(base, ShapeOf):
            if isinstance(idx, ast.Constant) and isinstance(idx.value, int):
                return base.shape.at(idx.value)
            if isinstance(idx, ast.UnaryOp) and isinstance(idx.op, ast.USub) and isinstance(idx.operand, ast.Constant):
                return base.shape.at(-idx.operand.value)
            if isinstance(idx, ast.Slice) and idx.upper is None and idx.step is None:
                lo = self._expr(idx.lower) if idx.lower is not None else Const(0)
                if isinstance(lo, Const) and isinstance(lo.value, int):
                    s = base.shape.root()
                    if lo.value < 0:
                        return [base.shape.at(i) for i in range(lo.value, 0)]
                    if s.rank is not None:
                        return s.dims[lo.value:]
            return None
        s = as_shape(base)
        if s is None or s.rank is None:
            return None
        elts = idx.elts if isinstance(idx, ast.Tuple) else [idx]
        dots = [i for i, e in enumerate(elts) if isinstance(e, ast.Constant) and e.value is Ellipsis]
        if dots:  # `x[..., None]`, `x[..., -1:]`: the indices after `...` apply to the trailing dims
            after = elts[dots[0] + 1:]
            used = sum(1 for e in after if not (isinstance(e, ast.Constant) and e.value is None))
            if len(dots) > 1 or any(not (isinstance(e, ast.Constant) and e.value is None) for e in elts[:dots[0]]) \
                    or used > s.rank:
                return None
            elts = [ast.Slice() for _ in range(s.rank - used)] + after
        out: list[Dim] = []
        pos = 0
        for e in elts:
            if isinstance(e, ast.Constant) and e.value is None:
                out.append(literal(1))
            elif isinstance(e, ast.Slice):
                if pos >= s.rank:
                    return None
                full = e.lower is None and e.upper is None and e.step is None
                out.append(s.dims[pos] if full else Dim())
                pos += 1
            else:
                pos += 1  # an integer or tensor index drops the dim
        return closed(out + s.dims[pos:])

    def _call(self, node: ast.Call) -> Any:
        f = node.func
        if isinstance(f, ast.Name):
            if f.id == "len" and node.args and isinstance(sv := self._expr(node.args[0]), ShapeOf):
                return RankOf(sv.shape)
            if f.id in self.funcs:
                return self._enter(self.funcs[f.id], node, skip_first=False)
            if f.id in ("rearrange", "repeat", "reduce"):
                return self._einops(node)
            return None
        if not isinstance(f, ast.Attribute):
            return None
        m = f.attr
        if isinstance(f.value, ast.Name) and f.value.id in self.classes and m == "apply":
            fwd = _method(self.classes[f.value.id], "forward")
            return self._enter(fwd, node, skip_first=True) if fwd else None
        recv = self._expr(f.value) if not (isinstance(f.value, ast.Name) and f.value.id in _MODULES
                                            and f.value.id not in self.env) else None
        if recv is None:
            return self._function(m, node)
        return self._method(recv, m, node)

    def _function(self, name: str, node: ast.Call) -> Any:
        """`torch.name(...)`, `F.name(...)`, `einops.name(...)`."""
        args = [self._expr(a) for a in node.args]
        if name in _SAME and args:
            return as_shape(args[0])
        if name in _BINARY:
            out = None
            for a in args:
                out = broadcast(out, _tensor_side(a))
            return out
        if name == "einsum" and args and isinstance(args[0], Const) and isinstance(args[0].value, str):
            ops = args[1].items if len(args) == 2 and isinstance(args[1], Items) else args[1:]
            return _einsum(args[0].value, [as_shape(o) for o in ops])
        if name in ("cat", "concat", "concatenate") and args and isinstance(args[0], Items):
            return _cat([_tensor_side(a) for a in args[0].items], node, args)
        if name in ("matmul", "bmm", "mm") and len(args) == 2:
            return _matmul(as_shape(args[0]), as_shape(args[1]))
        if name == "linear" and len(args) >= 2:
            x, w = as_shape(args[0]), as_shape(args[1])
            if x is not None and w is not None and w.close(2):
                unify(x.at(-1), w.root().dims[1])
            return None
        if name in ("rearrange", "repeat", "reduce"):
            return self._einops(node)
        return None

    def _method(self, recv: Any, m: str, node: ast.Call) -> Any:
        s = as_shape(recv)
        if s is None:
            return None
        args = [self._expr(a) for a in node.args]
        if m == "size":
            if not args:
                return ShapeOf(s)
            if isinstance(args[0], Const) and isinstance(args[0].value, int):
                return s.at(args[0].value)
            return None
        if m == "dim":
            return RankOf(s)
        if m in _SAME:
            return s
        if m in _BINARY:
            out: Shape | None = s
            for a in args:
                out = broadcast(out, _tensor_side(a))
            return out
        if m in ("view", "reshape"):
            dims = _dims_of(args[0]) if len(args) == 1 and isinstance(args[0], (Items, ShapeOf, list)) else \
                _dims_of(Items(args))
            return _view(s, dims) if dims is not None else None
        if m in ("view_as", "reshape_as", "expand_as") and args:
            return as_shape(args[0])
        if m == "unsqueeze" and args and isinstance(args[0], Const) and s.rank is not None:
            i = args[0].value if args[0].value >= 0 else s.rank + 1 + args[0].value
            return closed(s.dims[:i] + [literal(1)] + s.dims[i:])
        if m == "transpose" and len(args) == 2 and s.rank is not None and all(isinstance(a, Const) for a in args):
            dims = list(s.dims)
            i, j = args[0].value, args[1].value
            dims[i], dims[j] = dims[j], dims[i]
            return closed(dims)
        if m == "permute" and s.rank is not None and all(isinstance(a, Const) for a in args):
            order = [a.value for a in args]
            return closed([s.dims[i] for i in order]) if sorted(order) == list(range(s.rank)) else None
        if m in ("sum", "mean", "amax", "amin") and args and isinstance(args[0], Const) and \
                isinstance(args[0].value, int):
            keep = any(k.arg == "keepdim" and isinstance(k.value, ast.Constant) and k.value.value
                       for k in node.keywords)
            if s.rank is None and args[0].value < 0:  # `[..., D].sum(-1, keepdim=True)` is `[..., 1]`
                s.at(args[0].value)
                out = Shape()
                i = len(s.tail) + args[0].value
                out.tail = s.tail[:i] + ([literal(1)] if keep else []) + s.tail[i + 1:]
                return out
            if s.rank is None:
                return None
            i = args[0].value % s.rank
            return closed(s.dims[:i] + ([literal(1)] if keep else []) + s.dims[i + 1:])
        return None

    def _enter(self, fn: ast.FunctionDef | None, node: ast.Call, skip_first: bool) -> Any:
        """A call into a function of the same unit: its parameters take the caller's values."""
        if fn is None:
            return None
        params = [*fn.args.posonlyargs, *fn.args.args][1 if skip_first else 0:]
        defaults = dict(zip([p.arg for p in [*fn.args.posonlyargs, *fn.args.args]][-len(fn.args.defaults):],
                            fn.args.defaults, strict=True)) if fn.args.defaults else {}
        for p, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True):
            if d is not None:
                defaults[p.arg] = d
        env: dict[str, Any] = {}
        for p, a in zip(params, node.args, strict=False):
            if isinstance(a, ast.Starred):
                break
            env[p.arg] = self._expr(a)
        for kw in node.keywords:
            if kw.arg:
                env[kw.arg] = self._expr(kw.value)
        for p in [*params, *fn.args.kwonlyargs]:
            if p.arg not in env and p.arg in defaults and isinstance(defaults[p.arg], ast.Constant):
                env[p.arg] = Const(defaults[p.arg].value)
        self.run(fn, env)
        return None

    def _einops(self, node: ast.Call) -> Any:
        """`rearrange(x, "b (c l) h p -> b c l h p", l=chunk_size)`: the left side is x's layout."""
        if len(node.args) < 2 or not isinstance(node.args[1], ast.Constant) or not isinstance(node.args[1].value, str):
            return None
        s = as_shape(self._expr(node.args[0]))
        left, _, right = node.args[1].value.partition("->")
        letters: dict[str, Dim] = {}
        for kw in node.keywords:
            d = as_dim(self._expr(kw.value)) if kw.arg else None
            if d is not None and kw.arg:
                letters[kw.arg] = d
        lg, rg = _groups(left), _groups(right)
        if s is None or lg is None or rg is None or "..." in sum(lg, []):
            return None
        if not s.close(len(lg)):
            return None
        for dim, group in zip(s.root().dims, lg, strict=True):
            ds = [letters.setdefault(x, Dim(x)) for x in group]
            if len(ds) == 1:
                unify(dim, ds[0])
            elif ds:
                set_factors(dim, ds)
        out: list[Dim] = []
        for group in rg:
            ds = [letters.setdefault(x, Dim(x)) for x in group]
            d = ds[0] if len(ds) == 1 else (literal(1) if not ds else Dim())
            if len(ds) > 1:
                set_factors(d, ds)
            out.append(d)
        return closed(out)
