"""Dependency closure of a kernel, computed on the libclang AST of the unit that includes it.

Everything the kernel reaches in the repo's own files (functions, overloads of built-ins, types,
globals, macros) is collected as whole top-level pieces with their enclosing namespaces, then
emitted in original source order. Names declared by our parse stub are CUDA built-ins; names from
the torch shims are recorded as shims; toolkit and C++ headers stay as `#include`s.
"""

from __future__ import annotations

import bisect
import ctypes
import functools
import os
import re
from dataclasses import dataclass, field
from typing import Any

import clang.cindex as ci

from miner.frontends.config import stub_dir
from miner.source.include_graph import INCLUDE
from miner.units.headers import FRAMEWORK as _FRAMEWORK
from miner.units.headers import STD_HEADERS as _STD_HEADERS
from miner.units.headers import TOOLKIT_HEADER as _TOOLKIT_HEADER
from miner.units.headers import UNIT_LIBRARY_HEADER as _UNIT_LIBRARY_HEADER

K = ci.CursorKind
_PIECE_KINDS = {
    K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL, K.ENUM_DECL,
    K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL, K.TYPE_ALIAS_TEMPLATE_DECL, K.VAR_DECL, K.CLASS_TEMPLATE,
    K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, K.USING_DIRECTIVE, K.USING_DECLARATION, K.NAMESPACE_ALIAS,
    K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION,  # member definitions out of line
    K.CONCEPT_DECL,  # C++20: `requires Arithmetic<T>` names it through a TEMPLATE_REF
}
_CLASS_KINDS = {K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL, K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION}
_SCOPE_KINDS = {K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL}
_REF_KINDS = {K.DECL_REF_EXPR, K.MEMBER_REF_EXPR, K.TYPE_REF, K.TEMPLATE_REF, K.CALL_EXPR,
              K.OVERLOADED_DECL_REF, K.MEMBER_REF, K.VARIABLE_REF}
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)((?:[^\n\\]|\\.|\\\n)*)", re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*")
# Names a kernel may take from a C/C++ or toolkit header that its repo only reached through a framework
# header (FLT_MAX through torch, std::vector through a helper): the header a unit must include for each.
_HEADER_OF = {
    **dict.fromkeys(("FLT_MAX", "FLT_MIN", "FLT_EPSILON", "DBL_MAX", "DBL_MIN", "DBL_EPSILON", "FLT_DIG",
                     "DBL_DIG", "FLT_MAX_EXP", "HUGE_VALF"), "cfloat"),
    **dict.fromkeys(("INT_MAX", "INT_MIN", "UINT_MAX", "LONG_MAX", "LLONG_MAX", "SHRT_MAX", "CHAR_BIT",
                     "INT32_MAX", "INT64_MAX"), "climits"),
    **dict.fromkeys(("int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
                     "intptr_t", "uintptr_t"), "cstdint"),
    "assert": "cassert", "printf": "cstdio", "memcpy": "cstring", "memset": "cstring",
    "vector": "vector", "string": "string", "stringstream": "sstream", "cout": "iostream", "cerr": "iostream",
    "numeric_limits": "limits", "initializer_list": "initializer_list",
    "is_same": "type_traits", "enable_if": "type_traits", "conditional": "type_traits",
    "tuple": "tuple", "array": "array", "pair": "utility", "swap": "utility",
    "__nv_bfloat16": "cuda_bf16.h", "__nv_bfloat162": "cuda_bf16.h", "__float2bfloat16": "cuda_bf16.h",
    "__bfloat162float": "cuda_bf16.h", "__half": "cuda_fp16.h", "__half2": "cuda_fp16.h",
    "__float2half": "cuda_fp16.h", "__half2float": "cuda_fp16.h",
    "cooperative_groups": "cooperative_groups.h",
    **dict.fromkeys(("__pipeline_commit", "__pipeline_wait_prior", "__pipeline_memcpy_async"),
                    "cuda_pipeline_primitives.h"), "__nv_fp8_e4m3": "cuda_fp8.h", "__nv_fp8_e5m2": "cuda_fp8.h",
}
_C_HEADER = {"float.h": "cfloat", "limits.h": "climits", "stdint.h": "cstdint", "assert.h": "cassert",
             "stdio.h": "cstdio", "string.h": "cstring"}
_STRING_OR_COMMENT = re.compile(r'/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"', re.S)
_QUOTED = re.compile(r"'([^']+)'")
_UNDECLARED = re.compile(r"(?:use of undeclared identifier|unknown type name|no template named|"
                         r"no member named) '([^']+)'")


@dataclass
class Piece:
    path: str
    start: int
    end: int
    namespaces: tuple[str, ...]
    kind: str
    name: str
    # (start, end, why) of host-only members left out of a class's text (see _host_members_to_drop).
    cuts: tuple[tuple[int, int, str], ...] = ()


@dataclass
class Macro:
    name: str
    path: str
    start: int
    end: int
    body: str
    active: bool = True


@dataclass
class Closure:
    pieces: list[Piece] = field(default_factory=list)
    macros: list[Macro] = field(default_factory=list)
    includes: list[str] = field(default_factory=list)
    shims: list[str] = field(default_factory=list)
    unresolved: list[dict[str, str]] = field(default_factory=list)


class TUContext:
    """Indexes one translation unit's repo-owned declarations and macros for closure queries."""

    def __init__(self, tu: ci.TranslationUnit, inputs: set[str], norm, read) -> None:
        self.tu, self.inputs, self.norm, self.read = tu, inputs, norm, read
        self.stub = os.path.realpath(str(stub_dir()))
        self.shims = os.path.join(self.stub, "shims") + os.sep
        self.files: dict[str, ci.File] = {}
        self._errors: dict[str, list[int]] | None = None
        self._blanked: dict[str, str] = {}
        self._by_bare: dict[str, list[list[tuple[Piece, ci.Cursor]]]] | None = None
        self.order: dict[str, int] = {}  # file -> first-inclusion rank
        # file -> offsets of the #include directives leading to it from the main file: a location's
        # position in the preprocessed stream is chain + (offset,), compared as tuples.
        self.chain: dict[str, tuple[int, ...]] = {norm(tu.spelling): ()}
        self.files[norm(tu.spelling)] = tu.get_file(tu.spelling)
        for inc in tu.get_includes():
            path = norm(inc.include.name)
            self.files.setdefault(path, inc.include)
            self.order.setdefault(path, len(self.order))
            if path not in self.chain:
                parent = self.chain.get(norm(inc.source.name)) if inc.source is not None else None
                self.chain[path] = (parent if parent is not None else (1 << 30,)) + (inc.location.offset,)
        self.order.setdefault(norm(tu.spelling), len(self.order))
        self.pieces: dict[str, list[tuple[int, int, Piece, ci.Cursor]]] = {}
        self.by_name: dict[tuple[tuple[str, ...], str], list[tuple[Piece, ci.Cursor]]] = {}
        self.macros: dict[str, list[Macro]] = {}
        self.defined: set[tuple[str, int]] = set()  # (file, offset of the name) of each processed #define
        # class definition -> its members defined out of line (`vec<3, T, Q>::vec(T)` in a .inl)
        self.members: dict[tuple[str, int], list[tuple[Piece, ci.Cursor]]] = {}
        self._index(tu.cursor, ())
        for path, lst in self.pieces.items():
            lst.sort(key=lambda t: (t[0], -t[1]))
            self.pieces[path] = self._outermost(lst)
        for path in self.order:
            if path in inputs:
                self._index_macros(path)

    def _index(self, scope: ci.Cursor, ns: tuple[str, ...]) -> None:
        for c in scope.get_children():
            kind = c.kind  # before the location: most top-level cursors are preprocessing records
            if kind == K.MACRO_DEFINITION:
                # The #defines the preprocessor really processed in this configuration.
                f = c.location.file
                if f is not None:
                    self.defined.add((self.norm(f.name), c.location.offset))
                continue
            if kind not in _SCOPE_KINDS and kind not in _PIECE_KINDS:
                continue
            f = c.location.file
            if f is None:
                continue
            path = self.norm(f.name)
            if path not in self.inputs:
                continue
            if kind in _SCOPE_KINDS:
                self._index(c, ns + ((c.spelling or "",) if c.kind == K.NAMESPACE else ()))
            elif c.kind in _PIECE_KINDS:
                e = c.extent
                if e.start.file is None or self.norm(e.start.file.name) != path:
                    continue
                name = c.spelling
                parent = c.semantic_parent
                if parent is not None and parent.kind in _CLASS_KINDS and name:
                    # `void W<T>::run() {...}` at namespace scope: one set per class, not every `run`.
                    # Partial specializations are classes of their own (`vec<3, T, Q>`, `vec<4, T, Q>`).
                    partial = parent.kind == K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION
                    cls = parent.displayname if partial else parent.spelling
                    name = f"{cls}::{name}"
                start = e.start.offset
                if parent is not None and parent.kind in _CLASS_KINDS and c.lexical_parent != parent:
                    # Out of line, a member template of a class template is written under the class's
                    # parameter lists (`template<class T> template<class U> W<T>::W(W<U> const&)`), but
                    # libclang's extent starts at the member's own list: without the outer ones the
                    # text names parameters nothing declares.
                    start = self._outer_template_start(path, start)
                p = Piece(path, start, e.end.offset, ns, c.kind.name, name)
                self.pieces.setdefault(path, []).append((p.start, p.end, p, c))
                if parent is not None and parent.kind in _CLASS_KINDS and c.lexical_parent != parent:
                    # Under every enclosing class: `Outer<T>::Inner::f` comes with the `Outer` piece.
                    while parent is not None and parent.kind in _CLASS_KINDS:
                        self.members.setdefault(_class_key(self.norm, parent), []).append((p, c))
                        parent = parent.semantic_parent
                if name:
                    self.by_name.setdefault((ns, name), []).append((p, c))

    def _outer_template_start(self, path: str, start: int) -> int:
        """Where the `template<...>` lists written right before `start` begin (comments skipped)."""
        text = self._blanked.get(path)
        if text is None:
            # Comments and strings blanked to the same length, so offsets stay those of the file.
            raw = self.read(path).decode("latin-1")
            text = self._blanked[path] = _STRING_OR_COMMENT.sub(lambda m: " " * len(m.group()), raw)
        while True:
            i = start
            while i > 0 and text[i - 1].isspace():
                i -= 1
            if i == 0 or text[i - 1] != ">":
                return start
            depth, j = 0, i - 1
            while j >= 0:  # back to the `<` that opens this list
                if text[j] == ">":
                    depth += 1
                elif text[j] == "<":
                    depth -= 1
                    if depth == 0:
                        break
                elif text[j] in ";{}":
                    return start
                j -= 1
            if j < 0:
                return start
            k = j
            while k > 0 and text[k - 1].isspace():
                k -= 1
            if k < 8 or text[k - 8:k] != "template" or (k > 8 and (text[k - 9].isalnum() or text[k - 9] == "_")):
                return start
            start = k - 8

    def _outermost(self, lst: list[tuple[int, int, Piece, ci.Cursor]]) -> list[tuple[int, int, Piece, ci.Cursor]]:
        """Declarations nested in another (`typedef enum {..} t;`, `struct S {..} s;`) are one piece:
        the outer one, so the text is emitted once and every name in it maps to it."""
        out: list[tuple[int, int, Piece, ci.Cursor]] = []
        for item in lst:
            if out and item[0] >= out[-1][0] and item[1] <= out[-1][1] and item is not out[-1]:
                outer = out[-1]
                key = (item[2].namespaces, item[2].name)
                group = self.by_name.get(key, [])
                self.by_name[key] = [(outer[2], outer[3]) if gp is item[2] else (gp, gc) for gp, gc in group]
                continue
            out.append(item)
        return out

    def _index_macros(self, path: str) -> None:
        data = self.read(path)
        # A #define the preprocessor did not process is not in force (`#ifdef __CUDACC__ #define HD
        # __host__ __device__ #else #define HD #endif`). The detailed preprocessing record lists the
        # processed ones, per inclusion: a header entered twice, once in a skipped #if, is still active.
        # Without the record, the file's skipped ranges decide.
        skipped = None if self.defined else _skipped_ranges(self.tu, self.files.get(path))
        for m in _DEFINE.finditer(data):
            body = m.group(2).decode("utf-8", "replace")
            active = ((path, m.start(1)) in self.defined if skipped is None
                      else not any(s <= m.start() < e for s, e in skipped))
            macro = Macro(m.group(1).decode(), path, m.start(), m.end(), body, active=active)
            self.macros.setdefault(macro.name, []).append(macro)

    def active_macro(self, name: str) -> bool:
        return any(m.active for m in self.macros.get(name, ()))

    def active_defs(self, name: str) -> list[Macro]:
        """The #defines of `name` this configuration processed, in file order; none where every
        definition sits in an inactive #if branch (then the name is no macro here)."""
        return [m for m in self.macros.get(name, ()) if m.active]

    def piece_at(self, path: str, offset: int) -> tuple[Piece, ci.Cursor] | None:
        lst = self.pieces.get(path)
        if not lst:
            return None
        i = bisect.bisect_right(lst, offset, key=lambda t: t[0]) - 1
        while i >= 0:
            start, end, p, c = lst[i]
            if start <= offset <= end:
                return p, c
            i -= 1
        return None

    def groups_named(self, name: str) -> list[list[tuple[Piece, ci.Cursor]]]:
        """The same-name sets called `name` in every scope, in index order (candidates of an
        unresolved dependent call). Indexed on first use, once the TU's pieces are final."""
        if self._by_bare is None:
            self._by_bare = {}
            for (_ns, nm), lst in self.by_name.items():
                self._by_bare.setdefault(nm, []).append(lst)
        return self._by_bare.get(name, [])

    def has_errors(self, cur: ci.Cursor) -> bool:
        """Whether the parse reported an error inside the cursor's text."""
        if self._errors is None:
            self._errors = {}
            for d in self.tu.diagnostics:
                if d.severity >= ci.Diagnostic.Error and d.location.file is not None:
                    self._errors.setdefault(self.norm(d.location.file.name), []).append(d.location.offset)
        e = cur.extent
        if e.start.file is None:
            return False
        offsets = self._errors.get(self.norm(e.start.file.name), ())
        return any(e.start.offset <= o <= e.end.offset for o in offsets)

    def sort_key(self, path: str, offset: int) -> tuple[int, ...]:
        return (*self.chain.get(path, (1 << 30,)), offset)


class _RangeList(ctypes.Structure):
    _fields_ = [("count", ctypes.c_uint), ("ranges", ctypes.POINTER(ci.SourceRange))]


def _skipped_ranges(tu: ci.TranslationUnit, f: ci.File | None) -> list[tuple[int, int]]:
    """Byte ranges of `f` inside inactive #if branches (needs the detailed preprocessing record)."""
    if f is None:
        return []
    lib = ci.conf.lib
    fn = lib.clang_getSkippedRanges
    if fn.restype is not ctypes.POINTER(_RangeList):
        fn.restype, fn.argtypes = ctypes.POINTER(_RangeList), [ci.TranslationUnit, ci.File]
        lib.clang_disposeSourceRangeList.argtypes = [ctypes.POINTER(_RangeList)]
    lst = fn(tu, f)
    if not lst:
        return []
    try:
        return [(lst.contents.ranges[i].start.offset, lst.contents.ranges[i].end.offset)
                for i in range(lst.contents.count)]
    finally:
        lib.clang_disposeSourceRangeList(lst)


def _class_key(norm, c: ci.Cursor) -> tuple[str, int]:
    d = c.get_definition() or c
    return (norm(d.location.file.name) if d.location.file else "", d.location.offset)


def _text(ctx: TUContext, p: Piece | Macro) -> str:
    cuts = getattr(p, "cuts", ())
    notes = [f"/* kernel-miner: host-only member left out of the unit: it uses {why} */" for _s, _e, why in cuts]
    return _cut(ctx.read(p.path), p.start, p.end, [(s, e) for s, e, _w in cuts], notes).decode("utf-8", "replace")


_ARG_TYPE_KINDS = {"STRUCT_DECL", "CLASS_DECL", "UNION_DECL", "ENUM_DECL", "TYPEDEF_DECL", "TYPE_ALIAS_DECL",
                   "CLASS_TEMPLATE", "TYPE_ALIAS_TEMPLATE_DECL"}


def compute(ctx: TUContext, kernel_cursor: ci.Cursor, kernel_path: str, kernel_start: int,
            arg_names: list[str] | tuple[str, ...] = ()) -> Closure:
    """The closure of one kernel; `arg_names` are the names in its instantiations' template arguments,
    whose types (declared at any namespace scope of the project) the unit needs as well."""
    out = Closure()
    seen: set[tuple[str, int]] = {(kernel_path, kernel_start)}
    with_members: set[tuple[str, int]] = set()
    pieces: list[Piece] = []
    shims: set[str] = set()
    work = [(kernel_cursor, _enclosing_namespaces(kernel_cursor))]
    # A macro that writes the kernel may write more beside it (`template <> void gpu_abs<float>(...) {
    # k<float><<<...>>>(...); }`): that text is the kernel's text too, so what it names comes along.
    siblings = written_with(kernel_cursor)
    work += [(c, _enclosing_namespaces(c)) for c in siblings]
    tokens: list[str] = []
    headers: dict[str, None] = {}  # toolkit headers whose declarations the closure names

    def take(piece: Piece, pc: ci.Cursor) -> None:
        # Overloads and specializations share a name: take the whole set at that scope.
        for gp, gc in ctx.by_name.get((piece.namespaces, piece.name), [(piece, pc)]):
            key = (gp.path, gp.start)
            if key not in seen:
                seen.add(key)
                pieces.append(gp)
                work.append((gc, gp.namespaces))
        if pc.kind in _CLASS_KINDS and (piece.path, piece.start) not in with_members:
            # The class itself (not the rest of its specialization set, which this use does not
            # instantiate) comes with its members defined out of line, as its header brings their .inl
            # along: a call in a template (`m[0]` on a dependent `mat<3, 3, T, Q>`) names no
            # declaration in the AST, so the definition it needs is reached no other way.
            # Only members device code can call: a host-only one may name what the unit lacks (torch).
            with_members.add((piece.path, piece.start))
            for mp, mc in ctx.members.get(_class_key(ctx.norm, pc), ()):
                if any(ch.kind in _DEVICE_ATTRS for d in (mc, mc.canonical) for ch in d.get_children()):
                    take(mp, mc)

    for c in siblings:
        # `template <> void gpu_abs<float>(...)` needs the primary template it specializes.
        t = _specialized_template(c)
        if t is not None and t.location.file is not None:
            found = ctx.piece_at(ctx.norm(t.location.file.name), t.extent.start.offset)
            if found is not None:
                take(*found)
    for name in arg_names:
        for lst in ctx.groups_named(name):
            typed = [(gp, gc) for gp, gc in lst if gp.kind in _ARG_TYPE_KINDS]
            if typed:
                take(*typed[0])
    while work:
        cur, scope = work.pop()
        drop: dict[tuple[int, int], str] = {}
        if cur.kind in _CLASS_KINDS:
            drop = _host_members_to_drop(ctx, cur)
            if drop:
                found = ctx.piece_at(ctx.norm(cur.extent.start.file.name), cur.extent.start.offset)
                if found is not None:
                    found[0].cuts = tuple((s0, e0, why) for (s0, e0), why in sorted(drop.items()))
        idents = _identifiers(ctx, cur, drop)
        tokens += idents
        for c in _walk(cur, drop):
            if c.kind not in _REF_KINDS:
                continue
            if c.kind == K.OVERLOADED_DECL_REF:
                # Unresolved overload set (dependent call): every repo function of that name, and the
                # shim it names (`at::native::fastAtomicAdd(p, i, n, v, true)` in a template kernel).
                refs = [gc for lst in ctx.groups_named(c.spelling) for _gp, gc in lst]
                # A CUDA built-in the shim overloads for Half (`atomicAdd`) stays a built-in.
                decls = [d for d in _overloaded(c) if d is not None and d.location.file is not None]
                if decls and all(_is_torch_shim(ctx, ctx.norm(d.location.file.name)) for d in decls):
                    refs += decls
            else:
                refs = [c.referenced]
            for r in refs:
                if r is None or r.location.file is None:
                    continue
                rpath = ctx.norm(r.location.file.name)
                if rpath not in ctx.inputs:
                    if _is_torch_shim(ctx, rpath):
                        shims.add(r.spelling)
                    elif (h := _toolkit_header_of_shim(ctx, rpath)) is not None:
                        # `half2` that the repo only had through torch/extension.h: the unit, which has
                        # no torch, includes the toolkit header our parse shim stands for.
                        headers.setdefault(h)
                    continue
                d = r.get_definition() or r
                dpath = ctx.norm(d.location.file.name) if d.location.file else rpath
                found = ctx.piece_at(dpath, d.location.offset)
                if found is not None:
                    take(*found)
        bounds = _launch_bounds_names(cur) if cur.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) else []
        for name in bounds:
            # `__launch_bounds__(kThreads)`: libclang exposes no cursor for CUDA's launch bounds, so the
            # constants it names are looked up in the scopes visible from the function.
            # An anonymous namespace's names are visible from its enclosing one.
            for ns in [s for i in range(len(scope), -1, -1) for s in (scope[:i], scope[:i] + ("",))]:
                if found_here := ctx.by_name.get((ns, name), [])[:1]:
                    take(*found_here[0])
                    break
        if ctx.has_errors(cur):
            # The parse dropped invalid expressions (a name its stub lacked): their calls are missing
            # from the AST. Fall back to the names in the text, looked up in the scopes visible here.
            for name in dict.fromkeys(idents):
                for i in range(len(scope), -1, -1):
                    for gp, gc in ctx.by_name.get((scope[:i], name), [])[:1]:
                        take(gp, gc)
    files = {kernel_path} | {p.path for p in pieces}
    pieces += _usings(ctx, files, pieces, seen, ctx.sort_key(kernel_path, kernel_start), bool(shims))
    out.pieces = sorted(pieces, key=lambda p: ctx.sort_key(p.path, p.start))
    out.macros = _macros(ctx, tokens, ctx.sort_key(kernel_path, kernel_start))
    out.shims = sorted(shims)
    files |= {m.path for m in out.macros}
    for m in out.macros:
        tokens += _IDENT.findall(m.body)
    out.includes = _includes(ctx, files, tokens, list(headers))
    out.unresolved = _unresolved(ctx, files, {(p.path, p.start, p.end) for p in pieces},
                                 (kernel_path, kernel_cursor.extent.start.offset, kernel_cursor.extent.end.offset),
                                 [(p.path, s, e) for p in pieces for s, e, _w in p.cuts])
    return out


def written_with(kernel: ci.Cursor) -> list[ci.Cursor]:
    """Declarations whose extent lies inside the kernel's own (one macro invocation wrote them all)."""
    parent = kernel.lexical_parent
    ext = kernel.extent
    # Written by a macro, a declaration's location is the invocation's start, as is its extent's; written
    # out, its location is its name. Only the former can have siblings inside it: the scan is skipped.
    if parent is None or ext.start.file is None or kernel.location.offset != ext.start.offset:
        return []
    name, lo, hi = ext.start.file.name, ext.start.offset, ext.end.offset
    return [c for c in parent.get_children()
            if c != kernel and c.extent.start.file is not None and c.extent.start.file.name == name
            and lo <= c.extent.start.offset and c.extent.end.offset <= hi]


def _specialized_template(c: ci.Cursor) -> ci.Cursor | None:
    t = ci.conf.lib.clang_getSpecializedCursorTemplate(c)
    return None if t is None or t.kind.is_invalid() else t


def _shim_rel(ctx: TUContext, path: str) -> str | None:
    """The path of one of our parse shims relative to shims/ (`cuda_fp16.h`, `ATen/Dispatch.h`), else None.
    Relative, so that where the miner is installed (a folder named `torchext`, say) never matters."""
    prefix = os.path.join(ctx.stub, "shims") + os.sep
    return path[len(prefix):] if path.startswith(prefix) else None


def _launch_bounds_names(cur: ci.Cursor) -> list[str]:
    """Identifiers inside `__launch_bounds__(...)` in a function's head (before its body)."""
    toks = []
    for t in cur.get_tokens():
        if t.spelling == "{":
            break
        toks.append(t.spelling)
    out: list[str] = []
    for i, s in enumerate(toks):
        if s != "__launch_bounds__" or i + 1 >= len(toks) or toks[i + 1] != "(":
            continue
        depth = 0
        for s2 in toks[i + 1:]:
            depth += (s2 == "(") - (s2 == ")")
            if depth == 0:
                break
            if _IDENT.fullmatch(s2):
                out.append(s2)
    return out


def _is_torch_shim(ctx: TUContext, path: str) -> bool:
    """A declaration of our ATen/c10/torch parse shims (it maps onto the unit shim)."""
    rel = _shim_rel(ctx, path)
    return rel is not None and (rel == "km_torch_parse.h" or rel.split("/", 1)[0] in ("ATen", "c10", "torch", "THC"))


def _toolkit_header_of_shim(ctx: TUContext, path: str) -> str | None:
    """The toolkit or standard header one of our parse shims stands for (shims/cuda_fp16.h: `cuda_fp16.h`),
    None for a library/framework shim (cublas_v2.h, nccl.h) or anything else."""
    rel = _shim_rel(ctx, path)
    if rel is None or _FRAMEWORK.search(rel):
        return None
    return rel if rel in _STD_HEADERS or _TOOLKIT_HEADER.match(rel) or _UNIT_LIBRARY_HEADER.match(rel) else None


def _overloaded(c: ci.Cursor) -> list[ci.Cursor]:
    lib = ci.conf.lib
    return [lib.clang_getOverloadedDecl(c, i) for i in range(lib.clang_getNumOverloadedDecls(c))]


def _macros(ctx: TUContext, tokens: list[str], kernel_key: tuple[int, ...]) -> list[Macro]:
    """The definitions the unit needs. A macro defined once: the definition in force at the kernel.
    A macro redefined before the kernel (`#define OP(X, Y) X + Y` / `ATOMIC(Add)` / `#undef OP` /
    `#define OP(X, Y) X * Y` / `ATOMIC(Mul)`): every active definition before it, each emitted at its
    place so that the pieces between see the one they saw in the source."""
    chosen: dict[str, list[Macro]] = {}
    # A name whose every #define sits in an inactive branch is no macro in this configuration: in CUDA,
    # `h2rcp` under `#if defined(USE_ROCM) ... #define h2rcp __compat_h2rcp` is the toolkit intrinsic.
    todo = [t for t in dict.fromkeys(tokens) if ctx.active_macro(t)]
    while todo:
        name = todo.pop()
        if name in chosen:
            continue
        cands = [m for m in ctx.macros[name] if m.active]
        before = sorted((m for m in cands if ctx.sort_key(m.path, m.start) < kernel_key),
                        key=lambda m: ctx.sort_key(m.path, m.start))
        chosen[name] = before or [min(cands, key=lambda m: ctx.sort_key(m.path, m.start))]
        todo += [t for m in chosen[name] for t in _IDENT.findall(m.body) if ctx.active_macro(t) and t not in chosen]
    return sorted((m for ms in chosen.values() for m in ms), key=lambda m: ctx.sort_key(m.path, m.start))


def _identifiers(ctx: TUContext, cur: ci.Cursor, drop: dict[tuple[int, int], str] | None = None) -> list[str]:
    """Identifiers of a cursor's own text, comments, strings and dropped members left out. From the text
    rather than libclang's tokens: clang_tokenize returns nothing for some header cursors."""
    e = cur.extent
    if e.start.file is None:
        return []
    data = ctx.read(ctx.norm(e.start.file.name))
    text = _cut(data, e.start.offset, e.end.offset, [(s, t) for s, t in (drop or {})]).decode("utf-8", "replace")
    return _IDENT.findall(_STRING_OR_COMMENT.sub(" ", text))


def _cut(data: bytes, start: int, end: int, cuts: list[tuple[int, int]], note: list[str] | None = None) -> bytes:
    """data[start:end] without the ranges in `cuts` (each replaced by its note, if given)."""
    out, pos = [], start
    for i, (s, e) in enumerate(sorted(cuts)):
        if s < pos or e > end:
            continue
        out.append(data[pos:s])
        if note:
            out.append(note[i].encode())
        pos = e
    out.append(data[pos:end])
    return b"".join(out)


def _walk(cur: ci.Cursor, drop: dict[tuple[int, int], str]):
    """cur.walk_preorder() without the subtrees of dropped members."""
    if not drop:
        yield from cur.walk_preorder()
        return
    stack = [cur]
    while stack:
        c = stack.pop()
        e = c.extent
        if c is not cur and (e.start.offset, e.end.offset) in drop:
            continue
        yield c
        stack.extend(reversed(list(c.get_children())))


_MEMBER_FUNCS = {K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION, K.FUNCTION_TEMPLATE}
_DEVICE_ATTRS = {K.CUDADEVICE_ATTR, K.CUDAGLOBAL_ATTR}


def _host_members_to_drop(ctx: TUContext, cls: ci.Cursor) -> dict[tuple[int, int], str]:
    """Host-only member functions of a class (and of its nested classes) that name something a unit cannot
    hold: a torch type the unit shim does not define (`torch::Tensor`, whose host API a unit has no
    business carrying) or a declaration of a library our parse shims stand for (cuBLAS, NCCL). Device code
    cannot call a host-only member, so the unit's copy of the class leaves it out; (start, end) -> why."""
    out: dict[tuple[int, int], str] = {}
    for m in cls.get_children():
        if m.kind in _CLASS_KINDS:
            out.update(_host_members_to_drop(ctx, m))
            continue
        if m.kind not in _MEMBER_FUNCS or any(ch.kind in _DEVICE_ATTRS for ch in m.get_children()):
            continue
        e = m.extent
        if e.start.file is None or e.end.file is None:
            continue
        for c in m.walk_preorder():
            if c.kind not in _REF_KINDS:
                continue
            lacks = _unit_lacks(ctx, c.referenced)
            if lacks:
                out[(e.start.offset, e.end.offset)] = lacks
                break
    return out


def _unit_lacks(ctx: TUContext, r: ci.Cursor | None) -> str | None:
    """The name, when `r` is declared in a parse shim whose declaration no unit carries: a torch entity
    outside the unit shim, or a library shim's (cublas_v2.h, nccl.h). None otherwise."""
    if r is None or r.location.file is None:
        return None
    path = ctx.norm(r.location.file.name)
    rel = _shim_rel(ctx, path)
    if rel is None:
        return None
    top = r
    while top.semantic_parent is not None and top.semantic_parent.kind not in (K.NAMESPACE, K.TRANSLATION_UNIT):
        top = top.semantic_parent
    if _is_torch_shim(ctx, path):
        return None if top.spelling in _unit_shim_names() else _qualified(top)
    return None if _toolkit_header_of_shim(ctx, path) is not None else _qualified(top)


def _qualified(c: ci.Cursor) -> str:
    return "::".join((*_enclosing_namespaces(c), c.spelling))


@functools.cache
def _unit_shim_names() -> frozenset[str]:
    """Identifiers the unit shim (km_torch_unit.h) declares or mentions, comments left out."""
    text = (stub_dir() / "unit" / "km_torch_unit.h").read_text(encoding="utf-8")
    return frozenset(_IDENT.findall(_STRING_OR_COMMENT.sub(" ", text)))


def _enclosing_namespaces(c: ci.Cursor) -> tuple[str, ...]:
    p = c.semantic_parent
    while p is not None and p.kind not in (K.NAMESPACE, K.TRANSLATION_UNIT):
        p = p.semantic_parent
    return _namespace_chain(p) if p is not None else ()


def _namespace_chain(c: ci.Cursor) -> tuple[str, ...]:
    chain: list[str] = []
    while c is not None and c.kind == K.NAMESPACE:
        chain.append(c.spelling)
        c = c.semantic_parent
    return tuple(reversed(chain))


def _usings(ctx: TUContext, files: set[str], pieces: list[Piece], seen: set[tuple[str, int]],
            before: tuple[int, int], with_shim: bool) -> list[Piece]:
    """`using namespace X;`, `using X::y;` and `namespace a = X;` seen before the kernel, kept when what
    they name is in the unit: a namespace or declaration of the closure, a toolkit header, or the torch
    shim when the unit inlines it (`using namespace at;` in a kernel that uses no torch name is dropped:
    without the shim there is no `at` to name)."""
    in_unit = {(p.path, p.start) for p in pieces}
    chains = {p.namespaces[:i] for p in pieces for i in range(1, len(p.namespaces) + 1)}
    out: list[Piece] = []
    for path in files:
        for _s, _e, p, c in ctx.pieces.get(path, []):
            if (p.kind not in ("USING_DIRECTIVE", "USING_DECLARATION", "NAMESPACE_ALIAS")
                    or (p.path, p.start) in seen or ctx.sort_key(p.path, p.start) >= before):
                continue
            refs = [ch.referenced for ch in c.get_children() if ch.referenced is not None]
            target = refs[-1] if refs else None
            if target is None or target.location.file is None:
                continue
            tpath = ctx.norm(target.location.file.name)
            if tpath in ctx.inputs:
                if target.kind == K.NAMESPACE:
                    keep = _namespace_chain(target) in chains
                else:
                    d = target.get_definition() or target
                    found = ctx.piece_at(ctx.norm(d.location.file.name), d.location.offset) if d.location.file else None
                    keep = found is not None and (found[0].path, found[0].start) in in_unit
            else:
                keep = with_shim or not _is_torch_shim(ctx, tpath)
            if keep:
                seen.add((p.path, p.start))
                out.append(p)
    return out


def _includes(ctx: TUContext, files: set[str], tokens: list[str],
              needed: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The `#include <...>` lines a unit keeps, plus the toolkit headers `needed` by declarations the closure
    names (found in our parse shims of those headers) and by names in `tokens` (_HEADER_OF)."""
    out: list[str] = []
    for path in sorted(files, key=lambda p: ctx.order.get(p, 0)):
        for m in INCLUDE.finditer(ctx.read(path)):
            name = m.group(2).decode().strip()
            # A library header (curand_kernel.h) is not kept for being included: only when the closure names
            # something it declares (`needed`), so a kernel of the same file that draws no random numbers
            # does not depend on a header the toolkit may lack.
            kept = name in _STD_HEADERS or _TOOLKIT_HEADER.match(name)
            if m.group(1) != b"<" or _FRAMEWORK.search(name) or not kept:
                continue
            if name not in out:
                out.append(name)
    # Names the repo took from a header that only a framework header included.
    have = set(out) | {_C_HEADER.get(h, h) for h in out}
    for h in needed:
        if h not in have and _C_HEADER.get(h, h) not in have:
            have.add(h)
            out.append(h)
    for t in dict.fromkeys(tokens):
        h = _HEADER_OF.get(t)
        if h and h not in have and not (ctx.active_macro(t) or (h.endswith(".h") and h[:-2] in have)):
            have.add(h)
            out.append(h)
    return out


def _unresolved(ctx: TUContext, files: set[str], ranges: set[tuple[str, int, int]],
                kernel: tuple[str, int, int], cuts: list[tuple[str, int, int]] = ()) -> list[dict[str, str]]:
    """Parse errors inside the kernel or a piece, less those in members the unit leaves out (`cuts`)."""
    spans = [*ranges, kernel]
    out: list[dict[str, str]] = []
    seen: set[str] = set()
    for d in ctx.tu.diagnostics:
        if d.severity < ci.Diagnostic.Error or d.location.file is None:
            continue
        path = ctx.norm(d.location.file.name)
        if path not in files:
            continue
        off = d.location.offset
        if not any(p == path and s <= off <= e for p, s, e in spans) or any(
                p == path and s <= off <= e for p, s, e in cuts):
            continue
        # A missing name is the symbol; other errors (a stub overload that does not fit) name the
        # first quoted entity, or none: still listed, since the parse of that piece is incomplete.
        m = _UNDECLARED.search(d.spelling) or _QUOTED.search(d.spelling)
        symbol = m.group(1) if m else "?"
        key = d.spelling if symbol == "?" else symbol
        if key not in seen:
            seen.add(key)
            out.append({"symbol": symbol, "reason": d.spelling,
                        "where": f"{os.path.basename(path)}:{d.location.line}"})
    return out


def render_pieces(ctx: TUContext, closure: Closure, kernel_path: str, kernel_start: int) -> list[dict[str, Any]]:
    """Pieces and macros as text, interleaved in source order, each with its namespace chain; those
    after the kernel in the source (its own specializations, say) are marked to follow it."""
    kernel_key = ctx.sort_key(kernel_path, kernel_start)
    items: list[tuple[tuple[int, ...], dict[str, Any]]] = []
    for p in closure.pieces:
        items.append((ctx.sort_key(p.path, p.start), {
            "kind": p.kind, "name": p.name, "namespaces": list(p.namespaces), "text": _text(ctx, p),
            "path": p.path, "line": ctx.read(p.path).count(b"\n", 0, p.start) + 1}))
    defined: set[str] = set()
    for m in closure.macros:  # in source order; a redefinition undefines the one before it
        undef = f"#undef {m.name}\n" if m.name in defined else ""
        defined.add(m.name)
        items.append((ctx.sort_key(m.path, m.start), {
            "kind": "MACRO", "name": m.name, "namespaces": [], "text": undef + _text(ctx, m), "path": m.path,
            "line": ctx.read(m.path).count(b"\n", 0, m.start) + 1}))
    return [dict(d, after=key > kernel_key and d["kind"] != "MACRO") for key, d in sorted(items, key=lambda t: t[0])]
