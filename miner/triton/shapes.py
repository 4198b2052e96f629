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

from miner.triton.shape_exprs import _MAX_DEPTH, Expressions
from miner.triton.shape_model import Dim, Shape, set_factors, unify, unify_shapes
from miner.triton.shape_ops import (
    FLOAT_NAMES,
    Const,
    Items,
    Param,
    Product,
    RankOf,
    ShapeOf,
    Starred,
    _compare,
    _dims_of,
    as_dim,
)

__all__ = ["FLOAT_NAMES", "Const", "Param", "Reader"]

_SKIP = object()  # an `if` on a rank test: take the branch that keeps the argument as it is


class Reader(Expressions):
    """Walks functions of one module; `funcs`/`classes` are its top-level definitions by name."""

    def __init__(self, funcs: dict[str, ast.FunctionDef], classes: dict[str, ast.ClassDef],
                 kernel: str | None = None) -> None:
        self.funcs, self.classes = funcs, classes
        self.kernel = kernel  # the kernel under test: the branches that launch it say which sizes pick it
        self.conds: dict[str, ast.expr] = {}  # `use_short = T <= 512`: the comparison a flag was bound to
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
            if isinstance(st.value, ast.Compare) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                self.conds.setdefault(st.targets[0].id, st.value)
            v = self._expr(st.value)
            for t in st.targets:
                self._bind(t, v, st.value)
        elif isinstance(st, ast.AnnAssign) and st.value is not None:
            self._bind(st.target, self._expr(st.value), st.value)
        elif isinstance(st, ast.Assert):
            self._fact(st.test)
        elif isinstance(st, ast.If):
            launches = self._launches(st.body), self._launches(st.orelse)
            if launches[0] != launches[1]:  # only one side launches the kernel under test: its condition holds
                self._branch(st.test, launches[0])
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

    def _launches(self, body: list[ast.stmt]) -> bool:
        """Does `body` launch the kernel under test (`kernel[grid](...)`)?"""
        if not self.kernel:
            return False
        for st in body:
            for n in ast.walk(st):
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Subscript):
                    v = n.func.value
                    if (isinstance(v, ast.Name) and v.id == self.kernel) or \
                            (isinstance(v, ast.Attribute) and v.attr == self.kernel):
                        return True
        return False

    def _branch(self, test: ast.expr, holds: bool) -> None:
        """A size bound from the condition of the branch that launches the kernel (`if T <= 512:` short
        kernel, `else:` long kernel), so the solved sizes reach the kernel under test, not its sibling."""
        if isinstance(test, ast.Name) and test.id in self.conds:
            test = self.conds[test.id]
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            self._branch(test.operand, not holds)
            return
        if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
            return
        op, a, b = test.ops[0], test.left, test.comparators[0]
        flip = {ast.Lt: ast.Gt, ast.LtE: ast.GtE, ast.Gt: ast.Lt, ast.GtE: ast.LtE}
        negate = {ast.Lt: ast.GtE, ast.LtE: ast.Gt, ast.Gt: ast.LtE, ast.GtE: ast.Lt}
        if type(op) not in flip:
            return
        if isinstance(a, ast.Constant):  # `512 >= T`: the size on the left
            op, a, b = flip[type(op)](), b, a
        if not holds:
            op = negate[type(op)]()
        self._relate(op, a, b)

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
        elif isinstance(op, (ast.GtE, ast.Gt)):
            x = as_dim(a)
            if x is not None and isinstance(b, Const) and isinstance(b.value, int):
                bound = b.value + (1 if isinstance(op, ast.Gt) else 0)
                r = x.root()
                r.at_least = bound if r.at_least is None else max(r.at_least, bound)

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
