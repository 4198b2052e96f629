"""Does the GPU stay reachable inside the sandbox? cuInit outside, then inside, before any test runs.

Seen on the GPU machines: tests in the sandbox found no CUDA GPU (every test skipped) while the
same tests outside found it. Causes the sandbox can have: device nodes that the driver creates on
first use (nvidia-modprobe, a setuid helper: no_new_privs and a read-only /dev stop it), or the
memory limit (RLIMIT_DATA) refusing the driver's host allocations. The probe outside runs first, so
the nodes exist before any sandboxed child starts; the one inside says whether CUDA works there.
Only ctypes and libcuda: no torch, a fraction of a second, nothing at all where libcuda is absent.
"""

from __future__ import annotations

import ctypes

from miner.sandbox import linux
from miner.sandbox.confine import confine
from miner.sandbox.policy import Policy


def cuda_error() -> str | None:
    """None when the driver initialises and sees a device, else what went wrong (in this process)."""
    lib = None
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return "no libcuda"
    rc = lib.cuInit(0)
    if rc != 0:
        text = ctypes.c_char_p()
        lib.cuGetErrorName(rc, ctypes.byref(text))
        return f"cuInit: {(text.value or b'').decode() or rc}"
    count = ctypes.c_int(0)
    rc = lib.cuDeviceGetCount(ctypes.byref(count))
    if rc != 0 or count.value < 1:
        return f"cuDeviceGetCount: error {rc}, {count.value} device(s)"
    return None


def _in_child(policy: Policy | None) -> str | None:
    def probe(work: str) -> str:
        try:
            if policy is not None:
                confine(work, policy)
            return cuda_error() or ""
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, whatever it is
            return f"{type(exc).__name__}: {exc}"

    return linux.run_in_fork(probe, "km-gpu-probe-")


def hidden(policy: Policy) -> str | None:
    """Why CUDA works outside but not inside a sandbox with `policy`; None when that is not the case."""
    if _in_child(None) is not None:
        return None  # no usable GPU even outside: nothing the sandbox could hide
    return _in_child(policy)
