"""Read what a function's source says about the shapes of its tensor arguments (Python `ast`, no torch).

A reference `naive_x(q, k, v, g)` takes tensors of different ranks: `B, T, H, K = q.shape`,
`v.shape[-1]`, `g.view(B, T, H)`, `assert x.shape == (batch, seqlen, nheads, headdim)`. The reader
walks the function's statements once, in order, with every parameter bound to a symbolic value
(`miner/triton/shape_model.py`), and records each such fact: unpackings of `.shape` / `.size()`,
indexing (`x.shape[-1]`, `x.size(1)`), `.dim()` / `.ndim` tests in asserts, `.view` / `.reshape`,
`assert` of shape equality, products (`seqlen == nchunks * chunk_size`) and divisibility
(`nheads % ngroups == 0`), broadcasting in arithmetic, `torch.einsum`, einops patterns, `F.linear`, and
calls into other functions of the same unit (their parameters share the caller's values, so the launcher
behind `Fn.apply(...)` adds its asserts too). Conditions on arguments the test does not pass
(`if z is not None`) are decided; a branch on a rank (`if x.dim() == 2: x = x.unsqueeze(1)`) is taken
to be the one that leaves the argument as it is.
"""

from __future__ import annotations

import ast
from typing import Any

from miner.triton.shape_model import Dim, Shape, broadcast, closed, literal, set_factors, unify, unify_shapes
from miner.triton.shape_ops import (
    FLOAT_NAMES,
    Const,
    Items,
    Param,
    Product,
    RankOf,
    ShapeOf,
    Starred,
    _cat,
    _compare,
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

__all__ = ["FLOAT_NAMES", "Const", "Param", "Reader"]

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


_SKIP = object()  # an `if` on a rank test: take the branch that keeps the argument as it is


class Reader:
    """Walks functions of one module; `funcs`/`classes` are its top-level definitions by name."""

    def __init__(self, funcs: dict[str, ast.FunctionDef], classes: dict[str, ast.ClassDef]) -> None:
        self.funcs, self.classes = funcs, classes
        self.stack: list[str] = []
        self.steps = 0

    def run(self, fn: ast.FunctionDef, env: dict[str, Any]) -> dict[str, Any]:
        if len(self.stack) > _MAX_DEPTH or fn.name in self.stack:
            return env
        self.stack.append(fn.name)
        saved = getattr(self, "env", None)
        self.env = env
        try:
            self._block(fn.body)
        finally:
            self.stack.pop()
            self.env = saved  # type: ignore[assignment]
        return env

    # --- statements
    def _block(self, body: list[ast.stmt]) -> None:
        for st in body:
            self.steps += 1
            if self.steps > 20000:
                return
            try:
                self._stmt(st)
            except (RecursionError, ValueError, TypeError, IndexError, AttributeError):
                continue  # an unusual construct: skip the statement, keep what the others say

    def _stmt(self, st: ast.stmt) -> None:
        if isinstance(st, ast.Assign):
            v = self._expr(st.value)
            for t in st.targets:
                self._bind(t, v, st.value)
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            self._bind(st.target, self._expr(st.value), st.value)
        elif isinstance(st, ast.Assert):
            self._fact(st.test)
        elif isinstance(st, ast.If):
            truth = self._truth(st.test)
            if truth is True:
                self._block(st.body)
            elif truth is False or truth is _SKIP:
                self._block(st.orelse)
            else:
                self._block(st.body)
                self._block(st.orelse)
        elif isinstance(st, (ast.For, ast.While)):
            self._block(st.body)
        elif isinstance(st, ast.With):
            self._block(st.body)
        elif isinstance(st, ast.Try):
            self._block(st.body)
            self._block(st.finalbody)
        elif isinstance(st, (ast.Expr, ast.Return)) and st.value is not None:
            self._expr(st.value)

    def _bind(self, target: ast.expr, v: Any, rhs: ast.expr) -> None:
        if isinstance(target, ast.Name):
            if v is None and isinstance(rhs, (ast.BinOp, ast.Call)) and self._sizeish(rhs):
                v = Dim(target.id)  # a size computed some other way (`T = x.numel() // H`): a named size
            elif isinstance(v, Dim):
                v.name(target.id)
            self.env[target.id] = v
            return
        if not isinstance(target, (ast.Tuple, ast.List)):
            return
        names = target.elts
        if any(isinstance(e, ast.Starred) for e in names):
            return
        dims: list[Any] | None = None
        if isinstance(v, ShapeOf):
            if v.shape.close(len(names)):
                dims = list(v.shape.root().dims)
        elif isinstance(v, Items):
            starred = [i for i, it in enumerate(v.items) if isinstance(it, Starred)]
            if len(starred) == 1 and isinstance(v.items[starred[0]].value, ShapeOf):
                v.items[starred[0]].value.shape.close(len(names) - (len(v.items) - 1))
            flat = _dims_of(v) if starred else None
            dims = flat if flat is not None else (None if starred else list(v.items))
        elif isinstance(v, list):
            dims = v
        if dims is None or len(dims) != len(names):
            for n in names:
                self._bind(n, None, ast.Constant(None))
            return
        for n, d in zip(names, dims, strict=True):
            if isinstance(n, ast.Name):
                self._bind(n, d, ast.Constant(None))

    def _sizeish(self, node: ast.expr) -> bool:
        """Does `node` compute a size (from sizes, `.shape`, `.numel()`, `len()`) and no tensor?"""
        sized = False
        inside: set[int] = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and n.attr in ("shape", "ndim"):
                inside.update(id(x) for x in ast.walk(n.value))
                sized = True
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and \
                    n.func.attr in ("size", "numel", "dim", "stride"):
                inside.update(id(x) for x in ast.walk(n.func.value))
                sized = True
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len":
                inside.update(id(x) for a in n.args for x in ast.walk(a))
                sized = True
        for n in ast.walk(node):
            if not isinstance(n, ast.Name) or id(n) in inside:
                continue
            v = self.env.get(n.id)
            if isinstance(v, Shape) or (isinstance(v, Param) and v.kind in (None, "tensor")) or \
                    (v is None and n.id in self.env):
                return False  # a tensor, or a local nothing is known about
            sized = sized or isinstance(v, Dim) or (isinstance(v, Param) and v.kind == "int")
        return sized

    # --- conditions and facts
    def _truth(self, test: ast.expr) -> Any:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            t = self._truth(test.operand)
            return (not t) if isinstance(t, bool) else t
        if isinstance(test, ast.BoolOp):
            parts = [self._truth(v) for v in test.values]
            if _SKIP in parts:
                return _SKIP
            if isinstance(test.op, ast.And):
                return False if False in parts else (True if all(p is True for p in parts) else None)
            return True if True in parts else (False if all(p is False for p in parts) else None)
        if isinstance(test, ast.Compare) and len(test.ops) == 1:
            left, right = self._expr(test.left), self._expr(test.comparators[0])
            op = test.ops[0]
            if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, Const) and right.value is None:
                if isinstance(left, Const):
                    return (left.value is None) == isinstance(op, ast.Is)
                if isinstance(left, (Shape, Param)):
                    return not isinstance(op, ast.Is)  # a passed argument is not None
            if isinstance(left, RankOf) or isinstance(right, RankOf):
                rk = (left if isinstance(left, RankOf) else right).shape.root()
                other = right if isinstance(left, RankOf) else left
                if rk.rank is not None and isinstance(other, Const) and isinstance(other.value, int):
                    a, b = (rk.rank, other.value) if isinstance(left, RankOf) else (other.value, rk.rank)
                    return bool(_compare(op, a, b))
                return _SKIP if rk.rank is None else None
            if isinstance(left, Const) and isinstance(right, Const):
                try:
                    return bool(_compare(op, left.value, right.value))
                except TypeError:
                    return None
        v = self._expr(test)
        if isinstance(v, Const):
            return bool(v.value)
        return None

    def _fact(self, test: ast.expr) -> None:
        if isinstance(test, ast.BoolOp):
            for v in (test.values if isinstance(test.op, ast.And) else test.values[:1]):
                self._fact(v)
            return
        if not isinstance(test, ast.Compare):
            return
        terms = [test.left, *test.comparators]
        for op, a, b in zip(test.ops, terms, terms[1:], strict=False):
            self._relate(op, a, b)

    def _relate(self, op: ast.cmpop, a_node: ast.expr, b_node: ast.expr) -> None:
        if isinstance(a_node, ast.BinOp) and isinstance(a_node.op, ast.Mod) and isinstance(op, ast.Eq):
            x, m = as_dim(self._expr(a_node.left)), as_dim(self._expr(a_node.right))
            if x is not None and m is not None:
                x.root().multiple_of.append(m)
            return
        a, b = self._expr(a_node), self._expr(b_node)
        if isinstance(b, ShapeOf) and not isinstance(a, ShapeOf):
            a, b = b, a
        if isinstance(b, RankOf):
            a, b = b, a
        if isinstance(op, ast.Eq):
            if isinstance(a, ShapeOf) and isinstance(b, ShapeOf):
                unify_shapes(a.shape, b.shape)
            elif isinstance(a, ShapeOf):
                dims = _dims_of(b)
                if dims is not None and a.shape.close(len(dims)):
                    for x, y in zip(a.shape.root().dims, dims, strict=True):
                        unify(x, y)
            elif isinstance(a, RankOf) and isinstance(b, Const) and isinstance(b.value, int):
                a.shape.close(b.value)
            else:
                self._equal_sizes(a, b)
        elif isinstance(op, (ast.LtE, ast.Lt)):
            x = as_dim(a)
            if x is not None and isinstance(b, Product):
                set_factors(x, b.dims)
            elif x is not None and isinstance(b, Const) and isinstance(b.value, int):
                bound = b.value - (1 if isinstance(op, ast.Lt) else 0)
                r = x.root()
                r.at_most = bound if r.at_most is None else min(r.at_most, bound)

    def _equal_sizes(self, a: Any, b: Any) -> None:
        if isinstance(a, Product) and not isinstance(b, Product):
            a, b = b, a
        x = as_dim(a)
        if x is None:
            return
        if isinstance(b, Product) and len(b.dims) > 1:
            set_factors(x, b.dims)
        elif (y := as_dim(b)) is not None:
            unify(x, y)

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
