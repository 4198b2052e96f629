"""Mutants of a Triton unit: the CUDA mutation operators (miner.enrich.mutants) on a `@triton.jit` body.

A Triton unit is a Python module (`units/default/unit.py`); its kernel is found by name among the
jit-decorated functions and mutated with Python's `ast`, edits spliced into the unit's own text (so the
rest of the unit, comments included, is byte for byte the original). No tree-sitter, no triton import:
a mutant is made wherever the dataset is, and is judged where Triton runs.

- `no_write`: every `tl.store` (and `tl.atomic_*`) statement of the kernel becomes `pass`: the output
  is never written. (Emptying the whole body as the CUDA operator does would be equivalent; keeping the
  loads makes the mutant compile exactly like the kernel, only without its writes.)
- `poison`: every stored value `v` becomes `1 - (v)`. Negation, as for CUDA, leaves zeros alone, and
  Triton kernels are often relu-like or masked-to-zero; `1 - v` changes every value but 0.5.
- `drop_term`: one arithmetic term dropped (`a * b + c` -> `(a * b)`), preferring terms of a stored
  value, then of a value variable, then of anything else; never in the address or mask of a load or
  store, program ids, `tl.arange`, loop bounds, conditions, subscripts, or arithmetic on constexprs
  only (shapes: a mutant there fails to compile rather than computes wrong values).
- `off_by_one`: one `tl.load` reads the next element (`tl.load(p + offs, ...)` ->
  `tl.load((p + offs) + 1, ...)`), loads inside a stored value first; block pointers and tensor
  descriptors (`tl.make_block_ptr`, `tl.advance`, `make_tensor_descriptor`) are not shifted, `+ 1`
  is not defined on them.

The `tl` spelling is taken from the unit's imports (`import triton.language as tl`, `from triton import
language as lang`, `from triton.language import store`), so aliases mutate like the canonical form.
"""

from __future__ import annotations

import ast

# One text-splicing machinery for CUDA and Triton mutants.
from miner.enrich.mutants import Mutant, _apply, _short, _Site

_STORES = {"store"}
_ATOMICS = {"atomic_add", "atomic_max", "atomic_min", "atomic_and", "atomic_or", "atomic_xor", "atomic_xchg"}
_INDEX_CALLS = {"program_id", "num_programs", "arange", "make_block_ptr", "advance", "multiple_of",
                "max_contiguous", "max_constancy", "cdiv", "range", "static_range", "zeros", "full", "reshape",
                "broadcast_to", "expand_dims", "view", "make_tensor_descriptor"}
_BLOCK_POINTER_CALLS = {"make_block_ptr", "advance", "make_tensor_descriptor"}
_ARITH = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv)
_LANG_MODULES = ("triton.language",)


class _Unit:
    """The unit's text with byte offsets for ast positions (ast columns are UTF-8 byte offsets)."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8")
        self.line_starts = [0]
        for i, b in enumerate(self.data):
            if b == 0x0A:
                self.line_starts.append(i + 1)

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.line_starts[node.lineno - 1] + node.col_offset,  # type: ignore[attr-defined]
                self.line_starts[node.end_lineno - 1] + node.end_col_offset)  # type: ignore[attr-defined]

    def text(self, node: ast.AST) -> str:
        a, b = self.span(node)
        return self.data[a:b].decode("utf-8", "replace")


def _dotted(node: ast.AST) -> str | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None


def _lang_names(tree: ast.Module) -> tuple[set[str], dict[str, str]]:
    """(names bound to the triton.language module, {local name: triton.language function} from-imports)."""
    modules = {"triton.language"}
    funcs: dict[str, str] = {}
    triton_names = {"triton"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name == "triton.language" and a.asname:
                    modules.add(a.asname)
                elif a.name == "triton" and a.asname:
                    triton_names.add(a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module:
            for a in node.names:
                if node.module == "triton" and a.name == "language":
                    modules.add(a.asname or a.name)
                elif node.module in _LANG_MODULES:
                    funcs[a.asname or a.name] = a.name
    modules |= {f"{t}.language" for t in triton_names}
    return modules, funcs


class _Lang:
    def __init__(self, tree: ast.Module) -> None:
        self.modules, self.funcs = _lang_names(tree)

    def name(self, call: ast.AST) -> str | None:
        """`tl.store(...)` -> "store" when `tl` is triton.language (any spelling); else None."""
        if not isinstance(call, ast.Call):
            return None
        if isinstance(call.func, ast.Name):
            return self.funcs.get(call.func.id)
        if isinstance(call.func, ast.Attribute):
            owner = _dotted(call.func.value)
            if owner in self.modules:
                return call.func.attr
            if owner is not None and owner.split(".")[-1] in ("math", "extra") and \
                    owner.rsplit(".", 1)[0] in self.modules:
                return call.func.attr  # tl.math.exp2: a value function, never a store
        return None


def _is_jit(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        name = _dotted(target) or ""
        if name.split(".")[-1] == "jit":
            return True
    return False


def kernel_definitions(tree: ast.Module, name: str) -> list[ast.FunctionDef]:
    """The jit-decorated definitions of `name` (a kernel nested in a factory function included)."""
    short = name.split(".")[-1]
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == short and _is_jit(n)]


def _args(call: ast.Call) -> tuple[ast.AST | None, ast.AST | None]:
    """(pointer, value) of a store or atomic, positional or by keyword."""
    kw = {k.arg: k.value for k in call.keywords if k.arg}
    ptr = call.args[0] if call.args else kw.get("pointer") or kw.get("ptr")
    val = call.args[1] if len(call.args) > 1 else kw.get("value") or kw.get("val")
    return ptr, val


def _walk(node: ast.AST):
    """Pre-order in source order (ast.walk is breadth-first): the first site is the outermost, first written."""
    yield node
    for child in ast.iter_child_nodes(node):
        yield from _walk(child)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


class _Kernel:
    def __init__(self, fn: ast.FunctionDef, lang: _Lang) -> None:
        self.fn, self.lang = fn, lang
        self.stores: list[tuple[ast.Call, ast.AST]] = []   # (call, stored value)
        self.store_stmts: list[ast.stmt] = []
        self.loads: list[ast.Call] = []
        self.parents: dict[int, ast.AST] = {}
        for node in _walk(fn):
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
        for node in _walk(fn):
            kind = lang.name(node)
            if kind in _STORES or kind in _ATOMICS:
                ptr, val = _args(node)  # type: ignore[arg-type]
                if val is not None:
                    self.stores.append((node, val))  # type: ignore[arg-type]
                stmt = self.parents.get(id(node))
                if isinstance(stmt, ast.Expr):
                    self.store_stmts.append(stmt)
            elif kind == "load":
                self.loads.append(node)  # type: ignore[arg-type]
        if not self.stores:
            # A jit helper (`role: helper`) writes nothing: what it returns is its output.
            self.stores = [(n, n.value) for n in _walk(fn) if isinstance(n, ast.Return) and n.value is not None]
        args = fn.args
        every = args.posonlyargs + args.args + args.kwonlyargs
        self.constexprs = {a.arg for a in every
                           if a.annotation is not None and "constexpr" in ast.unparse(a.annotation)}
        self.params = {a.arg for a in every}
        self.index_vars = self._index_vars()
        self.block_pointers = {t.id for node in _walk(fn) if isinstance(node, ast.Assign)
                               and lang.name(node.value) in _BLOCK_POINTER_CALLS
                               for t in node.targets if isinstance(t, ast.Name)}

    def _index_parts(self) -> list[ast.AST]:
        """Expressions that pick elements or shape the computation rather than compute values."""
        parts: list[ast.AST] = []
        for node in _walk(self.fn):
            kind = self.lang.name(node)
            if kind in _STORES or kind in _ATOMICS or kind == "load":
                ptr, _ = _args(node)  # type: ignore[arg-type]
                parts += [ptr] if ptr is not None else []
                parts += [k.value for k in node.keywords if k.arg in ("mask", "boundary_check")]  # type: ignore[attr-defined]
            elif kind in _INDEX_CALLS:
                parts.append(node)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "range":
                parts.append(node)
            elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
                parts.append(node.test)
            elif isinstance(node, ast.Subscript):
                parts.append(node.slice)
        return [p for p in parts if p is not None]

    def _index_vars(self) -> set[str]:
        idx: set[str] = set()
        for part in self._index_parts():
            idx |= _names(part)
        defs: list[tuple[str, ast.AST]] = []
        for node in _walk(self.fn):
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    for n in ast.walk(t):
                        if isinstance(n, ast.Name):
                            defs.append((n.id, node.value))
            elif isinstance(node, ast.For):
                for n in ast.walk(node.target):
                    if isinstance(n, ast.Name):
                        defs.append((n.id, node.iter))
        changed = True
        while changed:  # a variable computed from an index variable picks elements too
            changed = False
            for name, value in defs:
                if name in idx:
                    new = _names(value) - idx
                    if new:
                        idx |= new
                        changed = True
        return idx

    def inside(self, node: ast.AST, targets: set[int]) -> bool:
        p: ast.AST | None = node
        while p is not None and p is not self.fn:
            if id(p) in targets:
                return True
            p = self.parents.get(id(p))
        return False

    def assigned_to(self, node: ast.AST) -> str | None:
        p = self.parents.get(id(node))
        while p is not None and p is not self.fn:
            if isinstance(p, ast.stmt):
                if isinstance(p, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                    targets = p.targets if isinstance(p, ast.Assign) else [p.target]
                    if len(targets) == 1 and isinstance(targets[0], ast.Name):
                        return targets[0].id
                return None
            p = self.parents.get(id(p))
        return None


def _term_sites(k: _Kernel, unit: _Unit) -> list[_Site]:
    stored = {id(v) for _, v in k.stores}
    index_parts = {id(p) for p in k._index_parts()}
    tiers: list[list[_Site]] = [[], [], []]
    for node in _walk(k.fn):
        if not isinstance(node, ast.BinOp) or not isinstance(node.op, _ARITH):
            continue
        names = _names(node)
        if not names or names <= k.constexprs or k.inside(node, index_parts):
            continue  # constants and constexpr-only shapes; addresses, masks, conditions, program ids
        if any(k.lang.name(c) in _INDEX_CALLS for c in ast.walk(node)):
            continue
        target = k.assigned_to(node)
        if target is not None and target in k.index_vars and not k.inside(node, stored):
            continue  # `offs = pid * BLOCK + ...`: which element, not which value (off_by_one's business)
        a, b = unit.span(node)
        left = unit.text(node.left)
        site = _Site(a, b, f"({left})", unit.text(node), f"({left})")
        value_var = target is not None and target not in k.index_vars
        tiers[0 if k.inside(node, stored) else 1 if value_var else 2].append(site)
    return tiers[0] + tiers[1] + tiers[2]


def _load_sites(k: _Kernel, unit: _Unit) -> list[_Site]:
    stored = {id(v) for _, v in k.stores}
    first: list[_Site] = []
    rest: list[_Site] = []
    for call in k.loads:
        ptr, _ = _args(call)
        if ptr is None or (isinstance(ptr, ast.Name) and ptr.id in k.block_pointers):
            continue
        if k.lang.name(ptr) in _BLOCK_POINTER_CALLS:
            continue
        a, b = unit.span(ptr)
        text = unit.text(ptr)
        call_text = unit.text(call)
        site = _Site(a, b, f"({text}) + 1", call_text, call_text.replace(text, f"({text}) + 1", 1))
        (first if k.inside(call, stored) else rest).append(site)
    return first + rest


def make_mutants(unit_text: str, kernel_name: str, per_kind: int = 2) -> list[Mutant]:
    """The mutants of the Triton kernel `kernel_name` in one unit; empty when its definition is not found
    (or the unit does not parse). Every mutant parses: an edit that would not is dropped here."""
    try:
        tree = ast.parse(unit_text)
    except SyntaxError:
        return []
    defs = kernel_definitions(tree, kernel_name)
    if not defs:
        return []
    unit, lang = _Unit(unit_text), _Lang(tree)
    kernels = [_Kernel(fn, lang) for fn in defs]
    mutants: list[Mutant] = []
    drops = [_Site(*unit.span(s), "pass", unit.text(s)) for k in kernels for s in k.store_stmts]
    what = "every tl.store of the kernel is removed"
    if not all(k.store_stmts for k in kernels):
        # The writes happen in a jit helper the kernel calls (or in an expression): the body goes, as for CUDA.
        drops = [_Site(unit.span(k.fn.body[0])[0], unit.span(k.fn.body[-1])[1], "pass", "") for k in kernels]
        what = "the kernel body is removed"
    mutants.append(Mutant("no_write", "no_write", f"{what}: the output is never written", _apply(unit.data, drops)))
    poison = [_Site(*unit.span(v), f"1 - ({unit.text(v)})", unit.text(c)) for k in kernels for c, v in k.stores]
    if poison:
        mutants.append(Mutant("poison", "poison", "every store into the output writes 1 - the value: "
                              + "; ".join(sorted({_short(s.before) for s in poison})[:3]), _apply(unit.data, poison)))
    for kind, finder in (("drop_term", _term_sites), ("off_by_one", _load_sites)):
        per_def = [finder(k, unit) for k in kernels]
        for i in range(per_kind):
            sites = [s[i] for s in per_def if i < len(s)]
            if not sites:
                break
            what = "drops a term" if kind == "drop_term" else "reads the next element"
            mutants.append(Mutant(f"{kind}.{i + 1}", kind,
                                  f"{what}: `{_short(sites[0].before)}` -> `{_short(sites[0].after)}`",
                                  _apply(unit.data, sites)))
    out = []
    for m in mutants:
        try:
            ast.parse(m.source)
        except SyntaxError:
            continue  # an edit the grammar refuses (a store in a lambda, say): no mutant, not a broken one
        if m.source != unit_text:
            out.append(m)
    return out
