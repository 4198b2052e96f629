"""Reject generated tests that cannot fail, by reading their AST (the code is never run here).

A test counts only if it launches the kernel through the harness and asserts the kernel's output
against a reference that the kernel did not produce. Data flow is followed in statement order inside
each test (and through module-level helpers), so `expected = out.clone()` after the launch is the
kernel's own output, while `expected = x.clone()` before it is an honest snapshot of an input.

One module per job:
  rules        the names and thresholds the checks use; CheckResult
  expressions  single expressions and statements (constants, tautologies, skips, order)
  module       the module: imports, helpers, assertions, test functions, case count
  flow         data flow inside one test: kernel output vs honest references
  check        check_test_source, the entry point
"""

from miner.enrich.static_check.check import check_test_source
from miner.enrich.static_check.rules import HARNESS_MODULES, CheckResult

__all__ = [
    "CheckResult", "HARNESS_MODULES", "check_test_source",
]
