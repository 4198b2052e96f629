"""Reading a build file (setup.py, CMakeLists.txt, a Makefile, a shell script) as text, bounded in size.

Build files are read by several configuration readers; a generated or vendored file of megabytes says nothing about
how a kernel is compiled and would only cost time, so each reader names its own bound.
"""

from __future__ import annotations

import os


def read_build_file(path: str, max_bytes: int, *, head_of_larger: bool = False) -> str:
    """The file's text, or "" when it cannot be read. A file over `max_bytes` is skipped whole, or, with
    `head_of_larger`, read up to that bound (a Makefile's variables come before its rules)."""
    try:
        if not head_of_larger and os.path.getsize(path) > max_bytes:
            return ""
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(max_bytes) if head_of_larger else fh.read()
    except OSError:
        return ""
