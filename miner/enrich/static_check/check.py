"""The entry point: one generated test file's source judged."""

from __future__ import annotations

import ast

from miner.enrich.static_check.expressions import _skipping_mark
from miner.enrich.static_check.flow import _check_test
from miner.enrich.static_check.module import _case_count, _Module, _skips_everything, _test_functions
from miner.enrich.static_check.rules import CheckResult


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
