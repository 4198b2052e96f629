"""Host-only member functions of a class the closure takes, kept as declarations without their bodies.

A kernel reaches a class for its device members or its layout (a GPU hash map passed by value whose `find`
and `insert` are `__device__`); the class's host API (a factory that times itself with a tracing library, a
constructor that allocates and launches, a `print`) is code no device code can call. Its bodies name host
functions and headers (a vendored profiling library, the project's error helpers) that the closure would
otherwise follow and inline, and those clash with the toolkit or fail on their own. The unit keeps each such
member as a declaration (`static auto create(size_type n);`), so the class's interface and layout are those
of the source and nothing its body names comes along.

A body stays when something kept may call it: special members (default/copy/move constructors, destructor,
copy/move assignment: the launcher copies kernel arguments, a wrapper default-constructs them), `constexpr`
members (device code may call them under `--expt-relaxed-constexpr`), virtual members (a vtable names them),
and any member whose name the kept text of the class writes (a `__host__ __device__` member that calls it on
the host side of `#ifdef __CUDA_ARCH__`), to a fixed point. Documented in docs/units.md ("Host-only member
bodies").
"""

from __future__ import annotations

import re

import clang.cindex as ci

from miner import lazy_re
from miner.units.closure.context import _CLASS_KINDS, _IDENT, _STRING_OR_COMMENT, K, TUContext, _class_key

# The `why` of a cut that leaves the member's declaration (text.py renders it as `;`).
DECLARED_ONLY = "declared only"
# ... and of one whose body names what the parse could not resolve (closure.shims._host_members_to_drop).
DECLARED_ONLY_UNRESOLVED = "declared only: its body names what the parse could not resolve"
_DEVICE_ATTRS = {K.CUDADEVICE_ATTR, K.CUDAGLOBAL_ATTR}
_FUNCS = {K.CXX_METHOD, K.CONSTRUCTOR, K.CONVERSION_FUNCTION, K.FUNCTION_TEMPLATE}
_CONSTEXPR = lazy_re.compile(r"\b(?:constexpr|consteval)\b")


def host_bodies_to_drop(ctx: TUContext, cls: ci.Cursor,
                        dropped: dict[tuple[int, int], str]) -> dict[tuple[int, int], str]:
    """(start, end) -> DECLARED_ONLY for the bodies (with a constructor's member initializers) of the host-only
    members of `cls` and its nested classes that nothing kept calls; members already in `dropped` are left."""
    e = cls.extent
    if e.start.file is None:
        return {}
    path = ctx.norm(e.start.file.name)
    text = _blanked(ctx, path)
    cands: dict[tuple[int, int], tuple[str, tuple[int, int]]] = {}  # member extent -> (name, body range)
    _candidates(cls, text, dropped, cands)
    if not cands:
        return {}
    # Identifiers of the class's text outside the candidate members: what kept code may call.
    skip = sorted(list(cands) + list(dropped))
    named = set(_IDENT.findall(_without(text, e.start.offset, e.end.offset, skip)))
    for mp, _mc in ctx.members.get(_class_key(ctx.norm, cls), ()):
        # its members defined out of line (those the closure takes: device ones) may call it too
        named |= set(_IDENT.findall(_blanked(ctx, mp.path)[mp.start:mp.end]))
    named |= _friend_names(ctx, cls)
    keep: set[tuple[int, int]] = set()
    changed = True
    while changed:
        changed = False
        for ext, (name, _body) in cands.items():
            if ext not in keep and name in named:
                keep.add(ext)
                named |= set(_IDENT.findall(text[ext[0]:ext[1]]))
                changed = True
    return {body: DECLARED_ONLY for ext, (_n, body) in cands.items() if ext not in keep}


def _candidates(cls: ci.Cursor, text: str, dropped: dict[tuple[int, int], str],
                out: dict[tuple[int, int], tuple[str, tuple[int, int]]]) -> None:
    for m in cls.get_children():
        if m.kind in _CLASS_KINDS:
            _candidates(m, text, dropped, out)
            continue
        if m.kind == K.FRIEND_DECL:
            _friend_candidates(m, cls, text, dropped, out)
            continue
        if m.kind not in _FUNCS:
            continue
        e = m.extent
        ext = (e.start.offset, e.end.offset)
        if e.start.file is None or ext in dropped or any(ch.kind in _DEVICE_ATTRS for ch in m.get_children()):
            continue
        body = next((ch for ch in m.get_children() if ch.kind == K.COMPOUND_STMT), None)
        if body is None or _kept_always(m, cls, text[e.start.offset:body.extent.start.offset]):
            continue
        if m.is_default_method() or not text.startswith("{", body.extent.start.offset):
            # `bool operator==(const T&) const = default;` (C++20): the body the parse gives it is the compiler's,
            # located on the `default` keyword; cutting there left `= defaul;`. nvcc makes a defaulted member
            # callable on both sides, so it stays as written.
            continue
        # (a constructor template's spelling may carry the class's arguments: `pair<T1, T2>`)
        ctor = m.kind == K.CONSTRUCTOR or (m.kind == K.FUNCTION_TEMPLATE
                                           and m.spelling.split("<", 1)[0] == cls.spelling.split("<", 1)[0])
        # Member initializers are cut with the body; no other function has a `:` there.
        start = _initializers_start(text, m.location.offset, body.extent.start.offset)
        if (start, body.extent.end.offset) in dropped:  # left out already, for what it names
            continue
        # A constructor is never called by its name: only a special one (kept above) can be reached.
        out[ext] = ("" if ctor else m.spelling, (start, body.extent.end.offset))


def _friend_candidates(f: ci.Cursor, cls: ci.Cursor, text: str, dropped: dict[tuple[int, int], str],
                       out: dict[tuple[int, int], tuple[str, tuple[int, int]]]) -> None:
    """A host-only function the class befriends and defines in its body (`friend std::ostream& operator<<(std::ostream&
    os, const Stream& s) { os << s.impl_; ... }`): found by argument lookup only, so no device code can call it,
    and its body may need what the unit lacks (a complete `std::ostream`: the unit has `<memory>`'s `<iosfwd>`,
    the source had `<ostream>` from a header nothing was taken from). Declared only, as a host member is; one whose
    return type is deduced keeps its body (a declaration could not be called)."""
    for fn in f.get_children():
        if fn.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE):
            continue
        e = fn.extent
        ext = (e.start.offset, e.end.offset)
        body = next((ch for ch in fn.get_children() if ch.kind == K.COMPOUND_STMT), None)
        if (body is None or e.start.file is None or ext in dropped
                or any(ch.kind in _DEVICE_ATTRS for ch in fn.get_children())
                or not text.startswith("{", body.extent.start.offset)):
            continue
        head = text[e.start.offset:body.extent.start.offset]
        if _CONSTEXPR.search(head) or re.search(r"\b(?:auto|decltype)\b", head.split("(", 1)[0]):
            continue
        if (body.extent.start.offset, body.extent.end.offset) not in dropped:
            out[ext] = (fn.spelling, (body.extent.start.offset, body.extent.end.offset))


def _friend_names(ctx: TUContext, cls: ci.Cursor) -> set[str]:
    """The identifiers of the definitions of the functions `cls` befriends (`friend bool operator==(const Buffer&,
    const Buffer&);`, defined after the class as `a.as_tuple() == b.as_tuple()`): part of the class's interface, a
    unit may hold them (an overload set of its namespace), and a member they call whose return type is deduced
    (`auto as_tuple() const`) is no use declared only ("cannot deduce the return type ... it has not been
    defined")."""
    out: set[str] = set()
    for f in cls.get_children():
        if f.kind != K.FRIEND_DECL:
            continue
        for ch in f.get_children():
            d = ch.get_definition() if ch.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) else None
            if d is None or d.extent.start.file is None:
                continue
            path = ctx.norm(d.extent.start.file.name)
            if path in ctx.inputs:
                out |= set(_IDENT.findall(_blanked(ctx, path)[d.extent.start.offset:d.extent.end.offset]))
    return out


def _kept_always(m: ci.Cursor, cls: ci.Cursor, head: str) -> bool:
    """Members whose body a unit may need whatever names its text writes (see the module docstring)."""
    if _CONSTEXPR.search(head) or m.is_virtual_method():
        return True
    if m.kind == K.CONSTRUCTOR:
        return m.is_default_constructor() or m.is_copy_constructor() or m.is_move_constructor()
    return m.kind == K.CXX_METHOD and (m.is_copy_assignment_operator_method() or m.is_move_assignment_operator_method())


def _initializers_start(text: str, name_at: int, body_at: int) -> int:
    """Where a constructor's member-initializer list (`: a(x), b{y}`) begins, else `body_at`: the first `:` (not
    `::`) at bracket depth 0 after the parameter list, which starts at the first `(` after the name."""
    i = text.find("(", name_at, body_at)
    if i < 0:
        return body_at
    depth = 0
    for j in range(i, body_at):
        ch = text[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ":" and depth == 0 and text[j - 1] != ":" and text[j + 1] != ":":
            return j
    return body_at


def _without(text: str, start: int, end: int, cuts: list[tuple[int, int]]) -> str:
    out, pos = [], start
    for s, e in cuts:
        if s < pos or e > end:
            continue
        out.append(text[pos:s])
        pos = e
    out.append(text[pos:end])
    return " ".join(out)


def _blanked(ctx: TUContext, path: str) -> str:
    """The file with comments and strings blanked to the same length (offsets stay the file's)."""
    cache = ctx.__dict__.setdefault("_host_bodies_text", {})
    if path not in cache:
        raw = ctx.read(path).decode("latin-1")
        cache[path] = _STRING_OR_COMMENT.sub(lambda m: " " * len(m.group()), raw)
    return cache[path]


def unresolved_free_body(ctx: TUContext, fn: ci.Cursor) -> dict[tuple[int, int], str]:
    """{body range: DECLARED_ONLY_UNRESOLVED} for a free host function (no `__device__`, `__global__`) whose body,
    and nothing before it, names what the parse could not resolve; else {}. Kept host code reaches it (graphvite's
    `CudaCheck(error, file, line)`, called through `CUDA_CHECK` in the host members of a class a kernel takes,
    checks with glog's `CHECK(...) << ...`, a header the tree does not carry): no device code can call it, a unit
    is a shared library that never runs it, and its body took the unit down with a name no build here has. The
    declaration stays (callers still compile); members get the same treatment in closure.shims. Not a
    `constexpr` function (device code may call it under `--expt-relaxed-constexpr`) nor one whose return type
    is deduced (a declaration could not be called)."""
    if fn.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) or fn.extent.start.file is None \
            or any(ch.kind in _DEVICE_ATTRS for ch in fn.get_children()):
        return {}
    body = next((ch for ch in fn.get_children() if ch.kind == K.COMPOUND_STMT), None)
    if body is None or body.extent.start.file is None:
        return {}
    path = ctx.norm(fn.extent.start.file.name)
    text = _blanked(ctx, path)
    start, end = body.extent.start.offset, body.extent.end.offset
    head = text[fn.extent.start.offset:start]
    if not text.startswith("{", start) or _CONSTEXPR.search(head) \
            or re.search(r"\b(?:auto|decltype)\b", head.split("(", 1)[0]):
        return {}
    name = fn.extent.start.file.name
    if not ctx.has_errors_in(name, start, end) or ctx.has_errors_in(name, fn.extent.start.offset, start - 1):
        return {}
    return {(start, end): DECLARED_ONLY_UNRESOLVED}
