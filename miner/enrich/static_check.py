"""Reject generated tests that cannot fail, by reading their AST (the code is never run here).

A test counts only if it launches the kernel through the harness and asserts the kernel's output
against a reference that the kernel did not produce. Data flow is followed in statement order inside
each test (and through module-level helpers), so `expected = out.clone()` after the launch is the
kernel's own output, while `expected = x.clone()` before it is an honest snapshot of an input.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

HARNESS_MODULES = ("miner.harness",)
# Methods that return (a view or copy of) the same data: following them cannot create a reference.
VIEW_METHODS = {
    "clone", "detach", "cpu", "cuda", "to", "contiguous", "float", "double", "half", "bfloat16", "int",
    "long", "numpy", "tolist", "item", "view", "reshape", "flatten", "squeeze", "unsqueeze", "view_as",
    "reshape_as", "type", "copy", "requires_grad_", "T", "data", "as_strided", "expand", "expand_as",
}
ASSERT_FUNCS = {"assert_close", "assert_allclose", "assert_array_equal", "assert_array_almost_equal",
                "assert_equal", "assert_almost_equal", "assert_array_max_ulp", "assert_tensor_equal"}
BOOL_COMPARE_FUNCS = {"allclose", "isclose", "equal", "array_equal", "all_close"}
FORBIDDEN_CALLS = {("os", "system"), ("os", "_exit"), ("sys", "exit"), ("shutil", "rmtree"),
                   ("os", "kill"), ("os", "remove"), ("os", "unlink")}
FORBIDDEN_IMPORTS = {"subprocess", "socket", "requests", "urllib", "http", "multiprocessing"}
# Methods that return a view sharing the tensor's storage (or, for `to`/`float`..., may do so).
ALIAS_METHODS = {
    "view", "reshape", "flatten", "squeeze", "unsqueeze", "view_as", "reshape_as", "T", "data", "as_strided",
    "expand", "expand_as", "detach", "contiguous", "to", "cuda", "float", "double", "half", "bfloat16", "int",
    "long", "type", "requires_grad_", "permute", "transpose", "narrow", "select", "unflatten", "mT",
}
COPY_FUNCS = {"torch.clone", "copy.deepcopy", "np.array", "numpy.array", "np.asarray", "torch.as_tensor"}
SWALLOWED = {"Exception", "BaseException", "AssertionError"}
SKIP_CALLS = {"pytest.skip", "pytest.xfail", "pytest.exit", "sys.exit", "os._exit"}
SKIP_EXCEPTIONS = {"pytest.skip.Exception", "pytest.xfail.Exception", "unittest.SkipTest", "SkipTest",
                   "Skipped", "pytest.exit.Exception"}
INF_NAMES = {"math.inf", "np.inf", "numpy.inf", "torch.inf", "float.inf", "math.nan", "np.nan", "numpy.nan",
             "torch.nan"}
# Tolerances at or past these accept almost any output: |a - b| <= atol + rtol * |b|.
LOOSE_RTOL = 1.0
LOOSE_ATOL = 1e3
NON_NEGATIVE = {"abs", "fabs", "absolute", "norm", "vector_norm", "matrix_norm", "square", "numel", "len"}
# allclose(a, b, rtol, atol) and numpy's assert_allclose(actual, desired, rtol, atol) take them positionally.
POSITIONAL_TOLERANCES = {"allclose": ("rtol", "atol"), "isclose": ("rtol", "atol"),
                         "assert_allclose": ("rtol", "atol")}


@dataclass
class CheckResult:
    ok: bool
    problems: list[str] = field(default_factory=list)
    cases: int = 0
    tests: list[str] = field(default_factory=list)

    def message(self) -> str:
        return "; ".join(self.problems) if self.problems else "ok"


def _root_name(node: ast.AST) -> str | None:
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute | ast.Subscript | ast.Starred):
            node = node.value
        elif isinstance(node, ast.Call):
            node = node.func
        else:
            return None


def _dotted(node: ast.AST) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


def _view_base(node: ast.AST, methods: frozenset[str] | set[str] = VIEW_METHODS,
               copies: frozenset[str] | set[str] = COPY_FUNCS) -> str | None:
    """`x` when node is `x`, `x.clone().cpu()`, `x[0:n]`, `x.T`...; None for a computed expression."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr in methods:
            node = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in methods):
            node = node.func.value
        elif isinstance(node, ast.Call) and _dotted(node.func) in copies and node.args:
            node = node.args[0]
        else:
            return None


def _is_constant(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, ast.UnaryOp):
        return _is_constant(node.operand)
    if isinstance(node, ast.Tuple | ast.List):
        return all(_is_constant(e) for e in node.elts)
    return False


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _always_false(node: ast.AST | None) -> bool:
    """A condition or iterable that is false/empty whatever runs: `if False:`, `for _ in []:`."""
    if isinstance(node, ast.Constant):
        return not node.value
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return not node.elts
    if isinstance(node, ast.Dict):
        return not node.keys
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _always_true(node.operand)
    return False


def _always_true(node: ast.AST | None) -> bool:
    return _tautology(node) is not None


def _tautology(node: ast.AST | None) -> str | None:
    """Why an assertion cannot fail: `True`, `(cond, "msg")`, `x or True`, `c or not c`, `err >= 0`..."""
    if node is None:
        return None
    if isinstance(node, ast.Constant):
        return "a true constant" if node.value else None
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return "a non-empty tuple is always true" if node.elts else None
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return "negates something always false" if _always_false(node.operand) else None
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return "every part is always true" if all(_always_true(v) for v in node.values) else None
        if any(_always_true(v) for v in node.values):
            return "`or` with a part that is always true"
        dumps = {ast.dump(v) for v in node.values}
        if any(isinstance(v, ast.UnaryOp) and isinstance(v.op, ast.Not) and ast.dump(v.operand) in dumps
               for v in node.values):
            return "`c or not c`"
        return None
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if ast.dump(left) == ast.dump(right) and isinstance(op, ast.Eq | ast.GtE | ast.LtE | ast.Is):
            return "compares an expression with itself"
        # A lower bound on a quantity that is never negative: `(out - ref).abs().max() >= 0`.
        if isinstance(op, ast.Lt | ast.LtE):
            left, right, op = right, left, (ast.Gt() if isinstance(op, ast.Lt) else ast.GtE())
        bound = _constant_number(right)
        if (isinstance(op, ast.Gt | ast.GtE) and bound is not None and _non_negative(left)
                and (bound < 0 or (bound == 0 and isinstance(op, ast.GtE)))):
            return "a lower bound on a value that is never negative"
    return None


def _constant_number(node: ast.AST) -> float | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        inner = _constant_number(node.operand)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float) and not isinstance(node.value, bool):
        return float(node.value)
    if _dotted(node) in INF_NAMES:
        return float("inf")
    if (isinstance(node, ast.Call) and _dotted(node.func) == "float" and len(node.args) == 1
            and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
        try:
            return float(node.args[0].value)
        except ValueError:
            return None
    return None


def _non_negative(node: ast.AST) -> bool:
    """abs/norm/square anywhere on the outer call chain, or `x ** 2`."""
    while True:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Pow) and _constant_number(node.right) == 2:
            return True
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name in NON_NEGATIVE:
                return True
            node = node.func.value if isinstance(node.func, ast.Attribute) else (node.args[0] if node.args else node)
            if not isinstance(node, ast.AST) or isinstance(node, ast.Name):
                return False
        elif isinstance(node, ast.Attribute | ast.Subscript):
            node = node.value
        else:
            return False


def _is_skip_statement(stmt: ast.stmt) -> bool:
    """`pytest.skip(...)`, `raise pytest.skip.Exception(...)`, `sys.exit()`: nothing after it runs."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        return _dotted(stmt.value.func) in SKIP_CALLS
    if isinstance(stmt, ast.Raise) and stmt.exc is not None:
        exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
        return _dotted(exc) in SKIP_EXCEPTIONS
    return False


def _skipping_mark(node: ast.AST) -> str | None:
    """The mark's name when `node` skips or xfails unconditionally (a pytestmark value or a decorator)."""
    if isinstance(node, ast.List | ast.Tuple):
        return next((m for m in map(_skipping_mark, node.elts) if m), None)
    call = node if isinstance(node, ast.Call) else None
    name = _dotted(call.func if call else node)
    last = name.split(".")[-1]
    if name.endswith(("mark.skip", "mark.xfail")) or name in ("unittest.skip", "unittest.expectedFailure"):
        if last == "xfail" and call and call.args and not _always_true(call.args[0]):
            return None  # xfail(condition) is conditional; only an unconditional one hides every failure
        return last
    if name.endswith("mark.skipif") or name == "unittest.skipIf":
        cond = call.args[0] if call and call.args else next(
            (k.value for k in (call.keywords if call else []) if k.arg == "condition"), None)
        return last if _always_true(cond) else None
    return None


class _Module:
    """Module-level facts: harness imports, helpers that launch, helpers that compare, fixtures."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.harness_names: set[str] = set()   # functions imported from the harness
        self.harness_modules: set[str] = set()  # aliases of the harness module
        self.handles: set[str] = set()          # module-level names bound to loaded units
        self.funcs: dict[str, ast.FunctionDef] = {}
        self.literals: dict[str, ast.AST] = {}
        self.forbidden: list[str] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                if node.module in HARNESS_MODULES or node.module.startswith("miner.harness."):
                    self.harness_names.update(a.asname or a.name for a in node.names)
                for a in node.names:  # `from miner import harness [as h]`
                    if f"{node.module}.{a.name}" in HARNESS_MODULES:
                        self.harness_modules.add(a.asname or a.name)
                if node.module.split(".")[0] in FORBIDDEN_IMPORTS:
                    self.forbidden.append(f"imports {node.module}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in HARNESS_MODULES:
                        self.harness_modules.add(a.asname or a.name)
                    if a.name.split(".")[0] in FORBIDDEN_IMPORTS:
                        self.forbidden.append(f"imports {a.name}")
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                if (_dotted(node.func.value), node.func.attr) in FORBIDDEN_CALLS:
                    self.forbidden.append(f"calls {_dotted(node.func)}")
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                self.funcs[node.name] = node  # type: ignore[assignment]
            elif isinstance(node, ast.ClassDef):
                for item in node.body:
                    if isinstance(item, ast.FunctionDef):
                        self.funcs[f"{node.name}.{item.name}"] = item
            elif isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name):
                        self.literals[t.id] = node.value
                        if self.is_harness_call(node.value):
                            self.handles.add(t.id)
        self.fixture_handles = {name for name, fn in self.funcs.items()
                                if self._is_fixture(fn) and self._returns_handle(fn)}
        self.fixture_params = {name: self._fixture_param_count(fn) for name, fn in self.funcs.items()
                               if self._is_fixture(fn)}
        # Helpers reached from tests: fixed point, since a helper may call another helper.
        self.launching: set[str] = set()
        changed = True
        while changed:
            changed = False
            for name, fn in self.funcs.items():
                if name not in self.launching and self._calls_kernel(fn):
                    self.launching.add(name)
                    changed = True
        self.comparing: set[str] = set()  # helpers that assert, filled in before any test is judged
        self.comparing = {name for name, fn in self.funcs.items()
                          if not name.split(".")[-1].startswith("test") and _has_assertion(fn, self)}

    def is_harness_call(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        f = node.func
        if isinstance(f, ast.Name):
            return f.id in self.harness_names
        return _root_name(f) in self.harness_modules

    @staticmethod
    def _is_fixture(fn: ast.FunctionDef) -> bool:
        return any("fixture" in _dotted(d.func if isinstance(d, ast.Call) else d) for d in fn.decorator_list)

    def _returns_handle(self, fn: ast.FunctionDef) -> bool:
        for node in ast.walk(fn):
            if isinstance(node, ast.Return | ast.Yield) and node.value is not None:
                if self.is_harness_call(node.value) or _root_name(node.value) in self.handles:
                    return True
        return False

    def _fixture_param_count(self, fn: ast.FunctionDef) -> int:
        for d in fn.decorator_list:
            if isinstance(d, ast.Call):
                for kw in d.keywords:
                    if kw.arg == "params":
                        return self.count_values(kw.value)
        return 1

    def count_values(self, node: ast.AST) -> int:
        if isinstance(node, ast.Name) and node.id in self.literals:
            node = self.literals[node.id]
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            # pytest.param(..., marks=pytest.mark.skip) is a case that never runs.
            return sum(1 for e in node.elts if not (
                isinstance(e, ast.Call) and _dotted(e.func).endswith("param")
                and any(k.arg == "marks" and _skipping_mark(k.value) for k in e.keywords)))
        if isinstance(node, ast.Call) and _dotted(node.func) == "range" and all(
                isinstance(a, ast.Constant) and isinstance(a.value, int) for a in node.args):
            return len(range(*[a.value for a in node.args]))  # type: ignore[attr-defined]
        return 1  # not a literal: counted as one case, never more than we can prove

    def _calls_kernel(self, fn: ast.FunctionDef) -> bool:
        handles = set(self.handles) | {a.arg for a in fn.args.args if a.arg in self.fixture_handles}
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and self.is_harness_call(node.value):
                handles.update(t.id for t in node.targets if isinstance(t, ast.Name))
        return any(self.is_kernel_call(n, handles) for n in ast.walk(fn))

    def is_kernel_call(self, node: ast.AST, handles: set[str]) -> bool:
        """A call on a loaded unit (`u(...)`, `u.launch(...)`), a harness launch, or a launching helper."""
        if not isinstance(node, ast.Call):
            return False
        f = node.func
        if isinstance(f, ast.Name):
            if f.id in getattr(self, "launching", set()) or f.id in handles:
                return True
            return f.id in self.harness_names and "load" not in f.id.lower() and bool(node.args)
        root = _root_name(f)
        if root in handles:
            return True
        if root in self.harness_modules and isinstance(f, ast.Attribute):
            return "load" not in f.attr.lower() and bool(node.args)
        return False


def _loose_tolerance(call: ast.Call, name: str) -> str | None:
    given = {k.arg: k.value for k in call.keywords if k.arg}
    for key, arg in zip(POSITIONAL_TOLERANCES.get(name, ()), call.args[2:], strict=False):
        given.setdefault(key, arg)
    for key in ("rtol", "atol"):
        value = _constant_number(given[key]) if key in given else None
        limit = LOOSE_RTOL if key == "rtol" else LOOSE_ATOL
        if value is not None and (value != value or value >= limit):
            return f"{key}={ast.unparse(given[key])} accepts almost any output"
    return None


def _compare_pairs(node: ast.AST, in_assert: bool, mod: _Module) -> list[tuple[ast.AST, ast.AST, str | None]]:
    """(a, b, why the comparison cannot fail or None) for every comparison inside `node`."""
    pairs: list[tuple[ast.AST, ast.AST, str | None]] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = sub.func.attr if isinstance(sub.func, ast.Attribute) else getattr(sub.func, "id", "")
            if len(sub.args) >= 2 and (name in ASSERT_FUNCS or name in mod.comparing
                                       or (in_assert and name in BOOL_COMPARE_FUNCS)):
                pairs.append((sub.args[0], sub.args[1], _loose_tolerance(sub, name)))
        elif in_assert and isinstance(sub, ast.Compare) and sub.comparators:
            pairs.append((sub.left, sub.comparators[0], None))
        elif in_assert and isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub):
            pairs.append((sub.left, sub.right, None))
    return pairs


def _has_assertion(fn: ast.FunctionDef, mod: _Module) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert) and _compare_pairs(node.test, True, mod):
            return True
        if isinstance(node, ast.Expr) and _compare_pairs(node.value, False, mod):
            return True
    return False


def _ordered_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements in source order, nested blocks flattened (loops and ifs run at most once here).

    Code that never runs is left out: branches of `if False:`, loops over `[]`, and whatever follows a
    return, raise, break, continue or skip in the same block.
    """
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        blocks: list[list[ast.stmt]] = []
        if isinstance(stmt, ast.If | ast.While):
            if _always_false(stmt.test):
                blocks = [stmt.orelse]
            elif isinstance(stmt, ast.If) and _always_true(stmt.test):
                blocks = [stmt.body]
            else:
                blocks = [stmt.body, stmt.orelse]
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            blocks = [stmt.orelse] if _always_false(stmt.iter) else [stmt.body, stmt.orelse]
        elif not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            blocks = [b for b in (getattr(stmt, a, None) for a in ("body", "orelse", "finalbody"))
                      if isinstance(b, list)]
            blocks[1:1] = [h.body for h in getattr(stmt, "handlers", None) or []]
        for block in blocks:
            out.extend(_ordered_statements(block))
        if isinstance(stmt, ast.Return | ast.Raise | ast.Break | ast.Continue) or _is_skip_statement(stmt):
            break
    return out


class _Flow:
    """What each name holds at this point of a test, statement by statement."""

    def __init__(self) -> None:
        self.touched: set[str] = set()      # buffers the kernel may have written, from its launch on
        self.kernel_vals: set[str] = set()  # names holding the kernel's output or a view of it
        self.derived: dict[str, set[str]] = {}  # name -> kernel-side names its value was computed from
        self.aliases: dict[str, str] = {}   # name -> the name whose storage it shares (`y = x`, `x.view()`)
        self.errors: set[str] = set()       # `err = (out - ref).abs().max()`: output minus independent reference

    def kernel_side(self, node: ast.AST) -> bool:
        return bool(_names(node) & (self.touched | self.kernel_vals))

    def roots(self, node: ast.AST) -> set[str]:
        """Kernel-side names the value of `node` was computed from, directly or through assignments."""
        out: set[str] = set()
        for n in _names(node):
            if n in self.touched or n in self.kernel_vals:
                out.add(n)
            out |= self.derived.get(n, set())
        return out

    def storage(self, name: str) -> set[str]:
        """`name` and every name sharing its storage."""
        root = name
        while root in self.aliases and self.aliases[root] != root:
            root = self.aliases[root]
        group = {root} | {n for n in self.aliases if self._root(n) == root}
        return group | {name}

    def _root(self, name: str) -> str:
        seen = set()
        while name in self.aliases and name not in seen:
            seen.add(name)
            name = self.aliases[name]
        return name

    def identity(self, actual: ast.AST) -> set[str]:
        """The kernel output an `actual` expression shows: its base buffer (and aliases), else its names."""
        base = _view_base(actual)
        if base is not None and (base in self.touched or base in self.kernel_vals):
            return self.storage(base)
        return _names(actual) & (self.touched | self.kernel_vals)

    def launch_writes(self, arg: ast.AST) -> None:
        base = _view_base(arg)
        if base:
            self.touched |= self.storage(base)

    def assign(self, names: list[str], value: ast.AST, from_kernel: bool) -> None:
        roots = self.roots(value)
        alias = _alias_base(value)
        is_error = any(isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub)
                       and _judge_pair(sub.left, sub.right, self) is None for sub in ast.walk(value))
        for n in names:
            (self.errors.add if is_error else self.errors.discard)(n)
            (self.kernel_vals.add if from_kernel else self.kernel_vals.discard)(n)
            self.derived[n] = roots
            if alias is not None and alias != n and len(names) == 1:
                self.aliases[n] = alias
            else:
                self.aliases.pop(n, None)


def _alias_base(node: ast.AST) -> str | None:
    """`x` when node shares x's storage (`x`, `x[1:]`, `x.view(-1)`), None when it may be a copy."""
    return _view_base(node, ALIAS_METHODS, frozenset())


def _check_test(fn: ast.FunctionDef, mod: _Module) -> list[str]:
    problems: list[str] = []
    handles = set(mod.handles) | {a.arg for a in fn.args.args if a.arg in mod.fixture_handles}
    flow = _Flow()
    launched = False
    valid = 0
    reasons: list[str] = []
    for stmt in _ordered_statements(fn.body):
        if isinstance(stmt, ast.Try):
            for h in stmt.handlers:
                caught = _dotted(h.type) if h.type is not None else "BaseException"
                if h.type is None or caught.split(".")[-1] in SWALLOWED:
                    problems.append(f"{fn.name}: try/except {caught} can swallow a failure")
        if _is_skip_statement(stmt):
            if isinstance(stmt, ast.Expr):
                problems.append(f"{fn.name}: calls {_dotted(stmt.value.func)}")  # type: ignore[attr-defined]
            else:
                problems.append(f"{fn.name}: raises {ast.unparse(stmt.exc)}")  # type: ignore[attr-defined]
        # Launches in this statement mark their pointer arguments as possibly written.
        simple = ast.Assert | ast.Expr | ast.Assign | ast.AugAssign | ast.Return | ast.AnnAssign
        header = getattr(stmt, "test", None) or getattr(stmt, "iter", None)
        shallow = [stmt] if isinstance(stmt, simple) else [header]
        for part in shallow:
            if part is None:
                continue
            for node in ast.walk(part):
                if mod.is_kernel_call(node, handles):
                    launched = True
                    for arg in [*node.args, *(k.value for k in node.keywords)]:  # type: ignore[attr-defined]
                        flow.launch_writes(arg)
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            value = stmt.value
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            if value is None:
                continue
            if mod.is_harness_call(value) and not mod.is_kernel_call(value, handles):
                handles.update(names)
                continue
            base = _view_base(value)
            from_kernel = (any(mod.is_kernel_call(n, handles) for n in ast.walk(value))
                           or (base is not None and (base in flow.touched or base in flow.kernel_vals)))
            flow.assign(names, value, from_kernel)
        asserted: list[tuple[ast.AST, ast.AST, str | None]] = []
        if isinstance(stmt, ast.Assert):
            if _is_constant(stmt.test):
                problems.append(f"{fn.name}: asserts a constant")
            elif why := _tautology(stmt.test):
                problems.append(f"{fn.name}: `assert {ast.unparse(stmt.test)[:80]}` is always true ({why})")
                continue
            asserted = _compare_pairs(stmt.test, True, mod)
        elif isinstance(stmt, ast.Expr):
            asserted = _compare_pairs(stmt.value, False, mod)
        if isinstance(stmt, ast.Assert) and _bounds_error(stmt.test, flow):
            valid += 1
        for a, b, loose in asserted:
            verdict = loose or _judge_pair(a, b, flow)
            if verdict is None:
                valid += 1
            else:
                reasons.append(verdict)
    if not launched:
        problems.append(f"{fn.name}: never launches the kernel through the harness")
    elif valid == 0:
        why = f" ({reasons[0]})" if reasons else ""
        problems.append(f"{fn.name}: no assertion compares the kernel's output "
                        f"with an independent reference{why}")
    return problems


def _bounds_error(test: ast.AST, flow: _Flow) -> bool:
    """`assert err < tol` (or `err == 0`) where err holds the output minus an independent reference."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    left, op, right = test.left, test.ops[0], test.comparators[0]
    if isinstance(op, ast.Gt | ast.GtE):
        left, right = right, left
    elif not isinstance(op, ast.Lt | ast.LtE | ast.Eq):
        return False
    return bool(_names(left) & flow.errors) and not (_names(right) & flow.errors)


def _judge_pair(a: ast.AST, b: ast.AST, flow: _Flow) -> str | None:
    """None when (a, b) compares kernel output with an independent reference, else the reason."""
    if ast.dump(a) == ast.dump(b):
        return "compares an expression with itself"

    def own_output(x: ast.AST) -> bool:
        base = _view_base(x)
        return base is not None and (base in flow.kernel_vals or base in flow.touched)

    if not (flow.kernel_side(a) or flow.kernel_side(b)):
        return "neither side depends on the kernel's output"
    computed_from_output = False
    for actual, expected in ((a, b), (b, a)):
        if not flow.kernel_side(actual) or own_output(expected) or _is_constant(expected):
            continue
        if flow.roots(expected) & flow.identity(actual):
            computed_from_output = True  # `expected = out * 1.0`: the reference is the output itself
            continue
        return None
    if computed_from_output:
        return "the reference is computed from the kernel's own output"
    if _is_constant(a) or _is_constant(b):
        return "compares the output only with a constant"
    return "the reference is the kernel's own output"


def _test_functions(mod: _Module) -> list[ast.FunctionDef]:
    return [fn for name, fn in mod.funcs.items() if name.split(".")[-1].startswith("test")]


def _skips_everything(mod: _Module) -> list[str]:
    """Skips that hit every test whatever the machine: at import, by pytestmark, in a fixture, on a class."""
    problems: list[str] = []

    def marks(body: list[ast.stmt], where: str) -> None:
        for stmt in body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark"
                                                    for t in stmt.targets):
                mark = _skipping_mark(stmt.value)
                if mark:
                    problems.append(f"{where}pytestmark marks every test {mark}")

    for stmt in mod.tree.body:
        if _is_skip_statement(stmt):
            problems.append(f"skips the whole module at import (line {stmt.lineno})")
        elif isinstance(stmt, ast.ClassDef):
            for d in stmt.decorator_list:
                mark = _skipping_mark(d)
                if mark:
                    problems.append(f"class {stmt.name}: marked {mark}")
            marks(stmt.body, f"class {stmt.name}: ")
    marks(mod.tree.body, "")
    for name, fn in mod.funcs.items():
        if mod._is_fixture(fn) and any(_is_skip_statement(st) for st in fn.body):
            problems.append(f"fixture {name} always skips")
    return problems


def _case_count(fn: ast.FunctionDef, mod: _Module) -> int:
    count = 1
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and _dotted(d.func).endswith("parametrize") and len(d.args) >= 2:
            count *= mod.count_values(d.args[1])  # an empty list: pytest skips the test
    for a in fn.args.args:
        count *= mod.fixture_params.get(a.arg, 1)
    return count


def check_test_source(source: str, min_cases: int = 5) -> CheckResult:
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return CheckResult(False, [f"syntax error at line {exc.lineno}: {exc.msg}"])
    mod = _Module(tree)
    problems = list(dict.fromkeys(mod.forbidden))
    if not (mod.harness_names or mod.harness_modules):
        problems.append("does not import the harness (from miner.harness import ...)")
    tests = _test_functions(mod)
    if not tests:
        problems.append("defines no test_* function")
    problems += _skips_everything(mod)
    cases = 0
    for fn in tests:
        for d in fn.decorator_list:
            mark = _skipping_mark(d)
            if mark:
                problems.append(f"{fn.name}: marked {mark}")
        problems.extend(_check_test(fn, mod))
        count = _case_count(fn, mod)
        if count == 0:
            problems.append(f"{fn.name}: parametrize leaves no case that runs")
        cases += count
    if tests and cases < min_cases:
        problems.append(f"only {cases} test case(s); at least {min_cases} required")
    return CheckResult(not problems, problems, cases, [fn.name for fn in tests])
