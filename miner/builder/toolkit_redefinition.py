"""A unit whose build stops because the source defines a function the toolkit now defines itself.

Code written for an older toolkit supplies what that toolkit lacked (`static __device__ double atomicAdd(double *,
double)` before CUDA 8 added one to sm_60_atomic_functions.h): nvcc stops on the redefinition, and so does the
original translation unit, which nvcc compiles with the same toolkit headers. The unit copied the definition as the
source wrote it, so no closure can make it compile faithfully: the build states why, as for a name the toolkit removed.
Stated only where the definition stands outside every `#if` of its file (an include guard aside): under a condition
the unit may have dropped, the original could skip it and the failure would be the unit's.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

from miner import lazy_re

# nvcc (EDG): `unit.cu(12): error: function "atomicAdd(double *, double)" has already been defined (previous
# definition at line 93 of /usr/local/cuda-13.0/bin/../targets/x86_64-linux/include/sm_60_atomic_functions.h)`.
_REDEFINED = lazy_re.compile(r'\((?P<line>\d+)\): error: function "(?P<sig>[^"]+)" has already been defined '
                        r'\(previous definition at line \d+ of (?P<prev>[^)]+)\)')
# The header the renderer writes above each copied declaration (templates/unit.cu.j2).
_PIECE = lazy_re.compile(r"^// \w+ \S+ from (?P<rel>\S+):(?P<line>\d+)$")
_COND = lazy_re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b")
_GUARD_OPEN = lazy_re.compile(r"^[ \t]*#[ \t]*(?:ifndef[ \t]+(\w+)|if[ \t]+!\s*defined\s*\(?\s*(\w+)\s*\)?)")
_DEFINE = lazy_re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)")


def _under(path: str, dirs: Iterable[str]) -> bool:
    real = os.path.realpath(path)
    return any(real.startswith(os.path.join(d, "")) for d in dirs)


def _piece_origin(unit_text: str, line_no: int) -> tuple[str, int] | None:
    """(file as the unit names it, line) of the copied declaration that holds unit line `line_no`; None where that
    line is the renderer's own text (a shim, the kernel, the launcher) or a conditional the unit wrote."""
    lines = unit_text.splitlines()
    for text in reversed(lines[:line_no]):
        if text.startswith(("// km:", "// the kernel,")) or _COND.match(text):
            return None
        if m := _PIECE.match(text):
            return m.group("rel"), int(m.group("line"))
    return None


def _source(root: str, sources: Iterable[str], rel: str) -> Path | None:
    """The one file among the closure's sources that the unit's `from REL:LINE` names (REL may be a path tail)."""
    found = [s for s in sources if s == rel or s.endswith("/" + rel)]
    return Path(root, found[0]) if len(found) == 1 else None


def _unconditional(path: Path, line_no: int) -> bool:
    """Whether line `line_no` of `path` stands outside every `#if` chain but the file's include guard (`#ifndef X`
    followed by `#define X`)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return False
    depth, guard_depth = 0, None
    for i, text in enumerate(lines[:line_no - 1]):
        m = _COND.match(text)
        if not m:
            continue
        kind = m.group(1)
        if kind in ("if", "ifdef", "ifndef"):
            g = _GUARD_OPEN.match(text)
            nxt = next((t for t in lines[i + 1:] if t.strip()), "")
            d = _DEFINE.match(nxt)
            if depth == 0 and guard_depth is None and g and d and d.group(1) == (g.group(1) or g.group(2)):
                guard_depth = 1
            depth += 1
        elif kind in ("elif", "else") and depth == 1 and guard_depth == 1:
            return False  # the include guard's other branch: not the declaration's text
        elif kind == "endif" and depth:
            depth -= 1
            if depth == 0:
                guard_depth = None
    return depth == (guard_depth or 0)


def redefined_by_toolkit(unit_text: str, error: str | None, toolkit_dirs: Callable[[], Iterable[str]],
                         root: str | None, sources: Iterable[str]) -> str | None:
    """The stated reason of a build that stopped on a function the source defines outside any condition and the
    toolkit's headers define too; None for any other failure. `toolkit_dirs` is asked only for such a failure."""
    m = _REDEFINED.search(error or "")
    if m is None or root is None or not _under(m.group("prev"), toolkit_dirs()):
        return None
    origin = _piece_origin(unit_text, int(m.group("line")))
    if origin is None:
        return None
    src = _source(root, sources, origin[0])
    if src is None or not _unconditional(src, origin[1]):
        return None
    header = os.path.basename(m.group("prev"))
    return (f"{m.group('sig')} is defined by the source ({origin[0]}:{origin[1]}, under no condition) and by this "
            f"toolkit's <{header}>: the original source does not compile with this toolkit either")
