"""Values of the shape reader (`miner/triton/shapes.py`) and the shape algebra of the torch operations it
knows: `einsum`, `matmul`, `cat`, `view`/`reshape`, einops patterns.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from miner.triton.shape_model import Dim, Shape, closed, literal, set_factors, unify

# Parameters that are numbers, not tensors, whatever arithmetic they meet (`q * scale`).
FLOAT_NAMES = {"eps": 1e-5, "epsilon": 1e-5, "scale": 0.5, "sm_scale": 0.5, "softmax_scale": 0.5,
               "alpha": 0.5, "beta_": 0.5, "negative_slope": 0.01, "temperature": 1.0, "p": 0.0,
               "dropout_p": 0.0, "momentum": 0.1, "lower_bound": -5.0, "rmsnorm_eps": 1e-5}


class Param:
    """An argument of the tested function or the reference, before its kind is known."""

    def __init__(self, name: str, annotation: str = "") -> None:
        self.name = name
        self.kind: str | None = None  # tensor | int | float | bool
        ann = annotation.replace(" ", "")
        if "Tensor" in ann:
            self.kind = "tensor"
        elif ann in ("float", "Optional[float]", "float|None"):
            self.kind = "float"
        elif ann in ("int", "Optional[int]", "int|None"):
            self.kind = "int"
        elif ann in ("bool", "Optional[bool]"):
            self.kind = "bool"
        elif name in FLOAT_NAMES:
            self.kind = "float"
        self.shape: Shape | None = None
        self.dim: Dim | None = None

    def as_shape(self) -> Shape | None:
        if self.kind not in (None, "tensor"):
            return None
        self.kind = "tensor"
        if self.shape is None:
            self.shape = Shape()
        return self.shape

    def as_dim(self) -> Dim | None:
        if self.kind not in (None, "int"):
            return None
        self.kind = "int"
        if self.dim is None:
            self.dim = Dim(self.name)
        return self.dim


class Const:
    def __init__(self, value: Any) -> None:
        self.value = value


class ShapeOf:  # the value of `x.shape` / `x.size()`
    def __init__(self, shape: Shape) -> None:
        self.shape = shape


class RankOf:  # `x.dim()`, `x.ndim`, `len(x.shape)`
    def __init__(self, shape: Shape) -> None:
        self.shape = shape


class Product:  # `a * b` of sizes
    def __init__(self, dims: list[Dim]) -> None:
        self.dims = dims


class Items:  # a tuple/list of values, Starred ones expanded later
    def __init__(self, items: list[Any]) -> None:
        self.items = items


class Starred:
    def __init__(self, value: Any) -> None:
        self.value = value


def as_shape(v: Any) -> Shape | None:
    if isinstance(v, Shape):
        return v.root()
    if isinstance(v, Param):
        return v.as_shape()
    return None


def as_dim(v: Any) -> Dim | None:
    if isinstance(v, Dim):
        return v
    if isinstance(v, Param):
        return v.as_dim()
    if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
        return literal(v.value)
    if isinstance(v, Product) and len(v.dims) == 1:
        return v.dims[0]
    return None


def _dims_of(v: Any) -> list[Dim] | None:
    """A size tuple: `(B, T, H)`, `x.shape`, `x.shape[-2:]`, `*x.shape` inside a tuple."""
    if isinstance(v, ShapeOf):
        s = v.shape.root()
        return list(s.dims) if s.rank is not None else None
    if isinstance(v, Items):
        out: list[Dim] = []
        for it in v.items:
            if isinstance(it, Starred):
                inner = _dims_of(it.value)
                if inner is None:
                    return None
                out += inner
                continue
            d = _size(it)
            if d is None:
                return None
            out.append(d)
        return out
    if isinstance(v, list):
        return v
    return None


def _size(v: Any) -> Dim | None:
    """One entry of a size tuple; a product becomes a dim with factors, -1 a fresh dim."""
    if isinstance(v, Product):
        d = Dim()
        set_factors(d, v.dims)
        return d
    if isinstance(v, Const) and v.value == -1:
        return Dim()
    return as_dim(v)


def _sizelike(v: Any) -> bool:
    return isinstance(v, (Dim, Product)) or (isinstance(v, Param) and v.kind == "int") or \
        (isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool))


def _compare(op: ast.cmpop, a: Any, b: Any) -> bool:
    return {ast.Eq: a == b, ast.NotEq: a != b, ast.Gt: a > b, ast.GtE: a >= b, ast.Lt: a < b,
            ast.LtE: a <= b}.get(type(op), False)


def _is_tensor(v: Any) -> bool:
    return isinstance(v, Shape) or (isinstance(v, Param) and v.kind == "tensor")


def _tensor_side(v: Any) -> Shape | None:
    if isinstance(v, Param) and v.kind in (None, "tensor"):
        return v.as_shape()
    return v.root() if isinstance(v, Shape) else None


def _cat(parts: list[Shape | None], node: ast.Call, args: list[Any]) -> Shape | None:
    """`torch.cat(parts, dim)`: every part has the rank of the known ones and their sizes off `dim`."""
    dim_v = args[1] if len(args) > 1 else next((Const(k.value.value) for k in node.keywords
                                                 if k.arg == "dim" and isinstance(k.value, ast.Constant)), Const(0))
    known = next((p.root() for p in parts if p is not None and p.root().rank is not None), None)
    if known is None or not isinstance(dim_v, Const) or not isinstance(dim_v.value, int):
        return None
    k = dim_v.value % known.rank
    for p in parts:
        if p is None or p.root() is known or not p.close(known.rank):
            continue
        for i, (x, y) in enumerate(zip(p.root().dims, known.dims, strict=True)):
            if i != k:
                unify(x, y)
    return closed([d if i != k else Dim() for i, d in enumerate(known.dims)])


def _matmul(a: Shape | None, b: Shape | None) -> Shape | None:
    if a is None or b is None:
        return None
    ra, rb = a.root(), b.root()
    if ra.rank is None or rb.rank is None or ra.rank < 2 or rb.rank < 2:
        return None
    unify(ra.dims[-1], rb.dims[-2])
    return closed(ra.dims[:-1] + [rb.dims[-1]])


def _view(s: Shape, dims: list[Dim]) -> Shape:
    """`x.view(dims)`: an argument nothing is known about takes that layout (ones dropped: a
    `view(H, 1)` of a vector); a known one with all sizes named relates the sizes that differ."""
    r = s.root()
    if not r.known:
        real = [d for d in dims if d.root().value != 1]
        if real and r.close(len(real)):
            for x, y in zip(r.dims, real, strict=True):
                unify(x, y)
    elif r.rank is not None:
        src = list(r.dims)
        dst = list(dims)
        while src and dst and src[0].root() is dst[0].root():
            src, dst = src[1:], dst[1:]
        while src and dst and src[-1].root() is dst[-1].root():
            src, dst = src[:-1], dst[:-1]
        if len(src) == 1 and len(dst) > 1:
            set_factors(src[0], dst)
        elif len(dst) == 1 and len(src) > 1:
            set_factors(dst[0], src)
    return closed(dims)


def _einsum(spec: str, ops: list[Shape | None]) -> Shape | None:
    spec = spec.replace(" ", "")
    lhs, _, rhs = spec.partition("->")
    letters: dict[str, Dim] = {}
    for sub, op in zip(lhs.split(","), ops, strict=False):
        if op is None or "." in sub or not op.close(len(sub)):
            continue
        for ch, d in zip(sub, op.root().dims, strict=True):
            if ch in letters:
                unify(letters[ch], d)
            else:
                letters[ch] = d
    if not rhs or "." in rhs or any(ch not in letters for ch in rhs):
        return None
    return closed([letters[ch] for ch in rhs])


def _groups(pattern: str) -> list[list[str]] | None:
    out: list[list[str]] = []
    for tok in re.findall(r"\([^)]*\)|\S+", pattern.strip()):
        if tok.startswith("("):
            out.append([x for x in tok[1:-1].split() if not x.isdigit()])
        elif tok == "...":
            out.append(["..."])
        elif tok.isdigit():
            out.append([])
        elif tok.isidentifier():
            out.append([tok])
        else:
            return None
    return out


def _method(cls: ast.ClassDef, name: str) -> ast.FunctionDef | None:
    return next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == name), None)
