"""The one place where enrichment runs a generated test: always in a child process with a timeout.

`run_generated_test` runs the test through validate's public test-process API
(`miner.validate.process.run_test_process`): the same child, result plugin, sandbox and classifier, so
records of both stages read alike. Confined unless --no-sandbox; generated code is never imported or
executed in the enrich process.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from miner.validate.process import OUTCOMES, Job, policy_for_tests, run_test_process

__all__ = ["OUTCOMES", "run_generated_test"]

_TAIL = 4000


def run_generated_test(kernel_dir: Path, test_path: Path, timeout: float, *, sandbox: bool = True,
                       hide: tuple[str, ...] = ()) -> tuple[str, str]:
    """Run one test file against one kernel folder; return (outcome, message) with outcome in OUTCOMES.

    In the sandbox by default (miner.sandbox.SandboxUnavailable where it cannot be built here): the test
    gets a private copy of its kernel folder (nothing it writes reaches the dataset), its own PID
    namespace (no parent's /proc/PID/environ or cmdline), an allow-listed environment (no key), no
    network, and `hide` (the --config file) made unreadable; pytest runs with an empty config and no
    conftest discovery, so a conftest.py or pytest.ini beside the test is never loaded.
    `sandbox=False` (enrich --no-sandbox) runs the same child in the kernel folder itself, with the
    allow-listed environment and the user's rights."""
    from miner import sandbox as sb

    kernel_dir, test_path = Path(kernel_dir).resolve(), Path(test_path).resolve()
    why = sb.unavailable() if sandbox else None
    if why:
        raise sb.SandboxUnavailable(why)
    rel = test_path.relative_to(kernel_dir)  # the same file in the private copy
    policy = policy_for_tests(timeout, (str(kernel_dir.parent),), hide=tuple(hide)) if sandbox else None
    with tempfile.TemporaryDirectory(prefix="km-enrich-") as tmp:
        done = run_test_process(Job(kernel_dir, Path(tmp), timeout, policy=policy, tests=(str(rel),)))
        return done.outcome, f"{done.reason}\n{_tail(done.output())}"


def _tail(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= _TAIL else "...\n" + text[-_TAIL:]
