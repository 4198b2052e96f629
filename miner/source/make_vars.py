"""What a Makefile's nvcc command line holds once its variables are expanded.

A Makefile often gives nvcc no literal flag at all: the recipe runs `$(GPUCXX) $(GPUFLAGS) -c $< -o $@`, the
flags variable appends another (`GPUFLAGS += $(DFLAGS) -Isrc`), and that one is filled by a build-type makefile
the main one includes through a variable with a default (`TYPE ?= hydro` / `include builds/make.type.$(TYPE)`,
whose `DFLAGS += -DPRECISION=2` decides which `typedef ... Real;` exists). This module reads such a build as
`make` would with no variable given on its command line: assignments (`=`, `:=`, `::=`, `+=`, `?=`) in order,
includes whose name expands to a file of the tree, and `$(X)` / `${X}` references expanded recursively. The
caller decides which lines count (the platform rule of build_flags: a line under an option's condition is not
what the build always passes); functions (`$(shell ...)`, `$(findstring ...)`) are not evaluated, and a word
left holding `$` is no flag.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator

from miner import lazy_re

_ASSIGN = lazy_re.compile(r"^\s*(?:export\s+|override\s+)*([A-Za-z_][\w.-]*)\s*(\+=|\?=|::?=|:::=|=)(.*)$")
_INCLUDE = lazy_re.compile(r"^\s*-?s?include\s+(\S.*)$")
_REF = lazy_re.compile(r"\$[({]([A-Za-z_][\w.-]*)[)}]")
_RECIPE_COMPILER = lazy_re.compile(r"^\t\s*@?\s*(\$[({][A-Za-z_][\w.-]*[)}]|\S+)")
_MAX_DEPTH = 4  # includes followed; references expanded


def lines(path: str, read: Callable[[str], str], variables: dict[str, str], depth: int = 0) -> Iterator[str]:
    """The lines of the Makefile at `path` with the lines of the makefiles it includes in their place (an
    include whose name, expanded with `variables` as assigned so far, is a file beside the top Makefile's
    folder or the including one's). The caller assigns as it goes (`assign`), so a later include sees them."""
    folder = os.path.dirname(path)
    for raw in _joined(read(path)):
        line = raw.split("#", 1)[0].rstrip()
        m = _INCLUDE.match(line)
        if m is None or depth >= _MAX_DEPTH:
            yield line
            continue
        for name in expand(m.group(1), variables).split():
            if "$" in name:
                continue  # `include builds/make.host.$(MACHINE)` with `MACHINE ?= $(shell ...)`: not known
            target = name if os.path.isabs(name) else os.path.join(folder, name)
            if os.path.isfile(target):
                yield from lines(target, read, variables, depth + 1)


def _joined(text: str) -> list[str]:
    """The Makefile's logical lines: a line ending in `\\` goes on in the next, as make reads it (`TYPES = \\`,
    then `-DSCALAR=double \\` and `-DORDINAL=int` on lines of their own: read line by line, the variable was `\\`
    and its defines were lost). A recipe line keeps its break (the shell's continuation), read here as one line."""
    out: list[str] = []
    pending: str | None = None
    for raw in text.splitlines():
        if pending is not None:
            raw = pending + " " + raw.lstrip()
        body = raw.rstrip()
        if body.endswith("\\") and not body.endswith("\\\\"):
            pending = body[:-1].rstrip()
            continue
        pending = None
        out.append(raw)
    if pending is not None:
        out.append(pending)
    return out


_RULE = lazy_re.compile(r"^[^\t#:=\s][^=]*?:(?![=:])")  # `target: prereqs` (not `X := v`, `X ::= v`)
_CONDITIONAL = lazy_re.compile(r"^\s*(?:ifeq|ifneq|ifdef|ifndef|else|endif)\b")
_MESSAGE = lazy_re.compile(
    r"^\s*\$[({](?:info|warning|error)\s")  # `$(info CUDA_PATH: ...)`: no rule, whatever it holds


class Recipes:
    """Which tab-started lines are recipes, as GNU make reads them: only those after a rule (`target: prereqs`),
    up to the next line that is neither a recipe, a conditional nor blank. A tab-indented line elsewhere (the body
    of `ifdef CUDA_AVAILABLE` / `\tCXX = nvcc` before any rule) is an ordinary line, an assignment included: read
    as a recipe, a CUDA build's compiler and flags set in an indented conditional were lost."""

    def __init__(self) -> None:
        self.in_rule = False

    def is_recipe(self, line: str) -> bool:
        if line.startswith("\t"):
            return self.in_rule
        if line.strip() and not _CONDITIONAL.match(line) and not _MESSAGE.match(line):
            self.in_rule = _RULE.match(line) is not None and _ASSIGN.match(line) is None
        return False


def assign(line: str, variables: dict[str, str]) -> str | None:
    """Apply the assignment on `line` (if it is one) to `variables`; the name assigned, or None."""
    m = _ASSIGN.match(line)
    if m is None or line.startswith("\t"):
        return None
    name, op, value = m.group(1), m.group(2), m.group(3).strip()
    if op == "?=":
        variables.setdefault(name, value)
    elif op == "+=":
        variables[name] = f"{variables[name]} {value}".strip() if name in variables else value
    else:
        variables[name] = value
    return name


def expand(value: str, variables: dict[str, str], depth: int = 0) -> str:
    """`value` with every `$(X)` / `${X}` of a known variable replaced by its expanded value; unknown
    references and function calls stay as written."""
    if depth >= _MAX_DEPTH or "$" not in value:
        return value
    return _REF.sub(lambda m: expand(variables[m.group(1)], variables, depth + 1) if m.group(1) in variables
                    else m.group(0), value)


def recipe_flag_variables(line: str, variables: dict[str, str]) -> list[str]:
    """The variables a recipe line passes to nvcc: on a line whose command is nvcc (written, or a variable whose
    value is nvcc: `GPUCXX ?= nvcc` / `$(GPUCXX) $(GPUFLAGS) -c $<`), every other variable it references."""
    m = _RECIPE_COMPILER.match(line)
    if m is None or not re.search(r"\bnvcc\b", expand(m.group(1), variables)):
        return []
    return [r.group(1) for r in _REF.finditer(line[m.end():])]
