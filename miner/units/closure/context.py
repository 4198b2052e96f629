"""The translation unit indexed for closure queries: its repo-owned top-level declarations (pieces),
their names per namespace, the #defines in force and the include order of its files."""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import clang.cindex as ci

from miner import lazy_re
from miner.frontends.clang_frontend import skipped_in, unclosed_namespace
from miner.frontends.common import conditional_start, matching
from miner.frontends.config import stub_dir

K = ci.CursorKind
_PIECE_KINDS = {
    K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL, K.ENUM_DECL,
    K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL, K.TYPE_ALIAS_TEMPLATE_DECL, K.VAR_DECL, K.CLASS_TEMPLATE,
    K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, K.USING_DIRECTIVE, K.USING_DECLARATION, K.NAMESPACE_ALIAS,
    K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION,  # member definitions out of line
    K.CONCEPT_DECL,  # C++20: `requires Arithmetic<T>` names it through a TEMPLATE_REF
}
_FUNCTION_KINDS = {K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR,
                   K.CONVERSION_FUNCTION}
_CLASS_KINDS = {K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL, K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION}
_SCOPE_KINDS = {K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL}
_REF_KINDS = {K.DECL_REF_EXPR, K.MEMBER_REF_EXPR, K.TYPE_REF, K.TEMPLATE_REF, K.CALL_EXPR,
              K.OVERLOADED_DECL_REF, K.MEMBER_REF, K.VARIABLE_REF}
_DEFINE = lazy_re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)((?:[^\n\\]|\\\r?\n|\\.)*)", re.M)
_IDENT = lazy_re.compile(r"[A-Za-z_]\w*")
_STRING_OR_COMMENT = lazy_re.compile(r'/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"', re.S)


_INVOCATION = lazy_re.compile(r"[A-Za-z_]\w*\s*\(")


def _matching_brace(text: str, at: int) -> int | None:
    k = matching(text, at, "{", "}")
    return k if k >= 0 else None


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
    # A function or variable declared in an `extern "C"` block or declaration, whose text (its extent)
    # does not hold the `extern "C"`: the unit wraps it in one, so its symbol stays the plain name.
    c_linkage: bool = False
    # The project namespace a kept `using namespace a::b;` (or `namespace x = a::b;`) names: the unit declares it
    # just before, as the project's headers did, since the unit may hold nothing of it until later.
    declares: tuple[str, ...] = ()


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
    frameworks: list[str] = field(default_factory=list)  # whose unit shims the unit inlines (frontends.frameworks)
    unresolved: list[dict[str, str]] = field(default_factory=list)
    lacking: list[str] = field(default_factory=list)  # TU includes its parse found nowhere (text._lacking_headers)
    # Vendored libraries kept as #includes (closure.vendored): include_dir, parts, headers, defines, define_text.
    vendored: list[dict[str, Any]] = field(default_factory=list)


def _misread_function_end(data: bytes, end: int) -> int | None:
    """The end of the body of a function the parse read as a variable, else None. A function whose return and
    parameter types come from a library the parse lacks (`__device__ thrust::complex<float> add(thrust::complex<float>
    a, ...) { ... }`, `template <> complex<__half> sqrt<__half>(const complex<__half>& a) { ... }` specializing a
    thrust template) is a VAR_DECL cut at its name: the unit wrote `... thrust::complex<float> add;`. After the
    name: optional template arguments, a parenthesized list, then a body."""
    i = _skip_space(data, end)
    for open_, close in ((b"<", b">"), (b"(", b")")):
        if data[i:i + 1] == open_:
            j = _after(data, i, open_, close)
            if j is None:
                return None
            i = _skip_space(data, j)
        elif open_ == b"(":
            if i == _skip_space(data, end) and data[i:i + 1] == b"{" and data[end - 1:end] == b")":
                break  # (the extent already holds the parameter list)
            return None
    while m := re.match(rb"(?:const|noexcept|override|final)\b\s*", data[i:i + 16]):
        i += m.end()
    if data[i:i + 1] != b"{":
        return None
    return _after(data, i, b"{", b"}")


def _after(data: bytes, i: int, open_: bytes, close: bytes) -> int | None:
    """The offset after the bracket that closes the one at `i`."""
    j = matching(data, i, open_, close, limit=200_000)
    return None if j < 0 else j + 1


def _skip_space(data: bytes, i: int) -> int:
    while i < len(data) and data[i:i + 1].isspace():
        i += 1
    return i


class TUContext:
    """Indexes one translation unit's repo-owned declarations and macros for closure queries."""

    def memo(self, key: str, make: Callable[[], Any]) -> Any:
        """What `make()` returns, built once per TU: every kernel of the TU asks for the same analyses."""
        found = self.__dict__.get(key)
        if found is None:
            found = self.__dict__[key] = make()
        return found

    def __init__(self, tu: ci.TranslationUnit, inputs: set[str], norm, read, forced: Sequence[str] = ()) -> None:
        self.tu, self.inputs, self.norm, self.read = tu, inputs, norm, read
        # Parses the main file again with declarations of our own appended (LiveTU.probe), or None.
        self.probe: Callable[[str], Any] | None = None
        self.stub = os.path.realpath(str(stub_dir()))
        self.shims = os.path.join(self.stub, "shims") + os.sep
        self.files: dict[str, ci.File] = {}
        self._errors: dict[str, list[int]] | None = None
        self._blanked: dict[str, str] = {}
        self._by_bare: dict[str, list[list[tuple[Piece, ci.Cursor]]]] | None = None
        self.order: dict[str, int] = {}  # file -> first-inclusion rank
        # Generated instance files read as this unit's own lines (extract/instances.py), after `order`'s.
        self.instances: list[str] = []
        # file -> offsets of the #include directives leading to it from the main file: a location's
        # position in the preprocessed stream is chain + (offset,), compared as tuples.
        self.chain: dict[str, tuple[int, ...]] = {norm(tu.spelling): ()}
        self.files[norm(tu.spelling)] = tu.get_file(tu.spelling)
        # file -> (including file, offset of its #include directive) of each inclusion (closure.device_pass)
        self.included_at: dict[str, list[tuple[str, int]]] = {}
        for inc in tu.get_includes():
            path = norm(inc.include.name)
            self.files.setdefault(path, inc.include)
            if inc.source is not None:
                self.included_at.setdefault(path, []).append((norm(inc.source.name), inc.location.offset))
            self.order.setdefault(path, len(self.order))
            if path not in self.chain and inc.source is None and path in forced:
                # A file the command line includes (`-include F`) comes before the main file's text: its
                # definitions go before the pieces that use them.
                self.chain[path] = (-1, forced.index(path))
            elif path not in self.chain:
                parent = self.chain.get(norm(inc.source.name)) if inc.source is not None else None
                self.chain[path] = (parent if parent is not None else (1 << 30,)) + (inc.location.offset,)
        self.order.setdefault(norm(tu.spelling), len(self.order))
        self.pieces: dict[str, list[tuple[int, int, Piece, ci.Cursor]]] = {}
        self.by_name: dict[tuple[tuple[str, ...], str], list[tuple[Piece, ci.Cursor]]] = {}
        self.macros: dict[str, list[Macro]] = {}
        self.command_line: dict[str, ci.Cursor] = {}  # macros with no file: built in, or `-D` (macro_lookup)
        # The parse's `-D`s as given (LiveTU.command_line): through a precompiled prefix, no cursor lists them.
        self.given_defines: dict[str, str] = {}
        self.defined: set[tuple[str, int]] = set()  # (file, offset of the name) of each processed #define
        # class definition -> its members defined out of line (`vec<3, T, Q>::vec(T)` in a .inl)
        self.members: dict[tuple[str, int], list[tuple[Piece, ci.Cursor]]] = {}
        # piece (path, start) -> the declarations nested in it that _outermost folded into it
        self.inner: dict[tuple[str, int], list[tuple[Piece, ci.Cursor]]] = {}
        # (path, start) of a text included in several namespaces: one piece per namespace (_outermost)
        self.twice: set[tuple[str, int]] = set()
        # (path, start) of a text a header without an include guard declares again at each inclusion in the same
        # namespace -> how many times the parse saw it (closure.per_inclusion: one copy per inclusion's macros)
        self.repeated: dict[tuple[str, int], int] = {}
        self._index(tu.cursor, ())
        for path, lst in self.pieces.items():
            lst.sort(key=lambda t: (t[0], -t[1]))
            self.pieces[path] = self._outermost(lst)
        for path in self.order:
            if path in inputs:
                self._index_macros(path)

    def _index(self, scope: ci.Cursor, ns: tuple[str, ...], c_link: bool = False,
               unclosed: tuple[str, tuple[str, ...]] | None = None,
               opened: tuple[tuple[str, int], ...] = ()) -> None:
        # `unclosed`: (the file of a namespace the parse never closed, the namespaces outside it). What another
        # file declares after it is not in it (clang_frontend.unclosed_namespace). `opened`: where each namespace
        # of `ns` is opened (file, offset of its name, as the parse locates it).
        for c in scope.get_children():
            kind = c.kind  # before the location: most top-level cursors are preprocessing records
            if kind == K.MACRO_DEFINITION:
                # The #defines the preprocessor really processed in this configuration.
                f = c.location.file
                if f is not None:
                    self.defined.add((self.norm(f.name), c.location.offset))
                else:  # built in, or the command line's -D
                    self.command_line[c.spelling] = c
                continue
            if kind not in _SCOPE_KINDS and kind not in _PIECE_KINDS:
                continue
            f = c.location.file
            if f is None:
                continue
            path = self.norm(f.name)
            if path not in self.inputs:
                continue
            if unclosed is not None and path != unclosed[0]:
                ns = unclosed[1]
                opened = opened[:len(ns)]
            if kind in _SCOPE_KINDS and not _is_variable_template(c):
                inner = unclosed
                if inner is None and kind == K.NAMESPACE and unclosed_namespace(c):
                    inner = (path, ns)
                named = c.kind == K.NAMESPACE
                self._index(c, ns + ((c.spelling or "",) if named else ()),
                            self._c_linkage_spec(c) if kind == K.LINKAGE_SPEC else c_link and kind != K.NAMESPACE,
                            inner, opened + (((path, c.location.offset),) if named else ()))
            else:
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
                # `#if ... __launch_bounds__(a) #else __launch_bounds__(b) #endif` before a function: the text
                # starts at the `#if` (the kernel's own does too: frontends.common.conditional_start)
                start = conditional_start(self.read(path), start, e.end.offset)
                end = self._cut_at_name(path, c, e.end.offset) if kind in _FUNCTION_KINDS else e.end.offset
                if end <= start:
                    end = self._invocation_end(path, start) or end
                if kind == K.VAR_DECL and (body_end := _misread_function_end(self.read(path), end)) is not None:
                    end = body_end
                # A namespace the piece's own text opens: one macro invocation writing `namespace elem { struct
                # NAME {...}; }` and, outside it, `using NAME = Wrap<elem::NAME>;` and operator templates. The parse
                # locates that namespace at the invocation, inside the piece; the text is written outside it, and
                # is one piece with the invocation's other declarations (_outermost), not a second copy of the
                # invocation inside `namespace elem {` (`elem::elem::NAME`, "has already been declared"), and the
                # names the operator templates need taken with it.
                outside = len(ns)
                while outside and len(opened) == len(ns) and opened[outside - 1][0] == path \
                        and start <= opened[outside - 1][1] < end:
                    outside -= 1
                p = Piece(path, start, end, ns[:outside], c.kind.name, name,
                          c_linkage=c_link and kind in (K.FUNCTION_DECL, K.VAR_DECL))
                self.pieces.setdefault(path, []).append((p.start, p.end, p, c))
                if parent is not None and parent.kind in _CLASS_KINDS and c.lexical_parent != parent:
                    # Under every enclosing class: `Outer<T>::Inner::f` comes with the `Outer` piece.
                    while parent is not None and parent.kind in _CLASS_KINDS:
                        self.members.setdefault(_class_key(self.norm, parent), []).append((p, c))
                        parent = parent.semantic_parent
                if name:
                    self.by_name.setdefault((ns, name), []).append((p, c))

    def _invocation_end(self, path: str, start: int) -> int | None:
        """The end of the macro invocation `NAME(...)` at `start`, for a declaration whose extent libclang gives as
        that one point: one written in the argument of a macro another macro's replacement invokes
        (`#define OP(F) IF_HOST(template <...> struct F##Op {...};)`). Its text is the whole invocation, as a
        declaration written by one macro level is; an empty piece left the unit without it."""
        text = self._blanked_text(path)
        m = _INVOCATION.match(text, start)
        if m is None:
            return None
        depth = 0
        for i in range(m.end() - 1, len(text)):
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
                if depth == 0:
                    return i + 1
        return None

    def _cut_at_name(self, path: str, c: ci.Cursor, end: int) -> int:
        """The end of a function declaration whose extent libclang cut at its name. After an invalid
        overload of the same name (`device_ptr<T> f(T*)` with `device_ptr` unknown to the parse), a valid one
        written `auto f(C& c) -> decltype(c.f())` gets an extent that stops at `f`: its text was `auto f`, and
        the unit said "f has already been declared". Taken through its parameter list, what follows (trailing
        return type, qualifiers) and its body, if it has one; the end libclang gave otherwise."""
        if c.location.file is None or c.location.offset + len(c.spelling or "") != end or not c.spelling:
            return end
        text = self._blanked_text(path)
        i = end
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text) or text[i] != "(":
            return end
        depth = 0
        while i < len(text):
            ch = text[i]
            if ch in "([":
                depth += 1
            elif ch in ")]":
                depth -= 1
                if depth < 0:
                    return end
            elif depth == 0 and ch == ";":
                return i
            elif depth == 0 and ch == "}":
                return end
            elif depth == 0 and ch == "{":
                close = _matching_brace(text, i)
                return close + 1 if close is not None else end
            i += 1
        return end

    def _blanked_text(self, path: str) -> str:
        """The file's text with comments and strings blanked to the same length (offsets stay the file's)."""
        text = self._blanked.get(path)
        if text is None:
            raw = self.read(path).decode("latin-1")
            text = self._blanked[path] = _STRING_OR_COMMENT.sub(lambda m: " " * len(m.group()), raw)
        return text

    def active_text(self, path: str) -> str:
        """The file's text (utf-8) with the #if branches the preprocessor skipped blanked, newlines kept: lines of
        a branch this configuration does not take (`#ifdef INST_T` writing `INST(INST_T)`, `INST_T` a name only a
        build's `-D` gives) instantiate nothing here. A file outside this TU (an instance file) is read whole."""
        key = f"active:{path}"
        text = self.__dict__.get(key)
        if text is None:
            data = self.read(path)
            f = self.files.get(path)
            ranges = _skipped_ranges(self.tu, f) if f is not None else []
            if ranges:
                buf = bytearray(data)
                for start, end in ranges:
                    buf[start:end] = bytes(b if b == 0x0A else 0x20 for b in buf[start:end])
                data = bytes(buf)
            text = self.__dict__[key] = data.decode("utf-8", "replace")
        return text

    def _c_linkage_spec(self, spec: ci.Cursor) -> bool:
        """`extern "C"` rather than `extern "C++"` (from the text: libclang does not expose the language)."""
        e = spec.extent
        if e.start.file is None:
            return False
        head = self.read(self.norm(e.start.file.name))[e.start.offset:e.start.offset + 64]
        return re.match(rb'extern\s*"C"', head) is not None

    def _outer_template_start(self, path: str, start: int) -> int:
        """Where the `template<...>` lists written right before `start` begin (comments skipped)."""
        text = self._blanked_text(path)
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
            if out and (item[0], item[1]) == (out[-1][0], out[-1][1]) \
                    and item[2].namespaces != out[-1][2].namespaces:
                # The same text in another namespace: a header without an include guard included twice, inside
                # `namespace sph {` and `namespace vres {`, declares two things; each inclusion is its own piece
                # (piece_at tells them apart by their namespaces).
                out.append(item)
                self.twice.add((item[2].path, item[2].start))
                continue
            if out and item[0] >= out[-1][0] and item[1] <= out[-1][1] and item is not out[-1]:
                outer = out[-1]
                if (item[0], item[1]) == (outer[0], outer[1]) and (item[2].kind, item[2].name) == (
                        outer[2].kind, outer[2].name):
                    # The same declaration again: its header included once more (or one invocation writing two
                    # overloads, which closure.per_inclusion tells apart by the file's inclusions).
                    key2 = (item[2].path, item[2].start)
                    self.repeated[key2] = self.repeated.get(key2, 1) + 1
                key = (item[2].namespaces, item[2].name)
                group = self.by_name.get(key, [])
                self.by_name[key] = [(outer[2], outer[3]) if gp is item[2] else (gp, gc) for gp, gc in group]
                # One macro invocation that writes several declarations (`DEFINE_LD_ST(4, ...)` giving
                # specializations of `ld_global`, `ld_shared`, `st_shared`) is one piece: the closure takes what
                # each of them needs (their primary templates), not only the first's.
                self.inner.setdefault((outer[2].path, outer[2].start), []).append((item[2], item[3]))
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

    def macro_lookup(self, name: str) -> tuple[tuple[str, ...] | None, str] | None:
        """(parameters or None, replacement text) of the macro `name` in force at the end of the translation
        unit (its last active #define, else the command line's), or None where no macro has that name."""
        from miner.units.closure.pasted import split_definition

        defs = self.active_defs(name)
        if defs:
            return split_definition(defs[-1].body)
        c = self.command_line.get(name)
        if c is None:
            given = self.given_defines.get(name)
            return None if given is None else (None, given)
        return None, " ".join(t.spelling for t in list(c.get_tokens())[1:])

    def active_macro(self, name: str) -> bool:
        return any(m.active for m in self.macros.get(name, ()))

    def active_defs(self, name: str) -> list[Macro]:
        """The #defines of `name` this configuration processed, in file order; none where every
        definition sits in an inactive #if branch (then the name is no macro here)."""
        return [m for m in self.macros.get(name, ()) if m.active]

    def def_at(self, name: str, at: tuple[str, int] | None = None) -> Macro | None:
        """The #define of `name` in force at `at` (path, offset): the last active one above it in that file,
        for a short name defined, #undef'd and defined again (`#define _(V) ...` per function); else the last."""
        defs = self.active_defs(name)
        if not defs:
            return None
        if at is not None:
            above = [m for m in defs if m.path == at[0] and m.start < at[1]]
            if above:
                return above[-1]
        return defs[-1]

    def piece_at(self, path: str, offset: int,
                 namespaces: tuple[str, ...] | None = None) -> tuple[Piece, ci.Cursor] | None:
        """The piece whose text holds `offset`; of the inclusions of one text in several namespaces (_outermost), the
        one in `namespaces` where given."""
        lst = self.pieces.get(path)
        if not lst:
            return None
        i = bisect.bisect_right(lst, offset, key=lambda t: t[0]) - 1
        while i >= 0:
            start, end, p, c = lst[i]
            if start <= offset <= end:
                if namespaces is not None and p.namespaces != namespaces:
                    k = i - 1
                    while k >= 0 and (lst[k][0], lst[k][1]) == (start, end):
                        if lst[k][2].namespaces == namespaces:
                            return lst[k][2], lst[k][3]
                        k -= 1
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
        return e.start.file is not None and self.has_errors_in(e.start.file.name, e.start.offset, e.end.offset)

    def has_errors_in(self, file_name: str, start: int, end: int) -> bool:
        """Whether the parse reported an error between two offsets of a file (both included)."""
        if self._errors is None:
            self.has_errors(self.tu.cursor)
        offsets = self._errors.get(self.norm(file_name), ())
        return any(start <= o <= end for o in offsets)

    def sort_key(self, path: str, offset: int) -> tuple[int, ...]:
        return (*self.chain.get(path, (1 << 30,)), offset)


def _skipped_ranges(tu: ci.TranslationUnit, f: ci.File | None) -> list[tuple[int, int]]:
    """Byte ranges of `f` inside inactive #if branches (needs the detailed preprocessing record)."""
    return [] if f is None else skipped_in(tu, f)


def _class_key(norm, c: ci.Cursor) -> tuple[str, int]:
    d = c.get_definition() or c
    return (norm(d.location.file.name) if d.location.file else "", d.location.offset)


def _is_variable_template(c: ci.Cursor) -> bool:
    """`template <class T> constexpr bool is_half_v = ...;`: libclang 18 exposes it as a childless
    UNEXPOSED_DECL with the variable's name (a scope kind otherwise), referenced by dependent uses."""
    return c.kind == K.UNEXPOSED_DECL and bool(c.spelling) and next(iter(c.get_children()), None) is None
