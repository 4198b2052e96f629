"""Reject Triton tests whose observable output does not depend on the kernel (read from the AST, never run).

TritonBench's gold tests fill a `results` dict and return it; nothing prints or asserts it, so an empty
output equals an empty output and every candidate "passes". Here a test counts only if a value computed
by the kernel reaches a sink: an `assert`, an assertion call (`torch.testing.assert_close`...), or a
`print`. Values are followed through assignments, subscript stores (`results["a"] = out`), in-place
buffers handed to a launch (`k[grid](x, out, n)` makes `out` the kernel's), and functions whose return
value is the kernel's (`r = test_add()` then `print(r)`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

_ASSERT_CALLS = {"assert_close", "assert_allclose", "assert_equal", "assert_array_equal", "assert_almost_equal",
                 "assert_array_almost_equal", "check_against_reference"}
_UNIT_CALLS = {"function", "check_against_reference"}  # miner.triton.harness: unit.function("f")(...)


@dataclass
class CheckResult:
    ok: bool
    reasons: list[str] = field(default_factory=list)
    cases: int = 0

    def message(self) -> str:
        return "ok" if self.ok else "; ".join(self.reasons)


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _callee(call: ast.Call) -> str | None:
    f = call.func
    if isinstance(f, ast.Subscript):  # kernel[grid](...)
        f = f.value
    if isinstance(f, ast.Name):
        return f.id
    if isinstance(f, ast.Attribute):
        return f.attr
    return None


def _kernel_calls(node: ast.AST, names: set[str], tainted: set[str], funcs: set[str]) -> tuple[bool, set[str]]:
    """Whether `node` computes a kernel value, and the buffers it hands to a launch."""
    hit, buffers = False, set()
    for n in ast.walk(node):
        if not isinstance(n, ast.Call):
            continue
        callee = _callee(n)
        launches = callee in names or callee in _UNIT_CALLS
        if isinstance(n.func, ast.Call) and _callee(n.func) in _UNIT_CALLS:  # unit.function("f")(args)
            launches = True
        if launches:
            hit = True
            for a in [*n.args, *(k.value for k in n.keywords)]:
                buffers |= {x.id for x in ast.walk(a) if isinstance(x, ast.Name)}
        elif callee in funcs:
            hit = True
    if _names(node) & tainted:
        hit = True
    return hit, buffers


def _targets(t: ast.AST) -> set[str]:
    while isinstance(t, (ast.Subscript, ast.Attribute)):
        t = t.value
    return {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}


def _cases(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """1, times the length of each literal `@pytest.mark.parametrize(..., [...])` list."""
    n = 1
    for d in fn.decorator_list:
        if isinstance(d, ast.Call) and _callee(d) == "parametrize" and len(d.args) >= 2 \
                and isinstance(d.args[1], (ast.List, ast.Tuple)):
            n *= max(1, len(d.args[1].elts))
    return n


def check_test_source(code: str, names: set[str] | list[str], min_cases: int = 1) -> CheckResult:
    """`names`: the kernel and its launcher(s); a call of any of them produces kernel values."""
    names = set(names)
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        return CheckResult(False, [f"syntax error at line {exc.lineno}: {exc.msg}"])
    tainted: set[str] = set()
    funcs: set[str] = set()  # functions whose return value is the kernel's
    sinks: list[ast.AST] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Assert):
            sinks.append(n.test)
        elif isinstance(n, ast.Call) and (_callee(n) in _ASSERT_CALLS or _callee(n) == "print"):
            sinks.append(n)
    defs = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    called_any = False
    for _ in range(4):  # to a fixed point: taint flows between functions through return values
        before = (len(tainted), len(funcs))
        for n in ast.walk(tree):
            if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and n.value is not None:
                hit, buffers = _kernel_calls(n.value, names, tainted, funcs)
                tainted |= buffers
                called_any |= bool(buffers) or hit
                if hit:
                    for t in (n.targets if isinstance(n, ast.Assign) else [n.target]):
                        tainted |= _targets(t)
            elif isinstance(n, ast.Expr) and isinstance(n.value, ast.Call):
                hit, buffers = _kernel_calls(n.value, names, tainted, funcs)
                tainted |= buffers
                called_any |= hit
            elif isinstance(n, (ast.For, ast.With)):
                pass
        for d in defs:
            for r in ast.walk(d):
                if isinstance(r, ast.Return) and r.value is not None:
                    hit, _ = _kernel_calls(r.value, names, tainted, funcs)
                    if hit:
                        funcs.add(d.name)
        if (len(tainted), len(funcs)) == before:
            break
    reasons = []
    if not called_any:
        reasons.append(f"never calls the kernel or its launcher ({', '.join(sorted(names))})")
    elif not any(_kernel_calls(s, names, tainted, funcs)[0] for s in sinks):
        reasons.append("its output does not depend on the kernel: no assert or print reads a value the kernel "
                       "computed (a test that prints nothing passes whatever the kernel does)")
    cases = sum(_cases(d) for d in defs if d.name.startswith("test")) + sum(
        1 for n in ast.walk(tree) if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Constant)
        and isinstance(n.slice.value, str) and n.slice.value.startswith("test_case"))
    if not reasons and cases < min_cases:
        reasons.append(f"{cases} test cases, at least {min_cases} wanted")
    return CheckResult(not reasons, reasons, cases)
