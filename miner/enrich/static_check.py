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
COPY_FUNCS = {"torch.clone", "copy.deepcopy", "np.array", "numpy.array", "np.asarray", "torch.as_tensor"}
SWALLOWED = {"Exception", "BaseException", "AssertionError"}


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


def _view_base(node: ast.AST) -> str | None:
    """`x` when node is `x`, `x.clone().cpu()`, `x[0:n]`, `x.T`...; None for a computed expression."""
    while True:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Subscript):
            node = node.value
        elif isinstance(node, ast.Attribute) and node.attr in VIEW_METHODS:
            node = node.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr in VIEW_METHODS):
            node = node.func.value
        elif isinstance(node, ast.Call) and _dotted(node.func) in COPY_FUNCS and node.args:
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
        self.comparing = {name for name, fn in self.funcs.items()
                          if not name.startswith("test") and _has_assertion(fn, self)}

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
            return len(node.elts)
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


def _compare_pairs(node: ast.AST, in_assert: bool, mod: _Module) -> list[tuple[ast.AST, ast.AST]]:
    pairs: list[tuple[ast.AST, ast.AST]] = []
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call):
            name = sub.func.attr if isinstance(sub.func, ast.Attribute) else getattr(sub.func, "id", "")
            if len(sub.args) >= 2 and (name in ASSERT_FUNCS or name in mod.comparing
                                       or (in_assert and name in BOOL_COMPARE_FUNCS)):
                pairs.append((sub.args[0], sub.args[1]))
        elif in_assert and isinstance(sub, ast.Compare) and sub.comparators:
            pairs.append((sub.left, sub.comparators[0]))
        elif in_assert and isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub):
            pairs.append((sub.left, sub.right))
    return pairs


def _has_assertion(fn: ast.FunctionDef, mod: _Module) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert) and _compare_pairs(node.test, True, mod):
            return True
        if isinstance(node, ast.Expr) and _compare_pairs(node.value, False, mod):
            return True
    return False


def _ordered_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements in source order, nested blocks flattened (loops and ifs run at most once here)."""
    out: list[ast.stmt] = []
    for stmt in body:
        out.append(stmt)
        for attr in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, attr, None)
            if isinstance(inner, list) and not isinstance(stmt, ast.FunctionDef | ast.ClassDef):
                out.extend(_ordered_statements(inner))
        for handler in getattr(stmt, "handlers", []) or []:
            out.extend(_ordered_statements(handler.body))
    return out


def _check_test(fn: ast.FunctionDef, mod: _Module) -> list[str]:
    problems: list[str] = []
    handles = set(mod.handles) | {a.arg for a in fn.args.args if a.arg in mod.fixture_handles}
    touched: set[str] = set()   # buffers the kernel may have written, from its launch on
    kernel_vals: set[str] = set()  # names holding the kernel's output or a view of it
    launched = False
    valid = 0
    reasons: list[str] = []
    for stmt in _ordered_statements(fn.body):
        if isinstance(stmt, ast.Try):
            for h in stmt.handlers:
                caught = _dotted(h.type) if h.type is not None else "BaseException"
                if h.type is None or caught.split(".")[-1] in SWALLOWED:
                    problems.append(f"{fn.name}: try/except {caught} can swallow a failure")
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and _dotted(stmt.value.func) in (
                "pytest.skip", "pytest.xfail"):
            problems.append(f"{fn.name}: calls {_dotted(stmt.value.func)}")
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
                        base = _view_base(arg)
                        if base:
                            touched.add(base)
        if isinstance(stmt, ast.Assign | ast.AnnAssign):
            value = stmt.value
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names = [n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)]
            if value is not None and mod.is_harness_call(value) and not mod.is_kernel_call(value, handles):
                handles.update(names)
                continue
            base = _view_base(value) if value is not None else None
            from_kernel = value is not None and (
                any(mod.is_kernel_call(n, handles) for n in ast.walk(value))
                or (base is not None and (base in touched or base in kernel_vals)))
            for n in names:
                (kernel_vals.add if from_kernel else kernel_vals.discard)(n)
        asserted: list[tuple[ast.AST, ast.AST]] = []
        if isinstance(stmt, ast.Assert):
            if _is_constant(stmt.test):
                problems.append(f"{fn.name}: asserts a constant")
            asserted = _compare_pairs(stmt.test, True, mod)
        elif isinstance(stmt, ast.Expr):
            asserted = _compare_pairs(stmt.value, False, mod)
        for a, b in asserted:
            verdict = _judge_pair(a, b, touched, kernel_vals)
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


def _judge_pair(a: ast.AST, b: ast.AST, touched: set[str], kernel_vals: set[str]) -> str | None:
    """None when (a, b) compares kernel output with an independent reference, else the reason."""
    if ast.dump(a) == ast.dump(b):
        return "compares an expression with itself"

    def kernel_side(x: ast.AST) -> bool:
        return bool(_names(x) & (touched | kernel_vals))

    def own_output(x: ast.AST) -> bool:
        base = _view_base(x)
        return base is not None and (base in kernel_vals or base in touched)

    if not (kernel_side(a) or kernel_side(b)):
        return "neither side depends on the kernel's output"
    for actual, expected in ((a, b), (b, a)):
        if kernel_side(actual) and not own_output(expected) and not _is_constant(expected):
            return None
    if _is_constant(a) or _is_constant(b):
        return "compares the output only with a constant"
    return "the reference is the kernel's own output"


def _test_functions(mod: _Module) -> list[ast.FunctionDef]:
    return [fn for name, fn in mod.funcs.items() if name.split(".")[-1].startswith("test")]


def _case_count(fn: ast.FunctionDef, mod: _Module) -> int:
    count = 1
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and _dotted(d.func).endswith("parametrize") and len(d.args) >= 2:
            count *= max(1, mod.count_values(d.args[1]))
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
    cases = 0
    for fn in tests:
        for d in fn.decorator_list:
            name = _dotted(d.func if isinstance(d, ast.Call) else d)
            if name.endswith(("mark.skip", "mark.xfail")):
                problems.append(f"{fn.name}: marked {name.split('.')[-1]}")
        problems.extend(_check_test(fn, mod))
        cases += _case_count(fn, mod)
    if tests and cases < min_cases:
        problems.append(f"only {cases} test case(s); at least {min_cases} required")
    return CheckResult(not problems, problems, cases, [fn.name for fn in tests])
