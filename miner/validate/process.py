"""The one way to run a kernel's test process and classify it: validate and enrich both call this.

`run_test_process(job, runner)` runs one `Job` (a kernel folder, the pytest targets in it, a timeout, a
sandbox policy or None for --no-sandbox) through a runner of miner/validate/runner.py (a fresh child by
default, or `ForkRunner(jobs, policy)`: forks of warm zygotes; `kill_active()` ends every child still
running) and turns what the child left behind into exactly one outcome with
miner/validate/classify.py's stated precedence. The child always runs in its own session and process
group, killed whole at the timeout; confined by miner.sandbox when the job has a policy.
`policy_for_tests(...)` is the sandbox policy both stages give their test children.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Protocol

from miner import sandbox
from miner.validate.classify import NOT_FAILED, OUTCOMES, Verdict, classify
from miner.validate.runner import ForkRunner, Job, RawResult, SpawnRunner, kill_active

__all__ = ["NOT_FAILED", "OUTCOMES", "ForkRunner", "Job", "RawResult", "Runner", "SpawnRunner", "TestOutcome",
           "Verdict", "kill_active", "policy_for_tests", "run_test_process"]


class Runner(Protocol):
    """SpawnRunner (one fresh interpreter per job) or ForkRunner (forks of warm zygotes)."""

    mode: str

    def run(self, job: Job) -> RawResult: ...


@dataclass
class TestOutcome:
    """What one test process did: its classified verdict and the raw facts it was drawn from."""

    __test__ = False  # not a pytest test class, whatever its name

    job: Job
    raw: RawResult
    verdict: Verdict

    @property
    def outcome(self) -> str:
        return self.verdict.outcome

    @property
    def reason(self) -> str:
        return self.verdict.reason

    def output(self) -> str:
        """The child's stdout then stderr, as far as they were written."""
        return "".join(p.read_text(errors="replace") for p in (self.job.stdout, self.job.stderr) if p.is_file())


def policy_for_tests(timeout: float, visible: tuple[str, ...], *, hide: tuple[str, ...] = (),
                limits: dict[str, int] | None = None) -> sandbox.Policy:
    """The sandbox policy of a test child: `visible` stays readable, `hide` becomes unreadable."""
    # RLIMIT_CPU is a backstop behind the wall-clock timeout: every core busy for the whole timeout.
    cpu = int(timeout * (os.cpu_count() or 1)) + 30
    return sandbox.Policy(cpu_seconds=cpu, visible=visible, hide=hide, **(limits or {}))


def run_test_process(job: Job, runner: Runner | None = None) -> TestOutcome:
    """Run `job`'s tests in one isolated child and classify the result (never raises for what the tests do)."""
    raw = (runner or SpawnRunner()).run(job)
    return TestOutcome(job, raw, classify(raw, job.stdout, job.stderr, job.timeout))

