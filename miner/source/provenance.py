"""Where a kernel comes from: git remote, commit, SPDX license, path relative to the repo root."""

from __future__ import annotations

import functools
import os
import re
import subprocess
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

_LICENSE_FILES = ("LICENSE", "LICENSE.txt", "LICENSE.md", "LICENCE", "COPYING", "LICENSE.rst")
# Ordered: the first matching fingerprint wins (LGPL before GPL, BSD-3 before BSD-2).
_SPDX = [
    ("Apache-2.0", [r"Apache License", r"Version 2\.0"]),
    ("MPL-2.0", [r"Mozilla Public License", r"2\.0"]),
    ("LGPL-3.0", [r"GNU LESSER GENERAL PUBLIC LICENSE", r"Version 3"]),
    ("LGPL-2.1", [r"GNU LESSER GENERAL PUBLIC LICENSE", r"Version 2\.1"]),
    ("AGPL-3.0", [r"GNU AFFERO GENERAL PUBLIC LICENSE"]),
    ("GPL-3.0", [r"GNU GENERAL PUBLIC LICENSE", r"Version 3"]),
    ("GPL-2.0", [r"GNU GENERAL PUBLIC LICENSE", r"Version 2"]),
    ("MIT", [r"Permission is hereby granted, free of charge"]),
    ("BSD-3-Clause", [r"Redistribution and use in source and binary forms",
                      r"Neither the name|names of its\s+contributors"]),
    ("BSD-2-Clause", [r"Redistribution and use in source and binary forms"]),
    ("BSL-1.0", [r"Boost Software License"]),
    ("Unlicense", [r"This is free and unencumbered software released into the public domain"]),
    ("Zlib", [r"This software is provided 'as-is', without any express or implied"]),
]


@dataclass(frozen=True)
class Origin:
    root: str  # repo root (or the input directory when not in git)
    repo: str | None
    commit: str | None
    license: str | None


def _git(root: str, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def _scrub_url(url: str | None) -> str | None:
    """Drop credentials that CI checkouts embed in remote URLs."""
    if not url or "://" not in url:
        return url
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def detect_license(text: str) -> str | None:
    m = re.search(r"SPDX-License-Identifier:\s*([\w.\-+]+)", text)
    if m:
        return m.group(1)
    for spdx, patterns in _SPDX:
        if all(re.search(p, text, re.I) for p in patterns):
            return spdx
    return None


@functools.cache
def _license_in(root: str) -> str | None:
    for name in _LICENSE_FILES:
        p = os.path.join(root, name)
        if os.path.isfile(p):
            try:
                with open(p, encoding="utf-8", errors="replace") as fh:
                    return detect_license(fh.read(20000))
            except OSError:
                return None
    return None


def _find_up(start: str, stop: str | None, pred) -> str | None:
    d = start
    while True:
        if pred(d):
            return d
        parent = os.path.dirname(d)
        if parent == d or (stop is not None and d == stop):
            return None
        d = parent


@functools.cache
def _git_root(directory: str) -> str | None:
    return _find_up(directory, None, lambda d: os.path.exists(os.path.join(d, ".git")))


@functools.cache
def _origin_for_git(root: str) -> Origin:
    return Origin(
        root=root,
        repo=_scrub_url(_git(root, "config", "--get", "remote.origin.url")),
        commit=_git(root, "rev-parse", "HEAD"),
        license=_license_in(root),
    )


@functools.cache
def _tracked(root: str) -> frozenset[str] | None:
    """Real paths of the files the checkout at `root` tracks; None when git cannot say."""
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], capture_output=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return frozenset(os.path.join(root, p) for p in out.stdout.decode("utf-8", "surrogateescape").split("\0") if p)


def _in_checkout(root: str, path: str) -> bool:
    """The file belongs to the checkout's commit: tracked there. An untracked or ignored tree inside a checkout
    (a release tarball unpacked into it, a vendored download) is not that checkout's code."""
    tracked = _tracked(root)
    return tracked is None or path in tracked


def origin_of(path: str, input_root: str) -> Origin:
    """Origin of a file: its git repo when the checkout tracks it, else the directory the user pointed at,
    with the license of the nearest license file between the file and that directory."""
    directory = os.path.dirname(path)
    root = _git_root(directory)
    if root is not None and _in_checkout(root, path):
        return _origin_for_git(root)
    lic_dir = _find_up(directory, input_root, lambda d: _license_in(d) is not None)
    return Origin(root=input_root, repo=None, commit=None,
                  license=_license_in(lic_dir) if lic_dir else None)
