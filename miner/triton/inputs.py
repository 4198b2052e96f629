"""Concrete inputs for a reference check: each argument's kind, rank and sizes, from the unit's source.

`solve(unit_text, function, reference)` reads both functions (and what they call in the unit) with
`miner/triton/shapes.py`, then fills the gaps from the parameters' own documentation (a trailing
`# [B, T, H, K]` comment, a docstring line `x: (batch, seqlen, nheads, headdim)`), and picks small
sizes that satisfy every recorded fact: products, divisibility, upper bounds, literals. Sizes are
powers of two (valid `tl.arange` extents and `tl.dot` operands) chosen by the names the source gives
them (`B`/`batch` 2, `H`/`nheads` 4, `T`/`seqlen` 128, `K` 32, `V`/`headdim` 64, `chunk_size` 64, ...),
so unrelated sizes differ and a layout mix-up shows. The result is recorded in the kernel's metadata
(`triton.reference.inputs`) and used by `harness.check_against_reference` before its generic shapes.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from typing import Any

from miner import lazy_re
from miner.triton.shape_model import Dim, Shape, unify, unify_shapes
from miner.triton.shapes import FLOAT_NAMES, Const, Param, Reader

_SIZES: list[tuple[int, set[str]]] = [
    (2, {"b", "bs", "bsz", "batch", "batch_size", "nb", "n_batch", "num_batch", "g", "ng", "ngroups",
         "n_groups", "num_groups", "groups", "nt", "nc", "nchunks", "n_chunks", "num_chunks"}),
    (4, {"h", "hq", "hk", "hv", "nh", "nheads", "n_heads", "num_heads", "heads", "head", "nhead", "w", "width",
         "kernel_size", "d_conv"}),
    (128, {"t", "l", "s", "seqlen", "seq_len", "length", "token_length", "n_tokens", "num_tokens", "tokens",
           "m", "total_tokens", "hidden", "hidden_dim", "hidden_size", "d_model", "c", "channels", "hd"}),
    (64, {"bt", "chunk_size", "chunksize", "chunk", "v", "dv", "d_v", "head_v_dim", "d", "p", "headdim",
          "head_dim", "dim", "dh"}),
    (32, {"k", "dk", "d_k", "head_k_dim"}),
    (16, {"dstate", "d_state", "state_size", "ds"}),
]
_NAMED = {n: v for v, names in _SIZES for n in names}
_DEFAULT = 16
_VECTOR = {"weight", "bias", "gamma", "beta", "norm_weight", "norm_bias", "w", "b"}
_HINT = lazy_re.compile(r"[\[(]([\w\s,.*+]+)[\])]")
_TYPES = {"float", "int", "bool", "str", "tensor", "optional", "none", "torch", "list", "tuple", "dtype"}


def _args(fn: ast.FunctionDef) -> list[ast.arg]:
    return [*fn.args.posonlyargs, *fn.args.args]


def _defaults(fn: ast.FunctionDef) -> dict[str, ast.expr]:
    args = _args(fn)
    return dict(zip([a.arg for a in args][len(args) - len(fn.args.defaults):], fn.args.defaults, strict=True))


def required(fn: ast.FunctionDef) -> list[str]:
    d = _defaults(fn)
    return [a.arg for a in _args(fn) if a.arg not in d]


def solve(source: str, function: str, reference: str, kernel: str | None = None) -> dict[str, Any] | None:
    """The inputs spec, or None when the source says nothing about any tensor's shape."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    funcs = {s.name: s for s in tree.body if isinstance(s, ast.FunctionDef)}
    classes = {s.name: s for s in tree.body if isinstance(s, ast.ClassDef)}
    ref, fn = funcs.get(reference), funcs.get(function)
    if ref is None or fn is None:
        return None
    params: dict[str, Param] = {}
    keys: dict[str, list[str]] = {}
    for f in (ref, fn):
        req = required(f)
        shared = set(req) & set(keys.get("reference", []))
        out = []
        for i, name in enumerate(req):
            if f is fn and not shared and i < len(keys["reference"]):
                key = keys["reference"][i]  # the two name their arguments differently: keep the order
            else:
                key = name
            ann = next((a.annotation for a in _args(f) if a.arg == name), None)
            params.setdefault(key, Param(key, ast.unparse(ann) if ann is not None else ""))
            out.append(key)
        keys["reference" if f is ref else "function"] = out
    reader = Reader(funcs, classes, kernel)
    envs = {}
    # The tested function first (its launcher's asserts and unpackings are the firmest facts), then the
    # reference, then the function again with what the reference added.
    for f, role in ((fn, "function"), (ref, "reference"), (fn, "function")):
        env: dict[str, Any] = {a.arg: Const(d.value) if isinstance(d, ast.Constant) else None
                               for a in _args(f) if (d := _defaults(f).get(a.arg)) is not None}
        env.update({a.arg: params[k] for a, k in zip([a for a in _args(f) if a.arg not in _defaults(f)],
                                                     keys[role], strict=True)})
        envs[role] = reader.run(f, env)
    from_code = {k for k, p in params.items() if p.shape is not None and p.shape.known}
    for f, role in ((ref, "reference"), (fn, "function")):
        _apply_hints(source, f, {a: params[k] for a, k in zip(required(f), keys[role], strict=True)}, envs[role])
    return _finish(params, keys, from_code)


def _apply_hints(source: str, fn: ast.FunctionDef, params: dict[str, Param], env: dict[str, Any]) -> None:
    """Parameters' documented layouts, for tensors the code left unknown: a hint's names are the
    function's own sizes when the code bound them (`batch, seqlen, ... = x.shape`)."""
    local: dict[str, Dim] = {}

    def dim(tok: str) -> Dim:
        v = env.get(tok)
        if isinstance(v, Dim):
            return v
        if tok.isdigit():
            return Dim(value=int(tok))
        return local.setdefault(tok, Dim(tok))

    for name, toks in _hints(source, fn).items():
        p = params.get(name)
        if p is None or p.kind not in (None, "tensor"):
            continue
        s = p.as_shape()
        assert s is not None
        if s.known:
            continue
        if toks and toks[0] == "...":
            for i, t in enumerate(reversed(toks[1:]), 1):
                d = s.at(-i)
                if d is not None:
                    unify(d, dim(t))
        elif "..." not in toks and s.close(len(toks)):
            for d, t in zip(s.root().dims, toks, strict=True):
                unify(d, dim(t))
        s.root().evidence.append("hint")


def _hints(source: str, fn: ast.FunctionDef) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    names = {a.arg for a in _args(fn)}
    lines = source.splitlines()
    body_line = fn.body[0].lineno if fn.body else fn.lineno
    sig = "\n".join(lines[fn.lineno - 1:body_line - 1])
    try:
        comments = {t.start[0] + fn.lineno - 1: t.string for t in tokenize.generate_tokens(io.StringIO(sig).readline)
                    if t.type == tokenize.COMMENT}
    except (tokenize.TokenError, IndentationError):
        comments = {}
    for a in _args(fn):
        c = comments.get(a.lineno)
        toks = _layout(c) if c else None
        if toks:
            out[a.arg] = toks
    doc = ast.get_docstring(fn) or ""
    doc_lines = doc.splitlines()
    for i, line in enumerate(doc_lines):
        m = re.match(r"\s*(\w+)\s*(\([^)]*\))?\s*:(.*)", line)
        if not m or m.group(1) not in names or m.group(1) in out:
            continue
        text = m.group(3)
        for nxt in doc_lines[i + 1:i + 3]:
            if re.match(r"\s*(\w+)\s*(\([^)]*\))?\s*:", nxt) and re.match(r"\s*(\w+)", nxt).group(1) in names:
                break
            text += " " + nxt
        toks = _layout(text)
        if toks:
            out[m.group(1)] = toks
    return out


def _layout(text: str) -> list[str] | None:
    """`[B, T, H, K]`, `(batch, seqlen, nheads, headdim)`, `[..., H, K]` -> their entries."""
    for m in _HINT.finditer(text):
        toks = [t.strip() for t in m.group(1).split(",") if t.strip()]
        if not toks or any(t.lower() in _TYPES for t in toks):
            continue
        if all(t == "..." or re.fullmatch(r"\w+", t) for t in toks) and (len(toks) > 1 or "(" not in m.group(0)):
            return toks
    return None


def _finish(params: dict[str, Param], keys: dict[str, list[str]], from_code: set[str]) -> dict[str, Any] | None:
    tensors = {k: p for k, p in params.items() if p.kind in (None, "tensor")}
    known = [k for k, p in tensors.items() if p.shape is not None and p.shape.known]
    if not known:
        return None
    for k in known:
        s = tensors[k].shape.root()  # type: ignore[union-attr]
        if s.rank is None:
            missing = 2 if not s.lead else 0
            s.close(len(s.lead) + len(s.tail) + missing)
            for d, n in zip(s.root().dims[:missing], ("batch", "seqlen"), strict=False):
                d.name(n)
    first = tensors[known[0]].shape.root()  # type: ignore[union-attr]
    for k, p in tensors.items():
        if k in known:
            continue
        s = p.as_shape()
        assert s is not None
        peer = next((q.root() for q in s.root().peers if q.root().rank is not None), None)
        if peer is not None:
            unify_shapes(s, peer)
        elif k in _VECTOR:
            s.close(1)
            unify(s.root().dims[0], first.dims[-1])
        else:
            unify_shapes(s, first)
    sizes: dict[int, int] = {}
    args: dict[str, Any] = {}
    for k, p in params.items():
        if p.kind in (None, "tensor"):
            s = p.shape.root()  # type: ignore[union-attr]
            args[k] = {"kind": "tensor", "shape": [_pick(d, sizes) for d in s.dims],
                       "dims": [_label(d) for d in s.dims],
                       "from": "code" if k in from_code else ("hint" if "hint" in s.evidence else "guess")}
        elif p.kind == "int":
            args[k] = {"kind": "int", "value": _pick(p.dim, sizes) if p.dim is not None else _DEFAULT}
        elif p.kind == "float":
            args[k] = {"kind": "float", "value": FLOAT_NAMES.get(k, 1.0)}
        else:
            args[k] = {"kind": "bool", "value": False}
    return {"reference": keys["reference"], "function": keys["function"], "args": args}


def _label(d: Dim) -> str:
    r = d.root()
    return r.names[0] if r.names else ("1" if r.value == 1 else "?")


def _pick(d: Dim, memo: dict[int, int], depth: int = 0) -> int:
    r = d.root()
    if id(r) in memo:
        return memo[id(r)]
    if r.value is not None:
        v = r.value
    elif r.factors and depth < 8:
        v = 1
        for f in r.factors:
            v *= _pick(f, memo, depth + 1)
    else:
        v = next((_NAMED[n.lower()] for n in r.names if n.lower() in _NAMED), _DEFAULT)
        for m in r.multiple_of:
            mv = _pick(m, memo, depth + 1)
            if mv > 0 and v % mv:
                v = ((v + mv - 1) // mv) * mv
        if r.at_least is not None and v < r.at_least:
            v = 1 << max(r.at_least - 1, 0).bit_length()  # the next power of two at or above
        if r.at_most is not None and v > r.at_most > 0:
            v = 1 << (r.at_most.bit_length() - 1)
    memo[id(r)] = v
    return v


def describe(spec: dict[str, Any]) -> str:
    """One line per argument, for logs: `q: [2, 128, 4, 32] (B, T, H, K; code)`."""
    out = []
    for k, a in spec["args"].items():
        if a["kind"] == "tensor":
            out.append(f"{k}: {a['shape']} ({', '.join(a['dims'])}; {a['from']})")
        else:
            out.append(f"{k}: {a['kind']} {a['value']}")
    return "\n".join(out)


__all__ = ["solve", "describe", "required", "Shape"]
