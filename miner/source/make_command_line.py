"""Macros a Makefile defines from variables only make's command line fills (issue 14):

    MAX_LEN=
    ...
    %.o: %.cu
        $(NVCC) -c -DMAX_LEN=$(MAX_LEN) $< -o $@        # built with `make MAX_LEN=512`

The build passes `-DMAX_LEN=$(MAX_LEN)`, and the Makefile leaves the variable without a value (empty, or never
assigned): what it is comes from the command line (`make MAX_LEN=...`), so no configuration mined from the tree
defines the macro, and a kernel that uses it fails as the original does without the value. A variable with a
default (`MAX_LEN ?= 512`) is not listed: its value is the tree's (make_vars expands it for build_flags).
"""

from __future__ import annotations

import functools
import os
from typing import Any

from miner import lazy_re
from miner.source import make_vars
from miner.source.build_files import read_build_file

_MAKEFILE = lazy_re.compile(r"^(?:GNUmakefile|[Mm]akefile(?:\..*)?|.*\.mk)$")
# `-DNAME=$(VAR)`, `-DNAME=${VAR}` (in a recipe, or a flags variable's value), possibly comma-joined after
# `-Xcompiler`.
_DEFINE_FROM_VAR = lazy_re.compile(r"-D([A-Za-z_]\w*)=\$[({]([A-Za-z_][\w.-]*)[)}]")
_MAX_FILES = 64
_MAX_BYTES = 1_000_000


@functools.lru_cache(maxsize=64)
def command_line_defines(root: str) -> dict[str, tuple[str, str]]:
    """Macro -> (make variable, the Makefile relative to `root`) for each `-DNAME=$(VAR)` of the project's
    Makefiles whose variable the Makefile leaves without a value."""
    out: dict[str, tuple[str, str]] = {}
    seen = 0
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if not _MAKEFILE.match(f) or seen >= _MAX_FILES:
                continue
            seen += 1
            path = os.path.join(dirpath, f)
            for name, (var, _) in _unset_defines(path).items():
                out.setdefault(name, (var, os.path.relpath(path, root)))
    return out


def _read(path: str) -> str:
    return read_build_file(path, _MAX_BYTES, head_of_larger=True)


def _unset_defines(path: str) -> dict[str, tuple[str, str]]:
    variables: dict[str, str] = {}
    refs: dict[str, str] = {}
    for line in make_vars.lines(path, _read, variables):
        make_vars.assign(line, variables)
        for m in _DEFINE_FROM_VAR.finditer(line):
            refs.setdefault(m.group(1), m.group(2))
    return {name: (var, path) for name, var in refs.items()
            if not make_vars.expand(variables.get(var, ""), variables).strip()}


def statement(root: str, unresolved: list[dict[str, Any]], named: set[str] | None) -> tuple[list[str], str] | None:
    """The names the parse found declared nowhere that a project Makefile defines from a variable only make's
    command line fills, and the statement that says so (the unit's `// km:lacks-headers` reason,
    units.render._lacking_statement); None where there are none. That, not any header, is why the original fails
    without them."""
    found = command_line_defines(root)
    syms = list(dict.fromkeys(u["symbol"] for u in unresolved if u.get("symbol") in found
                              and (u.get("lacking") or u.get("nowhere")) and (named is None or u["symbol"] in named)))
    if not syms:
        return None
    files = list(dict.fromkeys(found[s][1] for s in syms))
    passes = ", ".join(f"-D{s}=$({found[s][0]})" for s in syms)
    variables = ", ".join(dict.fromkeys(found[s][0] for s in syms))
    return syms, (f"{', '.join(syms)} {'is' if len(syms) == 1 else 'are'} given on make's command line: "
                  f"{', '.join(files)} passes {passes} and gives {variables} no value (`make "
                  f"{' '.join(f'{v}=...' for v in dict.fromkeys(found[s][0] for s in syms))}`), so the original "
                  f"translation unit does not compile without {'it' if len(syms) == 1 else 'them'} either")
