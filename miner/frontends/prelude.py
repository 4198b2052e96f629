"""Precompiled preludes for the translation units without torch: the parse stub and the standard headers a
unit surely includes, parsed once per run instead of once per unit.

Without torch there was no precompiled prefix, and a C++ project's translation unit spends most of its parse
in the standard library its headers include (a quantized-inference backend: 0.69 of 0.77 s per unit, the
stub alone 0.02 s). A prelude moves those headers ahead of the unit's own text, so it is built only where
that cannot change what the unit sees:

- a header enters the prelude only when the unit includes it outside every `#if` (an include guard aside),
  directly or through project headers it includes the same way: the prelude never adds a header;
- the standard headers are order-independent, but a project macro could reach into one (`#define NDEBUG`
  before `<cassert>`, `#undef max` after `<algorithm>`, an `#ifndef M_PI` that now sees `<cmath>`'s): a unit
  any of whose `#define`/`#undef` names is a word of a file the prelude read gets none;
- a header name the parse's include path finds in the project (its own `math.h` on an `-I` dir, a `vendor/cuda.h`
  whose `#include <cuda.h>` finds itself) is that project file, walked as such, never held;
- the walk follows `#if` branches whose outcome is certain in the parse configuration (`pp_conditions`), and a
  prelude fits a unit only where its files change none of the macros those conditions read (the HIP
  configuration's define sets are walked too, and `replan` picks their preludes).

The toolkit stand-ins of the parse (`shims/cuda_runtime.h`, ...) are ours and count as standard headers.

A unit whose set has a prelude built for a subset of it uses the largest such subset; the rest of its
headers it includes where it always did.
"""

from __future__ import annotations

import functools
import os
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from miner import lazy_re
from miner.frontends import pp_conditions, prefix_view
from miner.frontends.config import ParseConfig, clang_args, stub_dir

_DIRECTIVE = lazy_re.compile(
    rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif|include|define|undef)\b[ \t]*(.*)$", re.M)
_INCLUDE_NAME = lazy_re.compile(rb'^([<"])([^>"]+)[>"]')
_MACRO_NAME = lazy_re.compile(rb"[A-Za-z_]\w*")
_WORD = lazy_re.compile(rb"[A-Za-z_]\w*")
_STEP = lazy_re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elifdef|elifndef|elif|else|endif|include_next|include|import"
                   rb"|define|undef|pragma)\b[ \t]*(.*)$", re.M)
_ONCE = lazy_re.compile(rb"^[ \t]*#[ \t]*pragma[ \t]+once\b", re.M)
_POP_MACRO = lazy_re.compile(rb'pop_macro\s*\(\s*"(\w+)"')
_GUARD_IF = lazy_re.compile(rb"^(?:ifndef[ \t]+(\w+)|if[ \t]+!\s*defined\s*\(?\s*(\w+))")
# Headers a prelude may hold: the C and C++ standard libraries and the C/POSIX ones every toolchain has.
# (the caller's list of standard and C/POSIX headers: `units.headers`, which this layer does not import)
_NEVER_HELD = frozenset({"linux/types.h", "asm/types.h"})
# The compiler's own feature-test macros: a project defines them only as a fallback (`#ifndef __has_builtin`)
# that clang never takes, so the standard headers' `#if __has_builtin(...)` see clang's either way.
_BUILTIN_MACROS = frozenset(b"""
    __has_builtin __has_include __has_include_next __has_attribute __has_cpp_attribute __has_c_attribute
    __has_feature __has_extension __has_declspec_attribute __has_warning __is_identifier
""".split())
MAX_PRELUDES = 8  # each costs about one parse of its headers, in the main process before the pool
MAX_PROJECT_PRELUDES = 8  # preludes that hold a project header (`Hold`)
DIALECT = ["-std=c++17"]


class _Scan:
    """Per file: its includes outside every `#if` in order, and the macro names it may define or undefine.
    The parse is C++: a `#ifdef __cplusplus` block is taken and its `#else` not (`#define static_assert
    _Static_assert` for C compilers is no macro of a C++ parse)."""

    def __init__(self, data: bytes) -> None:
        self.includes: list[tuple[bytes, bytes]] = []  # (delimiter, name)
        self.macros: set[bytes] = set()
        self.maybe: list[bytes] = []  # every header it may include
        self.ordered: list[tuple[bytes, bytes, bool]] = []  # every include: delimiter, name, outside every #if
        self.undefs: set[bytes] = set()
        directives = list(_DIRECTIVE.finditer(data))
        guard = None
        self.guard: bytes | None = None  # the include guard's macro
        if len(directives) > 1 and directives[0].group(1) in (b"ifndef", b"if"):
            m = _GUARD_IF.match(directives[0].group(1) + b" " + directives[0].group(2))
            name = m and (m.group(1) or m.group(2))
            if name and directives[1].group(1) == b"define" and directives[1].group(2).split()[:1] == [name]:
                guard = directives[0]  # the whole file's include guard: not a condition on its includes
                self.guard = name
        self.once = _ONCE.search(data) is not None
        # Every directive that can steer what the preprocessor reads, in order, continuation lines joined
        # (`_Walk` runs them with what is known of the macros).
        self.steps: list[tuple[bytes, bytes, bool]] = []  # kind, rest, the include guard's #if
        self.step_at: list[int] = []  # each step's offset
        self.code_at = _first_code(data)  # where the first text that is no directive or comment starts
        for m in _STEP.finditer(data):
            rest, end = m.group(2).rstrip(), m.end()
            while rest.endswith(b"\\") and end < len(data):
                nl = data.find(b"\n", end + 1)
                nl = len(data) if nl < 0 else nl
                rest, end = rest[:-1] + b" " + data[end + 1:nl].rstrip(), nl
            self.steps.append((m.group(1), rest, guard is not None and m.start() == guard.start()))
            self.step_at.append(m.start())
        stack: list[str] = []  # per open #if: "true", "false" or "unknown" in a C++ parse
        for d in directives:
            kind, rest = d.group(1), d.group(2)
            if kind in (b"if", b"ifdef", b"ifndef"):
                stack.append("true" if d is guard else _cplusplus(kind, rest))
            elif kind in (b"else", b"elif") and stack:
                top = stack[-1]
                stack[-1] = ("false" if top == "true" else "true" if top == "false" and kind == b"else"
                             else "unknown")
            elif kind == b"endif":
                if stack:
                    stack.pop()
            elif "false" in stack:
                continue
            elif kind in (b"define", b"undef"):
                m = _MACRO_NAME.match(rest)
                if m:
                    self.macros.add(m.group(0))
                    if kind == b"undef":
                        self.undefs.add(m.group(0))
            elif kind == b"include":
                m = _INCLUDE_NAME.match(rest)
                if m:
                    sure = all(c == "true" for c in stack)
                    self.maybe.append(m.group(2).strip())
                    self.ordered.append((m.group(1), m.group(2).strip(), sure))
                    if sure:
                        self.includes.append((m.group(1), m.group(2).strip()))


_TEXT = lazy_re.compile(rb"[ \t\r\n\f\v]+|//[^\n]*|/\*.*?\*/|#(?:[^\n]*\\\r?\n)*[^\n]*", re.S)


def _first_code(data: bytes) -> int:
    """The offset of the first text of `data` that is neither a directive nor a comment (len: none). A directive
    starts a line (after blanks): a `#` elsewhere is code."""
    i, n = 0, len(data)
    while i < n:
        m = _TEXT.match(data, i)
        if m is None or m.end() == i:
            return i
        if data[i:i + 1] == b"#" and data.rfind(b"\n", 0, i) != -1 and data[data.rfind(b"\n", 0, i) + 1:i].strip():
            return i
        i = m.end()
    return n


_CPLUSPLUS = lazy_re.compile(rb"^(!\s*)?(?:defined\s*\(\s*__cplusplus\s*\)|defined\s+__cplusplus|__cplusplus)\s*(?://.*|/\*.*)?$")


def _cplusplus(kind: bytes, rest: bytes) -> str:
    """Whether an opening `#if` is taken in a C++ parse when it tests `__cplusplus` alone ("unknown" else)."""
    rest = rest.strip()
    if kind in (b"ifdef", b"ifndef"):
        if rest.split()[:1] != [b"__cplusplus"]:
            return "unknown"
        return "true" if kind == b"ifdef" else "false"
    m = _CPLUSPLUS.match(rest)
    if not m:
        return "unknown"
    return "false" if m.group(1) else "true"


@dataclass(frozen=True)
class Start:
    """What is known of the macros where a unit's own text begins, right after the parse stub: a name the
    compiler, the command line or the stub's files defined is defined (unless the stub also undefines it: then
    unknown), any other is undefined (a prelude's other files are checked for the names a walk read: `plan`)."""
    defined: frozenset[bytes]
    maybe: frozenset[bytes]

    def known(self, name: bytes) -> pp_conditions.Tri:
        if name in self.maybe:
            return None
        return name in self.defined

    def with_defines(self, defines: list[str]) -> Start:
        return Start(self.defined | {d.partition("=")[0].encode() for d in defines}, self.maybe)


@dataclass(frozen=True)
class Hold:
    """A project header the unit reads right after its first `n` prelude headers, with nothing of the project
    before it but the directives of the files that include it (`walk`): a prelude of those `n` headers and this
    one, read whole, is what the plain parse reads up to its end. `spelled`: its name as the parse spells it
    (the includer's folder or the include folder it is found in, joined with the name written)."""
    n: int
    path: str
    spelled: str
    read: frozenset[bytes]  # the macro names the walk read before it
    defined: frozenset[bytes]  # the project macros defined or undefined before it

    @property
    def headers(self) -> tuple[str, ...]:
        return (self.spelled,)


@dataclass
class Sequence:
    """The prelude headers a unit includes first, in order; per header, the macro names whose state the walk
    read before it (a prelude holding the first n headers is the plain parse's only while none of the names read
    up to the n-th is a word of its files); the macro names its project files may define or undefine."""
    headers: tuple[str, ...]
    read: tuple[frozenset[bytes], ...]
    macros: set[bytes]
    read_all: frozenset[bytes] = frozenset()  # every name the walk read, to its end: what another start may change
    # per header: the macros the project's directives defined or undefined before it (only those can reach into
    # it: what comes after it in the plain parse comes after the prelude too)
    defined: tuple[frozenset[bytes], ...] = ()
    # Project headers a prelude may hold whole (`Hold`), outermost first: each is read inside the one before.
    holds: tuple[Hold, ...] = ()

    def read_up_to(self, n: int) -> frozenset[bytes]:
        return self.read[n - 1] if n else frozenset()

    def defined_up_to(self, n: int) -> frozenset[bytes]:
        return self.defined[n - 1] if n else frozenset()


def sure_headers(root: str, data: dict[str, bytes], edges: dict[str, set[str]],
                 scans: dict[str, _Scan], standard: frozenset[str]) -> tuple[tuple[str, ...], set[bytes]]:
    """`walk` knowing nothing of the macros a unit starts with: headers and macros."""
    seq = walk(root, data, edges, scans, standard, None)
    return seq.headers, seq.macros


def walk(root: str, data: dict[str, bytes], edges: dict[str, set[str]], scans: dict[str, _Scan],
         standard: frozenset[str], start: Start | None,
         found: Callable[[str, bytes, str], str | bool] | None = None,
         spell: Callable[[str, bytes, str], str | None] | None = None) -> Sequence:
    """The prelude headers `root` includes first, in the order it does: those it includes where the preprocessor
    surely reads the include (directly or through project headers it includes so; `#if` conditions evaluated
    from `start` and the project's own `#define`s before them, `frontends.pp_conditions`) up to the first
    include that might bring other system headers in between (one in a branch whose outcome is not certain, a
    header no prelude holds), so that the files a prelude reads come in the order, and from the includers, of the
    plain parse; and the macro names its project files (every one it may reach) define or undefine. Without
    `start` only the project's own macros and `__cplusplus` (a C++ parse) are known. `found(includer, delimiter,
    name)`: the file an include the graph did not resolve finds on the parse's include path before the system
    headers and our stand-ins (a project `vendor/cuda.h` for `<cuda.h>`), True where it may find one, else ""."""
    def scan(f: str) -> _Scan:
        if f not in scans:
            scans[f] = _Scan(data.get(f, b""))
        return scans[f]

    out: list[str] = []
    read_at: list[frozenset[bytes]] = []
    defined_at: list[frozenset[bytes]] = []
    state: dict[bytes, pp_conditions.Tri] = {}  # macros the project's directives so far defined or undefined
    read: set[bytes] = set()
    seen = {root}
    holds: list[Hold] = []
    closed = [False]  # a project file was read whole before this point (its declarations precede what follows)

    def known(name: bytes) -> pp_conditions.Tri:
        if name in state:
            return state[name]
        if start is None:
            return True if name == b"__cplusplus" else None
        return start.known(name)

    def visit(f: str, spelled: str | None) -> bool:
        """False at the first include that ends the sequence. `spelled`: `f`'s name as the parse spells it where
        nothing but directives came before it (None: something did, or unknown)."""
        stack: list[list[pp_conditions.Tri]] = []  # per open #if: [enclosing activity, this branch, one taken]
        sc = scan(f)
        for (kind, rest, is_guard), at in zip(sc.steps, sc.step_at, strict=True):
            active = pp_conditions.and3(stack[-1][0], stack[-1][1]) if stack else True
            if kind in (b"if", b"ifdef", b"ifndef"):
                if active is False:
                    stack.append([False, False, True])
                    continue
                cond = True if is_guard else _condition(kind, rest, known, read)
                stack.append([active, cond, cond])
            elif kind in (b"elif", b"elifdef", b"elifndef", b"else"):
                if not stack or stack[-1][0] is False:
                    continue
                top = stack[-1]
                cond = True if kind == b"else" else _condition(kind, rest, known, read)
                top[1], top[2] = pp_conditions.and3(pp_conditions.not3(top[2]), cond), pp_conditions.or3(top[2], cond)
            elif kind == b"endif":
                if stack:
                    stack.pop()
            elif active is False:
                continue
            elif kind in (b"define", b"undef"):
                m = _MACRO_NAME.match(rest)
                if m:
                    state[m.group(0)] = (kind == b"define") if active is True else None
            elif kind == b"pragma":
                for m in _POP_MACRO.finditer(rest):
                    state[m.group(1)] = None
            elif kind != b"include":
                return False  # #include_next, #import: not followed
            else:
                m = _INCLUDE_NAME.match(rest)
                if m is None:
                    return False  # a computed include
                delim, name = m.group(1), m.group(2).strip().decode("utf-8", "replace")
                target = _target(f, name, edges)
                held = target is None and (delim == b"<" and name in standard and name not in _NEVER_HELD
                                           or _is_shim(name))
                if held and found is not None and (there := found(f, delim, name)):
                    if there is True or there not in data:
                        return False  # a file of the include path the walk cannot read as the plain parse does
                    target, held = there, False
                if held and name in out:
                    continue  # included already: its guard makes it nothing
                if active is not True:
                    return False
                if held:
                    out.append(name)
                    read_at.append(frozenset(read))
                    defined_at.append(frozenset(state) - _BUILTIN_MACROS)
                elif target is None:
                    return False
                elif target in seen:
                    again = scan(target)
                    if not (again.once or again.guard is not None and state.get(again.guard) is True):
                        return False  # read again, and not surely empty the second time
                else:
                    seen.add(target)
                    inner = None
                    if spell is not None and spelled is not None and not closed[0] and sc.code_at > at:
                        inner = spell(spelled, delim, name)
                        if inner is not None and os.path.realpath(inner) == target:
                            holds.append(Hold(len(out), target, inner, frozenset(read),
                                              frozenset(state) - _BUILTIN_MACROS))
                        else:
                            inner = None
                    if not visit(target, inner):
                        return False
                    closed[0] = True
        return True

    visit(root, root)
    reach, stack = {root}, [root]
    while stack:
        for nxt in edges.get(stack.pop(), ()):
            if nxt not in reach:
                reach.add(nxt)
                stack.append(nxt)
    macros: set[bytes] = set()
    for f in reach:
        macros |= scan(f).macros
        # A stand-in the unit may include defines macros before the headers a prelude moves ahead too (one
        # the prelude holds keeps its place among them: `plan` leaves those out).
        for name in scan(f).maybe:
            if (n := name.decode("utf-8", "replace")) not in out:
                macros |= _shim_macros(n)
    return Sequence(tuple(out), tuple(read_at), macros - _BUILTIN_MACROS, frozenset(read), tuple(defined_at),
                    tuple(holds))


def _condition(kind: bytes, rest: bytes, known: Callable[[bytes], pp_conditions.Tri],
               read: set[bytes]) -> pp_conditions.Tri:
    if kind in (b"ifdef", b"ifndef", b"elifdef", b"elifndef"):
        m = _MACRO_NAME.match(rest)
        if m is None:
            return None
        value = known(m.group(0))
        if value is not None:  # an unknown answer decided nothing
            read.add(m.group(0))
        return value if kind in (b"ifdef", b"elifdef") else pp_conditions.not3(value)
    return pp_conditions.evaluate(rest, known, read)


@functools.cache
def _shim_macros(name: str, depth: int = 0) -> frozenset[bytes]:
    """The macros our stand-in `name` and the stand-ins it includes may define (none: not a stand-in)."""
    if not _is_shim(name) or depth > 8:
        return frozenset()
    sc = _Scan((stub_dir() / "shims" / name).read_bytes())
    # A macro the stand-in defines and undefines again steers only the headers it includes itself (its
    # `_GLIBCXX_INCLUDE_NEXT_C_HEADERS` around the C library): those come out the same either way.
    out = set(sc.macros - sc.undefs)
    for inner in sc.maybe:
        out |= _shim_macros(inner.decode("utf-8", "replace"), depth + 1)
    return frozenset(out)


@functools.cache
def _is_shim(name: str) -> bool:
    """Whether `name` is one of our toolkit stand-ins (`cuda_runtime.h`, `cublas_v2.h`): its text is ours."""
    return ".." not in name and (stub_dir() / "shims" / name).is_file()


def _target(path: str, name: str, edges: dict[str, set[str]]) -> str | None:
    """The project file the graph resolved `#include name` of `path` to (None: a header outside the project)."""
    tail = os.sep + name.replace("/", os.sep)
    base = os.sep + os.path.basename(name)
    cands = sorted(t for t in edges.get(path, ()) if t.endswith(tail))
    cands = cands or sorted(t for t in edges.get(path, ()) if t.endswith(base))
    return cands[0] if cands else None


@dataclass(frozen=True)
class _Built:
    headers: tuple[str, ...]
    dialect: str
    path: str
    words: frozenset[bytes]  # the words of the files it read beyond its dialect's stub-only prelude's
    changes: frozenset[bytes] = frozenset()  # the macros those files define or undefine


@dataclass
class _Planner:
    """What a plan knew, kept for the configurations derived from it (`replan`: added defines)."""
    data: dict[str, bytes]
    edges: dict[str, set[str]]
    standard: frozenset[str]
    dirs_of: Callable[[str], list[str]]  # a unit's include folders, in its parse's order
    prelude_dirs: list[str]  # those a prelude is built with
    scans: dict[str, _Scan]
    starts: dict[str, Start]
    built: list[_Built]
    wanted: dict[str, Sequence] = field(default_factory=dict)  # each unit's sequence in the planned configuration
    _memo: dict[tuple[str, str, frozenset[str]], Sequence | None] = field(default_factory=dict)

    def sequence(self, root: str, dialect: str, defines: list[str]) -> Sequence | None:
        key = (root, dialect, frozenset(defines))
        if key not in self._memo:
            self._memo[key] = self._sequence(root, dialect, defines)
        return self._memo[key]

    def _sequence(self, root: str, dialect: str, defines: list[str]) -> Sequence | None:
        if dialect not in self.starts:
            return None
        dirs = self.dirs_of(root)

        def found(includer: str, delim: bytes, name: str) -> str | bool:
            # A project file named like a held header (its own `math.h`, a `cuda.h` in an `-I` folder of the
            # project) is what the include finds when a folder searched before the system headers and our
            # stand-ins holds it; the prelude, built with the run's folders, must not hold such a name either.
            first = [os.path.dirname(includer)] if delim == b'"' else []
            for d in [*first, *dirs]:
                cand = os.path.join(d, name)
                if os.path.isfile(cand):
                    return os.path.realpath(cand)
            return any(os.path.isfile(os.path.join(d, name)) for d in self.prelude_dirs)

        def spell(includer: str, delim: bytes, name: str) -> str | None:
            # Where the parse finds a project header, as it spells it: the includer's folder first for a quoted
            # name, then the include folders. Only where the unit's folders are those the preludes are built
            # with (a held project header's own includes are found there).
            if dirs != self.prelude_dirs or os.path.isabs(name):
                return None
            for d in [os.path.dirname(includer)] if delim == b'"' else []:
                if os.path.isfile(os.path.join(d, name)):
                    return os.path.join(d, name)
            for d in dirs:
                if os.path.isfile(os.path.join(d, name)):
                    return os.path.join(d, name)
            return None

        return walk(root, self.data, self.edges, self.scans, self.standard, self.starts[dialect].with_defines(defines),
                    found, spell)

    def choose(self, seq: Sequence, dialect: str, exclude: Callable[[str], bool] = lambda p: False) -> str | None:
        """The longest built prelude whose headers start the sequence, whose files name none of the macros the
        unit's project files define or undefine before its last header and change none of the macros its walk
        read up to there (what a condition tests, such as `__cplusplus`, the standard headers read too: a name
        they only read keeps its state)."""
        fits = [b for b in self.built if b.dialect == dialect and seq.headers[:len(b.headers)] == b.headers
                and not (seq.defined_up_to(len(b.headers)) & b.words)
                and not (seq.read_up_to(len(b.headers)) & b.changes) and not exclude(b.path)]
        # A prelude that holds a project header whole (read after the first `n` of the unit's prelude headers)
        # is read up to that header's end: it covers more than any of standard headers alone.
        for h in seq.holds:
            fits += [b for b in self.built if b.dialect == dialect and b.headers == (*seq.headers[:h.n], h.spelled)
                     and not (h.defined & b.words) and not (h.read & b.changes) and not exclude(b.path)]
        return max(fits, key=lambda b: (_holds_project(b.headers), len(b.headers))).path if fits else None


_PLANNERS: dict[str, _Planner] = {}  # by the path of each prelude it built


def plan(roots: list[str], config: ParseConfig, data: dict[str, bytes], edges: dict[str, set[str]],
         standard: frozenset[str], folder: str, skip: Callable[[str], bool],
         variants: Callable[[str], list[list[str]]] = lambda r: [], jobs: int = 1) -> ParseConfig:
    """The config with preludes of the `standard` headers (and our stand-ins) built under `folder` for the roots
    that `skip` leaves (those with a torch prefix, per-file flags or defines of their own are skipped).
    `variants(root)`: the define sets `root` will also be parsed with (the HIP configuration): their sequences
    are candidates too, and `replan` picks among the built preludes for them. `jobs`: processes that build them."""
    dialect_of = {r: " ".join(config.args_of.get(r, DIALECT)) for r in roots
                  if not (skip(r) or r in config.per_file_args or r in config.defines_of)}
    if len(dialect_of) < 2:  # a prelude costs about one parse
        return config
    planner = _Planner(data, edges, standard, config.include_dirs_for, list(config.include_dirs), {}, {}, [])
    # The stub alone first, per dialect: it serves every unit whose own set has no prelude (or clashes), and
    # its files are where the plain parse reads them too (`-include` puts the stub first): not checked. What it
    # leaves defined is what a unit's text starts with.
    first: dict[str, set[str]] = {}  # dialect -> the files of its stub-only prelude
    first_defined: dict[str, set[bytes]] = {}  # dialect -> the macros its stub-only prelude defined
    dialects = sorted(set(dialect_of.values()))
    for i, dialect in enumerate(dialects):
        got = _build(config, (), dialect.split(), os.path.join(folder, f"km_prelude_{i}.h"))
        if got is None:
            continue
        path, files, defined = got
        first[dialect], first_defined[dialect] = files, defined
        undefined: set[bytes] = set()
        for f in files:
            undefined |= _undefs(f)
        planner.starts[dialect] = Start(frozenset(defined), frozenset(defined & undefined))
        planner.built.append(_Built((), dialect, path, frozenset()))
    wanted: dict[str, Sequence] = {}
    counts: Counter[tuple[tuple[str, ...], str]] = Counter()
    for r, dialect in dialect_of.items():
        for n, defines in enumerate([[], *variants(r)]):
            seq = planner.sequence(r, dialect, defines)
            if seq is None:
                continue
            if n == 0:
                wanted[r] = planner.wanted[r] = seq
            counts[(seq.headers, dialect)] += 1
    # A prelude serves the units whose sequence starts with its headers: per unit (and configuration), the
    # longest such start that another shares; the starts most want are built.
    starts = Counter((h[:n], d) for h, d in counts.elements() for n in range(1, len(h) + 1))
    want = Counter(max(((h[:n], d) for n in range(1, len(h) + 1) if starts[(h[:n], d)] >= 2),
                       key=lambda k: len(k[0]), default=None) for h, d in counts.elements())
    candidates = [k for k, _ in want.most_common() if k is not None][:MAX_PRELUDES]
    # And per unit (planned configuration), the outermost project header it may hold that another unit holds
    # after the same prelude headers (`Hold`: the later ones are read inside it).
    # Off unless asked for (`KM_PROJECT_PRELUDES=on`): such a prelude is exact against the plain parse, but a
    # standard-header prelude hides the standard library's declarations from the walks (cheaper walks, and closures
    # that name fewer standard headers), so switching to it changes outputs and saved little (docs/scale.md).
    project = os.environ.get("KM_PROJECT_PRELUDES", "off") == "on"
    options = Counter(((*seq.headers[:h.n], h.spelled), dialect_of[r]) for r, seq in wanted.items()
                      for h in seq.holds if project)
    held = Counter(next((k for h in seq.holds if options[k := ((*seq.headers[:h.n], h.spelled), dialect_of[r])] >= 2),
                        None) for r, seq in wanted.items())
    candidates += [k for k, _ in held.most_common() if k is not None][:MAX_PROJECT_PRELUDES]
    built = _build_all([(config, headers, dialect.split(), os.path.join(folder, f"km_prelude_{i}.h"))
                        for i, (headers, dialect) in enumerate(candidates, start=len(dialects))], jobs)
    for i, (headers, dialect), got in zip(range(len(dialects), len(dialects) + len(candidates)), candidates, built,
                                          strict=True):
        if got is None:
            continue
        path, files, defined = got
        words: set[bytes] = set()
        changes = defined - first_defined.get(dialect, set())
        for f in sorted(files - first.get(dialect, set())):
            if not f.endswith(os.sep + f"km_prelude_{i}.h"):
                words |= _words(f)
                changes |= _undefs(f)
        planner.built.append(_Built(headers, dialect, path, frozenset(words), frozenset(changes)))
    prelude_of: dict[str, str] = {}
    args_of = dict(config.args_of)
    for b in planner.built:
        args_of[b.path] = b.dialect.split()
        _PLANNERS[b.path] = planner
    for r, seq in wanted.items():
        if (best := planner.choose(seq, dialect_of[r])) is not None:
            prelude_of[r] = best
    if len(prelude_of) < 2:
        return config
    return replace(config, prelude_of=prelude_of, args_of=args_of)


def replan(config: ParseConfig, defines: list[str], exclude: Callable[[str], bool],
           only: str | None = None) -> dict[str, str]:
    """`config.prelude_of` for a parse with `defines` added, among the preludes `exclude` leaves (the caller's:
    those whose files name an added define). A unit whose walk read none of the added names walks the same and
    keeps its choice; one whose walk read one is walked again with them (an `#if` on one may take another branch
    now) and takes the longest built prelude that fits that sequence. With `only` (the unit the configuration
    will parse), such units other than it are dropped instead of walked."""
    added = {d.partition("=")[0].encode() for d in defines}
    out: dict[str, str] = {}
    for tu, current in config.prelude_of.items():
        planner = _PLANNERS.get(current)
        base = planner.wanted.get(tu) if planner is not None else None
        dialect = " ".join(config.args_of.get(tu, DIALECT))
        if planner is None or base is None:
            seq = None  # not planned here: kept as it was where no file of it names an added define
            best = None if exclude(current) else current
        elif not (base.read_all & added):
            seq = base
        elif only is not None and tu != only:
            continue
        else:
            seq = planner.sequence(tu, dialect, [*config.defines, *defines])
        if seq is not None:
            best = planner.choose(seq, dialect, exclude)
        if best is not None:
            out[tu] = best
    return out


def _build(config: ParseConfig, headers: tuple[str, ...], dialect: list[str],
           prefix: str) -> tuple[str, set[str], set[bytes]] | None:
    """Write and precompile the prelude of `headers`; its path, every file it read and every macro it defined."""
    return _registered(_compile((config, headers, dialect, prefix)))


def _registered(got: tuple[str, set[str], set[bytes], dict[str, str], prefix_view.Record | None] | None
                ) -> tuple[str, set[str], set[bytes]] | None:
    from miner.frontends import pch

    if got is None:
        return None
    out, files, defined, parents, view = got
    # (a prelude that holds a project header: its parses get the build's inclusions merged, not parents)
    pch.register(out, files, None if view is not None else parents, view)
    return out, files, defined


def _build_all(jobs: list[tuple[ParseConfig, tuple[str, ...], list[str], str]],
               workers: int) -> list[tuple[str, set[str], set[bytes]] | None]:
    """`_build` of each, in `workers` forked processes where there are several (each prelude is a parse of its
    headers, independent of the others: on a 2-core run they were a serial second or three before the pool)."""
    if workers < 2 or len(jobs) < 2:
        return [_registered(_compile(j)) for j in jobs]
    import multiprocessing as mp

    with mp.get_context("fork").Pool(min(workers, len(jobs))) as pool:
        got = pool.map(_compile, jobs, chunksize=1)
    return [_registered(g) for g in got]  # registered here: the workers' registries die with them


def _compile(job: tuple[ParseConfig, tuple[str, ...], list[str], str]
             ) -> tuple[str, set[str], set[bytes], dict[str, str], prefix_view.Record | None] | None:
    config, headers, dialect, prefix = job
    try:
        import clang.cindex as ci
    except ImportError:
        return None

    project = _holds_project(headers)
    # A prelude that holds a project header is read by the walks as the plain parse (`prefix_view`): the stub
    # comes in by `-include`, as in the plain parse, and the project header by the name the plain parse spells.
    lines = [] if project else [f'#include "{stub_dir() / "km_cuda_parse.h"}"\n']
    lines += [f'#include "{h}"\n' if os.path.isabs(h) else f"#include <{h}>\n" for h in headers]
    out = prefix[:-2] + ".pch"
    cfg = ParseConfig(include_dirs=config.include_dirs, defines=config.defines, cuda_arch=config.cuda_arch,
                      overlay_dir=config.overlay_dir, args_of={prefix: dialect})
    try:
        for _attempt in range(2):
            with open(prefix, "w", encoding="utf-8") as fh:
                fh.write("".join(lines))
            # KeepGoing | ForSerialization | DetailedPreprocessingRecord, as the torch prefix (pch.build).
            tu = ci.Index.create().parse(prefix, args=clang_args(cfg, prefix, prefix=project),
                                         options=0x200 | 0x10 | 0x1)
            # A standard header the stub read already is read again by the unit's own `#include` (what a header
            # without a whole-file guard, `<cstdio>`, lists then is the unit's): the prefix file leaves it to the
            # unit, or the parse through the prefix would read it twice.
            again, unguarded = _read_before(tu, prefix) if project else (set(), False)
            if unguarded:
                return None  # the unit's own `#include` of it would read it a second time (`_read_before`)
            if not again:
                break
            if any(os.path.isabs(h) for h in again):
                return None
            lines = [f'#include "{h}"\n' if os.path.isabs(h) else f"#include <{h}>\n" for h in headers
                     if h not in again]
        # (a project header's errors are the plain parse's too: they are recorded and handed to each unit)
        if not project and any(d.severity >= ci.Diagnostic.Error for d in tu.diagnostics):
            return None
        view = prefix_view.record(tu, prefix) if project else None
        files = {prefix, str(stub_dir() / "km_cuda_parse.h")}
        parents: dict[str, str] = {}
        for inc in tu.get_includes():
            files.add(inc.include.name)
            if inc.source is not None:
                parents.setdefault(inc.include.name, inc.source.name)
        # Every macro the preprocessor defined on its way (the compiler's, the command line's, the stub's),
        # undefined later or not: a name not among them is surely undefined after the stub.
        defined = {c.spelling.encode() for c in tu.cursor.get_children() if c.kind == ci.CursorKind.MACRO_DEFINITION}
        tu.save(out)
    except (ci.TranslationUnitLoadError, ci.TranslationUnitSaveError, OSError):
        return None
    return out, files, defined, parents, view


def _read_before(tu: Any, prefix: str) -> tuple[set[str], bool]:
    """The headers the prefix file `prefix` includes (as written) that its parse had read before it got there, and
    whether one it reads there has no whole-file guard: the unit's own `#include` of such a header (`<cstdio>`
    includes two headers before its `#ifndef`) reads it again after the prefix, which the plain parse never does."""
    import clang.cindex as ci

    fresh: set[str] = set()
    before: set[str] = set()
    for inc in tu.get_includes():
        name = inc.include.name
        if inc.source is not None and inc.source.name == prefix and name not in before:
            fresh.add(name)
        before.add(name)
    out: set[str] = set()
    guarded = ci.conf.lib.clang_isFileMultipleIncludeGuarded
    unguarded = False
    for c in tu.cursor.get_children():
        f = c.location.file
        if c.kind == ci.CursorKind.INCLUSION_DIRECTIVE and f is not None and f.name == prefix:
            got = c.get_included_file()
            if got is None or got.name not in fresh:
                out.add(c.spelling)
            elif not guarded(tu, got):
                unguarded = True
    return out, unguarded


def _holds_project(headers: tuple[str, ...]) -> bool:
    """Whether a prelude's headers end with a project header (named by its path; standard ones by name)."""
    return bool(headers) and os.path.isabs(headers[-1])


_WORDS: dict[str, frozenset[bytes]] = {}
_UNDEF = lazy_re.compile(rb"^[ \t]*#[ \t]*undef[ \t]+(\w+)", re.M)


def _undefs(path: str) -> set[bytes]:
    """The names a file may `#undef` (any branch)."""
    try:
        with open(path, "rb") as fh:
            return set(_UNDEF.findall(fh.read()))
    except OSError:
        return set()



def _words(path: str) -> frozenset[bytes]:
    if path not in _WORDS:
        try:
            with open(path, "rb") as fh:
                _WORDS[path] = frozenset(_WORD.findall(fh.read()))
        except OSError:
            _WORDS[path] = frozenset()
    return _WORDS[path]
