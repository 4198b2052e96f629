"""miner.validate.process: the one test-process API validate and enrich share (real child processes)."""

from __future__ import annotations

from pathlib import Path

from miner.validate.process import Job, SpawnRunner, policy_for_tests, run_test_process


def _kernel(tmp_path: Path) -> Path:
    kdir = tmp_path / "k"
    (kdir / "tests").mkdir(parents=True)
    (kdir / "tests" / "test_good.py").write_text("def test_ok():\n    assert 2 + 2 == 4\n")
    (kdir / "tests" / "test_bad.py").write_text("def test_bad():\n    assert 2 + 2 == 5\n")
    return kdir


def test_job_runs_only_its_targets(tmp_path: Path) -> None:
    kdir = _kernel(tmp_path)
    one = run_test_process(Job(kdir, tmp_path / "log1", 60, tests=("tests/test_good.py",)))
    assert one.outcome == "passed", one.reason
    assert one.verdict.counts == {"passed": 1, "total": 1}
    both = run_test_process(Job(kdir, tmp_path / "log2", 60), SpawnRunner())
    # The worst of the tests' outcomes decides: one failure beats one pass.
    assert both.outcome == "failed", both.reason
    assert both.verdict.test and "test_bad" in both.verdict.test
    assert "assert" in both.output() or both.reason


def test_crash_beats_the_tests_own_outcome(tmp_path: Path) -> None:
    kdir = _kernel(tmp_path)
    (kdir / "tests" / "test_good.py").write_text(
        "import os, signal\n\ndef test_a():\n    assert True\n\n"
        "def test_b():\n    os.kill(os.getpid(), signal.SIGKILL)\n")
    done = run_test_process(Job(kdir, tmp_path / "log", 60, tests=("tests/test_good.py",)))
    assert done.outcome == "crashed" and done.verdict.signal == "SIGKILL", done.reason


def test_policy_cpu_backstop_and_hidden_paths() -> None:
    p = policy_for_tests(10.0, ("/data",), hide=("/secret.toml",), limits={"processes": 7})
    assert p.visible == ("/data",) and p.hide == ("/secret.toml",) and p.processes == 7
    assert p.cpu_seconds >= 10 + 30
