#!/usr/bin/env python3
"""Which part of the sandbox hides the GPU? cuInit after each confinement step, each in a fresh fork.

    PYTHONPATH=. python3 scripts/sandbox_gpu_probe.py [--json FILE]

Run on a GPU machine where `validate` says the sandbox hides the GPU. Each row adds one step of
`miner.sandbox.confine` (user namespace, mount namespace, network namespace, pid namespace with a
fork into it, the read-only mounts and hidden paths, an own /proc, rlimits, dropped capabilities)
to the ones above it, or applies one step alone, and reports what `cuInit` / `cuDeviceGetCount`
said afterwards. The first row that fails names the step to change. Only ctypes and libcuda.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import importlib  # noqa: E402

from miner.sandbox import linux  # noqa: E402
from miner.sandbox.gpu import cuda_error  # noqa: E402
from miner.sandbox.policy import Policy  # noqa: E402

cf = importlib.import_module("miner.sandbox.confine")  # the package exports a function of that name


UID, GID = os.getuid(), os.getgid()  # read before unshare: inside, they are the overflow ids


def _ids() -> None:
    uid, gid = UID, GID
    linux.write_file("/proc/self/setgroups", "deny")
    linux.write_file("/proc/self/uid_map", f"0 {uid} 1")
    linux.write_file("/proc/self/gid_map", f"0 {gid} 1")


def _user(_: str) -> None:
    linux.unshare(linux.CLONE_NEWUSER)
    _ids()


def _user_mnt(_: str) -> None:
    linux.unshare(linux.CLONE_NEWUSER | linux.CLONE_NEWNS)
    _ids()
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)


def _user_mnt_net(_: str) -> None:
    linux.unshare(linux.CLONE_NEWUSER | linux.CLONE_NEWNS | linux.CLONE_NEWNET)
    _ids()
    linux.mount(None, "/", None, linux.MS_REC | linux.MS_PRIVATE)


def _in_pid_child(step: Callable[[], None]) -> str:
    """Fork into the new pid namespace (the probe must run in the child), return its verdict."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            step()
            msg = cuda_error() or ""
        except BaseException as exc:  # noqa: BLE001
            msg = f"{type(exc).__name__}: {exc}"
        os.write(w, (msg or "ok").encode()[:2000])
        os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.waitpid(pid, 0)
    text = data.decode()
    return "" if text == "ok" else text


def _full_namespaces(_: str) -> None:
    cf.enter_namespaces()


def _mounts(work: str) -> None:
    cf.enter_namespaces()
    cf.mount_filesystems(work, Policy(memory_bytes=0))


STEPS: list[tuple[str, Callable[[str], None], Callable[[], None] | None]] = [
    ("nothing (plain fork)", lambda w: None, None),
    ("user namespace", _user, None),
    ("user + mount namespace", _user_mnt, None),
    ("user + mount + net namespace", _user_mnt_net, None),
    ("all four namespaces, probe in the pid-namespace child", _full_namespaces, lambda: None),
    ("+ read-only mounts, hidden paths, private /dev/shm", _mounts, lambda: None),
    ("+ own /proc", _mounts, lambda: cf.own_proc(Policy(memory_bytes=0))),
    ("+ rlimits (no memory limit)", _mounts, lambda: (cf.own_proc(Policy(memory_bytes=0)),
                                                        cf.limits(Policy(memory_bytes=0)))),
    ("+ rlimits (default memory limit)", _mounts, lambda: (cf.own_proc(Policy()), cf.limits(Policy()))),
    ("+ capabilities dropped (= confine)", _mounts, lambda: (cf.own_proc(Policy(memory_bytes=0)),
                                                               cf.limits(Policy(memory_bytes=0)),
                                                               linux.drop_capabilities())),
]

ALONE: list[tuple[str, Callable[[str], None]]] = [
    ("alone: rlimits without namespaces", lambda w: cf.limits(Policy(memory_bytes=0))),
    ("alone: capabilities dropped without namespaces", lambda w: linux.drop_capabilities()),
    ("alone: private /dev/shm in user+mount ns", lambda w: (_user_mnt(w), linux.mount(
        "tmpfs", "/dev/shm", "tmpfs", linux.MS_NOSUID | linux.MS_NODEV, "size=1073741824,mode=1777"))),
    ("alone: /run hidden in user+mount ns", lambda w: (_user_mnt(w), [cf.hide_path(p) for p in ("/run", "/var/run")
                                                                        if os.path.isdir(p)])),
    ("alone: / read-only in user+mount ns", lambda w: (_user_mnt(w), linux.set_readonly("/", True, recursive=True))),
]


def _ro_except(*rw: str) -> Callable[[str], None]:
    def setup(work: str) -> None:
        _user_mnt(work)
        for path in rw:  # a mount point of its own, so that it can stay writable
            if os.path.isdir(path):
                linux.mount(path, path, None, linux.MS_BIND | linux.MS_REC)
        linux.set_readonly("/", True, recursive=True)
        for path in rw:
            if os.path.isdir(path):
                linux.set_readonly(path, False, recursive=False)
    return setup


def _own_proc_only() -> None:
    flags = linux.MS_NOSUID | linux.MS_NODEV | linux.MS_NOEXEC
    linux.mount("proc", "/proc", "proc", flags)


FINER: list[tuple[str, Callable[[str], None], Callable[[], None] | None]] = [
    ("finer: four namespaces + own /proc, nothing read-only", _full_namespaces, _own_proc_only),
    ("finer: / read-only but /dev", _ro_except("/dev"), None),
    ("finer: / read-only but /tmp", _ro_except("/tmp"), None),
    ("finer: / read-only but /dev/shm", _ro_except("/dev/shm"), None),
    ("finer: / read-only but /dev, /dev/shm, /tmp", _ro_except("/dev", "/dev/shm", "/tmp"), None),
    ("finer: / read-only but /run", _ro_except("/run"), None),
    ("finer: / read-only but /proc", _ro_except("/proc"), None),
    ("finer: / read-only but /sys", _ro_except("/sys"), None),
]


def run(name: str, setup: Callable[[str], None], inner: Callable[[], None] | None) -> dict[str, str]:
    def step(work: str) -> str:
        try:
            setup(work)
            if inner is not None:
                return _in_pid_child(inner)
            return cuda_error() or ""
        except BaseException as exc:  # noqa: BLE001
            return f"{type(exc).__name__}: {exc}"

    why = linux.run_in_fork(step, "km-gpu-step-")
    return {"step": name, "result": why or "ok"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    rows = [run(n, s, i) for n, s, i in STEPS] + [run(n, s, None) for n, s in ALONE]
    rows += [run(n, s, i) for n, s, i in FINER]
    facts = {"kernel": platform.release(), "uid": os.getuid(),
             "gvisor": "gvisor" in Path("/proc/self/mountinfo").read_text(errors="replace").lower(),
             "dev_nvidia": sorted(p.name for p in Path("/dev").glob("nvidia*")),
             "proc_version": Path("/proc/version").read_text(errors="replace").strip()
             if Path("/proc/version").exists() else ""}
    width = max(len(r["step"]) for r in rows)
    for k, v in facts.items():
        print(f"{k}: {v}")
    for r in rows:
        print(f"{r['step']:{width}s}  {r['result']}")
    if args.json:
        args.json.write_text(json.dumps({"facts": facts, "rows": rows}, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
