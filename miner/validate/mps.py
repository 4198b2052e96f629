"""A private CUDA MPS daemon for `validate --mps`: faster test children, outcomes kept exact by a rerun.

Every kernel's tests run in a fresh process with its own CUDA context. The driver creates and
destroys contexts one after another, so with several jobs on one GPU the context, not the tests,
bounds kernels per minute (measured on an H100: ~180/min, context creation 1.1 s at 4 jobs).
Under MPS the children are clients of one server context and start faster (243/min at 4 jobs).

The price is fault isolation: a kernel that faults (illegal address, trap) or hangs can take
its MPS neighbours down with it (measured: half of the good kernels running beside the fault
fixtures ended `cuda_error`, and two `skipped`: a faulted server refuses new clients, which a test
takes for "no GPU"). So MPS is only a first pass: every kernel that did not pass under it is run
again alone, in its own context without MPS, and that second result is the one recorded. A clean
pass needs no rerun; neighbours' faults never make a kernel pass.

The daemon is this run's own (its pipe and log folders in a private temporary folder, passed to
the test workers through CUDA_MPS_PIPE_DIRECTORY / CUDA_MPS_LOG_DIRECTORY), and is told to quit
when validate ends, also on an error or Ctrl-C.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

CONTROL = "nvidia-cuda-mps-control"


def unavailable() -> str | None:
    """Why MPS cannot be used here, or None."""
    if shutil.which(CONTROL) is None:
        return f"{CONTROL} not found (it comes with the NVIDIA driver)"
    return None


class MpsDaemon:
    """`with MpsDaemon() as env:` — env holds the variables that make a CUDA process its client."""

    def __init__(self) -> None:
        self.dir: Path | None = None
        self.env: dict[str, str] = {}

    def __enter__(self) -> dict[str, str]:
        why = unavailable()
        if why:
            raise RuntimeError(why)
        self.dir = Path(tempfile.mkdtemp(prefix="km-mps-"))
        pipe, log = self.dir / "pipe", self.dir / "log"
        pipe.mkdir()
        log.mkdir()
        self.env = {"CUDA_MPS_PIPE_DIRECTORY": str(pipe), "CUDA_MPS_LOG_DIRECTORY": str(log)}
        proc = subprocess.run([CONTROL, "-d"], env={**os.environ, **self.env}, capture_output=True,
                              text=True, timeout=30)
        if proc.returncode != 0:
            self._cleanup()
            raise RuntimeError(f"{CONTROL} -d failed: {(proc.stderr or proc.stdout).strip()[:200]}")
        deadline = time.time() + 10
        while not any(pipe.iterdir()) and time.time() < deadline:  # the control pipe appears when it is up
            time.sleep(0.05)
        return self.env

    def __exit__(self, *exc: object) -> None:
        if self.dir is None:
            return
        try:
            subprocess.run([CONTROL], input="quit\n", env={**os.environ, **self.env}, capture_output=True,
                           text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            pass
        self._cleanup()

    def _cleanup(self) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
