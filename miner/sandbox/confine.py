"""Turn the calling (single-threaded) process into a confined one: namespaces, mounts, limits.

After `confine(work, policy)` returns, the caller is PID 2 of a new PID namespace, in a new user,
mount and network namespace: no network interface is up (not even loopback), every mount is
read-only except `work`, a private /dev/shm and the namespace's own /proc (whose machine-wide parts,
/proc/sys and the like, are read-only), $HOME (or its credential files) is hidden, /proc
shows only this namespace, rlimits are set and no capability is left. The process that called
`confine` stays behind outside the PID namespace as a waiter that exits the way the test process
exits, so the caller's parent sees the same exit status and can kill the whole tree by its process
group; PID 1 exits when the test process does, and the kernel then kills all that is left inside.
Device nodes (/dev/nvidia*, /dev/kfd, /dev/dri) stay reachable: writes to a character device are
not writes to the read-only file system.

`confine` runs these public steps in order: `enter_namespaces()`, `mount_filesystems(work, policy)` (which
calls `hide_path` per hidden path), then in the PID namespace's child `own_proc(policy)` and `limits(policy)`;
scripts/sandbox_gpu_probe.py runs them one by one to find the step that breaks a GPU driver.
"""

from __future__ import annotations

import os
import resource
import signal
import sys
from pathlib import Path

from miner.sandbox import linux
from miner.sandbox.policy import SECRET_HOME_PATHS, Policy

NAMESPACES = linux.CLONE_NEWUSER | linux.CLONE_NEWNS | linux.CLONE_NEWNET | linux.CLONE_NEWPID
PID_MAX_MIN = 301  # the kernel refuses smaller per-namespace pid_max values (RESERVED_PIDS + 1)


class SandboxUnavailable(RuntimeError):
    """This machine cannot build the sandbox (no unprivileged user namespaces, old kernel...)."""


def enter_namespaces() -> None:
    uid, gid = os.getuid(), os.getgid()
    linux.unshare(NAMESPACES)
    linux.write_file("/proc/self/setgroups", "deny")
    linux.write_file("/proc/self/uid_map", f"0 {uid} 1")
    linux.write_file("/proc/self/gid_map", f"0 {gid} 1")
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)


def _under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([os.path.realpath(path), os.path.realpath(root)]) == os.path.realpath(root)
    except ValueError:
        return False


def _hidden_paths(work: str, policy: Policy) -> list[str]:
    """$HOME whole when nothing the child needs lives under it, else only its credential files."""
    home = os.path.expanduser("~")
    needed = [work, *policy.visible, sys.prefix, sys.base_prefix, sys.exec_prefix,
              str(Path(__file__).resolve().parents[2]), *(p for p in sys.path if p)]
    paths = list(policy.hide)
    if home and home != "/" and os.path.isdir(home):
        if any(_under(p, home) for p in needed):
            paths += [os.path.join(home, rel) for rel in SECRET_HOME_PATHS]
        else:
            paths.append(home)
    # Unix sockets of host daemons (docker, dbus...) are reachable through a read-only mount.
    for run in ("/run", "/var/run"):
        if os.path.isdir(run) and not os.path.islink(run) and not any(_under(p, run) for p in needed):
            paths.append(run)
    return paths


def hide_path(path: str) -> None:
    if os.path.islink(path) or not os.path.exists(path):
        return
    if os.path.isdir(path):
        linux.mount("tmpfs", path, "tmpfs", linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC, "size=64k,mode=755")
    else:
        linux.mount("/dev/null", path, None, linux.MS_BIND)


def mount_filesystems(work: str, policy: Policy) -> None:
    linux.mount(work, work, None, linux.MS_BIND | linux.MS_REC)
    if os.path.isdir("/dev/shm"):
        linux.mount("tmpfs", "/dev/shm", "tmpfs", linux.MS_NOSUID | linux.MS_NODEV,
                    f"size={max(1 << 20, policy.shm_bytes)},mode=1777")
    for path in _hidden_paths(work, policy):
        hide_path(path)
    linux.set_readonly("/", True, recursive=True)
    linux.set_readonly(work, False, recursive=False)
    if os.path.isdir("/dev/shm"):
        linux.set_readonly("/dev/shm", False, recursive=False)


# Parts of /proc that configure the machine rather than this process: read-only, as container runtimes
# keep them. The rest of /proc stays writable: the CUDA driver writes to it while cuInit runs (measured on
# an H100: a read-only /proc gives CUDA_ERROR_OPERATING_SYSTEM, scripts/sandbox_gpu_probe.py), and
# without capabilities a process can write only what it owns there.
PROC_READONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs")


def own_proc(policy: Policy) -> None:
    flags = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC
    linux.mount("proc", "/proc", "proc", flags)
    if policy.processes:
        try:  # per-namespace pid_max (Linux 6.14+): bounds threads and processes even for root
            linux.write_file("/proc/sys/kernel/pid_max", str(max(PID_MAX_MIN, policy.processes)))
        except OSError:
            pass
    for name in PROC_READONLY:
        path = os.path.join("/proc", name)
        if os.path.exists(path):
            linux.mount(path, path, None, linux.MS_BIND)
            linux.mount(None, path, None, linux.MS_REMOUNT | linux.MS_BIND | linux.MS_RDONLY | flags)


def _limit(which: int, value: int) -> None:
    if value <= 0:
        return  # 0: not limited by the sandbox
    soft, hard = resource.getrlimit(which)
    if hard != resource.RLIM_INFINITY:
        value = min(value, hard)
    resource.setrlimit(which, (value, value))


def limits(policy: Policy) -> None:
    _limit(resource.RLIMIT_DATA, policy.memory_bytes)
    _limit(resource.RLIMIT_FSIZE, policy.file_bytes)
    _limit(resource.RLIMIT_NOFILE, policy.open_files)
    _limit(resource.RLIMIT_NPROC, policy.processes)
    _limit(resource.RLIMIT_CPU, policy.cpu_seconds)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _close_fds(*keep: int) -> None:
    """Hold nothing the parent waits to see closed (the zygote's status pipes)."""
    for fd in range(3, 1024):
        if fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass


def _wait(pid: int) -> int:
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue


def _mirror(status: int) -> None:
    """Exit exactly as the test process did (same code, or killed by the same signal)."""
    code = os.waitstatus_to_exitcode(status)
    if code < 0:
        signal.signal(-code, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [-code])
        os.kill(os.getpid(), -code)
        code = 128 - code
    os._exit(code)


def _init(test_pid: int, report: int) -> None:
    """PID 1 of the namespace: waits for the test and hands its wait status to the waiter outside.

    The test must not be PID 1 itself: the kernel drops signals PID 1 sends itself without a
    handler, so abort() would end in SIGSEGV instead of SIGABRT."""
    _close_fds(report)
    status = _wait(test_pid)
    os.write(report, f"{status}\n".encode())
    os._exit(0)  # the kernel now kills whatever the test left running in the namespace


def _waiter(init_pid: int, report: int) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    _close_fds(report)
    data = b""
    while chunk := os.read(report, 64):
        data += chunk
    status = _wait(init_pid)
    _mirror(int(data) if data.strip().isdigit() else status)


def confine(work: str | os.PathLike[str], policy: Policy) -> None:
    """See the module docstring. Call in a fresh, single-threaded child (after fork, before threads)."""
    work = os.path.realpath(work)
    try:
        os.setsid()
    except OSError:
        pass  # already a session leader (started with start_new_session)
    linux.die_with_parent()
    try:
        enter_namespaces()
        mount_filesystems(work, policy)
    except OSError as exc:
        raise SandboxUnavailable(str(exc)) from exc
    r, w = os.pipe()
    pid = os.fork()
    if pid:
        os.close(w)
        _waiter(pid, r)
    os.close(r)
    linux.die_with_parent()
    pid = os.fork()  # pid 1 above, the test (pid 2) below
    if pid:
        _init(pid, w)
    os.close(w)
    linux.die_with_parent()
    own_proc(policy)
    limits(policy)
    linux.drop_capabilities()
    for sub in ("home", "tmp"):
        os.makedirs(os.path.join(work, sub), exist_ok=True)
    os.environ["HOME"] = os.path.join(work, "home")
    os.environ["TMPDIR"] = os.path.join(work, "tmp")
    os.environ["KM_SANDBOX_WORK"] = work
    import tempfile

    tempfile.tempdir = None  # a forked child inherits the parent's cached choice


_PROBED: str | None | bool = False


def unavailable() -> str | None:
    """None when the sandbox can be built here, else why not (one line). Probed once per process."""
    global _PROBED
    if _PROBED is not False:
        return _PROBED  # type: ignore[return-value]
    if not sys.platform.startswith("linux"):
        _PROBED = f"the sandbox needs Linux namespaces ({sys.platform})"
        return _PROBED
    def build(work: str) -> str:
        try:
            enter_namespaces()
            mount_filesystems(work, Policy())
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, whatever it is
            return str(exc)[:500] or type(exc).__name__
        return ""

    _PROBED = linux.run_in_fork(build, "km-probe-")
    return _PROBED
