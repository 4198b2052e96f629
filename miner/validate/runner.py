"""Run one kernel's tests in a child process that nothing it does can take down with it.

Two ways to start the child, same isolation: each kernel's tests run in their own process, in
their own session and process group, and a timeout kills that whole group. With a sandbox policy
(the default; miner/sandbox) the child is also confined: own user, PID, mount and network namespace,
a private copy of the kernel folder as its cwd, everything else read-only, an allow-listed
environment and rlimits; only its result area (validation/) is copied back into the job's log_dir.
- "spawn": a fresh `python -m miner.validate.child` (what `--sanitize` wraps in compute-sanitizer);
- "fork": a warm zygote (miner.validate.zygote) that has already imported torch and pytest forks
  the child, which saves the ~1-2 s interpreter and torch start per kernel. CUDA is never
  initialised in the zygote, so every child creates its own context.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from miner import sandbox
from miner.sandbox import workspace
from miner.sandbox.run import kill_group

SANITIZER_EXIT = 86


@dataclass
class Job:
    kernel_dir: Path
    log_dir: Path  # receives stdout.txt, stderr.txt, result.json
    timeout: float
    sanitize: bool = False
    env: dict[str, str] = field(default_factory=dict)  # set in the test process (KM_ORACLES)
    policy: sandbox.Policy | None = None  # None: --no-sandbox (the user's own rights)
    # What pytest collects, relative to the kernel folder: its whole tests/ (validate) or one file (enrich).
    tests: tuple[str, ...] = ("tests",)

    @property
    def result_file(self) -> Path:
        return self.log_dir / "result.json"

    @property
    def stdout(self) -> Path:
        return self.log_dir / "stdout.txt"

    @property
    def stderr(self) -> Path:
        return self.log_dir / "stderr.txt"


@dataclass
class RawResult:
    returncode: int | None
    timed_out: bool
    wall_s: float
    command: list[str]
    result: dict[str, Any] | None = None
    note: str = ""
    t_request: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def signal_name(self) -> str | None:
        if self.returncode is not None and self.returncode < 0:
            try:
                return signal.Signals(-self.returncode).name
            except ValueError:
                return f"signal {-self.returncode}"
        return None


def pytest_args(tests: tuple[str, ...] = ("tests",)) -> list[str]:
    """pytest's options for a kernel's tests, run with the kernel folder (or its copy) as cwd."""
    # unraisableexception runs gc.collect() five times at exit: ~1 s once torch is imported.
    *opts, _ = sandbox.pytest_args()
    return [*opts, "-p", "no:unraisableexception", "-W", "ignore::pytest.PytestAssertRewriteWarning", *tests]


def child_env() -> dict[str, str]:
    """The test process's environment: the sandbox's allow-list (never API keys or tokens)."""
    env = sandbox.environment()
    # The child must import this very package, also when it runs from a source checkout.
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    # Third-party plugins slow every start and can change outcomes; tests get plain pytest.
    env.setdefault("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def child_command(job: Job, sanitize: bool) -> list[str]:
    result = Path(workspace.RESULT_AREA, "result.json") if job.policy else job.result_file
    cmd = [sys.executable, "-m", "miner.validate.child", str(result), "--", *pytest_args(job.tests)]
    if sanitize:
        cmd = ["compute-sanitizer", "--tool", "memcheck", "--error-exitcode", str(SANITIZER_EXIT),
               "--target-processes", "all", "--print-limit", "10", *cmd]
    return cmd


def read_result(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _prepare(job: Job) -> None:
    job.log_dir.mkdir(parents=True, exist_ok=True)
    for p in (job.result_file, job.stdout, job.stderr, job.log_dir / sandbox.audit.REPORT):
        p.unlink(missing_ok=True)


_ACTIVE: set[int] = set()  # process groups of running test children
_ACTIVE_LOCK = threading.Lock()


def _track(pid: int, on: bool) -> None:
    with _ACTIVE_LOCK:
        (_ACTIVE.add if on else _ACTIVE.discard)(pid)


def kill_active() -> None:
    """End every test child still running (validate interrupted)."""
    with _ACTIVE_LOCK:
        pids = list(_ACTIVE)
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass


class SpawnRunner:
    mode = "spawn"

    def __init__(self, extra_env: dict[str, str] | None = None) -> None:
        self.extra_env = extra_env or {}

    def run(self, job: Job) -> RawResult:
        _prepare(job)
        cmd = child_command(job, job.sanitize)
        env = child_env()
        env.update(self.extra_env)
        env.update(job.env)
        if job.sanitize:
            # memcheck knows allocations by cudaMalloc; torch's caching allocator would hide
            # overruns inside its big segments.
            env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
        env.pop("KM_CHILD_START", None)  # the child stamps its own start, after interpreter start-up
        if job.policy is not None:
            done = sandbox.run(cmd, job.kernel_dir, job.log_dir, timeout=job.timeout, policy=job.policy,
                               env=env, track=_track)
            raw = RawResult(done.returncode, done.timed_out, done.wall_s, cmd, read_result(job.result_file),
                            t_request=time.time() - done.wall_s)
            raw.extra["violations"] = done.violations
            raw.extra["sandboxed"] = True
            return raw
        t0 = time.time()
        with open(job.stdout, "wb") as out, open(job.stderr, "wb") as err:
            proc = subprocess.Popen(cmd, cwd=job.kernel_dir, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=err, env=env, start_new_session=True)
            _track(proc.pid, True)
            timed_out = False
            try:
                proc.wait(timeout=job.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                kill_group(proc.pid)
                proc.wait()
            finally:
                _track(proc.pid, False)
            try:  # leftover grandchildren of the test share its group; the leader is reaped
                os.killpg(proc.pid, signal.SIGKILL)
            except OSError:
                pass
        wall = time.time() - t0
        # compute-sanitizer reports the child's signal as its own exit code 128+N, not as a signal.
        rc = proc.returncode
        return RawResult(rc, timed_out, wall, cmd, read_result(job.result_file), t_request=t0)


class Zygote:
    """One warm process that forks test children on request (see miner/validate/zygote.py)."""

    def __init__(self, policy: sandbox.Policy | None = None, work_root: Path | None = None,
                 extra_env: dict[str, str] | None = None) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.lock = threading.Lock()
        self.policy = policy
        self.work_root = work_root
        self.extra_env = extra_env or {}

    def start(self) -> None:
        env = {**child_env(), **self.extra_env}
        if self.policy is not None:
            env["KM_SANDBOX_POLICY"] = json.dumps(self.policy.to_json())
            env["KM_SANDBOX_ROOT"] = str(self.work_root or "")
        self.proc = subprocess.Popen([sys.executable, "-m", "miner.validate.zygote"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, start_new_session=True)
        msg = self._read(deadline=time.time() + 120)
        if not msg or msg.get("ready") is not True:
            self.close()
            raise RuntimeError("test worker did not start")

    def _read(self, deadline: float) -> dict[str, Any] | None:
        assert self.proc is not None and self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        buf = b""
        while not buf.endswith(b"\n"):
            left = deadline - time.time()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                raise TimeoutError
            chunk = os.read(fd, 1)  # byte by byte: never read past our line
            if not chunk:
                return None
            buf += chunk
        return json.loads(buf)

    def close(self) -> None:
        if self.proc is not None:
            kill_group(self.proc.pid)
            self.proc.wait()
            self.proc = None

    def run(self, job: Job) -> RawResult:
        _prepare(job)
        if self.proc is None or self.proc.poll() is not None:
            self.start()
        assert self.proc is not None and self.proc.stdin is not None
        t0 = time.time()
        req = {"result": str(job.result_file), "args": pytest_args(job.tests),
               "cwd": str(job.kernel_dir), "stdout": str(job.stdout), "stderr": str(job.stderr),
               "t_request": t0, "env": job.env}
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        cmd = ["<fork of zygote>", "python", "-m", "miner.validate.child", str(job.result_file), "--",
               *req["args"]]
        started = self._read(deadline=t0 + 60)
        if not started or "pid" not in started:
            self.close()
            return RawResult(None, False, time.time() - t0, cmd, None, note="test worker died", t_request=t0)
        pid = int(started["pid"])
        work = Path(started["work"]) if started.get("work") else None
        _track(pid, True)
        timed_out = False
        try:
            done = self._read(deadline=t0 + job.timeout)
        except TimeoutError:
            timed_out = True
            kill_group(pid)
            try:
                done = self._read(deadline=time.time() + 30)
            except TimeoutError:
                done = None
        finally:
            _track(pid, False)
            if work is not None:
                workspace.copy_back(work / job.kernel_dir.name / workspace.RESULT_AREA, job.log_dir)
                workspace.remove(work)
        wall = time.time() - t0
        if not done:
            self.close()
            raw = RawResult(None, timed_out, wall, cmd, read_result(job.result_file),
                            note="test worker died", t_request=t0)
        else:
            raw = RawResult(int(done["rc"]), timed_out, wall, cmd, read_result(job.result_file), t_request=t0)
        if work is not None:
            raw.extra.update(sandboxed=True, violations=sandbox.audit.read(job.log_dir / sandbox.audit.REPORT))
        return raw


class ForkRunner:
    """A pool of zygotes, one per concurrent job."""

    mode = "fork"

    def __init__(self, jobs: int, policy: sandbox.Policy | None = None, extra_env: dict[str, str] | None = None,
                 mode: str = "fork") -> None:
        # One private folder for every work area of this run: nothing is left behind in the temp folder.
        self.work_root = Path(tempfile.mkdtemp(prefix="km-validate-")) if policy is not None else None
        self.mode = mode
        self.extra_env = extra_env or {}
        self.free: list[Zygote] = [Zygote(policy, self.work_root, extra_env) for _ in range(jobs)]
        self.all = list(self.free)
        self.cv = threading.Condition()
        # Start them side by side: each imports torch once.
        threads = [threading.Thread(target=z.start) for z in self.all]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def run(self, job: Job) -> RawResult:
        if job.sanitize:
            return SpawnRunner(self.extra_env).run(job)
        with self.cv:
            while not self.free:
                self.cv.wait()
            z = self.free.pop()
        try:
            return z.run(job)
        finally:
            with self.cv:
                self.free.append(z)
                self.cv.notify()

    def close(self) -> None:
        for z in self.all:
            z.close()
        if self.work_root is not None:
            workspace.remove(self.work_root)
