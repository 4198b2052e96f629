"""Data flow inside one test, in statement order: which names hold the kernel's output, which hold honest
references, and whether each assertion compares the two."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from miner.enrich.static_check.expressions import (
    _dotted,
    _is_constant,
    _is_skip_statement,
    _names,
    _ordered_statements,
    _root_name,
    _tautology,
    _value_names,
    _view_base,
)
from miner.enrich.static_check.module import _compare_pairs, _Module
from miner.enrich.static_check.rules import (
    ALIAS_METHODS,
    ASSERT_FUNCS,
    BOOL_COMPARE_FUNCS,
    COPY_METHODS,
    SWALLOWED,
)
from miner.enrich.test_policy import Resolver, gpu_condition


class _Flow:
    """What each name holds at this point of a test, statement by statement."""

    def __init__(self) -> None:
        self.touched: set[str] = set()      # buffers the kernel may have written, from its launch on
        self.kernel_vals: set[str] = set()  # names holding the kernel's output or a view of it
        self.derived: dict[str, set[str]] = {}  # name -> kernel-side names its value was computed from
        self.aliases: dict[str, str] = {}   # name -> the name whose storage it shares (`y = x`, `x.view()`)
        self.errors: set[str] = set()       # `err = (out - ref).abs().max()`: output minus independent reference

    def kernel_side(self, node: ast.AST) -> bool:
        """Whether `node` reads the values (not just the shape) of something the kernel wrote."""
        return bool(_value_names(node) & (self.touched | self.kernel_vals))

    def mutate(self, names: list[str], sources: list[ast.AST]) -> None:
        """`expected.copy_(out)`, `torch.mul(out, 1, out=expected)`, `expected += out`: the names now
        hold (also) what the sources hold."""
        roots: set[str] = set()
        for src in sources:
            roots |= self.roots(src)
        for n in names:
            for member in self.storage(n):
                self.derived[member] = self.derived.get(member, set()) | roots - {member}

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


def _written_args(node: ast.Call, mod: _Module, handles: set[str],
                  writable: Sequence[int] | None) -> list[ast.AST]:
    """The launch arguments the kernel may write: those at `writable` positions of a direct launch
    (`unit.launch(grid, block, *args)`, `unit(grid, block, *args)`), every argument otherwise."""
    everything = [*node.args, *(k.value for k in node.keywords)]
    f = node.func
    direct = (isinstance(f, ast.Name) and f.id in handles) or (
        isinstance(f, ast.Attribute) and f.attr == "launch" and isinstance(f.value, ast.Name) and f.value.id in handles)
    if writable is None or not direct or any(isinstance(a, ast.Starred) for a in node.args):
        return everything
    args = node.args[2:]
    return [args[i] for i in writable if i < len(args)]


def _mutations(stmt_part: ast.AST, mod: _Module, handles: set[str], flow: _Flow) -> None:
    """Calls that may write into their arguments: in-place methods, `out=`, copyto, the file's helpers."""
    for node in ast.walk(stmt_part):
        if not isinstance(node, ast.Call) or mod.is_kernel_call(node, handles):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
        if name in ASSERT_FUNCS or name in BOOL_COMPARE_FUNCS or name in mod.comparing:
            continue
        args: list[ast.AST] = [*node.args, *(k.value for k in node.keywords)]
        for k in node.keywords:
            if k.arg == "out" and (base := _view_base(k.value)):
                flow.mutate([base], args)
        in_place = name.endswith("_") and not name.endswith("__") or name in COPY_METHODS
        if isinstance(f, ast.Attribute) and in_place:
            if _root_name(f.value) not in mod.module_names:
                if base := _view_base(f.value):
                    flow.mutate([base], args)  # expected.copy_(out), expected.add_(out)
            elif node.args and (first := _view_base(node.args[0])):
                flow.mutate([first], args)  # np.copyto(dst, src), torch.Tensor.copy_(dst, src)
        elif isinstance(f, ast.Name) and f.id in mod.funcs:
            bases = [b for a in node.args if (b := _view_base(a))]
            flow.mutate(bases, args)


def _check_test(fn: ast.FunctionDef, mod: _Module, writable: Sequence[int] | None = None) -> list[str]:
    problems: list[str] = []
    handles = set(mod.handles) | {a.arg for a in fn.args.args if a.arg in mod.fixture_handles}
    flow = _Flow()
    launched = False
    valid = 0
    reasons: list[str] = []
    resolver = Resolver(mod.tree)
    # `if not torch.cuda.is_available(): pytest.skip(...)` depends on the machine: allowed.
    guarded = {id(st) for node in ast.walk(fn) if isinstance(node, ast.If) and gpu_condition(node.test, resolver)
               for st in node.body}
    for stmt in _ordered_statements(fn.body):
        if isinstance(stmt, ast.Try):
            for h in stmt.handlers:
                caught = _dotted(h.type) if h.type is not None else "BaseException"
                if h.type is None or caught.split(".")[-1] in SWALLOWED:
                    problems.append(f"{fn.name}: try/except {caught} can swallow a failure")
        if _is_skip_statement(stmt) and id(stmt) not in guarded:
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
                    for arg in _written_args(node, mod, handles, writable):  # type: ignore[arg-type]
                        flow.launch_writes(arg)
            _mutations(part, mod, handles, flow)
        if isinstance(stmt, ast.AugAssign) and (base := _view_base(stmt.target)):
            flow.mutate([base], [stmt.value])
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
