"""Warm test worker: import the heavy modules once, then fork one child per kernel.

A spare child is always forked ahead and creates its CUDA context while it waits (see prewarm).

Protocol on stdin/stdout, one JSON object per line. Request: {"result", "args", "cwd", "stdout",
"stderr", "t_request", "env"}. Replies: {"pid", "work"} as soon as the child exists, then {"pid", "rc"}
when it is done (rc < 0: killed by that signal). The child runs in a new session, so the parent can
kill its whole process group; the zygote never touches CUDA, so forked children can initialise it.

With KM_SANDBOX_POLICY set (JSON of miner.sandbox.Policy), each spare is confined (miner.sandbox.confine)
right after it is forked, before it creates its CUDA context, in a fresh work area under
KM_SANDBOX_ROOT ("work" in the first reply). On its request it copies the kernel folder into the
work area and runs there: "result", "stdout" and "stderr" go to the copy's validation/ folder, which
the parent copies back.

"Done" is when the child says so on its status pipe, right before it exits: its results are written
by then, and tearing down its CUDA context (0.1-0.2 s in the driver) then overlaps the next kernel
instead of adding to this one. A child that dies without saying so is reported by its wait status.
"""

from __future__ import annotations

import gc
import json
import os
import select
import sys
import time
import traceback
from pathlib import Path


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


def _policy() -> object | None:
    raw = os.environ.get("KM_SANDBOX_POLICY")
    if not raw:
        return None
    from miner.sandbox import Policy

    return Policy.from_json(json.loads(raw))


def _into_work(req: dict, work: str) -> dict:
    """Copy the kernel folder into the work area; the request's paths now point into the copy."""
    from miner.sandbox import audit, workspace

    copy = workspace.copy_in(Path(req["cwd"]), Path(work))
    area = copy / workspace.RESULT_AREA
    os.environ["KM_SANDBOX_REPORT"] = str(area / audit.REPORT)
    return {**req, "cwd": str(copy), "result": str(area / "result.json"), "stdout": str(area / "stdout.txt"),
            "stderr": str(area / "stderr.txt")}


def child(req: dict, zygote_pid: int, status_fd: int | None = None, work: str | None = None) -> None:
    code = 70
    try:
        if work is None:
            _die_with_parent()
            if os.getppid() != zygote_pid:
                os._exit(code)
            os.setsid()
        else:
            req = _into_work(req, work)
        devnull = os.open(os.devnull, os.O_RDONLY)
        out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(devnull, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        for fd in (devnull, out, err):
            os.close(fd)
        os.chdir(req["cwd"])
        os.environ.update(_allowed(req.get("env") or {}))
        os.environ["KM_CHILD_START"] = repr(time.time())
        from miner.validate import child as child_mod

        code = child_mod.run(req["result"], req["args"])
    except BaseException:  # noqa: BLE001 - whatever happens, this process must end here
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
            if status_fd is not None:
                os.write(status_fd, f"{code}\n".encode())
        finally:
            os._exit(code)


def _allowed(env: dict) -> dict:
    from miner.sandbox import environment

    return environment({}, env)


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
            level = os.environ.get("KM_PREWARM_OPS", "1")
            if level != "0":
                t1 = time.perf_counter()
                _warm_ops(torch, every_dtype=level == "all")
                harness.RECORDS["ops_warm_s"] = time.perf_counter() - t1
    except Exception:  # noqa: BLE001 - the test itself will meet and report the problem
        pass


def _warm_ops(torch: object, every_dtype: bool = False) -> None:
    """Load the device code of the torch operators nearly every kernel test uses.

    With lazy module loading (CUDA's default) each operator's first call in a fresh context
    loads its module: tens of milliseconds over a test's random inputs, comparisons and CUDA
    events. Done here, it overlaps the previous kernel. A private generator keeps the default
    one's state, so a test that does not seed still sees the same numbers as without warming.
    """
    t = torch  # type: ignore[assignment]
    gen = t.Generator(device="cuda")
    gen.manual_seed(0)
    for dtype in (t.float32, t.float64, t.float16, t.bfloat16) if every_dtype else (t.float32,):
        x = t.randn(64, device="cuda", dtype=dtype, generator=gen)
        y = t.rand(64, device="cuda", dtype=dtype, generator=gen)
        out = t.full_like(x, float("nan"))
        out.copy_(x)
        t.add(y, x, alpha=2.0, out=out)
        z = (x * y - y).abs().max()
        t.testing.assert_close(x, x.clone())
        _ = (t.isfinite(z), t.isnan(x).any(), x.to(t.float32).sum(), t.empty_like(x).fill_(0),
             t.zeros_like(x).eq(0).all(), x.sort()[0], x.float().mean())
    i = t.randint(0, 10, (64,), device="cuda", generator=gen)
    _ = (i + 1, t.arange(64, device="cuda"), t.empty(1 << 20, dtype=t.uint8, device="cuda").fill_(1))
    start, end = t.cuda.Event(enable_timing=True), t.cuda.Event(enable_timing=True)
    start.record()
    end.record()
    t.cuda.synchronize()
    start.elapsed_time(end)


Spare = tuple[int, int, int, "str | None"]


def fork_spare(zygote_pid: int, others: list[Spare] | tuple[Spare, ...] = ()) -> Spare:
    """Fork a child that (confines itself and) warms up, then waits for its request on a pipe.

    `others`: the spares already waiting; the child closes its copies of their pipe ends, or the
    other spare would never see the end of its request. Returns (pid, request write fd, status
    read fd, work area or None)."""
    policy = _policy()
    work = None
    if policy is not None:
        from miner.sandbox import workspace

        work = str(workspace.make(os.environ.get("KM_SANDBOX_ROOT") or None))
    r, w = os.pipe()
    sr, sw = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(w)
            os.close(sr)
            _close(*(fd for o in others for fd in (o[1], o[2])))
            _die_with_parent()
            if os.getppid() != zygote_pid:
                os._exit(70)
            null = os.open(os.devnull, os.O_RDWR)  # let go of the zygote's protocol pipes
            os.dup2(null, 0)
            os.dup2(null, 1)
            os.close(null)
            if policy is not None:
                from miner.sandbox import confine

                confine(work, policy)  # type: ignore[arg-type]
            prewarm()
            data = b""
            while chunk := os.read(r, 1 << 16):
                data += chunk
        except BaseException:  # noqa: BLE001
            os._exit(70)
        if not data:
            os._exit(0)
        child(json.loads(data), zygote_pid, sw, work)
    os.close(r)
    os.close(sw)
    return pid, w, sr, work


def _close(*fds: int) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


def deliver(spare: Spare | None, line: bytes, me: int,
            others: list[Spare] | tuple[Spare, ...] = ()) -> tuple[int, int, str | None]:
    """Hand the request to the warm spare (or, if it died, to a fresh one); returns (pid, status fd, work)."""
    for _ in range(2):
        if spare is None:
            spare = fork_spare(me, others)
        pid, w, sr, work = spare
        spare = None
        try:
            dead, _ = os.waitpid(pid, os.WNOHANG)
            if not dead:
                os.write(w, line)
                os.close(w)
                return pid, sr, work
        except OSError:
            pass
        _close(w, sr)
        _remove(work)
    raise RuntimeError("could not start a test child")


def _remove(work: str | None) -> None:
    if work:
        from miner.sandbox import workspace

        workspace.remove(Path(work))


def wait_done(pid: int, sr: int, parent: int) -> tuple[int, bool]:
    """Wait until the child reports its exit code or dies; returns (rc, still exiting)."""
    said = b""
    open_ = True
    while True:  # poll rather than block, to notice when validate itself is gone
        if open_:
            ready, _, _ = select.select([sr], [], [], 0.002)
            if ready:
                chunk = os.read(sr, 64)
                said += chunk
                if said.endswith(b"\n"):
                    return int(said), True
                if not chunk:
                    open_ = False  # died without a word: its wait status tells how
        else:
            time.sleep(0.002)
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status), False
        if os.getppid() != parent:
            try:
                os.killpg(pid, 9)
            except OSError:
                pass
            os._exit(1)


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
    # More than one spare gives each one longer to create its context when the driver creates
    # contexts one after another (several jobs on one GPU): the oldest, most likely warm, goes first.
    depth = max(1, int(os.environ.get("KM_SPARES", "1") or 1))
    spares: list[Spare] = []
    for _ in range(depth):
        spares.append(fork_spare(me, spares))
    exiting: list[int] = []  # children that reported done and are still tearing down
    send({"ready": True})
    for line in proto_in:
        sys.stdout.flush()
        sys.stderr.flush()
        exiting = [p for p in exiting if not _reaped(p)]
        pid, sr, work = deliver(spares.pop(0) if spares else None, line, me, spares)
        send({"pid": pid, "work": work})
        spares.append(fork_spare(me, spares))  # warms up while this kernel's tests run
        rc, still = wait_done(pid, sr, parent)
        _close(sr)
        try:  # a test's leftover grandchildren share its process group: end them too
            os.killpg(pid, 9)
        except OSError:
            pass
        if still:
            exiting.append(pid)
        send({"pid": pid, "rc": rc})
    for spare in spares:
        os.kill(spare[0], 9)
        os.waitpid(spare[0], 0)
        _remove(spare[3])
    for p in exiting:
        _reaped(p, block=True)


def _reaped(pid: int, block: bool = False) -> bool:
    try:
        done, _ = os.waitpid(pid, 0 if block else os.WNOHANG)
    except ChildProcessError:
        return True
    return bool(done)


if __name__ == "__main__":
    main()
