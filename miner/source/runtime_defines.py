"""Macros and type names a host program supplies when it compiles kernel sources at run time (issue 14):

    map<string, string> defines;
    defines["BLOCK"] = "256";                          // a define map the compile function writes as #defines
    defines["SQRT"] = useDouble ? "sqrt" : "sqrtf";    // (either literal: the first, as the host writes it)
    src << "typedef float real;\\n";                    // text the host prepends to the module's source
    const char* opts[] = {"-DTILE=16", "--define-macro=WIDTH=8"};   // NVRTC options
    nvrtcCompileProgram(prog, 2, opts);

A kernel source compiled that way (NVRTC, `cuModuleLoadData` of PTX the host makes) uses names no file of the
project defines: the host writes them into the module's text or its options when it builds the module. Where the
host gives such a name a literal value, the parse and the unit define it with that value (a `typedef` the host
prepends becomes a define of the same name: the kernel uses it as a type). Where the value is computed
(`defines["KEY_TYPE"] = trait->getKeyType()`), nothing mined gives it, and `statement` says so for a unit that
fails on it. Only projects whose host code compiles at run time (`_RUNTIME_COMPILE`) are read.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from typing import Any

from miner import lazy_re
from miner.units.driver_text import without_comments

# Calls that compile or load device code at run time: without one, a define map is just a map.
_RUNTIME_COMPILE = lazy_re.compile(rb"\b(?:nvrtcCreateProgram|nvrtcCompileProgram|hiprtcCreateProgram|"
                                   rb"hiprtcCompileProgram|cuModuleLoadData(?:Ex)?|cuLinkAddData|"
                                   rb"cuLibraryLoadData)\b")
# `defines["NAME"] = VALUE;` and `defines["NAME(a, b)"] = VALUE;`: a map keyed by a macro name.
_MAP_ASSIGN = lazy_re.compile(r'\[\s*"([A-Za-z_]\w*)(\([\w\s,]*\))?"\s*\]\s*=\s*'
                              r'((?:"(?:[^"\\\n]|\\.)*"|[^;{}"])+);')
_STRING = lazy_re.compile(r'"((?:[^"\\\n]|\\.)*)"')
# A value that is string literals only (adjacent ones concatenate), or a conditional between two of them.
_LITERALS = lazy_re.compile(r'^\s*(?:"(?:[^"\\\n]|\\.)*"\s*)+$')
_CONDITIONAL = lazy_re.compile(r'^[^?"]*\?\s*((?:"(?:[^"\\\n]|\\.)*"\s*)+):\s*((?:"(?:[^"\\\n]|\\.)*"\s*)+)$')
# In a string literal's text: a whole `#define NAME VALUE` line, a `typedef T NAME;`, an option `-DNAME=VALUE`.
_DEFINE_LINE = lazy_re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\([\w\s,]*\))?(?:[ \t]+([^\n]*?))?[ \t]*$",
                               re.M)
_TYPEDEF = lazy_re.compile(r"\btypedef\s+([A-Za-z_][\w\s:<>,*]*?)\s+([A-Za-z_]\w*)\s*;")
_OPTION = lazy_re.compile(r"^(?:-D\s*|--define-macro[= ])([A-Za-z_]\w*)(?:=(.*))?$", re.S)
# `Table::name`: a member of a table of sources (checked against the project's source file stems by the caller).
_TABLE_REF = lazy_re.compile(r"\b([A-Za-z_]\w*)::([A-Za-z_]\w*)\b")
_RUNTIME_WORDS = (b"nvrtc", b"hiprtc", b"cuModuleLoadData", b"cuLinkAddData", b"cuLibraryLoadData")
# What a host file must hold for `read_host` to find anything (most files hold none: read only those).
_HINT_WORDS = (b'["', b'"-D', b"define", b"typedef")
_HOST_SUFFIXES = (".cpp", ".cc", ".cxx", ".c", ".h", ".hpp", ".hh", ".hxx", ".cu", ".cuh", ".inl")
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", "build", "third_party", "3rdparty"}
_MAX_FILES = 6000
_MAX_BYTES = 1_000_000
_ESCAPES = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "r": "", "0": ""}


@dataclass
class Given:
    """One value the host gives a name: `value` (the define's right side; `params` for a function-like macro),
    where (`path` relative to the root, 1-based `line`)."""
    name: str
    params: str
    value: str
    path: str
    line: int

    def define(self) -> str:
        """The `-D` argument (without `-D`): `NAME=VALUE`, `NAME(a,b)=VALUE`."""
        return f"{self.name}{self.params}={self.value}"


@dataclass
class HostDefines:
    """What the project's host code gives kernels it compiles at run time."""
    given: dict[str, list[Given]] = field(default_factory=dict)
    # Names the host defines with a computed value: name -> (path, line, the value expression).
    computed: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    # `Table::name` references of a table of embedded sources (`KernelSources::utilities`: the build makes one
    # string per source file, named by its stem), and of those the ones the host puts before another source's
    # text: streamed into the module's text (`src << KernelSources::common`) or the left side of a
    # concatenation (`KernelSources::vectorOps + KernelSources::utilities`).
    named: set[tuple[str, str]] = field(default_factory=set)
    leading: dict[tuple[str, str], str] = field(default_factory=dict)

    def preludes(self, kernel_source: str, device_sources: list[str]) -> list[str]:
        """Of `device_sources` (paths of sources without kernels), those the host puts before the text of
        `kernel_source` when it builds a module: named as leading by a table that also names the kernel source,
        and in its folder. Streamed ones first (the host writes them before the source it is given)."""
        stem = os.path.splitext(os.path.basename(kernel_source))[0]
        tables = {t for t, n in self.named if n == stem}
        if not tables:
            return []
        here = os.path.dirname(kernel_source)
        out = [(self.leading[(t, os.path.splitext(os.path.basename(d))[0])] != "stream", d)
               for d in sorted(device_sources) for t in sorted(tables)
               if os.path.dirname(d) == here and d != kernel_source
               and (t, os.path.splitext(os.path.basename(d))[0]) in self.leading]
        return list(dict.fromkeys(d for _, d in sorted(out, key=lambda x: x[0])))

    def value_for(self, name: str, path: str) -> Given | None:
        """The value for a kernel source at `path` (relative to the same root): the one written in the host file
        nearest to it (the longest common folder; a project with one back end per folder gives each its own),
        then the first in source order."""
        cands = self.given.get(name)
        if not cands:
            return None
        parts = os.path.dirname(path).split(os.sep)

        def shared(g: Given) -> int:
            n = 0
            for a, b in zip(parts, os.path.dirname(g.path).split(os.sep), strict=False):
                if a != b:
                    break
                n += 1
            return n

        return max(cands, key=lambda g: (shared(g), -cands.index(g)))


def _unescape(text: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            out.append(_ESCAPES.get(text[i + 1], text[i + 1]))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _literal_text(expr: str) -> str:
    return "".join(_unescape(m.group(1)) for m in _STRING.finditer(expr))


def _line_of(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def read_host(text: str, rel: str, out: HostDefines) -> None:
    """Add what one host file gives to `out`."""
    text = without_comments(text.encode("utf-8")).decode("utf-8")  # (offsets and lines kept)

    def give(name: str, params: str, value: str, pos: int) -> None:
        value = value.replace("\\\n", " ")  # a macro's line splices, as the preprocessor joins them
        if "\n" in value.strip():
            return  # (a multi-line value is a block of code, not a define the unit can write on one line)
        out.given.setdefault(name, []).append(Given(name, (params or "").replace(" ", ""), value.strip(), rel,
                                                    _line_of(text, pos)))

    for m in _MAP_ASSIGN.finditer(text):
        name, params, expr = m.group(1), m.group(2) or "", m.group(3).strip()
        while expr.startswith("(") and expr.endswith(")"):
            expr = expr[1:-1].strip()  # (`(uniform ? "1" : "0")`)
        if _LITERALS.match(expr):
            give(name, params, _literal_text(expr), m.start())
        elif c := _CONDITIONAL.match(expr):
            give(name, params, _literal_text(c.group(1)), m.start())  # the first, as the host's branches are written
        elif not params:
            out.computed.setdefault(name, (rel, _line_of(text, m.start()), " ".join(expr.split())))
    for m in _TABLE_REF.finditer(text):
        key = (m.group(1), m.group(2))
        out.named.add(key)
        before, after = text[max(0, m.start() - 16):m.start()].rstrip(), text[m.end():m.end() + 16].lstrip()
        if before.endswith("<<"):
            out.leading.setdefault(key, "stream")
        elif after.startswith("+") and not after.startswith(("+=", "++")):
            out.leading.setdefault(key, "concat")
    for m in _STRING.finditer(text):
        raw = m.group(1)
        if not raw.startswith(("-D", "--define-macro")) and "define" not in raw and "typedef" not in raw:
            continue
        lit = _unescape(raw)
        if (o := _OPTION.match(lit)) is not None:
            if (rest := _joined_to(text, m.end())) is not None:
                # `"-DDIM=" + std::to_string(dim)`: the literal is only the option's head, its value computed
                out.computed.setdefault(o.group(1), (rel, _line_of(text, m.start()), f'"{raw}" {rest}'))
            else:
                give(o.group(1), "", o.group(2) if o.group(2) is not None else "1", m.start())
            continue
        for d in _DEFINE_LINE.finditer(lit):
            give(d.group(1), d.group(2) or "", d.group(3) or "", m.start())
        for t in _TYPEDEF.finditer(lit):
            give(t.group(2), "", " ".join(t.group(1).split()), m.start())


def _joined_to(text: str, at: int) -> str | None:
    """What a string literal ending at `at` is joined to (`+ expr`, `<< expr`), up to the end of that operand
    (`,`, `;` or a bracket it does not open); None when the literal stands alone."""
    rest = text[at:at + 400].lstrip()
    if not rest.startswith(("+", "<<")) or rest.startswith(("+=", "++", "<<=")):
        return None
    depth = 0
    for i, c in enumerate(rest):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return " ".join(rest[:i].split())
            depth -= 1
        elif c in ",;" and depth == 0:
            return " ".join(rest[:i].split())
    return " ".join(rest.split())


@functools.lru_cache(maxsize=16)
def host_defines(root: str) -> HostDefines:
    """What the host code under `root` gives the kernels it compiles at run time; empty where no host file of it
    compiles or loads device code at run time."""
    texts: list[tuple[str, str]] = []
    runtime = False
    seen = 0
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for f in sorted(files):
            if not f.endswith(_HOST_SUFFIXES) or seen >= _MAX_FILES:
                continue
            seen += 1
            path = os.path.join(dirpath, f)
            try:
                if os.path.getsize(path) > _MAX_BYTES:
                    continue
                with open(path, "rb") as fh:
                    data = fh.read()
            except OSError:
                continue
            # (plain byte searches first: a regex over every file of a large checkout took seconds)
            runtime = runtime or (any(k in data for k in _RUNTIME_WORDS) and _RUNTIME_COMPILE.search(data) is not None)
            if b"__global__" not in data and any(k in data for k in (*_HINT_WORDS, *_RUNTIME_WORDS)):
                texts.append((os.path.relpath(path, root), data.decode("utf-8", "replace")))
    out = HostDefines()
    if runtime:
        for rel, text in texts:
            read_host(text, rel, out)
    return out


# What declares a name in a source's own text: then the host's value is not what the source lacks. A variable or
# parameter of that name counts (`real r = ...`, `float x,`, `template <int N>`), and an enumerator: a module's own
# `#define x pos.x` of the host, written for another source, must not reach one that declares `x`.
def _declares(name: str) -> re.Pattern[str]:
    return re.compile(
        rf"(?:#[ \t]*define[ \t]+{name}\b|\btypedef\b[^;{{}}]*\b{name}\s*;|\busing\s+{name}\s*=|"
        rf"\b(?:struct|class|union|enum)\s+{name}\b|\benum\b[^;{{}}]*\{{[^}}]*\b{name}\b|"
        rf"\b(?!(?:return|case|else|goto|delete|new|throw|sizeof|do|ifdef|ifndef|if|elif|defined|undef)\b)[A-Za-z_]\w*[\s*&]+{name}\s*[=;,)\[:>])")


def _uses(name: str) -> re.Pattern[str]:
    """A use of `name` as a name of its own: not a member (`p.x`, `p->x`) nor a qualified name (`ns::x`)."""
    return re.compile(rf"(?<![\w.])(?<!->)(?<!::){name}\b")


_WORD = lazy_re.compile(rb"\b[A-Za-z_]\w*\b")


def for_source(found: HostDefines, rel: str, texts: list[bytes], defined: set[str]) -> list[str]:
    """`-D` arguments for a kernel source at `rel` (relative to the root `found` was read under) whose text and
    the files it reaches are `texts`: the names the host gives literal values that the source uses and nothing
    it reaches declares (nor `defined`, the parse's own defines)."""
    if not found.given:
        return []
    words = {w.decode() for t in texts for w in _WORD.findall(t)} & set(found.given)
    joined = [without_comments(t).decode("utf-8", "replace") for t in texts] if words - defined else []
    out = []
    for name in sorted(words - defined):
        if not any(_uses(name).search(t) for t in joined) or any(_declares(name).search(t) for t in joined):
            continue
        given = found.value_for(name, rel)
        if given is not None:
            out.append(given.define())
    return out


_KERNEL_LINE = lazy_re.compile(rb"^(?![ \t]*#)[^\n]*\b__global__\b", re.M)


def defines_kernels(data: bytes) -> bool:
    """Whether a source defines kernels: `__global__` on a line that is not a directive (a source of device functions
    may define the project's kernel qualifier macro, `#define KERNEL extern "C" __global__`)."""
    return _KERNEL_LINE.search(data) is not None


def statement(root: str, unresolved: list[dict[str, Any]], named: set[str] | None) -> tuple[list[str], str] | None:
    """The unresolved names the host defines with a computed value when it compiles the source at run time, and
    the statement that says so (the unit's `// km:lacks-headers` reason, units.render._lacking_statement); None
    where there are none."""
    found = host_defines(root)
    syms = list(dict.fromkeys(u["symbol"] for u in unresolved if u.get("symbol") in found.computed
                              and u["symbol"] not in found.given and (named is None or u["symbol"] in named)))
    if not syms:
        return None
    wheres = "; ".join(f"{found.computed[s][0]}:{found.computed[s][1]} gives {s} `{found.computed[s][2]}`"
                       for s in syms[:4])
    return syms, (f"{', '.join(syms)} {'is' if len(syms) == 1 else 'are'} defined by the host when it compiles the "
                  f"source at run time, with a value it computes ({wheres}): no value to mine, so the source does "
                  "not compile without the host's")
