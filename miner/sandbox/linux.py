"""The Linux system calls the sandbox is made of, through ctypes (Python 3.11 has no os.unshare).

Every function raises OSError with the failing call named, so a refusal becomes one clear line.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from collections.abc import Callable

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000

MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18

MOUNT_ATTR_RDONLY = 0x1
AT_RECURSIVE = 0x8000
AT_FDCWD = -100
SYS_MOUNT_SETATTR = 442  # the same number on x86_64 and aarch64 (asm-generic)
SYS_CAPSET = {"x86_64": 126, "aarch64": 91}.get(os.uname().machine, 126)

PR_SET_PDEATHSIG = 1
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
# NOROOT, NO_SETUID_FIXUP and KEEP_CAPS, each locked: uid 0 inside never regains capabilities by exec.
SECURE_BITS = 0b101111

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)), f"mount {target}")


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def set_readonly(path: str, readonly: bool, recursive: bool) -> None:
    """mount_setattr(2) (Linux 5.12): one call makes a whole mount tree read-only, locked flags kept."""
    attr = _MountAttr(MOUNT_ATTR_RDONLY if readonly else 0, 0 if readonly else MOUNT_ATTR_RDONLY, 0, 0)
    ret = _libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD), path.encode(),
                        ctypes.c_uint(AT_RECURSIVE if recursive else 0), ctypes.byref(attr),
                        ctypes.c_size_t(ctypes.sizeof(attr)))
    _check(ret, f"mount_setattr {path}")


def prctl(option: int, arg: int = 0) -> int:
    ret = _libc.prctl(option, arg, 0, 0, 0)
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl {option}: {os.strerror(err)}")
    return int(ret)


def die_with_parent() -> None:
    prctl(PR_SET_PDEATHSIG, 9)


def drop_capabilities() -> None:
    """No capability survives, now or across exec, and no_new_privs (as ComputeEval's cap_drop ALL)."""
    prctl(PR_SET_NO_NEW_PRIVS, 1)
    prctl(PR_SET_SECUREBITS, SECURE_BITS)
    for cap in range(64):
        try:
            prctl(PR_CAPBSET_DROP, cap)
        except OSError:
            break  # past the last capability this kernel knows
    try:
        _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    except OSError:
        pass

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                    ("inheritable", ctypes.c_uint32)]

    header = Header(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3: two Data words
    data = (Data * 2)()
    _check(_libc.syscall(ctypes.c_long(SYS_CAPSET), ctypes.byref(header), ctypes.byref(data)), "capset")


def write_file(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def run_in_fork(step: Callable[[str], str], prefix: str) -> str | None:
    """`step(work)` in a forked child with a fresh temporary folder `work`; what it returns (at most 500
    bytes) comes back, or None for an empty answer. A probe that enters namespaces must not change this
    process, hence the fork; `step` reports its own failures as text."""
    work = tempfile.mkdtemp(prefix=prefix)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        msg = "probe failed"
        try:
            msg = step(work)
        finally:
            os.write(w, msg.encode()[:500])
            os._exit(0)
    os.close(w)
    data = b""
    while chunk := os.read(r, 4096):
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    try:
        os.rmdir(work)
    except OSError:
        pass
    return data.decode(errors="replace") or None
