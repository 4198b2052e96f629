"""Repair of a guessed compile signature from the compiler's own feedback.

An ahead-of-time compile needs a type for every argument; where nothing in the source says it (origins
`usage`, `name`, `fallback`, or the first of several autotune configs) the signature is a guess. When
Triton rejects a guess, its error names the kernel statement it could not type (`CompilationError.node`).
The parameters that statement reads, directly or through locals computed from them, are the suspects;
each gets the alternatives that the error's wording makes likely (an int where a pointer met a float, a
pointer where a load met a scalar, another element type where two operands disagree, the other value of
a boolean constexpr whose branch left a name undefined). A change is kept only if the compiler then gets
further through the kernel (its error moves to a later statement) or succeeds: a search bounded by a
number of compiles, never a rewrite of the kernel. Every kept change is reported, so a unit says which
parts of its signature the compiler chose.

Pure Python (no triton import): the child process owns the compiles and calls `Search.step`.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass, field
from typing import Any

from miner import lazy_re

# Origins a repair may change: guesses (a launcher_pointer's element type only), and the first autotune
# config (one of several real ones).
GUESSED = {"usage", "launcher_pointer", "name", "fallback"}
CHANGEABLE_CONSTEXPR = {"fallback", "autotune"}

_POINTER_WANTED = lazy_re.compile(r"ptr type|pointer type|`base`|element_ty|pointer_type|is not a pointer|"
                             r"block_type|has no attribute 'dtype'", re.I)
_INT_WANTED = lazy_re.compile(r"For loop bounds|must all be ints|unexpected type fp|cannot use .* as index|"
                         r"pointer<[^>]*> and triton\.language\.float|float.*and pointer<|"
                         r"pointer<[^>]*> and pointer<", re.I)
_SCALAR_WANTED = lazy_re.compile(r"invalid operands of type pointer<|and pointer<|pointer<[^>]*> and", re.I)
_FLOAT_MET_POINTER = lazy_re.compile(r"pointer<[^>]*> and triton\.language\.(float|bfloat)|"
                                r"(float|bfloat)\d+ and pointer<|For loop bounds|must all be ints|unexpected type fp",
                                re.I)
_DTYPE_CLASH = lazy_re.compile(r"same dtype|Got (fp|bf|int|uint)\d+ and|element type|dtype mismatch|"
                          r"invalid operands of type triton\.language\.(float|bfloat)\d+ and "
                          r"triton\.language\.(float|bfloat)\d+", re.I)
_UNDEFINED = lazy_re.compile(r"NameError\(['\"](?!Cannot access global)|is not defined|referenced before", re.I)

# Errors about shapes and block sizes: a whole autotune config (its block sizes agree with each other) is
# a better next try than one constexpr changed alone.
_SHAPE = lazy_re.compile(r"shape|arange|power of 2|reshape|number of elements|dimension|broadcast|constexpr|"
                    r"must be a|static_assert|block", re.I)
CONFIG = "*autotune config*"  # the pseudo-parameter of a whole-config change (value: the config's index)
# A half-precision value met an fp32 one (`Got bf16 and fp32`): the kernel was written for half inputs
# (`p.to(tl.bfloat16)` then `tl.dot(p, do)`), so every guessed fp32 pointer may need that type.
_HALF_MET_FP32 = lazy_re.compile(r"Got (bf16|fp16) and fp32|Got fp32 and (bf16|fp16)")
TOGETHER = "*together*"  # several parameters changed at once (value: ((param, type), ...))

_POINTERS = ["*fp32", "*fp16", "*bf16", "*i32", "*i64", "*i8", "*u8", "*i1"]
_INTS = [64, 16, 32, 128, 256, 1]
_DTYPES = ["tl.float32", "tl.float16", "tl.bfloat16", "tl.int32", "tl.int64"]
MAX_COMPILES = 30


def _header(node: ast.AST) -> list[ast.AST]:
    """The part of a statement the compiler was typing: a `for`'s range, an `if`'s test, not the body."""
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target, node.iter]
    if isinstance(node, (ast.If, ast.While)):
        return [node.test]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [i.context_expr for i in node.items]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    return [node]


@dataclass
class Kernel:
    """The kernel's own source, parsed the way Triton parses it (line numbers match its errors)."""

    src: str
    params: list[str] = field(default_factory=list)
    roots: dict[str, set[str]] = field(default_factory=dict)  # local name -> params it is computed from
    by_pos: dict[tuple[int, int], ast.AST] = field(default_factory=dict)
    stmt_of: dict[tuple[int, int], int] = field(default_factory=dict)  # node position -> statement order

    @classmethod
    def parse(cls, src: str) -> Kernel:
        k = cls(src)
        try:
            fn = ast.parse(textwrap.dedent(src)).body[0]
        except (SyntaxError, IndexError):
            return k
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return k
        k.params = [a.arg for a in fn.args.args]
        k.roots = {p: {p} for p in k.params}
        for _ in range(2):  # a second pass reaches locals assigned before the ones they read (loops)
            for n in ast.walk(fn):
                value, targets = None, []
                if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                    value, targets = n.value, (n.targets if isinstance(n, ast.Assign) else [n.target])
                elif isinstance(n, (ast.For, ast.AsyncFor)):
                    value, targets = n.iter, [n.target]
                if value is None:
                    continue
                src_roots = set().union(*(k.roots.get(x.id, set()) for x in ast.walk(value)
                                          if isinstance(x, ast.Name)))
                for t in targets:
                    for x in ast.walk(t):
                        if isinstance(x, ast.Name) and src_roots:
                            k.roots.setdefault(x.id, set()).update(src_roots)
        for n in ast.walk(fn):
            if hasattr(n, "lineno"):
                k.by_pos.setdefault((n.lineno, n.col_offset), n)
        order = 0

        def visit(node: ast.AST, stmt: int) -> None:
            nonlocal order
            for child in ast.iter_child_nodes(node):
                here = stmt
                if isinstance(child, ast.stmt):
                    order += 1
                    here = order
                if hasattr(child, "lineno"):
                    k.stmt_of.setdefault((child.lineno, child.col_offset), here)
                visit(child, here)

        visit(fn, 0)
        return k

    def progress(self, line: int | None, col: int | None) -> int:
        """How far through the kernel (in statement order) the compiler got: a change that moves an error
        to a later statement helped; one that moves it within a statement proves nothing."""
        return self.stmt_of.get((line or 0, col or 0), 0)

    def suspects(self, line: int | None, col: int | None) -> tuple[list[str], list[str]]:
        """Parameters the statement at (line, col) reads: named in it, and reached only through locals
        computed from them (`t = tl.load(t_ptr + i)` makes `t_ptr` an indirect suspect of `p + t`)."""
        node = self.by_pos.get((line or 0, col or 0))
        if node is None:
            return [], []
        direct: dict[str, None] = {}
        indirect: dict[str, None] = {}
        for part in _header(node):
            for x in ast.walk(part):
                if isinstance(x, ast.Name):
                    if x.id in self.params:
                        direct.setdefault(x.id, None)
                    for p in sorted(self.roots.get(x.id, ())):
                        indirect.setdefault(p, None)
        return list(direct), [p for p in indirect if p not in direct]


    def through_call(self, line: int | None, col: int | None, helper_src: str, h_line: int | None,
                     h_col: int | None) -> tuple[list[str], list[str]] | None:
        """Suspects of an error inside a helper called at (line, col): the helper's suspect parameters
        are its arguments at the call, whose expressions name the kernel's suspects."""
        helper = Kernel.parse(helper_src)
        h_direct, h_indirect = helper.suspects(h_line, h_col)
        if not helper.params:
            return None
        try:
            name = ast.parse(textwrap.dedent(helper_src)).body[0].name  # type: ignore[attr-defined]
        except (SyntaxError, IndexError, AttributeError):
            return None
        node = self.by_pos.get((line or 0, col or 0))
        calls = [n for part in (_header(node) if node is not None else []) for n in ast.walk(part)
                 if isinstance(n, ast.Call) and (getattr(n.func, "id", None) == name or
                                                 getattr(n.func, "attr", None) == name)]
        if not calls:
            return None
        call = calls[0]
        arg_of = {helper.params[i]: a for i, a in enumerate(call.args) if i < len(helper.params)}
        arg_of.update({k.arg: k.value for k in call.keywords if k.arg})
        out: tuple[dict[str, None], dict[str, None]] = ({}, {})
        for which, hp in [(0, p) for p in h_direct] + [(1, p) for p in h_indirect]:
            expr = arg_of.get(hp)
            if expr is None:
                continue
            for x in ast.walk(expr):
                if isinstance(x, ast.Name):
                    if x.id in self.params:
                        out[which].setdefault(x.id, None)
                    for p in sorted(self.roots.get(x.id, ())):
                        out[1].setdefault(p, None)
        direct = list(out[0])
        return direct, [p for p in out[1] if p not in direct]


@dataclass
class Failure:
    message: str
    line: int | None = None  # in the kernel's source, as Triton numbers it
    col: int | None = None
    # When the compiler failed inside a jit helper the kernel calls: the helper's source and position.
    helper_src: str | None = None
    helper_line: int | None = None
    helper_col: int | None = None


@dataclass
class Change:
    param: str
    before: Any
    after: Any
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"param": self.param, "from": self.before, "to": self.after, "error": self.error[:200]}


class Search:
    """Greedy: from the current signature, try one change at a time (most likely first); keep the first
    that lets the compiler get further, then start again from the new error."""

    def __init__(self, kernel: Kernel, signature: dict[str, str], constexprs: dict[str, Any],
                 origins: dict[str, str], configs: list[dict[str, Any]] | None = None,
                 literals: dict[str, list[Any]] | None = None) -> None:
        self.kernel = kernel
        self.signature = dict(signature)
        self.constexprs = dict(constexprs)
        self.origins = origins
        self.configs = [c for c in (configs or []) if isinstance(c, dict)]
        self.literals = literals or {}
        self.kept: list[Change] = []
        self.tried: set[tuple[str, str]] = set()
        self.undone: set[tuple[str, str]] = set()  # values a kept change replaced: never gone back to
        self._helpers: dict[str, Kernel] = {}

    def progress(self, f: Failure) -> tuple[int, int]:
        """(kernel statement, statement inside the helper it called): later is further."""
        inner = 0
        if f.helper_src:
            if f.helper_src not in self._helpers:
                self._helpers[f.helper_src] = Kernel.parse(f.helper_src)
            inner = self._helpers[f.helper_src].progress(f.helper_line, f.helper_col)
        return self.kernel.progress(f.line, f.col), inner

    def candidates(self, f: Failure) -> list[tuple[str, Any]]:
        """(param, new type or constexpr value) in the order worth trying for failure `f`."""
        direct, indirect = self.kernel.suspects(f.line, f.col)
        if f.helper_src:  # the helper's suspects, traced back through the call's argument expressions
            mapped = self.kernel.through_call(f.line, f.col, f.helper_src, f.helper_line, f.helper_col)
            if mapped is not None:
                direct, indirect = mapped
        # A loaded float met a pointer: the load's pointer (reached through a local) is the likely culprit.
        suspects = indirect + direct if _FLOAT_MET_POINTER.search(f.message) else direct + indirect
        runtime = [p for p in suspects if self.signature.get(p) not in (None, "constexpr")
                   and not self.signature[p].startswith("(")  # a tuple's length is the kernel's own
                   and self.origins.get(p) in GUESSED]
        consts = [p for p in self.constexprs if self.origins.get(p) in CHANGEABLE_CONSTEXPR]
        near = [p for p in suspects if p in consts]
        typed = [(p, t) for p in runtime for t in self._type_alternatives(p, self.signature[p], f.message)]
        typed.sort(key=lambda c: self._rank(c[0], c[1], f.message))  # stable: suspects' order within a rank
        flags: list[tuple[str, Any]] = []
        if _UNDEFINED.search(f.message):
            # A branch on a guessed constexpr was not taken and left a name unbound: the values the
            # unit's jit functions compare it with, then the other truth value, for each of them.
            for p in consts:
                flags += [(p, v) for v in self.literals.get(p, [])]
            for p in consts:
                v = self.constexprs[p]
                flags += [(p, not v)] if isinstance(v, bool) else [(p, True), (p, False)]
        values = [(p, v) for p in near + [p for p in consts if p not in near]
                  for v in self._constexpr_alternatives(p, f.message, p in near)]
        configs = self._config_alternatives()
        if _FLOAT_MET_POINTER.search(f.message):
            # Offsets computed from several loads (`start = tl.load(cu_ptr + i)`, `c = tl.load(chunk_ptr + i)`)
            # stay floats until every one of those pointers holds ints: one change at a time shows no
            # progress, so they are also tried together.
            group = tuple(p for p in indirect if self.origins.get(p) in GUESSED
                          and self.signature.get(p, "")[:3] in ("*fp", "*bf"))
            if len(group) > 1:
                typed = [(TOGETHER, tuple((p, t) for p in group)) for t in ("*i32", "*i64")] + typed
        half = _HALF_MET_FP32.search(f.message)
        if half:
            # One pointer at a time moves the clash to the next operand without passing it: all together.
            group = tuple(p for p, t in self.signature.items() if t == "*fp32" and self.origins.get(p) in GUESSED)
            if len(group) > 1:
                elem = "*" + (half.group(1) or half.group(2))
                typed = [(TOGETHER, tuple((p, elem) for p in group)), *typed]
        if _SHAPE.search(f.message):
            out = [*flags, *configs, *typed, *values]
        else:
            out = [*flags, *typed, *configs, *values]
        if not suspects:  # an error without a place in the kernel: every guessed runtime parameter
            for p, t in self.signature.items():
                if t != "constexpr" and self.origins.get(p) in GUESSED:
                    out += [(p, a) for a in self._type_alternatives(p, t, f.message)]
        seen: set[tuple[str, str]] = set()
        result = []
        for p, v in out:
            key = (p, repr(v))
            same = v == self._current(p) and type(v) is type(self._current(p))
            if key in seen or key in self.tried or key in self.undone or same:
                continue
            seen.add(key)
            result.append((p, v))
        return result

    def _rank(self, p: str, ty: str, msg: str) -> int:
        """0 for the change of kind the error asks for (a scalar where a pointer was wanted, or the
        reverse), 1 for another element type, 2 for anything else."""
        was_ptr, is_ptr = self.signature[p].startswith("*"), ty.startswith("*")
        if _POINTER_WANTED.search(msg) and not was_ptr and is_ptr:
            return 0
        if (_SCALAR_WANTED.search(msg) and not _FLOAT_MET_POINTER.search(msg) and not _POINTER_WANTED.search(msg)
                and was_ptr and not is_ptr):
            return 0
        return 1 if was_ptr and is_ptr else 2

    def _current(self, p: str) -> Any:
        if p in (CONFIG, TOGETHER):
            return None
        return self.constexprs[p] if p in self.constexprs else self.signature.get(p)

    def _config(self, i: int) -> dict[str, Any]:
        """The constexprs config `i` sets, among those a repair may change."""
        kw = self.configs[i].get("kwargs", {})
        return {p: v for p, v in kw.items() if p in self.constexprs
                and self.origins.get(p) in CHANGEABLE_CONSTEXPR}

    def _config_alternatives(self) -> list[tuple[str, Any]]:
        """Each autotune config as one change of all its constexprs at once, skipping the one compiled now."""
        out = []
        for i in range(len(self.configs)):
            cfg = self._config(i)
            if len(cfg) > 1 and any(self.constexprs[p] != v for p, v in cfg.items()):
                out.append((CONFIG, i))
        return out

    def _type_alternatives(self, p: str, ty: str, msg: str) -> list[str]:
        if ty.startswith("*"):
            if _FLOAT_MET_POINTER.search(msg):  # a loaded float used as an offset: the load was of ints
                elems = ["*i64", "*i32", "*i8", "*fp16", "*bf16", "*fp32"]
            elif _DTYPE_CLASH.search(msg):
                elems = ["*fp16", "*bf16", "*fp32", "*i32", "*i64", "*i8"]
            else:
                elems = ["*fp16", "*bf16", "*i64", "*i32", "*i8", "*fp32", "*u8"]
            elems = [t for t in elems if t != ty]
            if self.origins.get(p) in ("usage", "launcher_pointer"):  # a pointer by use or at the call: it stays one
                return elems
            # A change of kind is tried once (i32, *fp32): the next error refines the element type.
            if _SCALAR_WANTED.search(msg) and not _POINTER_WANTED.search(msg):
                return ["i32", *elems]
            return [*elems, "i32"]
        if _POINTER_WANTED.search(msg):
            return ["*fp32", "i64"]
        if ty.startswith("fp") or ty.startswith("bf"):
            return ["i32", "i64"]
        return ["i64", "fp32", "*fp32"] if not _INT_WANTED.search(msg) else ["i64"]

    def _constexpr_alternatives(self, p: str, msg: str, near: bool) -> list[Any]:
        v = self.constexprs[p]
        out: list[Any] = []
        if self.configs:
            out += [c["kwargs"][p] for c in self.configs if p in c.get("kwargs", {})]
        if not near:
            return out
        out += self.literals.get(p, [])
        if isinstance(v, bool):
            out.append(not v)
        elif isinstance(v, int):
            out += _INTS
        elif isinstance(v, str) and v.startswith("tl."):
            out += _DTYPES
        return out


    def apply(self, p: str, v: Any) -> tuple[dict[str, str], dict[str, Any]]:
        """The signature and constexprs with one change, for a trial compile."""
        self.tried.add((p, repr(v)))
        sig, consts = dict(self.signature), dict(self.constexprs)
        if p == CONFIG:
            consts.update(self._config(v))
        elif p == TOGETHER:
            sig.update(dict(v))
        elif p in consts:
            consts[p] = v
        else:
            sig[p] = v
        return sig, consts

    def keep(self, p: str, v: Any, because: Failure) -> None:
        if p == CONFIG:  # recorded as the constexprs it set, from -> to
            cfg = self._config(v)
            self.kept.append(Change(f"autotune config {v}", {q: self.constexprs[q] for q in cfg}, cfg,
                                    because.message))
            self.constexprs.update(cfg)
            self.tried.clear()
            return
        if p == TOGETHER:
            for q, t in v:
                self.kept.append(Change(q, self.signature[q], t, because.message))
                self.undone.add((q, repr(self.signature[q])))
                self.signature[q] = t
            self.tried.clear()
            return
        self.kept.append(Change(p, self._current(p), v, because.message))
        self.undone.add((p, repr(self._current(p))))
        if p in self.constexprs:
            self.constexprs[p] = v
        else:
            self.signature[p] = v
        self.tried.clear()  # a new state: earlier rejections may now be worth trying again


def compared_literals(sources: list[str]) -> dict[str, list[Any]]:
    """name -> literals the functions compare it with (`act == 'relu'`, `MODE == 2`): the values a
    constexpr selecting a branch takes, read from every jit function of the unit (helpers branch too)."""
    out: dict[str, list[Any]] = {}
    for src in sources:
        try:
            tree = ast.parse(textwrap.dedent(src))
        except SyntaxError:
            continue
        for n in ast.walk(tree):
            if not isinstance(n, ast.Compare) or len(n.ops) != 1 or not isinstance(n.ops[0], (ast.Eq, ast.NotEq)):
                continue
            a, b = n.left, n.comparators[0]
            for x, y in ((a, b), (b, a)):
                if isinstance(x, ast.Name) and isinstance(y, ast.Constant) and \
                        isinstance(y.value, (str, int)) and not isinstance(y.value, bool):
                    vals = out.setdefault(x.id, [])
                    if y.value not in vals:
                        vals.append(y.value)
    return out
