"""One compiler (nvcc, hipcc) call at a time per thread, each in its own process group, killed whole on a timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path


def _kill_group(pid: int) -> None:
    """SIGKILL nvcc's whole process group (cicc, ptxas, gcc); it may have exited already."""
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


@dataclass
class Compiled:
    rc: int | None      # None: timed out
    log: str
    seconds: float


class Compiler:
    """Runs nvcc in its own process group so a timeout kills cicc/ptxas/gcc children too."""

    def __init__(self, nvcc: str, flags: list[str], timeout: float, env: dict[str, str] | None = None) -> None:
        self.nvcc, self.flags, self.timeout = nvcc, flags, timeout
        self.env = env or {}
        self.calls = 0
        self.stopped = False
        self._running: set[subprocess.Popen[bytes]] = set()
        self._lock = threading.Lock()

    def kill_all(self) -> None:
        with self._lock:
            self.stopped = True
            for proc in list(self._running):
                _kill_group(proc.pid)

    def compile(self, src: str, out: Path, cwd: Path, tmp: Path, extra: list[str] | None = None) -> Compiled:
        with self._lock:
            if self.stopped:
                return Compiled(None, "build interrupted", 0.0)
            self.calls += 1
        env = dict(os.environ, **self.env, TMPDIR=str(tmp))
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen([self.nvcc, *self.flags, *(extra or []), src, "-o", str(out)], cwd=cwd, env=env,
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                    start_new_session=True)
        except OSError as exc:
            return Compiled(127, f"cannot run {self.nvcc}: {exc}", 0.0)
        with self._lock:
            self._running.add(proc)
        try:
            data, _ = proc.communicate(timeout=self.timeout)
            rc: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            _kill_group(proc.pid)
            data, _ = proc.communicate()
            rc = None
        finally:
            with self._lock:
                self._running.discard(proc)
        log = data.decode("utf-8", errors="replace")
        return Compiled(rc, log, time.monotonic() - t0)
