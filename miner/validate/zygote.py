"""Warm test worker: import the heavy modules once, then fork one child per kernel.

A spare child is always forked ahead and creates its CUDA context while it waits (see prewarm).

Protocol on stdin/stdout, one JSON object per line. Request: {"result", "args", "cwd", "stdout",
"stderr", "t_request"}. Replies: {"pid"} as soon as the child exists, then {"pid", "rc"} when it
ended (rc < 0: killed by that signal). The child runs in a new session, so the parent can kill its
whole process group; the zygote never touches CUDA, so forked children can initialise it.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
import traceback


def preload() -> None:
    import _pytest.python  # noqa: F401
    import pytest  # noqa: F401

    import miner.harness  # noqa: F401
    import miner.validate.plugin  # noqa: F401

    for name in ("numpy", "torch"):
        try:
            __import__(name)
        except Exception:  # noqa: BLE001 - an optional module that fails to import is just not preloaded
            pass


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the zygote dies (a killed validate leaves nothing behind)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, 9)  # PR_SET_PDEATHSIG, SIGKILL
    except (OSError, AttributeError):
        pass


def child(req: dict, zygote_pid: int) -> None:
    code = 70
    try:
        _die_with_parent()
        if os.getppid() != zygote_pid:
            os._exit(code)
        os.setsid()
        devnull = os.open(os.devnull, os.O_RDONLY)
        out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (devnull, out, err):
            os.close(fd)
        os.chdir(req["cwd"])
        os.environ.update(req.get("env") or {})
        os.environ["KM_CHILD_START"] = repr(time.time())
        from miner.validate import child as child_mod

        code = child_mod.run(req["result"], req["args"])
    except BaseException:  # noqa: BLE001 - whatever happens, this process must end here
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def prewarm() -> None:
    """In a spare child, create the CUDA context before its kernel is known (KM_PREWARM_CUDA=0: off).

    Context creation (0.25 s alone, about 1 s with 8 at once) then overlaps the previous kernel's
    tests instead of adding to this one's start-up; each kernel still gets its own process and
    its own context.
    """
    torch = sys.modules.get("torch")
    if torch is None or os.environ.get("KM_PREWARM_CUDA", "1") == "0":
        return
    from miner import harness

    try:
        t0 = time.perf_counter()
        if torch.cuda.is_available():
            torch.cuda.init()
            torch.zeros(1, device="cuda")
            torch.cuda.synchronize()
            harness.RECORDS["cuda_init_s"] = time.perf_counter() - t0
            harness.RECORDS["cuda_prewarmed"] = True
    except Exception:  # noqa: BLE001 - the test itself will meet and report the problem
        pass


def fork_spare(zygote_pid: int) -> tuple[int, int]:
    """Fork a child that warms up, then waits for its request on a pipe; returns (pid, write fd)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(w)
            _die_with_parent()
            if os.getppid() != zygote_pid:
                os._exit(70)
            null = os.open(os.devnull, os.O_RDWR)  # let go of the zygote's protocol pipes
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.close(null)
            prewarm()
            data = b""
            while chunk := os.read(r, 1 << 16):
                data += chunk
        except BaseException:  # noqa: BLE001
            os._exit(70)
        if not data:
            os._exit(0)
        child(json.loads(data), zygote_pid)
    os.close(r)
    return pid, w


def deliver(spare: tuple[int, int] | None, line: bytes, me: int) -> int:
    """Hand the request to the warm spare (or, if it died, to a fresh one); returns the child pid."""
    for _ in range(2):
        if spare is None:
            spare = fork_spare(me)
        pid, w = spare
        spare = None
        try:
            dead, _ = os.waitpid(pid, os.WNOHANG)
            if not dead:
                os.write(w, line)
                os.close(w)
                return pid
        except OSError:
            pass
        try:
            os.close(w)
        except OSError:
            pass
    raise RuntimeError("could not start a test child")


def main() -> None:
    preload()
    # Preloaded modules (torch: millions of objects) never die: keep every gc pass in the
    # children from walking them, and keep their pages shared after fork.
    gc.collect()
    gc.freeze()
    proto_in = sys.stdin.buffer
    proto_out = sys.stdout.buffer

    def send(obj: dict) -> None:
        proto_out.write((json.dumps(obj) + "\n").encode())
        proto_out.flush()

    me, parent = os.getpid(), os.getppid()
    sys.stdout.flush()
    sys.stderr.flush()
    spare: tuple[int, int] | None = fork_spare(me)
    send({"ready": True})
    for line in proto_in:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = deliver(spare, line, me)
        send({"pid": pid})
        spare = fork_spare(me)  # warms up while this kernel's tests run
        while True:  # poll rather than block, to notice when validate itself is gone
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if os.getppid() != parent:
                try:
                    os.killpg(pid, 9)
                except OSError:
                    pass
                os._exit(1)
            time.sleep(0.002)
        try:  # a test's leftover grandchildren share its process group: end them too
            os.killpg(pid, 9)
        except OSError:
            pass
        send({"pid": pid, "rc": os.waitstatus_to_exitcode(status)})
    if spare is not None:
        os.kill(spare[0], 9)
        os.waitpid(spare[0], 0)


if __name__ == "__main__":
    main()
