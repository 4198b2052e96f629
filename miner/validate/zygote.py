"""Warm test worker: import the heavy modules once, then fork one child per kernel.

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

    send({"ready": True})
    me, parent = os.getpid(), os.getppid()
    for line in proto_in:
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            child(req, me)
        send({"pid": pid})
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


if __name__ == "__main__":
    main()
