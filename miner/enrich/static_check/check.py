"""The entry point: one generated test file's source judged."""

from __future__ import annotations

import ast
from collections.abc import Sequence

from miner.enrich.static_check.expressions import _skipping_mark
from miner.enrich.static_check.flow import _check_test
from miner.enrich.static_check.module import _case_count, _Module, _skips_everything, _test_functions
from miner.enrich.static_check.rules import CheckResult
from miner.enrich.test_policy import policy_problems


def check_test_source(source: str, min_cases: int = 5, writable: Sequence[int] | None = None) -> CheckResult:
    """Judge a generated test file. `writable`: positions of the kernel parameters it may write (pointers
    to non-const data, from metadata); None treats every launch argument as possibly written. The
    allow-list of miner.enrich.test_policy runs first."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return CheckResult(False, [f"syntax error at line {getattr(exc, 'lineno', '?')}: "
                                   f"{getattr(exc, 'msg', None) or exc}"])
    mod = _Module(tree)
    problems = list(dict.fromkeys(mod.forbidden)) + policy_problems(tree)
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
        problems.extend(_check_test(fn, mod, writable))
        count = _case_count(fn, mod)
        if count == 0:
            problems.append(f"{fn.name}: parametrize leaves no case that runs")
        cases += count
    if tests and cases < min_cases:
        problems.append(f"only {cases} test case(s); at least {min_cases} required")
    return CheckResult(not problems, problems, cases, [fn.name for fn in tests])
