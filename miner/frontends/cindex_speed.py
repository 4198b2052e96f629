"""Faster equivalents of the libclang Python bindings' hottest cursor methods.

A cold extract spends most of its time in Python walking the AST through ctypes, not in libclang's
parse (a CPU profile of MMCV `mmcv/ops/csrc`: about 10 % in the parse, the rest in the closure and
launch analysis): `Cursor.get_children` builds a new ctypes callback per call and compares every
child with the null cursor (a C call per child), `walk_preorder` is a recursive generator (every
cursor passes up through one generator frame per level of depth) and `kind` goes through a class
method per access. The replacements keep the bindings' results and order exactly; `install()` swaps
them in once per process.

The top-level children of a translation unit (tens of thousands of cursors when a torch shim is parsed:
the C++ library's declarations and, with the detailed record, its macros) are listed once per parse
and shared by every walk of it (`hold_top_level` ... `release`). A parse through a precompiled prefix
may come from an index that leaves the prefix's declarations out (`local_only`): the walks then see the
file's own declarations alone. Such an index also lists, at the top level, the function definitions
instantiated from templates (Sema hands each to the AST consumer as a top-level declaration); an
ordinary walk never meets those there, so they are dropped: an implicit instantiation sits at its
pattern's location, an explicit specialization at its own.
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from typing import Any

from miner.frontends.prefix_view import RecordedDiagnostic, RecordedFile, RecordedLocation

_INSTALLED = False
# Kind ids of cursors that never have children, whose listing was a `clang_visitChildren` call for nothing (about a
# fifth of the walks' listings: every type, template, namespace and member named, every literal). libclang's
# `VisitChildren` returns at once for a reference cursor ("by definition, references have no children"; the C++ base
# specifier, 44, is the one reference it visits into); the literals' AST nodes have no children (an imaginary
# literal, 108, has its number as a child: not here). `tests/test_cindex_leaves.py` checks every such cursor of real
# parses against the bindings' own listing.
LEAF_KINDS = frozenset({40, 41, 42, 43, 45, 46, 47, 48, 49, 50,  # OBJC_*_REF, TYPE_REF, TEMPLATE_REF, ..., VARIABLE_REF
                        106, 107, 109, 110, 130, 131})  # INTEGER, FLOATING, STRING, CHARACTER, CXX_BOOL, CXX_NULL_PTR
ORIGINAL: dict[str, Any] = {}  # the bindings' own methods, for tests that compare
_TOP = "_km_top_level"  # attribute of a TranslationUnit: its top-level cursors while a parse holds them
# File handle -> name while a parse holds its TU (a walk asks a location's file name hundreds of
# thousands of times, a C call and a string copy each). Handles are only unique within one TU, so the
# table lives from `hold_top_level` to `release`.
_FILE_NAMES: dict[int, str] | None = None
_FILES: dict[int, Any] | None = None  # file handle -> its File object, with the same lifetime
# Attribute of a TranslationUnit while a parse holds it: each cursor's children as first listed. The analyses
# walk the same subtrees several times (the launch walk, then the flags of a call's arguments, the references
# in them, the closure's walk of the same declaration): a third of the listings of a ggml or MMCV unit were
# listings of a node listed before (`tests/test_extract_speed.py` counts them).
_LISTED = "_km_children"


def install() -> None:
    """Swap the faster methods into `clang.cindex.Cursor` (idempotent)."""
    global _INSTALLED
    if _INSTALLED:
        return
    import clang.cindex as ci

    kinds = ci.CursorKind._kinds  # the bindings' own id -> kind table, filled at import
    lib = ci.conf.lib

    def _visit(child: Any, _parent: Any, out: list) -> int:
        # clang_visitChildren never hands a null cursor to its visitor: the bindings' assert is a C
        # call per child for nothing.
        out.append(child)
        return 1  # CXChildVisit_Continue

    visitor = ci.callbacks["cursor_visit"](_visit)  # one ctypes thunk for the process, not one per call

    tu_kind = ci.CursorKind.TRANSLATION_UNIT.value
    leaves = LEAF_KINDS
    empty: tuple[Any, ...] = ()

    def get_children(self: Any) -> Iterator[Any]:
        if self._kind_id in leaves:
            return iter(empty)  # (no children by libclang's definition: no call to ask)
        tu = self._tu
        if self._kind_id == tu_kind:
            held = tu.__dict__.get(_TOP)
            if held is not None:
                return iter(held)
        listed = tu.__dict__.get(_LISTED)
        if listed is not None:
            # (the cursor's whole struct: equal structs are the same node, whose children are the same)
            data = self.data
            key = (self._kind_id, self.xdata, data[0], data[1], data[2])
            out = listed.get(key)
            if out is not None:
                return iter(out)
        out = []
        lib.clang_visitChildren(self, visitor, out)
        for child in out:
            child._tu = tu  # as the bindings do: the TU outlives every cursor handed out
        if listed is not None:
            listed[key] = out
        return iter(out)

    def walk_preorder(self: Any) -> Iterator[Any]:
        # Iterative, same order as the bindings' recursion; children are still fetched only once
        # the consumer asks past their parent.
        stack = [self]
        while stack:
            c = stack.pop()
            yield c
            children = list(c.get_children())
            children.reverse()
            stack.extend(children)

    def kind(self: Any) -> Any:
        i = self._kind_id
        k = kinds[i] if 0 <= i < len(kinds) else None
        if k is None:
            return ci.CursorKind.from_id(i)  # raises the bindings' own error
        return k

    def file_name(self: Any) -> str:
        names = _FILE_NAMES
        if names is None:
            return lib.clang_getFileName(self)
        key = ctypes.cast(self.obj, ctypes.c_void_p).value  # the CXFile handle's address
        name = names.get(key)
        if name is None:
            name = names[key] = lib.clang_getFileName(self)
        return name

    # Locations: the bindings make four ctypes buffers and a File object on every first access of a
    # location; the walks ask a location's file or offset about a million times per MMCV run. These
    # fill buffers made once, hand out one File per handle while a parse is held, and an offset alone
    # is asked for alone (libclang accepts null out-parameters) without filling the location's cache.
    get_location = lib.clang_getInstantiationLocation
    file_cls = ci.File
    out_file, out_line, out_column, out_offset = ci.c_object_p(), ctypes.c_uint(), ctypes.c_uint(), ctypes.c_uint()
    refs = tuple(ctypes.byref(x) for x in (out_file, out_line, out_column, out_offset))
    offset_ref = refs[3]

    def loc_file(self: Any) -> Any:
        data = self._data
        if data is not None:
            return data[0]
        # All four parts are kept, as the bindings do: a location handed to a callback (an include's)
        # is read once there and must not be read again after the callback's memory is gone.
        get_location(self, *refs)
        f = None
        if out_file:
            files = _FILES
            key = ctypes.cast(out_file, ctypes.c_void_p).value
            f = files.get(key) if files is not None else None
            if f is None:
                f = file_cls(ctypes.cast(key, ci.c_object_p))  # a File owns a copy of the handle
                if files is not None:
                    files[key] = f
        self._data = (f, out_line.value, out_column.value, out_offset.value)
        return f

    def loc_offset(self: Any) -> int:
        data = self._data
        if data is not None:
            return data[3]
        get_location(self, None, None, None, offset_ref)
        return out_offset.value

    def range_start(self: Any) -> Any:
        # A range's ends were a new location (and a C call) per access: `_src` asks each several times.
        d = self.__dict__
        loc = d.get("_km_start")
        if loc is None:
            loc = d["_km_start"] = lib.clang_getRangeStart(self)
        return loc

    def range_end(self: Any) -> Any:
        d = self.__dict__
        loc = d.get("_km_end")
        if loc is None:
            loc = d["_km_end"] = lib.clang_getRangeEnd(self)
        return loc

    diagnostics_of = ci.TranslationUnit.diagnostics.fget

    def diagnostics(self: Any) -> list[Any]:
        # Read once per TU, as plain records (`prefix_view.RecordedDiagnostic`: severity, location, spelling,
        # option): seven analyses each iterated them (has_errors, the launch search's error offsets, the
        # closures' errors and lacking headers, dropped pieces, the kernels' diagnostics, the HIP digest), a
        # libclang call per diagnostic and per field each time. A TU whose includes are missing has tens of
        # thousands (each generic file included once per scalar type repeats its errors): a quarter of its
        # analysis was reading them again.
        d = self.__dict__
        got = d.get(_DIAGNOSTICS)
        if got is None:
            got = d[_DIAGNOSTICS] = [_record(x) for x in diagnostics_of(self)]
        return got

    ORIGINAL.update(get_children=ci.Cursor.get_children, walk_preorder=ci.Cursor.walk_preorder,
                    kind=ci.Cursor.kind, file_name=ci.File.name, loc_file=ci.SourceLocation.file,
                    loc_offset=ci.SourceLocation.offset, range_start=ci.SourceRange.start,
                    range_end=ci.SourceRange.end, diagnostics=ci.TranslationUnit.diagnostics)
    ci.TranslationUnit.diagnostics = property(diagnostics)
    ci.File.name = property(file_name)
    ci.SourceLocation.file = property(loc_file)
    ci.SourceLocation.offset = property(loc_offset)
    ci.SourceRange.start = property(range_start)
    ci.SourceRange.end = property(range_end)
    ci.Cursor.get_children = get_children
    ci.Cursor.walk_preorder = walk_preorder
    ci.Cursor.kind = property(kind)
    _INSTALLED = True


_DIAGNOSTICS = "_km_diagnostics_read"  # attribute of a TranslationUnit: its diagnostics as records, once read


def _record(d: Any) -> Any:
    """A libclang diagnostic as the plain record the walks read (the fields they ask, each read once)."""
    loc = d.location
    f = loc.file
    where = RecordedLocation(RecordedFile(f.name) if f is not None else None, loc.line, loc.column, loc.offset)
    return RecordedDiagnostic(d.severity, where, d.spelling, d.option or "")


_RECURSE = 2  # CXChildVisit_Recurse
_COLLECTOR: Any = None  # (ctypes thunk, its output list, the kind ids wanted): made once per process


def descendants_of_kinds(cursor: Any, kind_ids: frozenset[int]) -> list[Any]:
    """The cursors below `cursor` whose kind id is in `kind_ids`, in `walk_preorder`'s order (the node
    itself aside), listed by one libclang traversal: `walk_preorder` lists each node's children with a
    call of its own and passes every node through Python, where a walk that wants two kinds of an
    instantiated program's bodies (hundreds of thousands of nodes) keeps a few per cent of them.
    libclang's recursive visit goes to a node's children before its next sibling, as the preorder does."""
    global _COLLECTOR
    import clang.cindex as ci

    if _COLLECTOR is None:
        state: list[Any] = [None, frozenset()]

        def _collect(child: Any, _parent: Any, _data: Any) -> int:
            if child._kind_id in state[1]:
                state[0].append(child)
            return _RECURSE
        _COLLECTOR = (ci.callbacks["cursor_visit"](_collect), state)
    thunk, state = _COLLECTOR
    out: list[Any] = []
    saved = state[:]
    state[0], state[1] = out, kind_ids
    try:
        ci.conf.lib.clang_visitChildren(cursor, thunk, None)
    finally:
        state[:] = saved  # (a walk started inside another's consumer leaves the outer one's intact)
    tu = cursor._tu
    for c in out:
        c._tu = tu  # as the bindings do: the TU outlives every cursor handed out
    return out


_REFERENCED: Any = None  # clang_getCursorReferenced without the bindings' result check


def referenced_unchecked(cursor: Any) -> Any:
    """`cursor.referenced` without the bindings' null test (a C call per result) and argument scan: a
    cursor always comes back, the null one (kind `INVALID_FILE`) where nothing is referenced, so a caller
    that goes on only for certain kinds needs no test of its own."""
    global _REFERENCED
    if _REFERENCED is None:
        import clang.cindex as ci

        fn = ci.conf.lib["clang_getCursorReferenced"]  # (a new function object: the bindings' keeps its checks)
        fn.argtypes, fn.restype = [ci.Cursor], ci.Cursor
        _REFERENCED = fn
    out = _REFERENCED(cursor)
    out._tu = cursor._tu
    return out


_BINARY_KIND: Any = None
ASSIGN = 22  # CXBinaryOperator_Assign of libclang's CXBinaryOperatorKind (clang-c/Index.h, libclang 17 on)


def binary_operator_kind(cursor: Any) -> int | None:
    """libclang's `CXBinaryOperatorKind` of a binary operator cursor (`ASSIGN` for `a = b`), None where the library
    lacks the function (before libclang 17). The bindings of 18 do not wrap it; the caller's fallback, the
    operator's tokens, tokenized the whole expression, and in a translation unit of megabytes of device code
    (a path tracer's every kernel in one `.cu`) that took most of the launch walk."""
    global _BINARY_KIND
    if _BINARY_KIND is None:
        import clang.cindex as ci

        try:
            fn = ci.conf.lib["clang_getCursorBinaryOperatorKind"]
        except (AttributeError, KeyError):
            _BINARY_KIND = False
        else:
            fn.argtypes, fn.restype = [ci.Cursor], ctypes.c_int
            _BINARY_KIND = fn
    return _BINARY_KIND(cursor) if _BINARY_KIND else None


def cursor_key(cursor: Any) -> tuple[int, int, int | None, int | None, int | None]:
    """The cursor's whole struct: equal structs are the same node (`clang_equalCursors` compares these)."""
    data = cursor.data
    return cursor._kind_id, cursor.xdata, data[0], data[1], data[2]


_FUNCTION_KINDS = ("FUNCTION_DECL", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR", "CONVERSION_FUNCTION")


def instantiated(c: Any) -> bool:
    """A function definition instantiated from a template or a class template's member: it sits where
    its pattern's definition does (`T W<T>::f()` written out of line: the pattern libclang gives is the
    in-class declaration, whose definition is that text). An explicit specialization sits elsewhere."""
    import clang.cindex as ci

    if c.kind.name not in _FUNCTION_KINDS:
        return False
    pattern = ci.conf.lib.clang_getSpecializedCursorTemplate(c)
    if pattern is None:
        return False
    if pattern.location == c.location:
        return True
    definition = pattern.get_definition()
    return definition is not None and definition.location == c.location


def hold_top_level(tu: Any, local_only: bool = False, view: Any = None) -> None:
    """List `tu`'s top-level cursors once; every walk of `tu.cursor` gets that list until `release`.
    `local_only`: `tu` comes from an index that excludes the precompiled prefix's declarations. `view`: the
    build record of a prefix that holds project headers (`prefix_view.install` orders the list as the plain
    parse does and gives `tu` the plain parse's diagnostics and inclusions; LookupError where it cannot)."""
    global _FILE_NAMES, _FILES
    _FILE_NAMES, _FILES = {}, {}
    tu.__dict__.pop(_TOP, None)
    tu.__dict__.pop(_LISTED, None)
    top = list(tu.cursor.get_children())
    if local_only:
        top = [c for c in top if not instantiated(c)]
    if view is not None:
        from miner.frontends import prefix_view

        top = prefix_view.install(tu, view, top)
    tu.__dict__[_TOP] = top
    tu.__dict__[_LISTED] = {}


def release(tu: Any) -> None:
    """Drop the held list: it holds cursors that hold the TU (a cycle would keep its memory until a GC)."""
    global _FILE_NAMES, _FILES
    _FILE_NAMES = _FILES = None
    tu.__dict__.pop(_TOP, None)
    tu.__dict__.pop(_LISTED, None)
    from miner.frontends import prefix_view

    prefix_view.release(tu)
