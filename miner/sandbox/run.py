"""Run one command confined, on a private copy of a kernel folder, with a timeout; bring results back."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from miner.sandbox import audit, workspace
from miner.sandbox.policy import Policy, environment


@dataclass
class Completed:
    returncode: int | None  # < 0: killed by that signal (as subprocess reports it)
    timed_out: bool
    wall_s: float
    copied: list[str] = field(default_factory=list)  # files brought back into `results_to`
    violations: list[dict[str, str]] = field(default_factory=list)  # what the audit hook saw


def command(argv: list[str], work: Path, cwd: Path, policy: Policy, report: Path | None = None) -> list[str]:
    """`argv` behind the sandbox launcher (python -m miner.sandbox), which confines, then execs it."""
    # -S: the launcher needs no site-packages, only this package (PYTHONPATH); it execs argv at once.
    cmd = [sys.executable, "-S", "-m", "miner.sandbox", "--work", str(work), "--cwd", str(cwd),
           "--policy", json.dumps(policy.to_json())]
    if report is not None:
        cmd += ["--report", str(report)]
    return [*cmd, "--", *argv]


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def run(argv: list[str], kernel_dir: Path, results_to: Path, *, timeout: float, policy: Policy | None = None,
        env: dict[str, str] | None = None, sandbox: bool = True, work_root: Path | None = None,
        track: Callable[[int, bool], None] | None = None) -> Completed:
    """Run `argv` in a private copy of `kernel_dir` (its cwd) and copy the result area back.

    stdout and stderr go to stdout.txt and stderr.txt in the result area (<copy>/validation); the
    regular files found there at the end are copied into `results_to`. `env` is filtered through
    the allow-list. With `sandbox=False` the command runs in `kernel_dir` itself with the filtered
    environment and no other confinement (the user's explicit --no-sandbox).
    `track(pid, True)` / `track(pid, False)` (if given) is called when the process starts / ends, so a
    caller can kill every running child's group when it is interrupted.
    """
    kernel_dir = Path(kernel_dir).resolve()
    results_to = Path(results_to).resolve()
    policy = policy or Policy()
    env = environment(env)
    # The launcher and the child import this very package, also from a source checkout.
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    work = workspace.make(work_root) if sandbox else None
    try:
        if work is not None:
            cwd = workspace.copy_in(kernel_dir, work)
            area = cwd / workspace.RESULT_AREA
            report = area / audit.REPORT
            cmd = command(argv, work, cwd, policy, report)
        else:
            cwd, area, report, cmd = kernel_dir, results_to, None, list(argv)
            area.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        with open(area / "stdout.txt", "wb") as out, open(area / "stderr.txt", "wb") as err:
            proc = subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                    start_new_session=True)
            if track:
                track(proc.pid, True)
            timed_out = False
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(proc.pid)
                proc.wait()
            finally:
                if track:
                    track(proc.pid, False)
            kill_group(proc.pid)  # leftovers in its process group (the PID namespace is gone already)
        wall = time.time() - t0
        copied = workspace.copy_back(area, results_to) if work is not None else []
        violations = audit.read(results_to / audit.REPORT) if report is not None else []
        return Completed(proc.returncode, timed_out, wall, copied, violations)
    finally:
        if work is not None:
            workspace.remove(work)
