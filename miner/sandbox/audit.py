"""Say what a sandboxed test tried: an audit hook records writes outside the work area and network use.

The kernel (read-only mounts, no network interface) is what stops these; the hook only reports them,
with the path or address, to a line-per-attempt file in the result area that survives a killed
child. Limits that were hit (processes, memory, file size, open files) show up as the errors the
test got; `limit_hits` reads them from the test's messages.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import threading
from pathlib import Path
from typing import Any

from miner import lazy_re

REPORT = "violations.jsonl"
_MAX_LINES = 50
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PATH_EVENTS = {  # event -> index of the path argument that is written
    "os.mkdir": 0, "os.remove": 0, "os.rmdir": 0, "os.rename": 1, "os.link": 1, "os.symlink": 1,
    "os.truncate": 0, "os.chmod": 0, "os.chown": 0, "os.utime": 0, "os.mkfifo": 0, "os.mknod": 0,
}
_ALWAYS_WRITABLE = ("/dev/null", "/dev/shm", "/dev/stdout", "/dev/stderr", "/dev/tty", "/proc/self")


def install(report: str | os.PathLike[str], writable: list[str]) -> None:
    """Record, from now on, this process's writes outside `writable` and its network use."""
    fd = os.open(report, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    roots = [os.path.realpath(p) for p in (*writable, *_ALWAYS_WRITABLE)]
    seen: set[tuple[str, str]] = set()
    busy = threading.local()

    def allowed(path: Any) -> bool:
        if isinstance(path, int):
            return True  # an already open descriptor: its opening was checked
        try:
            p = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return True
        return any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots)

    def note(kind: str, what: str, event: str) -> None:
        if (kind, what) in seen or len(seen) >= _MAX_LINES:
            return
        seen.add((kind, what))
        os.write(fd, (json.dumps({"kind": kind, "what": what, "event": event}) + "\n").encode())

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if getattr(busy, "on", False):
            return
        busy.on = True
        try:
            if event == "open":
                path, mode, flags = (tuple(args) + (None, None))[:3]
                writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                    (mode is None and isinstance(flags, int) and flags & _WRITE_FLAGS)
                if writes and not allowed(path):
                    note("write", os.fsdecode(path), event)
            elif event in _PATH_EVENTS:
                path = args[_PATH_EVENTS[event]] if len(args) > _PATH_EVENTS[event] else None
                if path is not None and not allowed(path):
                    note("write", os.fsdecode(path), event)
            elif event in ("socket.connect", "socket.sendto"):
                sock, addr = args[0], args[-1]
                family = getattr(sock, "family", None)
                if family in (socket.AF_INET, socket.AF_INET6):
                    note("network", f"{event.split('.')[1]} {addr}", event)
                elif family == socket.AF_UNIX and isinstance(addr, str | bytes) and addr[:1] not in ("\0", b"\0") \
                        and not allowed(addr):
                    note("network", f"{event.split('.')[1]} unix:{os.fsdecode(addr)}", event)
        except Exception:  # noqa: BLE001 - reporting must never change what the test sees
            pass
        finally:
            busy.on = False

    sys.dont_write_bytecode = True  # else every import of a module without .pyc "writes" outside
    sys.addaudithook(hook)


def read(report: str | os.PathLike[str]) -> list[dict[str, str]]:
    out = []
    try:
        text = Path(report).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    for line in text.splitlines()[:_MAX_LINES]:
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            out.append({"kind": str(item.get("kind")), "what": str(item.get("what"))[:300]})
    return out


# What a test's error says when the sandbox stopped it (strerror texts of the errno values).
_LIMITS = (
    ("write", lazy_re.compile(r"Read-only file system(?:: '([^']*)')?")),
    ("network", lazy_re.compile(r"Network is unreachable|\[Errno 101\]")),
    ("processes", lazy_re.compile(r"(?:BlockingIOError|fork|thread).{0,80}Resource temporarily unavailable|"
                             r"Resource temporarily unavailable.{0,40}fork|can't start new thread", re.S)),
    ("memory", lazy_re.compile(r"\bMemoryError\b|[Cc]annot allocate memory|can't allocate memory|std::bad_alloc|"
                          r"out of memory \(host\)")),
    ("file_size", lazy_re.compile(r"File too large|\[Errno 27\]")),
    ("open_files", lazy_re.compile(r"Too many open files")),
)


def limit_hits(*texts: str) -> list[dict[str, str]]:
    """The sandbox limits named in these error texts, first hit of each kind."""
    out: list[dict[str, str]] = []
    for kind, rx in _LIMITS:
        for text in texts:
            m = rx.search(text or "")
            if m:
                what = m.group(1) if m.groups() and m.group(1) else m.group(0)
                out.append({"kind": kind, "what": " ".join(what.split())[:200]})
                break
    return out


def install_from_env() -> bool:
    """Install the hook when this process runs in a sandbox that asked for a report (KM_SANDBOX_REPORT).

    Writable: the cwd (the private copy of the kernel folder), $HOME and $TMPDIR (both in the work
    area). A write elsewhere in the work area (`../other_kernel/...`) is reported too: it aimed at
    another kernel's folder even though only an empty folder is there."""
    report, work = os.environ.get("KM_SANDBOX_REPORT"), os.environ.get("KM_SANDBOX_WORK")
    if not report or not work or getattr(sys, "_km_audit_installed", False):
        return False
    install(report, [os.getcwd(), *(os.environ[k] for k in ("HOME", "TMPDIR") if os.environ.get(k))])
    sys._km_audit_installed = True  # type: ignore[attr-defined]
    return True


def pytest_configure(config: Any) -> None:
    """As a pytest plugin (`-p miner.sandbox.audit`): report from the start of the session."""
    install_from_env()
