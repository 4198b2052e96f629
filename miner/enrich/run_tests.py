"""The one place where enrichment runs a generated test: always in a child process with a timeout.

`run_generated_test` uses the validation runner's child entry point, result plugin and classifier
(miner.validate) through miner.sandbox.run, confined unless --no-sandbox; KM_ENRICH_RUNNER=pytest runs
`python -m pytest` itself in a new process group that is killed whole on expiry.
Generated code is never imported or executed in the enrich process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import miner
from miner.sandbox.run import kill_group

# The outcomes of docs/ARCHITECTURE.md's validate stage, so records of both stages read alike.
OUTCOMES = ("passed", "failed", "error", "timeout", "crashed", "cuda_error", "build_failed", "skipped",
            "sandbox_violation")
_CUDA_MARKERS = ("cudaError", "CUDA error", "illegal memory access", "an illegal instruction",
                 "device-side assert", "misaligned address")
_TAIL = 4000


def _run_validate_child(kernel_dir: Path, test_path: Path, timeout: float, hide: tuple[str, ...],
                        confined: bool = True) -> tuple[str, str]:
    """Run through miner.sandbox (validate's confinement) and validate's child and classifier.

    The test gets a private copy of its kernel folder (nothing it writes reaches the dataset), its own
    PID namespace (no parent's /proc/PID/environ or cmdline), an allow-listed environment (no key),
    no network, and `hide` (the --config file) made unreadable; pytest runs with an empty config and
    no conftest discovery, so a conftest.py or pytest.ini beside the test is never loaded.
    `confined=False` (enrich --no-sandbox) runs the same child in the kernel folder itself, with the
    allow-listed environment and the user's rights."""
    from miner import sandbox
    from miner.sandbox import workspace
    from miner.validate.classify import classify as v_classify
    from miner.validate.runner import RawResult, child_env, pytest_args, read_result

    why = sandbox.unavailable() if confined else None
    if why:
        raise sandbox.SandboxUnavailable(why)
    rel = test_path.relative_to(kernel_dir)  # the same file in the private copy
    cpu = int(timeout * (os.cpu_count() or 1)) + 30  # a backstop behind the wall-clock timeout
    policy = sandbox.Policy(cpu_seconds=cpu, visible=(str(kernel_dir.parent),), hide=hide)
    with tempfile.TemporaryDirectory(prefix="km-enrich-") as tmp:
        results = Path(tmp)
        # Confined, the child writes into the private copy's result area, which run() copies back.
        result_file = Path(workspace.RESULT_AREA, "result.json") if confined else results / "result.json"
        cmd = [sys.executable, "-m", "miner.validate.child", str(result_file), "--", *pytest_args()[:-1], str(rel)]
        done = sandbox.run(cmd, kernel_dir, results, timeout=timeout, policy=policy, env=child_env(),
                           sandbox=confined)
        raw = RawResult(done.returncode, done.timed_out, done.wall_s, cmd, read_result(results / "result.json"))
        raw.extra.update(sandboxed=confined, violations=done.violations)
        stdout, stderr = results / "stdout.txt", results / "stderr.txt"
        verdict = v_classify(raw, stdout, stderr, timeout)
        output = "".join(p.read_text(errors="replace") for p in (stdout, stderr) if p.is_file())
    return verdict.outcome, f"{verdict.reason}\n{_tail(output)}"


def run_generated_test(kernel_dir: Path, test_path: Path, timeout: float, *, sandbox: bool = True,
                       hide: tuple[str, ...] = ()) -> tuple[str, str]:
    """Run one test file against one kernel folder; return (outcome, message) with outcome in OUTCOMES.

    In the sandbox by default (miner.sandbox.SandboxUnavailable where it cannot be built here);
    `sandbox=False` (enrich --no-sandbox) runs it as before, with the user's rights and the
    allow-listed environment."""
    kernel_dir, test_path = Path(kernel_dir).resolve(), Path(test_path).resolve()
    if sandbox or os.environ.get("KM_ENRICH_RUNNER") != "pytest":
        return _run_validate_child(kernel_dir, test_path, timeout, tuple(hide), confined=sandbox)
    return run_pytest_child(kernel_dir, test_path, timeout)


def _child_env() -> dict[str, str]:
    from miner.sandbox import environment

    env = environment()  # the sandbox's allow-list: never API keys, tokens or secrets
    # The child must import the same `miner` (for miner.harness) even when it is not pip-installed.
    root = str(Path(miner.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([root, *filter(None, [env.get("PYTHONPATH")])])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # Third-party pytest plugins (hypothesis...) cost a second per run and generated tests need none.
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    # The API key has no business in a test process.
    env.pop("OPENAI_API_KEY", None)
    return env


def run_pytest_child(kernel_dir: Path, test_path: Path, timeout: float) -> tuple[str, str]:
    with tempfile.TemporaryDirectory(prefix="km-enrich-") as tmp:
        report = Path(tmp) / "junit.xml"
        cmd = [sys.executable, "-m", "pytest", "-q", "--tb=short", "--maxfail=3", "-p", "no:cacheprovider",
               f"--junitxml={report}", "--rootdir", str(kernel_dir), str(test_path)]
        proc = subprocess.Popen(cmd, cwd=kernel_dir, env=_child_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            out, _ = proc.communicate()
            return "timeout", f"test ran past {timeout:g} s\n{_tail(out)}"
        return classify(proc.returncode, out or "", report)


def _tail(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= _TAIL else "...\n" + text[-_TAIL:]


def _junit_counts(report: Path) -> dict[str, int] | None:
    try:
        root = ET.parse(report).getroot()
    except (OSError, ET.ParseError):
        return None
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    if suite is None:
        return None
    return {k: int(suite.get(k, "0")) for k in ("tests", "failures", "errors", "skipped")}


def classify(rc: int, output: str, report: Path) -> tuple[str, str]:
    """Map a pytest child's exit status, output and JUnit report to one outcome."""
    message = _tail(output)
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return "crashed", f"test process killed by {name}\n{message}"
    if any(m in output for m in _CUDA_MARKERS) and rc != 0:
        return "cuda_error", message
    counts = _junit_counts(report) or {}
    if rc == 0:
        ran = counts.get("tests", 0) - counts.get("skipped", 0)
        if counts and ran <= 0:
            return "skipped", message
        return "passed", message
    if rc == 5:
        return "error", f"no tests collected\n{message}"
    if "BuildError" in output:
        return "build_failed", message
    if rc == 1 and counts.get("failures", 0) > 0 and ("AssertionError" in output or "assert " in output):
        return "failed", message
    return "error", message
