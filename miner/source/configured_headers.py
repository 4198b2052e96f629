"""Headers the build writes from a CMake template: `#include <lib/config.h>` where the tree holds only
`lib/config.h.in` (or `config.h.cmake`), which a `configure_file()` fills in.

A header-only library often chooses its backend there: `#define LIB_BACKEND_MACRO_NAMESPACE @LIB_MACRO_NS@`,
with `set(LIB_MACRO_NS ...)` / `string(TOUPPER ...)` in its CMake files, and builds every annotation by token
pasting (`#define LIB_HOST_DEVICE LIB_CAT3(LIB_, LIB_BACKEND_MACRO_NAMESPACE, _HOST_DEVICE)`). Without the
configured header nothing names the backend: the paste gives `LIB_LIB_BACKEND_MACRO_NAMESPACE_HOST_DEVICE`,
every declaration that carries it fails ("this declaration has no storage class or type specifier"), and so
does a backend header included through a macro (`#include LIB_BACKEND_HEADER(platform.h)`).

The miner does not run CMake; it reads the template and the CMake files as text. The variables are those a
default configure gives: the CMake files from the top of the project down to the one whose `configure_file()`
names the template are read in order (`set`, `set(... CACHE ...)`, `option`, `string(TOUPPER|TOLOWER|REPLACE|
REGEX REPLACE|APPEND|PREPEND|CONCAT|STRIP)`, `list(APPEND)`, `project(NAME VERSION x.y.z)`, `if()` on what
those set; `add_subdirectory` toward that file), and a block whose condition names what they do not set
(a compiler, a platform, the environment) is left out. The template's macros become defines of the
translation units that reach its includer: `#define NAME @VAR@` / `${VAR}`, `#cmakedefine NAME ...` (defined
where VAR is on) and `#cmakedefine01 NAME` (1 or 0). A `#define` whose value names a variable the reading left
unknown is not given. Only templates that hold nothing but macros (directives, comments, namespace braces) are
read this way.

A template that holds declarations (`nccl.h.in`: the library's handle types and API beside its version macros) is
written out instead, as the build would write it (`generated`, `configured_text`), into a folder of the user's cache
that the parse searches; it is project context, so units inline what they use of it. Its placeholders may be the
project's own (`${nccl:Major}`), replaced by a `sed` in a Makefile or a `string(REPLACE)` in a `cmake -P` script:
those scripts are read for the value they put in (a make variable, a CMake variable, `file(READ)` of a version
fragment and `math(EXPR)` included).
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from miner import lazy_re

_SUFFIXES = (".in", ".cmake", ".cmakein")
_SKIP_DIRS = {".git", "build", "node_modules", "__pycache__", "third_party", "3rdparty", "external"}
_MAX_FILES = 20000
_MAX_BYTES = 1_000_000

_INCLUDE = lazy_re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.M)
_DIRECTIVE = lazy_re.compile(r"^[ \t]*#[ \t]*(\w+)[ \t]*((?:[^\n\\]|\\\r?\n|\\.)*)", re.M)
_COMMENT = lazy_re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_AT_VAR = lazy_re.compile(r"@(\w+)@")
_BRACE_VAR = lazy_re.compile(r"\$\{(\w+)\}")
_FALSE = {"", "0", "OFF", "NO", "FALSE", "N", "IGNORE", "NOTFOUND"}
_TRUE = {"1", "ON", "YES", "TRUE", "Y"}


class _Unknown(Exception):
    """A value the text reading cannot know (a variable only the environment or a find module sets)."""


# ----------------------------------------------------------------------------------------------------------- CMake


@dataclass
class _Arg:
    text: str
    quoted: bool


@dataclass
class _Cmd:
    name: str
    args: list[_Arg]


def _commands(text: str) -> list[_Cmd]:
    """The command invocations of a CMake file, in order, with their raw arguments."""
    out: list[_Cmd] = []
    i, n = 0, len(text)
    ident = re.compile(r"[A-Za-z_]\w*")
    while i < n:
        c = text[i]
        if c == "#":
            m = re.match(r"#\[(=*)\[", text[i:])
            if m:
                end = text.find("]" + m.group(1) + "]", i)
                i = n if end < 0 else end + len(m.group(1)) + 2
            else:
                end = text.find("\n", i)
                i = n if end < 0 else end
            continue
        m = ident.match(text, i)
        if not m:
            i += 1
            continue
        j = m.end()
        while j < n and text[j] in " \t":
            j += 1
        if j >= n or text[j] != "(":
            i = m.end()
            continue
        args, i = _arguments(text, j + 1)
        out.append(_Cmd(m.group(0).lower(), args))
    return out


def _arguments(text: str, i: int) -> tuple[list[_Arg], int]:
    args: list[_Arg] = []
    n, depth, cur = len(text), 0, ""
    while i < n:
        c = text[i]
        if c == '"':
            j, buf = i + 1, ""
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n:
                    buf += text[j:j + 2] if text[j + 1] not in '"\\\n' else (text[j + 1] if text[j + 1] != "\n" else "")
                    j += 2
                    continue
                buf += text[j]
                j += 1
            if cur:
                cur += buf  # a quote inside an unquoted argument
            else:
                args.append(_Arg(buf, True))
            i = j + 1
            continue
        if c == "[" and not cur and (m := re.match(r"\[(=*)\[", text[i:])):
            end = text.find("]" + m.group(1) + "]", i)
            end = n if end < 0 else end
            args.append(_Arg(text[i + len(m.group(0)):end], True))
            i = end + len(m.group(1)) + 2
            continue
        if c == "#" and not cur:
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c == "(":
            depth += 1
            cur += c
        elif c == ")":
            if depth == 0:
                if cur:
                    args.append(_Arg(cur, False))
                return args, i + 1
            depth -= 1
            cur += c
        elif c.isspace():
            if cur:
                args.append(_Arg(cur, False))
                cur = ""
        else:
            cur += c
        i += 1
    return args, n


class _Vars:
    def __init__(self, normal: dict[str, str | None], cache: dict[str, str | None]) -> None:
        self.normal, self.cache = normal, cache  # a None value: set to something this reading cannot know

    def child(self) -> _Vars:
        return _Vars(dict(self.normal), self.cache)

    def defined(self, name: str) -> bool:
        return name in self.normal or name in self.cache

    def get(self, name: str) -> str:
        v = self.normal[name] if name in self.normal else self.cache.get(name)
        if v is None:
            raise _Unknown(name)
        return v

    def expand(self, s: str) -> str:
        if "$" not in s:
            return s
        if "$ENV{" in s or "$CACHE{" in s or "$<" in s:
            raise _Unknown(s)
        for _ in range(32):
            m = _BRACE_VAR.search(s)  # innermost first: a `${NAME}` has no `${` inside
            if m is None:
                return s
            s = s[:m.start()] + self.get(m.group(1)) + s[m.end():]
        raise _Unknown(s)


def _truthy(value: str) -> bool:
    v = value.upper()
    return not (v in _FALSE or v.endswith("-NOTFOUND"))


def _constant(value: str) -> bool | None:
    v = value.upper()
    if v in _TRUE or re.fullmatch(r"-?\d+(\.\d+)?", v) and float(v) != 0:
        return True
    if v in _FALSE or v.endswith("-NOTFOUND") or re.fullmatch(r"-?0+(\.0+)?", v):
        return False
    return None


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:4])


class _Condition:
    """An `if()` condition over the variables read so far; _Unknown where it names anything else."""

    _UNARY = {"DEFINED", "EXISTS", "COMMAND", "TARGET", "POLICY", "IS_DIRECTORY", "IS_ABSOLUTE", "TEST",
              "IS_SYMLINK", "IS_READABLE", "IS_WRITABLE", "IS_EXECUTABLE"}
    _BINARY = {"STREQUAL", "STRLESS", "STRGREATER", "STRLESS_EQUAL", "STRGREATER_EQUAL", "EQUAL", "LESS", "GREATER",
               "LESS_EQUAL", "GREATER_EQUAL", "MATCHES", "VERSION_EQUAL", "VERSION_LESS", "VERSION_GREATER",
               "VERSION_LESS_EQUAL", "VERSION_GREATER_EQUAL", "IN_LIST", "IS_NEWER_THAN", "PATH_EQUAL"}

    def __init__(self, args: list[_Arg], env: _Vars) -> None:
        self.env = env
        self.toks = [(a.text if a.quoted else env.expand(a.text), a.quoted) for a in args]
        self.pos = 0

    def value(self) -> bool:
        if not self.toks:
            return False
        out = self._or()
        if self.pos != len(self.toks):
            raise _Unknown("condition")
        return out

    def _peek(self) -> str | None:
        if self.pos < len(self.toks) and not self.toks[self.pos][1]:
            return self.toks[self.pos][0]
        return None

    def _or(self) -> bool:
        return self._chain("OR", self._and, True)

    def _and(self) -> bool:
        return self._chain("AND", self._not, False)

    def _chain(self, word: str, operand: Callable[[], bool], absorbing: bool) -> bool:
        """`a OR b OR ...` (absorbing True) or `a AND b ...` (absorbing False), three-valued: an unknown operand
        is decided by an absorbing one beside it, else the chain is unknown."""
        left: bool | None
        try:
            left = operand()
        except _Unknown:
            left = None
        while self._peek() == word:
            self.pos += 1
            try:
                right: bool | None = operand()
            except _Unknown:
                right = None
            left = absorbing if absorbing in (left, right) else (None if None in (left, right) else not absorbing)
        if left is None:
            raise _Unknown("condition")
        return left

    def _not(self) -> bool:
        if self._peek() == "NOT":
            self.pos += 1
            return not self._not()
        return self._binary()

    def _operand(self, tok: tuple[str, bool]) -> str:
        text, quoted = tok
        if quoted:
            return text
        if self.env.defined(text):
            return self.env.get(text)
        if re.fullmatch(r"[A-Za-z_]\w*", text) and _constant(text) is None:
            raise _Unknown(text)  # an unset name: a variable only the configure environment may give
        return text

    def _binary(self) -> bool:
        if self.pos >= len(self.toks):
            raise _Unknown("condition")
        tok = self.toks[self.pos]
        if tok[0] == "(" and not tok[1]:
            self.pos += 1
            out = self._or()
            if self._peek() != ")":
                raise _Unknown("condition")
            self.pos += 1
            return out
        if not tok[1] and tok[0] in self._UNARY:
            self.pos += 1
            if self.pos >= len(self.toks):
                raise _Unknown("condition")
            name = self.toks[self.pos][0]
            self.pos += 1
            if tok[0] == "DEFINED":
                if name.startswith("ENV{"):
                    raise _Unknown(name)
                return self.env.defined(name)
            raise _Unknown(tok[0])
        self.pos += 1
        op = self._peek()
        if op in self._BINARY:
            self.pos += 1
            if self.pos >= len(self.toks):
                raise _Unknown("condition")
            right_tok = self.toks[self.pos]
            self.pos += 1
            return self._compare(self._operand(tok), op, right_tok)
        # a lone operand: a constant, else a variable's value
        text, quoted = tok
        const = _constant(text)
        if const is not None:
            return const
        if quoted:
            return False
        if self.env.defined(text):
            return _truthy(self.env.get(text))
        raise _Unknown(text)

    def _compare(self, left: str, op: str, right_tok: tuple[str, bool]) -> bool:
        if op == "IN_LIST":
            return left in self.env.get(right_tok[0]).split(";")
        right = self._operand(right_tok)
        if op == "MATCHES":
            return re.search(right, left) is not None
        if op.startswith("STR") or op == "PATH_EQUAL":
            cmp = (left > right) - (left < right)
        elif op.startswith("VERSION_"):
            a, b = _version(left), _version(right)
            length = max(len(a), len(b))
            a, b = a + (0,) * (length - len(a)), b + (0,) * (length - len(b))
            cmp = (a > b) - (a < b)
        elif op in ("EQUAL", "LESS", "GREATER", "LESS_EQUAL", "GREATER_EQUAL"):
            try:
                x, y = float(left), float(right)
            except ValueError:
                return False
            cmp = (x > y) - (x < y)
        else:
            raise _Unknown(op)
        kind = op.removeprefix("STR").removeprefix("VERSION_").removeprefix("PATH_")
        return {"EQUAL": cmp == 0, "LESS": cmp < 0, "GREATER": cmp > 0, "LESS_EQUAL": cmp <= 0,
                "GREATER_EQUAL": cmp >= 0}[kind]


@dataclass
class _Reading:
    """One reading of a project's CMake files toward the `configure_file()` of `template`."""

    top: str
    target_dir: str
    template: str
    found: _Vars | None = None
    depth: int = 0
    seen: set[str] = field(default_factory=set)


def _read_text(path: str) -> str | None:
    try:
        if os.path.getsize(path) > _MAX_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _names_template(args: list[_Arg], env: _Vars, template: str) -> bool:
    if not args:
        return False
    first = args[0].text
    try:
        first = env.expand(first)
    except _Unknown:
        pass
    return os.path.basename(first.rstrip("/")) == os.path.basename(template)


def _run_dir(reading: _Reading, folder: str, env: _Vars) -> None:
    path = os.path.join(folder, "CMakeLists.txt")
    if path in reading.seen or reading.depth > 16:
        return
    reading.seen.add(path)
    text = _read_text(path)
    if text is None:
        return
    for name in ("CMAKE_CURRENT_SOURCE_DIR", "CMAKE_CURRENT_LIST_DIR"):
        env.normal[name] = folder
    env.normal["CMAKE_CURRENT_LIST_FILE"] = path
    env.normal["CMAKE_CURRENT_BINARY_DIR"] = None
    reading.depth += 1
    try:
        _run(reading, _commands(text), folder, env)
    finally:
        reading.depth -= 1


def _run(reading: _Reading, cmds: list[_Cmd], folder: str, env: _Vars) -> None:
    # stack of [taking this branch, some branch was taken, decidable]
    stack: list[list[bool]] = []
    skip_block = 0  # nesting depth inside function/macro/foreach/while bodies (not run)
    for cmd in cmds:
        if reading.found is not None:
            return
        name = cmd.name
        if name in ("function", "macro", "foreach", "while"):
            skip_block += 1
            continue
        if name in ("endfunction", "endmacro", "endforeach", "endwhile"):
            skip_block = max(0, skip_block - 1)
            continue
        if skip_block:
            continue
        live = all(s[0] for s in stack)
        if name == "if":
            if not live:
                stack.append([False, True, True])
                continue
            try:
                held = _Condition(cmd.args, env).value()
                stack.append([held, held, True])
            except (_Unknown, re.error):
                stack.append([False, True, False])  # undecidable: no branch of it is read
            continue
        if name in ("elseif", "else"):
            if not stack:
                continue
            top = stack[-1]
            outer = all(s[0] for s in stack[:-1])
            if top[1] or not outer or not top[2]:
                top[0] = False
                continue
            if name == "else":
                top[0] = top[1] = True
                continue
            try:
                held = _Condition(cmd.args, env).value()
                top[0], top[1] = held, held
            except (_Unknown, re.error):
                top[0], top[1], top[2] = False, True, False
            continue
        if name == "endif":
            if stack:
                stack.pop()
            continue
        if not live:
            continue
        try:
            _command(reading, cmd, folder, env)
        except (_Unknown, re.error, IndexError):
            _forget(cmd, env)


def _forget(cmd: _Cmd, env: _Vars) -> None:
    """A command whose arguments this reading cannot know leaves the variable it writes unknown."""
    args = cmd.args
    try:
        if cmd.name in ("set", "option") and args:
            target = env.expand(args[0].text)
            if cmd.name == "option" or any(a.text == "CACHE" and not a.quoted for a in args):
                env.cache.setdefault(target, None)
            else:
                env.normal[target] = None
        elif cmd.name == "string" and len(args) >= 3:
            sub = args[0].text.upper()
            idx = {"TOUPPER": 2, "TOLOWER": 2, "STRIP": 2, "APPEND": 1, "PREPEND": 1, "CONCAT": 1, "REPLACE": 3}
            if sub == "REGEX" and len(args) > 3:
                env.normal[env.expand(args[3].text)] = None
            elif sub in idx and len(args) > idx[sub]:
                env.normal[env.expand(args[idx[sub]].text)] = None
        elif cmd.name in ("file", "math") and len(args) >= 3 and args[0].text.upper() in ("READ", "EXPR"):
            env.normal[env.expand(args[2 if cmd.name == "file" else 1].text)] = None
        elif cmd.name == "list" and len(args) >= 2:
            env.normal[env.expand(args[1].text)] = None
    except _Unknown:
        pass


def _values(args: Iterable[_Arg], env: _Vars) -> list[str]:
    out: list[str] = []
    for a in args:
        if a.quoted:
            out.append(env.expand(a.text))
        else:
            v = env.expand(a.text)
            out += [x for x in v.split(";") if x] if ";" in v else ([v] if v or not a.text else [])
    return out


def _command(reading: _Reading, cmd: _Cmd, folder: str, env: _Vars) -> None:
    name, args = cmd.name, cmd.args
    if name == "configure_file" and _names_template(args, env, reading.template) \
            and os.path.realpath(folder) == os.path.realpath(reading.target_dir):
        reading.found = _Vars(dict(env.normal), dict(env.cache))
        return
    if name == "project" and args:
        proj = env.expand(args[0].text)
        env.normal["PROJECT_NAME"] = proj
        env.normal.setdefault("CMAKE_PROJECT_NAME", proj)
        env.normal["PROJECT_SOURCE_DIR"] = env.normal[f"{proj}_SOURCE_DIR"] = folder
        words = [a.text for a in args]
        if "VERSION" in words and words.index("VERSION") + 1 < len(words):
            version = env.expand(words[words.index("VERSION") + 1])
            parts = (version.split(".") + ["", "", "", ""])[:4]
            for prefix in ("PROJECT", proj):
                env.normal[f"{prefix}_VERSION"] = version
                for suffix, part in zip(("MAJOR", "MINOR", "PATCH", "TWEAK"), parts, strict=True):
                    env.normal[f"{prefix}_VERSION_{suffix}"] = part
        return
    if name == "set" and args:
        target = env.expand(args[0].text)
        rest = args[1:]
        words = [a.text if not a.quoted else None for a in rest]
        if "CACHE" in words:
            at = words.index("CACHE")
            value = ";".join(_values(rest[:at], env))
            if "FORCE" in words[at:]:
                env.cache[target] = value
            else:
                env.cache.setdefault(target, value)
            return
        if "PARENT_SCOPE" in words:
            return
        if not rest:
            env.normal.pop(target, None)
            return
        env.normal[target] = ";".join(_values(rest, env))
        return
    if name == "unset" and args:
        env.normal.pop(env.expand(args[0].text), None)
        return
    if name == "option" and args:
        target = env.expand(args[0].text)
        if target in env.normal or target in env.cache:
            return
        default = env.expand(args[2].text) if len(args) > 2 else "OFF"
        env.cache[target] = "ON" if _truthy(default) else "OFF"
        return
    if name == "string" and args:
        _string(args, env)
        return
    if name == "file" and len(args) >= 3 and args[0].text.upper() == "READ" and len(args) == 3:
        # `file(READ version.mk TEXT)` then `string(REGEX REPLACE ...)`: a version kept in a make fragment
        path = env.expand(args[1].text)
        path = os.path.normpath(path if os.path.isabs(path) else os.path.join(folder, path))
        text = _read_text(path) if _under(os.path.realpath(path), os.path.realpath(reading.top)) else None
        if text is None:
            raise _Unknown(path)
        env.normal[env.expand(args[2].text)] = text
        return
    if name == "math" and len(args) >= 3 and args[0].text.upper() == "EXPR":
        env.normal[env.expand(args[1].text)] = str(_arithmetic(env.expand(args[2].text)))
        return
    if name == "list" and len(args) >= 2 and args[0].text.upper() in ("APPEND", "PREPEND"):
        target = env.expand(args[1].text)
        items = _values(args[2:], env)
        old = env.get(target).split(";") if env.defined(target) and env.get(target) else []
        env.normal[target] = ";".join(old + items if args[0].text.upper() == "APPEND" else items + old)
        return
    if name == "add_subdirectory" and args:
        sub = env.expand(args[0].text)
        path = os.path.normpath(sub if os.path.isabs(sub) else os.path.join(folder, sub))
        target = os.path.realpath(reading.target_dir)
        real = os.path.realpath(path)
        if target == real or target.startswith(real + os.sep):
            _run_dir(reading, path, env.child())
        return


_MATH = lazy_re.compile(r"\s*(?:0[xX][0-9a-fA-F]+|\d+|[-+*/%()~&|^]|<<|>>)")


def _arithmetic(expr: str) -> int:
    """`math(EXPR)`'s integer expression; _Unknown for anything but integers and C operators."""
    pos, toks = 0, []
    while pos < len(expr.rstrip()):
        m = _MATH.match(expr, pos)
        if not m:
            raise _Unknown(expr)
        toks.append(m.group(0).strip())
        pos = m.end()
    text = " ".join(t if not t[0].isdigit() else str(int(t, 0)) for t in toks).replace("/", "//")
    try:
        return int(eval(text, {"__builtins__": {}}, {}))  # noqa: S307 - only integers and operators (checked)
    except (SyntaxError, ZeroDivisionError, TypeError, ValueError) as exc:
        raise _Unknown(expr) from exc


def _string(args: list[_Arg], env: _Vars) -> None:
    sub = args[0].text.upper()
    if sub in ("TOUPPER", "TOLOWER", "STRIP") and len(args) >= 3:
        value = env.expand(args[1].text)
        env.normal[env.expand(args[2].text)] = (value.upper() if sub == "TOUPPER" else
                                                value.lower() if sub == "TOLOWER" else value.strip())
    elif sub == "REPLACE" and len(args) >= 4:
        old, new = env.expand(args[1].text), env.expand(args[2].text)
        env.normal[env.expand(args[3].text)] = "".join(_values(args[4:], env)).replace(old, new)
    elif sub == "REGEX" and len(args) >= 5 and args[1].text.upper() == "REPLACE":
        pattern, repl = env.expand(args[2].text), env.expand(args[3].text)
        repl = re.sub(r"\\(\d)", r"\\g<\1>", repl)
        # (CMake's `.` matches a newline too: `.*NAME *:= *([0-9]+).*` over a whole file's text)
        env.normal[env.expand(args[4].text)] = re.sub(pattern, repl, "".join(_values(args[5:], env)), flags=re.S)
    elif sub in ("APPEND", "PREPEND") and len(args) >= 2:
        target = env.expand(args[1].text)
        old = env.get(target) if env.defined(target) else ""
        more = "".join(_values(args[2:], env))
        env.normal[target] = old + more if sub == "APPEND" else more + old
    elif sub == "CONCAT" and len(args) >= 2:
        env.normal[env.expand(args[1].text)] = "".join(_values(args[2:], env))
    else:
        raise _Unknown(sub)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _top(folder: str, stop: str) -> str:
    """The top of the CMake project that holds `folder`: the highest folder of an unbroken chain of
    CMakeLists.txt above it (not above `stop`)."""
    top = d = folder
    while d != stop and _under(d, stop):
        parent = os.path.dirname(d)
        if parent == d or not os.path.isfile(os.path.join(parent, "CMakeLists.txt")):
            break
        top = d = parent
    return top


@functools.cache
def _cmake_lists(stop: str) -> tuple[str, ...]:
    out: list[str] = []
    for d, dirs, names in os.walk(stop):
        dirs[:] = sorted(x for x in dirs if x not in _SKIP_DIRS and not x.startswith("."))
        if "CMakeLists.txt" in names:
            out.append(os.path.join(d, "CMakeLists.txt"))
        if len(out) > 2000:
            break
    return tuple(out)


def _configuring_dir(template: str, stop: str) -> str | None:
    """The folder whose CMakeLists.txt `configure_file()`s `template`: of those that name it, the nearest
    above the template, else the first."""
    base = os.path.basename(template)
    hits = [os.path.dirname(p) for p in _cmake_lists(stop)
            if "configure_file" in (text := _read_text(p) or "") and base in text]
    above = [d for d in hits if _under(template, d)]
    return max(above, key=len) if above else (hits[0] if hits else None)


@functools.cache
def cmake_variables(template: str, stop: str) -> dict[str, str | None]:
    """The CMake variables (None: set to what a text reading cannot know) in force where the project's build
    configures `template`, as a default configure sets them."""
    target = _configuring_dir(template, stop) or os.path.dirname(template)
    top = _top(target, stop)
    env = _Vars({"CMAKE_BUILD_TYPE": "", "CMAKE_SOURCE_DIR": top, "PROJECT_SOURCE_DIR": top,
                 "CMAKE_BINARY_DIR": None, "PROJECT_BINARY_DIR": None, **_toolkit_variables()}, {})
    reading = _Reading(top, target, template)
    _run_dir(reading, top, env)
    found = reading.found or env
    return {**found.cache, **found.normal}


def _toolkit_variables() -> dict[str, str | None]:
    """The version variables `find_package(CUDA)` / `find_package(CUDAToolkit)` / `enable_language(CUDA)` set, for
    the toolkit the units are built with: `if(CUDA_VERSION VERSION_GREATER_EQUAL "9.0") set(HAVE_SHFL_SYNC 1)` is
    what a configure with that toolkit decides. Unknown, the block was left out and the configured header lacked
    the macro, so the units took the old-toolkit branch (`__shfl_down`, removed) or failed on the `#if`."""
    from miner.source import cmake_version

    version = cmake_version.toolkit_version()
    if version is None:
        return {}
    full = f"{version[0]}.{version[1]}"
    out: dict[str, str | None] = {}
    for prefix in ("CUDA_VERSION", "CUDAToolkit_VERSION"):
        out.update({prefix: full, f"{prefix}_MAJOR": str(version[0]), f"{prefix}_MINOR": str(version[1])})
    out.update({"CUDA_VERSION_STRING": full, "CMAKE_CUDA_COMPILER_VERSION": full})
    return out


# -------------------------------------------------------------------------------------------------------- template


def _substitute(text: str, variables: dict[str, str | None]) -> str:
    def one(m: re.Match[str]) -> str:
        v = variables.get(m.group(1))
        if v is None:
            raise _Unknown(m.group(1))
        return v
    return _BRACE_VAR.sub(one, _AT_VAR.sub(one, text))


def _only_macros(text: str) -> bool:
    """Whether the template holds nothing but preprocessor lines, comments and namespace braces."""
    body = _COMMENT.sub(" ", text)
    body = re.sub(r"^[ \t]*#(?:[^\n\\]|\\\r?\n|\\.)*", " ", body, flags=re.M)
    body = re.sub(r"\b(?:namespace(?:\s+[\w:]+)?|extern\s*\"C\"(?:\+\+)?)\s*\{", " ", body)
    return not re.sub(r"[{};\s]", "", body)


def _truth_env(defines: dict[str, str]) -> dict[str, int]:
    out = {}
    for k, v in defines.items():
        try:
            out[k] = int(v.strip() or "1", 0)
        except ValueError:
            out[k] = 1
    return out


def template_defines(template: str, variables: dict[str, str | None]) -> list[str]:
    """`NAME=VALUE` for each macro the configured header would define (in its order); [] where the template
    holds anything but macros."""
    from miner.source.missing_headers import _value

    text = _read_text(template)
    if text is None or not _only_macros(text):
        return []
    out: dict[str, str] = {}
    params: dict[str, str] = {}  # name -> `(F)` of a function-like macro, "" else
    stack: list[list[bool]] = []  # [this branch on, a branch was on, enclosing on]
    guard: str | None = None
    for m in _DIRECTIVE.finditer(text):
        kind, rest = m.group(1), _COMMENT.sub(" ", m.group(2).replace("\\\n", " ")).strip()
        live = all(s[0] for s in stack)
        if kind in ("ifdef", "ifndef", "if"):
            if kind == "ifndef" and not stack and guard is None and rest:
                guard = rest.split()[0]
                stack.append([True, True, True])
                continue
            if not live:
                stack.append([False, True, False])
                continue
            if kind == "if":
                held = _value(rest, _truth_env(out))
                held = bool(held)
            else:
                held = (rest.split()[0] in out) == (kind == "ifdef") if rest else False
            stack.append([held, held, True])
            continue
        if kind in ("elif", "else") and stack:
            top = stack[-1]
            if top[1] or not top[2]:
                top[0] = False
            elif kind == "else":
                top[0] = top[1] = True
            else:
                top[0] = top[1] = bool(_value(rest, _truth_env(out)))
            continue
        if kind == "endif":
            if stack:
                stack.pop()
            continue
        if not live:
            continue
        if kind == "define":
            d = re.match(r"([A-Za-z_]\w*)(\([^)]*\))?\s*(.*)$", rest, re.S)
            if not d or d.group(1) == guard:
                continue
            try:
                out[d.group(1)] = _substitute(d.group(3), variables).strip()
            except _Unknown:
                continue
            # A function-like one (`#define LIB_IS_ON(F) F() == 1`, `#define LIB_HAVE_X() @HAVE_X@`) is a define
            # too (`-D'LIB_IS_ON(F)=F() == 1'`): without it every `#if LIB_IS_ON(LIB_HAVE_X)` stops the build.
            params[d.group(1)] = re.sub(r"\s+", "", d.group(2) or "")
        elif kind == "undef":
            out.pop(rest.split()[0] if rest else "", None)
        elif kind in ("cmakedefine", "cmakedefine01"):
            d = re.match(r"([A-Za-z_]\w*)\s*(.*)$", rest, re.S)
            if not d:
                continue
            var = variables.get(d.group(1))
            on = var is not None and _truthy(var)
            if kind == "cmakedefine01":
                out[d.group(1)] = "1" if on else "0"
            elif on:
                try:
                    out[d.group(1)] = _substitute(d.group(2), variables).strip()
                except _Unknown:
                    continue
    return [f"{k}{params.get(k, '')}={v}" for k, v in out.items()]


# ------------------------------------------------------------------------------------------------------ the project


def project_folders(roots: Iterable[str], limit: int, skip: frozenset[str] | set[str] = frozenset(_SKIP_DIRS)
                    ) -> Iterator[tuple[str, list[str]]]:
    """(folder, file names) under each root in a stable order, hidden and `skip` folders left out; stops once more
    than `limit` files were listed (a checkout of a whole monorepo is not searched to its end)."""
    count = 0
    for root in sorted(set(roots)):
        for d, dirs, names in os.walk(root):
            dirs[:] = sorted(x for x in dirs if x not in skip and not x.startswith("."))
            count += len(names)
            if count > limit:
                return
            yield d, names


def templates(roots: Iterable[str]) -> list[str]:
    """The configure templates of header files under `roots` (`x.h.in`, `x.hpp.cmake`)."""
    out: list[str] = []
    for d, names in project_folders(roots, 20 * _MAX_FILES):
        for n in names:
            stem, suffix = os.path.splitext(n)
            if suffix in _SUFFIXES and os.path.splitext(stem)[1] in (".h", ".hpp", ".hh", ".cuh", ".hxx"):
                out.append(os.path.join(d, n))
    return sorted(out)


def _wanted(texts: dict[str, bytes], found: Callable[[str, str, bool], bool],
            roots: list[str]) -> Iterable[tuple[str, str, str, str]]:
    """(includer, include as spelled, template, root holding the template) for each include the tree lacks
    whose configure template it holds."""
    found_templates = templates(roots)
    if not found_templates:
        return
    by_tail: dict[str, list[str]] = {}
    for t in found_templates:
        by_tail.setdefault(os.path.splitext(t)[0].replace(os.sep, "/"), []).append(t)
    for path, data in texts.items():
        if b"include" not in data:
            continue
        for m in _INCLUDE.finditer(data.decode("utf-8", "replace")):
            name, quoted = m.group(2).strip(), m.group(1) == '"'
            if found(path, name, quoted):
                continue
            beside = os.path.normpath(os.path.join(os.path.dirname(path), name)).replace(os.sep, "/")
            tail = "/" + name.lstrip("./")
            cands = by_tail.get(beside, []) if quoted else []
            cands = cands or [t for k, lst in sorted(by_tail.items()) if k.endswith(tail) for t in lst]
            # `<lib/config.h>` from `cmake/config.h.in`: `configure_file()` writes it under a folder the tree
            # does not have (`${generated}/lib/config.h`), so the include's folder need not match the template's;
            # the one template of that file name is it.
            same = [t for k, lst in by_tail.items() if k.rsplit("/", 1)[-1] == name.rsplit("/", 1)[-1] for t in lst]
            cands = cands or (same if len(same) == 1 else [])
            if not cands:
                continue
            template = cands[0]
            root = next((r for r in sorted(roots, key=len, reverse=True) if _under(template, r)),
                        os.path.dirname(template))
            yield path, name, template, root


def defines(texts: dict[str, bytes], found: Callable[[str, str, bool], bool], roots: Iterable[str],
            stop: str | None = None) -> dict[str, list[str]]:
    """Per source file, the defines of the configured headers it includes that the tree lacks but whose CMake
    template it holds (`#include <lib/config.h>`, `lib/config.h.in` configured by the project's CMake files).
    The templates are looked for under `roots`; the CMake files are read from the top of the project, which
    is not above `stop` (default: the root that holds the template)."""
    from miner.source.checkout import project_root

    out: dict[str, list[str]] = {}
    for path, _name, template, root in _wanted(texts, found, list(roots)):
        values = template_defines(template, cmake_variables(template, stop or project_root(root)))
        if values:
            out[path] = [*out.get(path, []), *(v for v in values if v not in out.get(path, []))]
    return out


def generated(texts: dict[str, bytes], found: Callable[[str, str, bool], bool], roots: Iterable[str],
              stop: str | None = None) -> dict[str, tuple[str, str]]:
    """The configured headers the sources include that the tree lacks and whose template holds declarations
    (`nccl.h` from `nccl.h.in`: the library's handle types and API beside its version macros), as the build
    would write them: include name as spelled -> (template, text). The defines of a macro-only template go
    to the parse as `-D`s instead (`defines`); a template whose placeholders cannot all be given is left out."""
    from miner.source.checkout import project_root

    out: dict[str, tuple[str, str]] = {}
    for _path, name, template, root in _wanted(texts, found, list(roots)):
        if name in out or ".." in name.split("/") or os.path.isabs(name):
            continue
        text = configured_text(template, stop or project_root(root))
        if text is not None:
            out[name] = (template, text)
    return out


# ----------------------------------------------------------------------------------------- templates with code

# Where generated headers are written (write_generated): a folder of the user's cache, one per set of contents.
_GENERATED = os.path.join("kernel-miner", "configured")


def is_generated(path: str) -> bool:
    """Whether `path` is a header written by write_generated (project context that lies outside the tree)."""
    return os.sep + _GENERATED + os.sep in path


def write_generated(headers: dict[str, str]) -> str | None:
    """Write `headers` (include name -> text) into a cache folder named after their contents (so parse-cache
    keys stay stable across runs) and return it; None where there is nothing to write or it cannot be."""
    import hashlib

    if not headers:
        return None
    digest = hashlib.sha256(repr(sorted(headers.items())).encode()).hexdigest()[:16]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.realpath(os.path.join(base, _GENERATED, digest))
    try:
        for name, text in headers.items():
            dst = os.path.join(folder, name)
            if os.path.isfile(dst) and _read_text(dst) == text:
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            tmp = f"{dst}.{os.getpid()}.tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, dst)
    except OSError:
        return None
    return folder

# The placeholders a template may hold: CMake's `@VAR@` and `${VAR}`, and a project's own `${ns:Name}` that its
# build replaces with `sed` or `string(REPLACE)`.
_PLACEHOLDER = lazy_re.compile(r"@\w+@|\$\{[^{}\s]+\}")
_MAKE_ASSIGN = lazy_re.compile(
    r"^[ \t]*(?:export[ \t]+|override[ \t]+)?([A-Za-z_]\w*)[ \t]*(?::{1,3}|\?|)=[ \t]*([^\n#]*)",
                          re.M)
_MAKE_REF = lazy_re.compile(r"\$[({](\w+)[)}]")
# `s/PATTERN/REPLACEMENT/g` of a `sed` in a build script (any delimiter)
_SED = lazy_re.compile(r"\bs([/|#,:])((?:\\.|(?!\1).)+)\1((?:\\.|(?!\1).)*)\1g?")


def _build_scripts(stop: str) -> tuple[list[str], list[str]]:
    """The project's CMake files (`CMakeLists.txt`, `*.cmake`) and make files (`Makefile`, `*.mk`)."""
    cmake, make = [], []
    count = 0
    for d, dirs, names in os.walk(stop):
        dirs[:] = sorted(x for x in dirs if x not in _SKIP_DIRS and not x.startswith("."))
        count += len(names)
        if count > _MAX_FILES:
            break
        for n in sorted(names):
            if n == "CMakeLists.txt" or n.endswith(".cmake"):
                cmake.append(os.path.join(d, n))
            elif n in ("Makefile", "makefile", "GNUmakefile") or n.endswith(".mk"):
                make.append(os.path.join(d, n))
    return cmake, make


def _unescape(pattern: str) -> str:
    """A placeholder as a shell/make/CMake script spells it (`\\$${ns:Name}` in a Makefile's sed, `\\${ns:Name}` in
    CMake) -> as the template holds it."""
    return re.sub(r"\\(.)", r"\1", pattern.replace("$$", "$"))


@functools.cache
def _make_variables(stop: str) -> dict[str, str]:
    """`NAME := value` (and `=`, `?=`) of the project's make files; the first wins, `$(X)` expanded once."""
    out: dict[str, str] = {}
    for path in _build_scripts(stop)[1]:
        for m in _MAKE_ASSIGN.finditer(_read_text(path) or ""):
            out.setdefault(m.group(1), m.group(2).strip())
    return {k: _MAKE_REF.sub(lambda r: out.get(r.group(1), r.group(0)), v) for k, v in out.items()}


def _replacements(template: str, text: str, stop: str) -> dict[str, str | None]:
    """Placeholder -> value, from the build scripts that replace what the template holds: CMake's
    `string(REPLACE "${ns:Name}" "${VAR}" ...)` and a Makefile's `sed -e "s/\\$${ns:Name}/$(VAR)/g"` (None: a
    value this reading cannot know, such as one a shell command computes)."""
    held = set(_PLACEHOLDER.findall(text))
    if not held:
        return {}
    variables = dict(cmake_variables(template, stop))
    make = _make_variables(stop)
    cmake_files, make_files = _build_scripts(stop)
    # The script that replaces runs as `cmake -DNAME=${VAR} -P script.cmake`: its NAME is the caller's VAR.
    for path in cmake_files:
        for m in re.finditer(r"(?<![\w$])-D([A-Za-z_]\w*)=(\$\{\w+\}|[\w.]+)", _read_text(path) or ""):
            try:
                variables.setdefault(m.group(1), _Vars(dict(variables), {}).expand(m.group(2)))
            except _Unknown:
                variables.setdefault(m.group(1), None)
    out: dict[str, str | None] = {}
    for path in cmake_files:
        body = _read_text(path) or ""
        if "REPLACE" not in body.upper():
            continue
        for cmd in _commands(body):
            if cmd.name != "string" or len(cmd.args) < 4 or cmd.args[0].text.upper() != "REPLACE":
                continue
            ph = _unescape(cmd.args[1].text)
            if ph not in held or out.get(ph) is not None:
                continue
            try:
                out[ph] = _Vars(dict(variables), {}).expand(cmd.args[2].text)
            except _Unknown:
                out[ph] = None
    for path in make_files:
        body = _read_text(path) or ""
        if "sed" not in body:
            continue
        for m in _SED.finditer(body):
            ph = _unescape(m.group(2))
            if ph not in held or out.get(ph) is not None:
                continue
            value = _unescape(m.group(3))
            if any(n not in make or "$" in make[n] for n in _MAKE_REF.findall(value)):
                out[ph] = None  # (a variable the recipe computes: `$(eval V := $(shell ...))`)
                continue
            out[ph] = _MAKE_REF.sub(lambda r: make[r.group(1)], value)
    return out


def _in_literal(line: str, at: int) -> bool:
    """Whether offset `at` of a line lies in a string literal or a comment (by counting quotes: a sketch that
    suffices for a header template's lines)."""
    before = line[:at]
    return before.count('"') - before.count('\\"') & 1 == 1 or "//" in before or "/*" in before


def configured_text(template: str, stop: str) -> str | None:
    """The header the build writes from `template` (one that holds declarations): `#cmakedefine` lines
    decided, `@VAR@` and `${VAR}` from the CMake variables of a default configure, a project's own
    placeholders from the `sed`/`string(REPLACE)` that replaces them. A `#define` whose value stays unknown is
    left out (as a configure with that variable unset would write nothing useful there), an unknown
    placeholder inside a string literal or comment becomes empty; anywhere else the template is not used
    (None): code with a hole would not compile."""
    text = _read_text(template)
    if text is None or _only_macros(text):
        return None
    variables = cmake_variables(template, stop)
    rules = _replacements(template, text, stop)
    for ph, value in rules.items():
        if value is not None:
            text = text.replace(ph, value)
    lines = []
    for line in text.split("\n"):
        d = re.match(r"[ \t]*#[ \t]*(cmakedefine01|cmakedefine)[ \t]+([A-Za-z_]\w*)(.*)$", line)
        if d:
            var = variables.get(d.group(2))
            on = var is not None and _truthy(var)
            if d.group(1) == "cmakedefine01":
                line = f"#define {d.group(2)} {1 if on else 0}"
            elif not on:
                line = f"/* #undef {d.group(2)} */"
            else:
                line = f"#define {d.group(2)}{d.group(3)}"

        def value(m: re.Match[str]) -> str:
            name = m.group(0)[1:-1] if m.group(0).startswith("@") else m.group(0)[2:-1]
            v = variables.get(name) if re.fullmatch(r"\w+", name) else None
            if v is None:
                raise _Unknown(name)
            return v

        for m in reversed(list(_PLACEHOLDER.finditer(line))):
            try:
                line = line[:m.start()] + value(m) + line[m.end():]
            except _Unknown:
                define = re.match(r"[ \t]*#[ \t]*define[ \t]+(\w+)", line)
                if _in_literal(line, m.start()):
                    line = line[:m.start()] + line[m.end():]
                elif define:
                    line = f"/* #undef {define.group(1)}: its configured value is unknown to kernel-miner */"
                    break
                else:
                    return None
        lines.append(line)
    return "\n".join(lines)
