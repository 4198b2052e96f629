"""The test module as a whole: imports (harness, forbidden modules), module-level helpers, where the
assertions are, which functions are tests, whether everything is skipped, how many cases run."""

from __future__ import annotations

import ast

from miner.enrich.static_check.expressions import (
    _constant_number,
    _dotted,
    _is_skip_statement,
    _root_name,
    _skipping_mark,
)
from miner.enrich.static_check.rules import (
    ASSERT_FUNCS,
    BOOL_COMPARE_FUNCS,
    FORBIDDEN_CALLS,
    FORBIDDEN_IMPORTS,
    HARNESS_MODULES,
    LOOSE_ATOL,
    LOOSE_RTOL,
    POSITIONAL_TOLERANCES,
)
from miner.enrich.test_policy import Resolver


class _Module:
    """Module-level facts: harness imports, helpers that launch, helpers that compare, fixtures."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.module_names = set(Resolver(tree).modules)  # `torch`, `np`...: receivers that are not tensors
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
