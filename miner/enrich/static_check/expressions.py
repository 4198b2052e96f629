"""Reading single expressions and statements: dotted names, views of a value, constants, conditions
that are always true or false, tautologies, skip statements and skipping marks, statement order."""

from __future__ import annotations

import ast

from miner.enrich.static_check.rules import (
    COPY_FUNCS,
    INF_NAMES,
    METADATA,
    METADATA_FUNCS,
    NON_NEGATIVE,
    SKIP_CALLS,
    SKIP_EXCEPTIONS,
    VIEW_METHODS,
)


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


def _value_names(node: ast.AST) -> set[str]:
    """Names whose values `node` reads: `out.shape`, `len(out)`, `out.numel()` read only metadata."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Attribute) and n.attr in METADATA:
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in METADATA_FUNCS:
            continue
        if isinstance(n, ast.Name):
            out.add(n.id)
        stack.extend(ast.iter_child_nodes(n))
    return out


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
    if (isinstance(node, ast.Call) and _dotted(node.func) == "range" and node.args and not node.keywords
            and all(isinstance(a, ast.Constant) and type(a.value) is int for a in node.args)):
        try:
            return len(range(*[a.value for a in node.args])) == 0  # type: ignore[attr-defined]
        except ValueError:
            return True  # range(0, 5, 0) raises before the loop runs
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
