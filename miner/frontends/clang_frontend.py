"""Primary frontend: libclang's AST, parsed against our stub and shim headers.

An analysis that needs the AST (closures and launches, `units.analysis.analyse`) is passed in by the
caller and runs here while the TU is alive: cursors cannot leave the parse worker. Its result comes back
as plain data (`ParseResult.analysis`), so this module knows nothing of `units/`.
"""

from __future__ import annotations

import ctypes
import functools
import gc
import hashlib
import json
import os
import re
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from miner import lazy_re
from miner.frontends import pch
from miner.frontends.common import (
    attributes_from_prefix,
    conditional_start,
    line_of,
    make_param,
    make_template_param,
    signature_text,
)
from miner.frontends.config import ParseConfig, clang_args
from miner.frontends.model import Kernel

try:
    import clang.cindex as ci

    from miner.frontends import cindex_speed

    cindex_speed.install()
    K = ci.CursorKind
    AVAILABLE = True
except Exception:  # noqa: BLE001 - any failure to load libclang means "use the fallback"
    AVAILABLE = False

KEEP_GOING = 0x200  # CXTranslationUnit_KeepGoing
# CXTranslationUnit_Incomplete: the TU is parsed as a prefix, so Sema skips its end-of-TU work, above all
# the implicit instantiation of every function template specialization the TU uses. Nothing here reads
# an instantiated body (the analysis walks the templates as written and maps their arguments; an explicit
# instantiation's definition is made where it is written, not at the end): a TU whose host code picks
# among hundreds of specializations of one large kernel (a table of `(void *)k<T, 32, 2, true>`) spent
# seconds instantiating them, 40 times the rest of its parse. What goes with it: diagnostics that only an
# instantiation or the end-of-TU checks would report (docs/scale.md).
INCOMPLETE = 0x2
# No detailed record by default: its macro cursors triple the walk (the units' analysis asks for it).
_OPTIONS = KEEP_GOING | INCOMPLETE
_SCOPES = ("NAMESPACE", "LINKAGE_SPEC", "UNEXPOSED_DECL", "CLASS_DECL", "STRUCT_DECL")
_MAX_MESSAGES = 5


@dataclass
class ParseResult:
    path: str
    kernels: list[Kernel] = field(default_factory=list)
    seen_files: set[str] = field(default_factory=set)  # input files this TU included
    error: str | None = None
    # What the caller's analysis returned, as plain data (its `to_dict()`): it crosses the worker's process
    # boundary and sits in the parse cache. None without an analysis, or when it failed (`unit_error`).
    analysis: dict[str, Any] | None = None
    unit_error: str | None = None
    # With units: a digest of what the preprocessor made of this TU (the files it read, the #if branches it
    # skipped in each, every diagnostic). Two parses of one file whose digests match saw the same tokens.
    preprocessed: str | None = None
    # The analysis was not run: this parse preprocessed like the reference parse named by `parse(same_as=)`
    # (same digest, and no file names one of the extra defines but on an `#if` line), so its analysis is the
    # reference's, which the caller puts in (extract/parse.py). `analysis` is None then.
    reused: bool = False


@dataclass
class LiveTU:
    """What an analysis gets while the translation unit is alive: the TU, the kernels found with their
    cursors (same order), the functions it declares but does not define, and file access."""

    tu: Any  # clang.cindex.TranslationUnit
    kernels: list[Kernel]
    cursors: list[Any]  # clang.cindex.Cursor of each kernel
    # (file, offset of the name) -> a declared-only function that may be a kernel another TU defines
    declared: dict[tuple[str, int], DeclaredFunction]
    inputs: set[str]  # input and context files
    norm: Callable[[str], str]  # a file name as clang spells it -> the real path inputs are keyed by
    read: Callable[[str], bytes]  # a file's bytes, read once per TU
    # Generated instance files of this TU's group (same folder, includes and flags; only explicit
    # instantiations of their own): not parsed, their lines read by the analysis as this TU's own.
    instances: list[str] = field(default_factory=list)
    # Parses the main file again with text appended (`probe(text)`), same arguments: what only the compiler
    # knows (a class template's member alias in one instantiation) asked through declarations of our own.
    # None in a TU parsed without it; a parse that fails gives None.
    probe: Callable[[str], Any] | None = None
    # The parse's command-line `-D`s (name -> value). Through a precompiled prefix they sit in the prefix, and the
    # TU's preprocessing record lists no definition of them: a build's `-DTILE_WIDTH=4` that a unit's macros paste
    # (`ROWS_##TILE_WIDTH`) is found here (closure.context.macro_lookup).
    command_line: dict[str, str] = field(default_factory=dict)
    # The files the parse's arguments include before the main file (`-include F`): their text comes first.
    forced: list[str] = field(default_factory=list)


def forced_includes(args: list[str]) -> list[str]:
    """The files `-include F` (and `-includeF`) of a parse's arguments name, in order."""
    return [args[i + 1] if a == "-include" else a[len("-include"):] for i, a in enumerate(args)
            if (a == "-include" and i + 1 < len(args)) or (a.startswith("-include") and a[len("-include"):]
                                                           and not a.startswith("-include-"))]


def _directive_line(data: bytes, start: int) -> str:
    """The directive at `start` as one line: its continuation lines joined, runs of blanks made one."""
    end = data.find(b"\n", start)
    while end > 0 and data[start:end].rstrip().endswith(b"\\"):
        nxt = data.find(b"\n", end + 1)
        end = len(data) if nxt < 0 else nxt
    text = data[start:end if end >= 0 else len(data)].decode("utf-8", "replace").replace("\\\n", " ")
    return " ".join(text.split())


def command_line_defines(args: list[str]) -> dict[str, str]:
    """Name -> value of the `-DNAME[=VALUE]` (and `-D NAME`) in a parse's arguments; a later one wins."""
    out: dict[str, str] = {}
    for i, a in enumerate(args):
        d = args[i + 1] if a == "-D" and i + 1 < len(args) else a[2:] if a.startswith("-D") and len(a) > 2 else None
        if d is not None:
            name, eq, value = d.partition("=")
            out[name] = value if eq else "1"
    return out


# An analysis: called with the live TU, returns a record with `to_dict()` and `error` (None, or why it
# stopped early: what it found until then is kept), as units.analysis.analyse does.
Analysis = Callable[[LiveTU], Any]


class _Sources:
    """Reads each file once per TU; offsets index into the bytes."""

    def __init__(self) -> None:
        self._cache: dict[str, bytes] = {}

    def get(self, path: str) -> bytes:
        if path not in self._cache:
            with open(path, "rb") as fh:
                self._cache[path] = fh.read()
        return self._cache[path]


def _diagnostics(tu: ci.TranslationUnit, file: str) -> dict:
    diags = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Warning]
    errors = [d for d in diags if d.severity >= ci.Diagnostic.Error]
    # Messages about the kernel's own file first: those explain a bad parse of the kernel.
    own = [d for d in errors if d.location.file and d.location.file.name == file]
    rest = [d for d in errors if d not in own]
    msgs = []
    for d in (own + rest)[:_MAX_MESSAGES]:
        loc = d.location
        where = f"{os.path.basename(loc.file.name)}:{loc.line}:{loc.column}: " if loc.file else ""
        msgs.append(f"{where}error: {d.spelling}")
    # (every error line of the kernel's own file, for units.unparsed_launchers: a launch in a function the parse
    # misread; left out of the metadata)
    lines = [[d.location.line, d.spelling] for d in own[:_MAX_ERROR_LINES]]
    return {"count": len(diags), "errors": len(errors), "messages": msgs, "_error_lines": lines}


_MAX_ERROR_LINES = 400


def _is_kernel(c: ci.Cursor) -> bool:
    return c.is_definition() and any(ch.kind == K.CUDAGLOBAL_ATTR for ch in c.get_children())


def unclosed_namespace(c: ci.Cursor) -> bool:
    """A namespace the parse never closed: clang's recovery from errors in a header (unknown types, a misread
    initializer) lost its closing brace, so it runs on over every later file of the translation unit. Its
    extent has no end, only its opening has a place."""
    return c.kind == K.NAMESPACE and c.extent.start.file is None and c.location.file is not None


def _scopes(c: ci.Cursor) -> list[ci.Cursor]:
    """The scopes around `c`, innermost first, without those a namespace the parse left open in another file
    would add (the main file's kernels after a broken library header are not in that header's namespace)."""
    out: list[ci.Cursor] = []
    own = c.location.file.name if c.location.file is not None else None
    p = c.semantic_parent
    while p is not None and p.kind != K.TRANSLATION_UNIT:
        if unclosed_namespace(p) and p.location.file.name != own:
            out = []
        else:
            out.append(p)
        p = p.semantic_parent
    return out


def _qualified_name(c: ci.Cursor, scopes: list[ci.Cursor] | None = None) -> str:
    scopes = _scopes(c) if scopes is None else scopes
    return "::".join(reversed([c.spelling, *(p.spelling for p in scopes if p.spelling)]))


def _namespaces(scopes: list[ci.Cursor]) -> list[str]:
    """The namespaces among `_scopes`, outermost first, "" for an anonymous one."""
    return [p.spelling for p in reversed(scopes) if p.kind == K.NAMESPACE]


class _Normalizer:
    """clang spells a file as it was reached (`dir/../x.h`); inputs are keyed by real path."""

    _cache: dict[str, str] = {}  # per process: a worker parses many TUs that share headers

    def __call__(self, name: str) -> str:
        if name not in self._cache:
            self._cache[name] = os.path.realpath(name)
        return self._cache[name]


@functools.lru_cache(maxsize=4096)
def _spelled(name: str) -> re.Pattern[str]:
    """`name` not inside a longer word, compiled once per name (parameter names repeat across a tree)."""
    return re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")


_TEMPLATE_PARAMS = {K.TEMPLATE_TYPE_PARAMETER: "type", K.TEMPLATE_NON_TYPE_PARAMETER: "value",
                    K.TEMPLATE_TEMPLATE_PARAMETER: "template"}


def _expanded_param(p: ci.Cursor) -> str:
    """A template parameter's declaration as the macro expansion declares it (its extent is the invocation):
    a value parameter's type as clang spells it; the default is left out (its tokens are not in the file)."""
    if p.kind == K.TEMPLATE_NON_TYPE_PARAMETER:
        return f"{p.type.spelling} {p.spelling}"
    if p.kind == K.TEMPLATE_TEMPLATE_PARAMETER:
        inner = ", ".join(_expanded_param(q) for q in p.get_children() if q.kind in _TEMPLATE_PARAMS)
        return f"template <{inner}> class {p.spelling}"
    return f"typename {p.spelling}"


def _kernel(c: ci.Cursor, data: bytes, path: str, clang_name: str, diags: dict) -> Kernel:
    start, end = c.extent.start.offset, c.extent.end.offset
    # Extents that cover a macro invocation rather than one declaration: the kernel's own (a kernel
    # written by a macro gives its parameters the invocation's extent) and any two parameters share.
    spans = [(ch.extent.start.offset, ch.extent.end.offset) for ch in c.get_children()
             if ch.kind == K.PARM_DECL or ch.kind in _TEMPLATE_PARAMS]
    macro_spans = {(start, end)} | {sp for sp in spans if spans.count(sp) > 1}
    start = conditional_start(data, start, end)  # `#if ... __launch_bounds__(a) #else ... #endif` before it
    text = data[start:end].decode("utf-8", errors="replace")
    params, tparams = [], []
    name_offset = c.location.offset
    for ch in c.get_children():
        e = ch.extent
        if e.start.file is None or e.start.file.name != clang_name:
            continue
        piece = data[e.start.offset : e.end.offset].decode("utf-8", errors="replace")
        if ch.kind == K.PARM_DECL:
            if (e.start.offset, e.end.offset) in macro_spans or not _spelled(ch.spelling).search(piece):
                # A kernel written by a macro (`#define UNARY_OP(T, NAME, ...) extern "C" __global__ void
                # NAME(const T *inp, ...)`): the parameter's extent is the whole macro invocation, whose
                # text is no declaration; the type as clang spells it is the one the expansion declares.
                piece = f"{ch.type.spelling} {ch.spelling}"
            params.append(make_param(piece, ch.spelling))
        elif ch.kind in _TEMPLATE_PARAMS:
            if (e.start.offset, e.end.offset) in macro_spans or not _spelled(ch.spelling).search(piece):
                # A template head written by the kernel's macro: the extent is the invocation
                # (`OP_XY(Add, ew_add)`), which would become the type of `int U`; the expansion's
                # own tokens are the declaration.
                piece = _expanded_param(ch)
            tparams.append(make_template_param(piece, ch.spelling, _TEMPLATE_PARAMS[ch.kind]))
    prefix_end = name_offset if start <= name_offset <= end else start
    prefix = data[start:prefix_end].decode("utf-8", errors="replace")
    is_spec = c.kind == K.FUNCTION_DECL and text.lstrip().startswith("template")
    scopes = _scopes(c)  # (once: the qualified name and the namespaces both read it)
    return Kernel(
        name=c.spelling,
        qualified_name=_qualified_name(c, scopes),
        path=path,
        start_offset=start,
        end_offset=end,
        start_line=line_of(data, start),
        end_line=line_of(data, end),
        signature=signature_text(text),
        params=params,
        template_params=tparams,
        attributes=attributes_from_prefix(prefix),
        is_specialization=is_spec,
        frontend="clang",
        diagnostics=diags,
        name_offset=c.location.offset,
        # A C-linkage function's mangled name is its own name (a C++ kernel's is `_Z...`, its host stub's
        # too): this also sees the linkage a definition inherits from an earlier `extern "C"` declaration.
        c_linkage=c.mangled_name == c.spelling,
        namespaces=_namespaces(scopes),
    )


_OPEN_SPACED = lazy_re.compile(rb"<<[ \t]+<|<[ \t]+<<")
_CLOSE_SPACED = lazy_re.compile(rb">>[ \t]+>|>[ \t]+>>|>>>")


@functools.cache
def _joined_chevrons(path: str) -> str | None:
    """The file's text with launches written `k << <grid, block >> > (...)` (which nvcc accepts and
    clang does not) joined to `<<<` / `>>>`, padded so every offset stays; None when it has none."""
    try:
        data = open(path, "rb").read()  # noqa: SIM115 - read once per process, cached
    except OSError:
        return None
    if not _OPEN_SPACED.search(data):
        return None
    out = bytearray(data)
    for m in _OPEN_SPACED.finditer(data):
        out[m.start():m.end()] = b"<<<" + b" " * (m.end() - m.start() - 3)
        close = _CLOSE_SPACED.search(data, m.end(), m.end() + 4000)
        if close is not None:
            out[close.start():close.end()] = b">>>" + b" " * (close.end() - close.start() - 3)
    try:
        return out.decode("utf-8")
    except UnicodeDecodeError:  # the parse would see other offsets than the file's
        return None


_PREPROCESSING = {K.MACRO_DEFINITION, K.MACRO_INSTANTIATION, K.INCLUSION_DIRECTIVE} if AVAILABLE else set()


def parse(path: str, config: ParseConfig, inputs: set[str], index: ci.Index | None = None,
          analyse: Analysis | None = None, instances: list[str] | tuple[str, ...] = (),
          same_as: tuple[str, tuple[str, ...]] | None = None) -> ParseResult:
    """Parse `path`; report kernels defined in any file of `inputs` that this TU sees, and what `analyse`
    finds in the live TU (`ParseResult.analysis`), reading the explicit instantiations of `instances`
    (files that are this TU but for those lines, `extract/instances.py`) as the TU's own.
    `same_as` is (the `preprocessed` digest of another parse of `path`, the macros this configuration defines
    beyond that one's): when this parse comes out the same, the analysis is skipped (`ParseResult.reused`).

    Python's cycle collector is off while the TU is walked: the walks make and keep hundreds of thousands of
    cursor objects, and each automatic collection traversed all of them again (a tenth of a ggml unit's CPU,
    more with the children kept per node, `cindex_speed`). Nothing the walks make is garbage before the TU is
    released; what a cycle still holds afterwards (the TU through the analysis's context) is collected then."""
    if not gc.isenabled():
        return _parse(path, config, inputs, index, analyse, instances, same_as)[0]
    gc.disable()
    try:
        result, tu = _parse(path, config, inputs, index, analyse, instances, same_as)
    finally:
        gc.enable()
    if tu is not None and tu() is not None:
        gc.collect()  # (libclang's AST is large: not left to a later collection)
    return result


def _parse(path: str, config: ParseConfig, inputs: set[str], index: ci.Index | None,
           analyse: Analysis | None, instances: list[str] | tuple[str, ...],
           same_as: tuple[str, tuple[str, ...]] | None) -> tuple[ParseResult, Any]:
    """`parse`, and a weak reference to the TU (None where none was made)."""
    with_units = analyse is not None
    result = ParseResult(path=path)
    if not AVAILABLE:
        result.error = "libclang is not available"
        return result, None
    args = clang_args(config, path)
    # Through a precompiled prefix, an index that leaves the prefix's declarations and macros out of the
    # walks: they are never walked into anyway (not input files), but listing them cost more than the parse.
    # A prefix that holds project headers (`prefix_view`) is walked into: its declarations are listed.
    view = pch.view_of(args)
    local_only = "-include-pch" in args and view is None
    given = index
    index = _local_index() if local_only else (index or _process_index(False) if view else index or ci.Index.create())
    # Units need the preprocessing record: it tells which #defines sit in skipped #if branches.
    unsaved = [(f, t) for f in sorted(inputs | {path}) if (t := _joined_chevrons(f)) is not None]
    try:
        tu = index.parse(path, args=args, options=_OPTIONS | (0x1 if with_units else 0),
                         unsaved_files=unsaved or None)
    except ci.TranslationUnitLoadError as exc:
        if not local_only and view is None:
            result.error = f"libclang could not parse the file: {exc}"
            return result, None
        # libclang 18 crashes on some units through a precompiled prefix that parse fine without it (a C++20
        # prelude of <functional> and a unit that then includes <iostream>): the prefix only saves time, so the
        # unit is parsed again the plain way rather than lost to tree-sitter with every launch in it.
        config = pch.without(config)
        args, local_only, view = clang_args(config, path), False, None
        index = given or ci.Index.create()
        try:
            tu = index.parse(path, args=args, options=_OPTIONS | (0x1 if with_units else 0),
                             unsaved_files=unsaved or None)
        except ci.TranslationUnitLoadError as again:
            result.error = f"libclang could not parse the file: {again}"
            return result, None
    try:
        cindex_speed.hold_top_level(tu, local_only, view)
    except LookupError:
        # The unit's text does not sit around the held project header as its plan said (`prefix_view.install`):
        # parsed the plain way, which the prefix would only have saved time on.
        cindex_speed.release(tu)
        return _parse(path, pch.without(config), inputs, given, analyse, instances, same_as)
    tu.__dict__["km_prefix_parents"] = pch.parents_of(args)

    def probe(text: str, instantiate: bool = False, program: str | None = None,
              blank: Sequence[tuple[int, int]] = ()) -> ci.TranslationUnit | None:
        if program is not None:
            # Another program of the project, parsed with this TU's arguments and its instantiations, for what
            # it instantiates of the same headers (launches.instantiated).
            try:
                return index.parse(program, args=args, options=KEEP_GOING,
                                   unsaved_files=[(f, t) for f, t in unsaved if f != path] or None)
            except ci.TranslationUnitLoadError:
                return None
        base = dict(unsaved).get(path)
        if base is None:
            try:
                base = open(path, encoding="utf-8", errors="replace").read()  # noqa: SIM115
            except OSError:
                return None
        if blank:
            base = blanked(base, blank, dict(unsaved).get(path) is not None or _read_bytes(path) == base.encode())
        files = [(f, t) for f, t in unsaved if f != path] + [(path, f"{base}\n{text}\n")]
        # A probe reads a class's private member aliases and fields too (`using impl_type = ...;` above
        # `public:`, `std::unique_ptr<impl_type> impl_;`), as the class's own members do.
        # Access control is a benign language option: a precompiled prefix (torch's, a prelude) takes it off too.
        access = ["-Xclang", "-fno-access-control"]
        try:
            # `instantiate`: the end-of-TU instantiations too (INCOMPLETE off), for what only an instantiated
            # body tells (launches.instantiated).
            return index.parse(path, args=args + access, options=KEEP_GOING if instantiate else _OPTIONS,
                               unsaved_files=files)
        except ci.TranslationUnitLoadError:
            return None
    try:
        return _walk(tu, path, config, inputs, analyse, result, list(instances), probe, same_as, args), weakref.ref(tu)
    finally:
        cindex_speed.release(tu)


def blanked(text: str, ranges: Sequence[tuple[int, int]], exact_bytes: bool) -> str:
    """`text` with the byte ranges (function bodies between their braces) made blank, every line break and
    preprocessor directive kept (`_blank_body`), so every other offset and line stays where it was and the
    preprocessor defines and tests the same names in the same order. A range that does not sit between braces,
    or whose directives cannot be told from the code around them, is kept; nothing is blanked where the offsets
    may not be the file's (`exact_bytes` false: the text was decoded with replacements)."""
    if not exact_bytes:
        return text
    buf = bytearray(text.encode())
    for start, end in ranges:
        if start < 1 or end >= len(buf) or buf[start - 1:start] != b"{" or buf[end:end + 1] != b"}":
            continue
        out = _blank_body(bytes(buf[start:end]))
        if out is not None:
            buf[start:end] = out
    return buf.decode()


def _blank_body(body: bytes) -> bytes | None:
    """`body` with every byte of its code lines made a space (line breaks kept) and its directive lines (a
    line whose first character is `#`, with the lines a trailing backslash continues) kept as they are; None
    where a directive line might not be one (a block comment or raw string in the body could hide it; a
    continued code line could carry it on) or a `_Pragma` would be lost."""
    if b"_Pragma" in body or b"\r" in body.replace(b"\r\n", b""):
        return None
    out: list[bytes] = []
    kept = continued = False
    for i, line in enumerate(body.split(b"\n")):
        code = line.rstrip(b"\r")
        if continued or (i and code.lstrip(b" \t\f\v").startswith(b"#")):
            out.append(line)
            kept, continued = True, code.endswith(b"\\")
            continue
        if code.endswith(b"\\"):
            return None
        out.append(line.translate(_BLANK))
    if continued or (kept and (b"/*" in body or b'R"' in body)):
        return None
    return b"\n".join(out)


# Every byte but a line break (LF, CR: both end a line for the preprocessor) to a space.
_BLANK = bytes(b if b in (10, 13) else 32 for b in range(256))


def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


_INDEXES: dict[tuple[int, bool], ci.Index] = {}


def _process_index(exclude_pch: bool) -> ci.Index:
    """This process's index (one per process: the parse workers are forked); `exclude_pch` leaves the
    declarations of precompiled headers out of the walks."""
    key = (os.getpid(), exclude_pch)
    if key not in _INDEXES:
        for stale in [k for k in _INDEXES if k[0] != key[0]]:
            del _INDEXES[stale]
        _INDEXES[key] = ci.Index.create(excludeDecls=exclude_pch)
    return _INDEXES[key]


def _local_index() -> ci.Index:
    return _process_index(True)


def _walk(tu: ci.TranslationUnit, path: str, config: ParseConfig, inputs: set[str], analyse: Analysis | None,
          result: ParseResult, instances: list[str], probe: Callable[[str], Any] | None = None,
          same_as: tuple[str, tuple[str, ...]] | None = None, args: list[str] | None = None) -> ParseResult:
    with_units = analyse is not None
    if with_units:
        result.preprocessed, read = _preprocessed(tu, args or [])
        if same_as is not None and same_as[0] == result.preprocessed and not _names_used(read, same_as[1]):
            # The same tokens as the reference parse: its analysis is this one's (the caller puts it in).
            result.reused, analyse, with_units = True, None, False
    sources = _Sources()
    diag_cache: dict[str, dict] = {}
    norm = _Normalizer()
    result.seen_files = {path} | {
        n for inc in tu.get_includes() if (n := norm(inc.include.name)) in inputs
    }
    cursors: list[ci.Cursor] = []
    declared: list[ci.Cursor] = []
    stack = list(tu.cursor.get_children())
    while stack:
        c = stack.pop()
        kind = c.kind
        if kind in _PREPROCESSING:
            continue
        f = c.location.file
        # Only input and context files are walked: system and shim headers are never descended into.
        fname = norm(f.name) if f is not None else None
        if fname not in inputs and fname not in config.context:
            continue
        if kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
            if with_units and _declared_only(c):
                declared.append(c)
            if fname not in inputs:
                continue
            start_file = c.extent.start.file
            if _is_kernel(c) and start_file is not None and norm(start_file.name) == fname:
                if fname not in diag_cache:
                    diag_cache[fname] = _diagnostics(tu, f.name)
                result.kernels.append(_kernel(c, sources.get(fname), fname, f.name, diag_cache[fname]))
                cursors.append(c)
        elif kind.name in _SCOPES:
            stack.extend(c.get_children())
    # A TU without kernels or kernel declarations that calls a launch API may launch a kernel pointer a function
    # of another TU chose (units.launches.chosen): its analysis records those launches.
    # An analysis marked `every_tu` (units.cross_file: the definitions a kernel of another TU reaches) runs on a TU
    # without kernels too.
    if with_units and (result.kernels or declared or getattr(analyse, "every_tu", False)
                       or _LAUNCH_API.search(sources.get(path) or b"")):
        try:
            live = LiveTU(tu, result.kernels, cursors,
                          {(norm(c.location.file.name), c.location.offset): _declared(c, norm) for c in declared},
                          inputs | config.context, norm, sources.get, instances, probe,
                          command_line_defines(args or []), [norm(f) for f in forced_includes(args or [])])
            found = analyse(live)
            result.analysis, result.unit_error = found.to_dict(), found.error
        except Exception as exc:  # noqa: BLE001 - one TU's closure failing must not stop the run
            result.unit_error = f"{type(exc).__name__}: {exc}"
    if result.kernels and (root := tu.get_file(path)) is not None:
        # The branches the preprocessor skipped in the translation unit's own file, for launch_missing: a kernel
        # named there only is launched in another configuration (units.mentions.launch_missing). Left out of
        # the metadata.
        # The same of each header that defines kernels of this TU: a kernel of a header launched there only in a
        # branch the configuration skips (a launch macro under `#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >=
        # 1000`) was "unresolved".
        found: dict[str, list[list[Any]]] = {}
        for p in dict.fromkeys([path, *(k.path for k in result.kernels)]):
            f = root if p == path else tu.get_file(p)
            data = sources.get(p) or b""
            if f is None or not data:
                continue
            skipped = [[line_of(data, s), line_of(data, e), _directive_line(data, s)] for s, e in skipped_in(tu, f)]
            if skipped:
                found[norm(p)] = skipped
        if found:
            for k in result.kernels:
                k.diagnostics = {**k.diagnostics, "_skipped": found}
    result.kernels.sort(key=lambda k: (k.path, k.start_offset))
    return result


_LAUNCH_API = lazy_re.compile(rb"\b(?:cudaLaunch\w*|hipLaunchKernel|hipLaunchCooperativeKernel|cuLaunchKernel\w*)\s*\(")


class RangeList(ctypes.Structure):
    """libclang's CXSourceRangeList (the one class for it: ctypes tells two apart in argtypes)."""

    _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.POINTER(ci.SourceRange))] if AVAILABLE else []


def skipped_in(tu: ci.TranslationUnit, f: ci.File) -> list[tuple[int, int]]:
    """Byte ranges of `f` the preprocessor skipped (#if branches not taken; needs the detailed record). The one
    caller of clang_getSkippedRanges: the closure's inactive-branch checks use it too."""
    lib = ci.conf.lib
    fn = lib.clang_getSkippedRanges
    if fn.restype is not ctypes.POINTER(RangeList):
        fn.restype, fn.argtypes = ctypes.POINTER(RangeList), [ci.TranslationUnit, ci.File]
        lib.clang_disposeSourceRangeList.argtypes = [ctypes.POINTER(RangeList)]
    lst = fn(tu, f)
    if not lst:
        return []
    try:
        return [(lst.contents.ranges[i].start.offset, lst.contents.ranges[i].end.offset)
                for i in range(lst.contents.count)]
    finally:
        lib.clang_disposeSourceRangeList(lst)


_TESTS_GUARD: dict[str, bool] = {}  # per process: whether a file's conditionals test a HIP guard


def _tests_guard(path: str) -> bool:
    if path not in _TESTS_GUARD:
        from miner.frontends.hip_config import guards  # (hip_config is a frontends module too; imported late)

        try:
            with open(path, "rb") as fh:
                _TESTS_GUARD[path] = bool(guards(fh.read()))
        except OSError:
            _TESTS_GUARD[path] = True  # unknown: its branches are part of the digest
    return _TESTS_GUARD[path]


def _preprocessed(tu: ci.TranslationUnit, args: list[str]) -> tuple[str, list[str]]:
    """A digest of what the preprocessor made of `tu` that tells a configuration with HIP guards defined from
    this one: the files it read (forced includes too), the branches skipped in each file whose conditionals
    test a HIP guard, and every diagnostic; and those files. With the guards named on `#if` lines alone
    (`_names_used`), the other conditionals see the same macros while these take the same branches, so equal
    digests mean the same tokens (all skipped ranges cost a tenth of the run in a torch TU: thousands)."""
    forced = [args[i + 1] for i, a in enumerate(args[:-1]) if a == "-include"]
    files = sorted({tu.spelling, *forced, *(inc.include.name for inc in tu.get_includes())})
    skipped = [(f, skipped_in(tu, handle)) for f in files if _tests_guard(f) and (handle := tu.get_file(f))]
    diags = [(d.severity, d.location.file.name if d.location.file else "", d.location.offset, d.spelling)
             for d in tu.diagnostics]
    text = json.dumps([files, skipped, diags], separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest(), files


_CONDITION = lazy_re.compile(rb"[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef)\b")


def _names_used(files: list[str], names: tuple[str, ...]) -> bool:
    """Whether a file names one of `names` anywhere but on an `#if`-family line. Only there can a define
    change nothing when the same branches are taken (`#define X NAME`, a use in code, `#include NAME` would)."""
    words = [re.compile(rb"(?<![A-Za-z0-9_])" + re.escape(n.encode()) + rb"(?![A-Za-z0-9_])") for n in names]
    for f in files:
        try:
            with open(f, "rb") as fh:
                data = fh.read()
        except OSError:
            return True
        for w in words:
            for m in w.finditer(data):
                line = data.rfind(b"\n", 0, m.start()) + 1
                if not _CONDITION.match(data, line):
                    return True  # (a continued `#if` line's second line counts as a use too)
    return False


def _declared_only(c: ci.Cursor) -> bool:
    """A function that returns void and is declared, not defined, in this TU: a kernel defined in
    another translation unit, if a launch names it (plain `void K(P p);` or `__global__ void K(P p);`)."""
    if c.is_definition() or c.result_type.kind != ci.TypeKind.VOID:
        return False
    return c.get_definition() is None


@dataclass
class DeclaredFunction:
    """A declared-only function standing in for a kernel in the launch search (which reads `name`)."""

    name: str
    qualified_name: str
    params: list[str]
    path: str
    line: int
    c_linkage: bool = False
    # A declared-only function template's parameter names (`T` of `template <typename T> __global__ void
    # K(T *p);`): its launches reach the explicit specializations other translation units define.
    template_params: list[str] = field(default_factory=list)


def _declared(c: ci.Cursor, norm) -> DeclaredFunction:
    children = list(c.get_children())
    params = [ch.type.spelling for ch in children if ch.kind == K.PARM_DECL]
    tparams = [ch.spelling for ch in children if ch.kind in _TEMPLATE_PARAMS]
    return DeclaredFunction(c.spelling, _qualified_name(c), params, norm(c.location.file.name), c.location.line,
                            c.mangled_name == c.spelling, tparams)  # (as a kernel's c_linkage)
