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
- a project file named like a standard header (its own `math.h` on an `-I` dir) keeps that header out.

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
from dataclasses import replace

from miner.frontends.config import ParseConfig, clang_args, stub_dir

_DIRECTIVE = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif|include|define|undef)\b[ \t]*(.*)$", re.M)
_INCLUDE_NAME = re.compile(rb'^([<"])([^>"]+)[>"]')
_MACRO_NAME = re.compile(rb"[A-Za-z_]\w*")
_WORD = re.compile(rb"[A-Za-z_]\w*")
_GUARD_IF = re.compile(rb"^(?:ifndef[ \t]+(\w+)|if[ \t]+!\s*defined\s*\(?\s*(\w+))")
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
        if len(directives) > 1 and directives[0].group(1) in (b"ifndef", b"if"):
            m = _GUARD_IF.match(directives[0].group(1) + b" " + directives[0].group(2))
            name = m and (m.group(1) or m.group(2))
            if name and directives[1].group(1) == b"define" and directives[1].group(2).split()[:1] == [name]:
                guard = directives[0]  # the whole file's include guard: not a condition on its includes
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


_CPLUSPLUS = re.compile(rb"^(!\s*)?(?:defined\s*\(\s*__cplusplus\s*\)|defined\s+__cplusplus|__cplusplus)\s*(?://.*|/\*.*)?$")


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


def sure_headers(root: str, data: dict[str, bytes], edges: dict[str, set[str]],
                 scans: dict[str, _Scan], standard: frozenset[str]) -> tuple[tuple[str, ...], set[bytes]]:
    """The prelude headers `root` includes first, in the order it does: those it includes outside every `#if`
    (directly or through project headers it includes so) up to the first include that might bring other system
    headers in between (a conditional include, a header no prelude holds), so that the files a prelude reads come
    in the order, and from the includers, of the plain parse; and the macro names its project files (every one
    it may reach) define or undefine."""
    def scan(f: str) -> _Scan:
        if f not in scans:
            scans[f] = _Scan(data.get(f, b""))
        return scans[f]

    out: list[str] = []
    seen = {root}

    def visit(f: str) -> bool:
        """False at the first include that ends the sequence."""
        for delim, raw, sure in scan(f).ordered:
            name = raw.decode("utf-8", "replace")
            target = _target(f, name, edges)
            held = target is None and (delim == b"<" and name in standard and name not in _NEVER_HELD or _is_shim(name))
            if held and name in out:
                continue  # included already: its guard makes it nothing
            if not sure:
                return False
            if held:
                out.append(name)
            elif target is None:
                return False
            elif target not in seen:
                seen.add(target)
                if not visit(target):
                    return False
        return True

    visit(root)
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
    return tuple(out), macros - _BUILTIN_MACROS


def _shims_outside(headers: tuple[str, ...], held: tuple[str, ...]) -> set[bytes]:
    """The macros of the stand-ins among `headers` that a prelude holding `held` leaves where they are."""
    out: set[bytes] = set()
    for h in headers:
        if h not in held:
            out |= _shim_macros(h)
    return out


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


def plan(roots: list[str], config: ParseConfig, data: dict[str, bytes], edges: dict[str, set[str]],
         standard: frozenset[str],
         folder: str, skip: Callable[[str], bool]) -> ParseConfig:
    """The config with preludes of the `standard` headers (and our stand-ins) built under `folder` for the roots
    that `skip` leaves (those with a torch prefix, per-file flags or defines of their own are skipped)."""
    scans: dict[str, _Scan] = {}
    shadowed = {os.path.basename(p) for p in data} & {h.rsplit("/", 1)[-1] for h in standard}
    wanted: dict[str, tuple[tuple[str, ...], str, set[bytes]]] = {}
    for r in roots:
        if skip(r) or r in config.per_file_args or r in config.defines_of:
            continue
        headers, macros = sure_headers(r, data, edges, scans, standard)
        headers = tuple(h for h in headers if h.rsplit("/", 1)[-1] not in shadowed)
        wanted[r] = (headers, " ".join(config.args_of.get(r, DIALECT)), macros)
    if len(wanted) < 2:  # a prelude costs about one parse
        return config
    counts = Counter((h, d) for h, d, _ in wanted.values())
    # The stub alone first, per dialect: it serves every unit whose own set has no prelude (or clashes), and
    # its files are where the plain parse reads them too (`-include` puts the stub first): not checked.
    candidates = [((), d) for d in sorted({d for _, d in counts})]
    # A prelude serves the units whose sequence starts with its headers: per unit, the longest such start that
    # another unit shares; the starts most units want are built.
    starts = Counter((h[:n], d) for h, d in counts.elements() for n in range(1, len(h) + 1))
    want = Counter(max(((h[:n], d) for n in range(1, len(h) + 1) if starts[(h[:n], d)] >= 2),
                       key=lambda k: len(k[0]), default=None) for h, d in counts.elements())
    candidates += [k for k, _ in want.most_common() if k is not None][:MAX_PRELUDES]
    built: list[tuple[tuple[str, ...], str, str, frozenset[bytes]]] = []  # headers, dialect, pch, words
    first: dict[str, set[str]] = {}  # dialect -> the files of its stub-only prelude
    for i, (headers, dialect) in enumerate(candidates):
        got = _build(config, headers, dialect.split(), os.path.join(folder, f"km_prelude_{i}.h"))
        if got is None:
            continue
        path, files = got
        if not headers:
            first[dialect] = files
        words: set[bytes] = set()
        for f in sorted(files - first.get(dialect, set())):
            if not f.endswith(os.sep + f"km_prelude_{i}.h"):
                words |= _words(f)
        built.append((headers, dialect, path, frozenset(words)))
    prelude_of: dict[str, str] = {}
    args_of = dict(config.args_of)
    for _, dialect, path, _ in built:
        args_of[path] = dialect.split()
    for r, (headers, dialect, macros) in wanted.items():
        fits = [b for b in built if b[1] == dialect and headers[:len(b[0])] == b[0]
                and not ((macros | _shims_outside(headers, b[0])) & b[3])]
        if fits:
            best = max(fits, key=lambda b: len(b[0]))
            prelude_of[r] = best[2]
    if len(prelude_of) < 2:
        return config
    return replace(config, prelude_of=prelude_of, args_of=args_of)


def _build(config: ParseConfig, headers: tuple[str, ...], dialect: list[str],
           prefix: str) -> tuple[str, set[str]] | None:
    """Write and precompile the prelude of `headers`; its path and every file it read."""
    try:
        import clang.cindex as ci
    except ImportError:
        return None
    from miner.frontends import pch

    with open(prefix, "w", encoding="utf-8") as fh:
        fh.write(f'#include "{stub_dir() / "km_cuda_parse.h"}"\n' + "".join(f"#include <{h}>\n" for h in headers))
    out = prefix[:-2] + ".pch"
    cfg = ParseConfig(include_dirs=config.include_dirs, defines=config.defines, cuda_arch=config.cuda_arch,
                      overlay_dir=config.overlay_dir, args_of={prefix: dialect})
    try:
        # KeepGoing | ForSerialization | DetailedPreprocessingRecord, as the torch prefix (pch.build).
        tu = ci.Index.create().parse(prefix, args=clang_args(cfg, prefix, prefix=False), options=0x200 | 0x10 | 0x1)
        if any(d.severity >= ci.Diagnostic.Error for d in tu.diagnostics):
            return None
        files = {prefix, str(stub_dir() / "km_cuda_parse.h")}
        parents: dict[str, str] = {}
        for inc in tu.get_includes():
            files.add(inc.include.name)
            if inc.source is not None:
                parents.setdefault(inc.include.name, inc.source.name)
        tu.save(out)
    except (ci.TranslationUnitLoadError, ci.TranslationUnitSaveError, OSError):
        return None
    pch.register(out, files, parents)
    return out, files


_WORDS: dict[str, frozenset[bytes]] = {}


def _words(path: str) -> frozenset[bytes]:
    if path not in _WORDS:
        try:
            with open(path, "rb") as fh:
                _WORDS[path] = frozenset(_WORD.findall(fh.read()))
        except OSError:
            _WORDS[path] = frozenset()
    return _WORDS[path]
