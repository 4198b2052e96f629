"""One compiler (nvcc, hipcc) call at a time per thread, each in its own process group, killed whole on a timeout."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from miner import lazy_re


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


# A unit flag (render: a kernel using `wgmma`) that builds every target of the run as its arch-specific variant:
# sm_90 -> sm_90a, compute_90 -> compute_90a. Targets before sm_90 have none and stay as they are.
ARCH_SPECIFIC = "--km-arch-specific"
_TARGET = lazy_re.compile(r"\b((?:arch=compute|code=sm|code=compute)_)(9\d|[1-9]\d\d)(?![\da-z])")


def arch_specific_targets(flags: list[str]) -> list[str]:
    """`-gencode arch=compute_90,code=sm_90` -> `arch=compute_90a,code=sm_90a`; `--arch sm_90,compute_90` alike."""
    return [_TARGET.sub(r"\1\2a", f) for f in flags]


def arch_specific_arch(arch: str) -> str:
    """The build record's `arch` for such a unit (`sm_90,compute_90` -> `sm_90a,compute_90a`)."""
    return re.sub(r"\b((?:sm|compute)_)(9\d|[1-9]\d\d)(?![\da-z])", r"\1\2a", arch)


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
        """One call; `extra`: flags of this unit or batch only (a library wheel's include dir)."""
        with self._lock:
            if self.stopped:
                return Compiled(None, "build interrupted", 0.0)
            self.calls += 1
        env = dict(os.environ, **self.env, TMPDIR=str(tmp))
        extra = list(extra or [])
        base = self.flags
        if ARCH_SPECIFIC in extra:
            extra = [f for f in extra if f != ARCH_SPECIFIC]
            base = arch_specific_targets(base)
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen([self.nvcc, *base, *extra, src, "-o", str(out)], cwd=cwd, env=env,
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
