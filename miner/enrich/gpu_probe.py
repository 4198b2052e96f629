"""Whether this machine can run a generated test for real: a CUDA GPU usable from torch.

A test that skips on such a machine skips everywhere, so it is rejected rather than left `unverified`.
The probe runs in a child process (torch is never imported by the enrich process) once per run.
`KM_ENRICH_GPU=1|0` overrides the probe where it is wrong (a GPU hidden from this process, say).
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import threading
from pathlib import Path

_PROBE = "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)"


_LOCK = threading.Lock()


def gpu_present() -> bool:
    with _LOCK:  # worker threads ask at once; one probe answers them all
        return _probe()


@functools.cache
def _probe() -> bool:
    forced = os.environ.get("KM_ENRICH_GPU")
    if forced in ("0", "1"):
        return forced == "1"
    if not any(Path("/dev").glob("nvidia[0-9]*")) and not any(Path("/dev").glob("dri/renderD*")):
        return False  # no device node: no GPU, and no need to import torch to learn it
    try:
        proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, timeout=120, check=False,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0
