"""Discover: turn the paths a user gave into readable CUDA/C++ source files."""

from __future__ import annotations

import errno
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from miner import lazy_re
from miner.errors import UsageError
from miner.source import qualifier_macros

SOURCE_SUFFIXES = {".cu", ".cuh", ".hip", ".h", ".hpp", ".hh", ".hxx", ".cpp", ".cc", ".cxx", ".inl"}
# `#include "kernel_files/step.cuknl"`: a quoted include, resolved beside its includer.
_QUOTED_INCLUDE = lazy_re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)
# A launch written with chevrons, joined or spaced as nvcc also accepts (`k << <grid, block >> >(...)`).
_CHEVRON_LAUNCH = lazy_re.compile(rb"<<<|<<[ \t]+<|<[ \t]+<<")
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".tox", ".venv"}


@dataclass
class SourceFile:
    path: str  # real path
    data: bytes
    explicit: bool  # named on the command line rather than found in a directory
    # Writes kernels with a qualifier macro nothing defines (miner.source.qualifier_macros), not `__global__`.
    macro_kernels: bool = False

    @property
    def has_kernel(self) -> bool:
        return self.macro_kernels or b"__global__" in self.data


@dataclass
class Discovery:
    files: list[SourceFile] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # one line each
    notes: list[str] = field(default_factory=list)  # skipped quietly; shown with --verbose
    roots: list[str] = field(default_factory=list)  # directories given (for include resolution)
    # Kernel qualifier macros nothing defines -> what they stand for (`GLOBALQUALIFIER` -> `__global__`).
    kernel_macros: dict[str, str] = field(default_factory=dict)
    # Kernel qualifier macros the project defines as `__global__` -> the switch whose branch defines them (None:
    # none needed), miner.source.qualifier_macros.defined_qualifiers.
    defined_kernel_macros: dict[str, str | None] = field(default_factory=dict)

    def kernel_switches(self) -> list[str]:
        """The names to define so that every defined kernel qualifier macro means `__global__` (`CUDA`)."""
        return sorted({s for s in self.defined_kernel_macros.values() if s})

    def kernel_files(self) -> list[SourceFile]:
        return [f for f in self.files if f.has_kernel]


def _check_text(path: str, data: bytes) -> str | None:
    """Why `data` cannot be a CUDA source, or None."""
    if not data.strip():
        return "file is empty"
    if b"\x00" in data[:8192]:
        return "binary file, not CUDA/C++ source"
    # Text that is not UTF-8 (a Latin-1 `f\xfcr` in a comment of an older C code base) is still source: the
    # compilers read bytes, the miner works on byte offsets and decodes what it shows with replacement.
    return None


def _read(path: str, explicit: bool, out: Discovery) -> None:
    try:
        real = os.path.realpath(path, strict=True)
        with open(real, "rb") as fh:
            data = fh.read()
    except PermissionError:
        out.failures.append(f"{path}: cannot read: permission denied")
        return
    except OSError as exc:
        reason = "symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
        out.failures.append(f"{path}: cannot read: {reason}")
        return
    problem = _check_text(path, data)
    if problem:
        # In a directory walk, empty or binary files are skipped; named on the command line, an error.
        if explicit:
            out.failures.append(f"{path}: {problem}")
        else:
            out.notes.append(f"{path}: skipped, {problem}")
        return
    out.files.append(SourceFile(path=real, data=data, explicit=explicit))


def _walk(root: str, out: Discovery) -> None:
    seen_dirs: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            st = os.stat(d)
        except OSError as exc:
            reason = "symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
            out.failures.append(f"{d}: cannot enter directory: {reason}")
            continue
        key = (st.st_dev, st.st_ino)
        if key in seen_dirs:
            out.failures.append(f"{d}: skipped, symlink loop (directory already visited)")
            continue
        seen_dirs.add(key)
        try:
            entries = sorted(os.scandir(d), key=lambda e: e.name)
        except PermissionError:
            out.failures.append(f"{d}: cannot list directory: permission denied")
            continue
        except OSError as exc:
            out.failures.append(f"{d}: cannot list directory: {exc.strerror or exc}")
            continue
        for e in reversed(entries):
            try:
                is_dir = e.is_dir(follow_symlinks=True)
            except OSError:
                is_dir = False
            if is_dir:
                if e.name not in _SKIP_DIRS:
                    stack.append(e.path)
            elif Path(e.name).suffix.lower() in SOURCE_SUFFIXES:
                _read(e.path, explicit=False, out=out)
    out.files.sort(key=lambda f: f.path)


def _under(path: str, roots: list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip(os.sep) + os.sep) for r in roots)


def _add_included_kernel_files(out: Discovery) -> None:
    """A file a source of the walked folders includes is CUDA source whatever its suffix: kernels kept in
    `step.cuknl` (or `.inc`, `.cuinl`) files that a `.cu` includes are the project's kernels, and the suffix list
    alone never reaches them. Only files inside the given folders that define a kernel or launch one with chevrons
    are added (others stay headers the parse finds on its own), transitively (such a file may include the next):
    an input's spaced chevrons (`k << <g, b >> >(...)`, a `.tcu` template file's launches) are joined for the parse
    (clang_frontend._joined_chevrons), which otherwise drops those launches."""
    if not out.roots:
        return
    have = {f.path for f in out.files}
    todo = list(out.files)
    while todo:
        f = todo.pop()
        here = os.path.dirname(f.path)
        for m in _QUOTED_INCLUDE.finditer(f.data):
            name = os.fsdecode(m.group(1)).strip()
            cand = os.path.join(here, name)
            if not os.path.isfile(cand):
                continue
            real = os.path.realpath(cand)
            if real in have or not _under(real, out.roots) or Path(real).suffix.lower() in SOURCE_SUFFIXES:
                continue
            have.add(real)
            scratch = Discovery()
            _read(real, explicit=False, out=scratch)
            for g in scratch.files:  # an unreadable or binary file is left out quietly, as in a walk
                todo.append(g)  # a kernel-less one is still followed: it may include the kernels' file
                if g.has_kernel or _CHEVRON_LAUNCH.search(g.data):
                    out.files.append(g)


def discover(paths: list[str]) -> Discovery:
    """Read every input; raises UsageError only when nothing at all can be done."""
    out = Discovery()
    for p in paths:
        if not os.path.lexists(p):
            raise UsageError(f"{p}: no such file or directory")
        if os.path.isdir(p):
            out.roots.append(os.path.realpath(p))
            _walk(p, out)
        else:
            _read(p, explicit=True, out=out)
    _add_included_kernel_files(out)
    # One file reached twice (a symlink, or a file and its directory) is one input.
    unique: dict[str, SourceFile] = {}
    for f in out.files:
        unique.setdefault(f.path, f)
    out.files = sorted(unique.values(), key=lambda f: f.path)
    out.kernel_macros = qualifier_macros.kernel_qualifiers(f.data for f in out.files)
    out.defined_kernel_macros = qualifier_macros.defined_qualifiers(f.data for f in out.files)
    macros = {**out.kernel_macros, **dict.fromkeys(out.defined_kernel_macros, "__global__")}
    for f in out.files:
        f.macro_kernels = qualifier_macros.uses(f.data, macros)
    return out
