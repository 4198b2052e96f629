"""Data flow inside one test, in statement order: which names hold the kernel's output, which hold honest
references, and whether each assertion compares the two."""

from __future__ import annotations

import ast

from miner.enrich.static_check.expressions import (
    _dotted,
    _is_constant,
    _is_skip_statement,
    _names,
    _ordered_statements,
    _tautology,
    _view_base,
)
from miner.enrich.static_check.module import _compare_pairs, _Module
from miner.enrich.static_check.rules import ALIAS_METHODS, SWALLOWED


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
