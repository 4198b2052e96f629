"""Build switches that keep a translation unit off a header found nowhere.

A portability header often chooses between an external library and its own definitions by a value only the
build gives (`#if DEP_VER >= 10800` / `typedef int32_t int32;` ... / `#else` / `#include <dep/types.h>` /
`#endif`, with `-DDEP_VER=$(DEPVER)` in a makefile the configure step fills in). With nothing defined the parse
takes the `#else`, whose header is in neither the project, the toolkit nor the system: every name it would
declare is unknown, the closure cannot carry it, and every unit that names one fails ("the global scope has no
int32"). The build that compiles the project has the library or the value; the miner has only the text. So a
conditional whose branch in force includes a header found nowhere, decided by one plain name no source
`#define`s, is switched to a branch that holds declarations of its own and no missing header, by defining that
name to a value that selects it (`DEP_VER=10800`). The translation units that reach such a file are parsed with
the define and their units carry it, as feature switches are (miner.source.feature_guards).

Left alone: conditions on several names, on reserved names (`__CUDA_ARCH__`, `_WIN32`), on platform selectors
(HIP, ROCm, MUSA, CUDA, compilers, operating systems) or on names the project defines; a branch the enclosing
conditionals certainly switch off; a target branch with an `#error`, or with no text but directives (`#ifndef
NO_DEP` / `#include <dep.h>` / `#endif` would only switch the library off).
"""

from __future__ import annotations

import ast
import functools
import os
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field

from miner import lazy_re
from miner.units.headers import FRAMEWORK

_LINE = lazy_re.compile(
    r"^[ \t]*#[ \t]*(ifdef|ifndef|if|elif|else|endif|include|error)\b((?:[^\n\\]|\\\r?\n|\\.)*)", re.M)
_INCLUDE_NAME = lazy_re.compile(r'\s*([<"])([^>"\n]+)[>"]')
_NAME = lazy_re.compile(r"[A-Za-z_]\w*")
_NUMBER = lazy_re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b")
_COMMENT = lazy_re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_PLATFORM = lazy_re.compile(r"HIP|ROCM|MUSA|CUDA|NVCC|CLANG|GNUC|MSC|MSVC|WIN|APPLE|LINUX|POSIX|UNIX|ANDROID|ARM|X86",
                       re.I)
_DEFINE = lazy_re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)


@dataclass
class _Branch:
    kind: str                 # ifdef | ifndef | if | elif | else
    cond: str
    start: int                # offset after the directive line
    end: int = -1
    includes: list[tuple[str, bool]] = field(default_factory=list)   # (name, quoted), at this level only
    error: bool = False
    text: bool = False        # a line of code (not a directive, not blank) at this level


@dataclass
class _Chain:
    branches: list[_Branch]
    parents: list[tuple[_Chain, int]]   # enclosing chains and the branch of each this chain sits in


def _chains(data: bytes) -> list[_Chain]:
    """Every `#if` ... `#endif` chain of `data`, with its branches' own includes, errors and code lines."""
    text = data.decode("utf-8", "replace")
    out: list[_Chain] = []
    stack: list[_Chain] = []
    pos = 0

    def note_text(upto: int) -> None:
        # code lines between the previous directive and this one belong to the innermost open branch
        if stack and _COMMENT.sub("", text[pos:upto]).strip():
            stack[-1].branches[-1].text = True

    for m in _LINE.finditer(text):
        kind, rest = m.group(1), _COMMENT.sub(" ", m.group(2).replace("\\\n", " ")).strip()
        note_text(m.start())
        pos = m.end()
        if kind in ("ifdef", "ifndef", "if"):
            chain = _Chain([_Branch(kind, rest, m.end())], [(c, len(c.branches) - 1) for c in stack])
            out.append(chain)
            stack.append(chain)
        elif not stack:
            continue
        elif kind in ("elif", "else"):
            stack[-1].branches[-1].end = m.start()
            stack[-1].branches.append(_Branch(kind, rest, m.end()))
        elif kind == "endif":
            stack[-1].branches[-1].end = m.start()
            stack.pop()
        elif kind == "include" and (inc := _INCLUDE_NAME.match(rest)):
            stack[-1].branches[-1].includes.append((inc.group(2).strip(), inc.group(1) == '"'))
        elif kind == "error":
            stack[-1].branches[-1].error = True
    return out


def _names(cond: str) -> set[str]:
    return {n for n in _NAME.findall(_NUMBER.sub(" ", cond)) if n != "defined"}


_ALLOWED = (ast.Expression, ast.BoolOp, ast.And, ast.Or, ast.UnaryOp, ast.Not, ast.USub, ast.UAdd, ast.Compare,
            ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.BinOp, ast.Add, ast.Sub, ast.Mult, ast.Constant)


def _value(cond: str, env: dict[str, int]) -> bool | None:
    """The `#if` expression `cond` with the names of `env` defined to their values and every other name
    undefined (0); None where the expression is more than this evaluator reads."""
    expr = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)",
                  lambda m: "1" if (m.group(1) or m.group(2)) in env else "0", cond)
    expr = _NUMBER.sub(lambda m: str(int(m.group(1), 0)), expr)
    expr = _NAME.sub(lambda m: str(env.get(m.group(0), 0)), expr)
    expr = expr.replace("&&", " and ").replace("||", " or ")
    expr = re.sub(r"!(?!=)", " not ", expr)
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError:
        return None
    if not all(isinstance(n, _ALLOWED) for n in ast.walk(tree)):
        return None
    try:
        return bool(eval(compile(tree, "<#if>", "eval"), {"__builtins__": {}}))  # noqa: S307 (checked nodes)
    except (ArithmeticError, TypeError, ValueError):
        return None


def _holds(branch: _Branch, env: dict[str, int]) -> bool | None:
    if branch.kind == "ifdef":
        return branch.cond.split()[0] in env if branch.cond else None
    if branch.kind == "ifndef":
        return branch.cond.split()[0] not in env if branch.cond else None
    if branch.kind == "else":
        return True
    return _value(branch.cond, env)


def _active(chain: _Chain, env: dict[str, int]) -> int | None:
    """The branch in force (its index), -1 where none is; None where a condition cannot be read."""
    for i, b in enumerate(chain.branches):
        held = _holds(b, env)
        if held is None:
            return None
        if held:
            return i
    return -1


def _surely_off(chain: _Chain, defined: set[str]) -> bool:
    """Whether an enclosing conditional certainly switches this chain off with no project switch defined.
    A condition on a name the project defines (an include guard) or on a reserved name may hold."""
    for parent, idx in chain.parents:
        names = set().union(*(_names(b.cond) for b in parent.branches if b.kind != "else"))
        if names & defined or any(n.startswith("_") for n in names):
            continue
        active = _active(parent, {})
        if active is not None and active != idx:
            return True
    return False


def _candidates(chain: _Chain) -> list[int]:
    nums = sorted({int(m.group(1), 0) for b in chain.branches for m in _NUMBER.finditer(b.cond)})
    return list(dict.fromkeys([1, *nums, *(n + 1 for n in nums), 0, *(n - 1 for n in nums)]))


def switches(texts: dict[str, bytes], found: Callable[[str, str, bool], bool]) -> dict[str, dict[str, int]]:
    """Per file, the names (and values) that switch its conditionals off a header found nowhere
    (`found(path, name, quoted)` says whether `#include` of `name` in `path` finds a file)."""
    defined: set[str] = set()
    for t in texts.values():
        if b"define" in t:
            defined.update(_DEFINE.findall(t.decode("utf-8", "replace")))
    out: dict[str, dict[str, int]] = {}
    for path, data in texts.items():
        if b"#" not in data or b"include" not in data:
            continue
        for chain in _chains(data):
            names = set().union(*(_names(b.cond) for b in chain.branches if b.kind != "else"))
            if len(names) != 1:
                continue
            (name,) = names
            if name in defined or name.startswith("_") or _PLATFORM.search(name) or _surely_off(chain, defined):
                continue
            here = _active(chain, {})
            if here is None or here < 0:
                continue
            if all(found(path, inc, quoted) for inc, quoted in chain.branches[here].includes):
                continue
            for value in _candidates(chain):
                other = _active(chain, {name: value})
                if other is None or other < 0 or other == here:
                    continue
                b = chain.branches[other]
                if b.error or not b.text or not all(found(path, inc, quoted) for inc, quoted in b.includes):
                    continue
                out.setdefault(path, {})[name] = value
                break
    return out


@functools.cache
def system_include_dirs() -> tuple[str, ...]:
    """The host C++ compiler's include search list (`c++ -E -v`): where `<vector>` or `<unistd.h>` are found."""
    try:
        proc = subprocess.run(["c++", "-E", "-x", "c++", "-v", os.devnull], capture_output=True, text=True,
                              timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    text = proc.stderr
    start, end = text.find("#include <...> search starts here:"), text.find("End of search list.")
    if start < 0 or end < 0:
        return ()
    return tuple(line.strip() for line in text[start:end].splitlines()[1:] if os.path.isdir(line.strip()))


def finder(paths: list[str], include_dirs: list[str], toolkit_dirs: tuple[str, ...],
           extra_dirs: tuple[str, ...] = ()) -> Callable[[str, str, bool], bool]:
    """`found(path, name, quoted)`: beside the includer (quoted), in the project's include dirs, among the
    project's files by path tail, in the toolkit's or the system's include dirs, or a framework header (the
    parse's shims stand in for torch)."""
    tails = {p.replace(os.sep, "/") for p in paths}
    dirs = [*include_dirs, *toolkit_dirs, *system_include_dirs(), *extra_dirs]

    @functools.cache
    def anywhere(name: str) -> bool:
        if FRAMEWORK.match(name) or any(os.path.isfile(os.path.join(d, name)) for d in dirs):
            return True
        tail = "/" + name.lstrip("./")
        return any(p.endswith(tail) for p in tails)

    def found(path: str, name: str, quoted: bool) -> bool:
        return (quoted and os.path.isfile(os.path.join(os.path.dirname(path), name))) or anywhere(name)

    return found
