"""Where a referenced declaration lives among our parse shims (the torch shim, a toolkit header's
shim, a library's), what a unit lacks of them, and namespace chains of cursors."""

from __future__ import annotations

import os
import re

import clang.cindex as ci

from miner import lazy_re
from miner.frontends import frameworks
from miner.frontends.common import split_top
from miner.frontends.frameworks import Framework
from miner.units.closure.context import _CLASS_KINDS, _IDENT, _REF_KINDS, K, TUContext
from miner.units.closure.host_bodies import (
    _CONSTEXPR,
    DECLARED_ONLY_UNRESOLVED,
    _blanked,
    _initializers_start,
    _kept_always,
)
from miner.units.headers import FRAMEWORK as _FRAMEWORK
from miner.units.headers import STD_HEADERS as _STD_HEADERS
from miner.units.headers import TOOLKIT_HEADER as _TOOLKIT_HEADER
from miner.units.headers import UNIT_LIBRARY_HEADER as _UNIT_LIBRARY_HEADER


def _shim_rel(ctx: TUContext, path: str) -> str | None:
    """The path of one of our parse shims relative to shims/ (`cuda_fp16.h`, `ATen/Dispatch.h`), else None.
    Relative, so that where the miner is installed (a folder named `torchext`, say) never matters."""
    prefix = os.path.join(ctx.stub, "shims") + os.sep
    return path[len(prefix):] if path.startswith(prefix) else None


def framework_of_shim(ctx: TUContext, path: str) -> Framework | None:
    """The framework (torch, tf) one of our framework parse shims stands for, where `path` is one
    (its declarations map onto that framework's unit shim); else None."""
    return frameworks.of_shim(_shim_rel(ctx, path))


def _is_torch_shim(ctx: TUContext, path: str) -> bool:
    """A declaration of one of our framework parse shims (ATen/c10/torch, TensorFlow/Eigen): it maps onto the
    framework's unit shim. (The name is the first framework's.)"""
    return framework_of_shim(ctx, path) is not None


def _toolkit_header_of_shim(ctx: TUContext, path: str) -> str | None:
    """The toolkit or standard header one of our parse shims stands for (shims/cuda_fp16.h: `cuda_fp16.h`),
    None for a library/framework shim (cublas_v2.h, nccl.h) or anything else."""
    rel = _shim_rel(ctx, path)
    if rel is None or _FRAMEWORK.search(rel):
        return None
    return rel if rel in _STD_HEADERS or _TOOLKIT_HEADER.match(rel) or _UNIT_LIBRARY_HEADER.match(rel) else None

_MEMBER_FUNCS = {K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION, K.FUNCTION_TEMPLATE}
_DEVICE_ATTRS = {K.CUDADEVICE_ATTR, K.CUDAGLOBAL_ATTR}


def _host_members_to_drop(ctx: TUContext, cls: ci.Cursor) -> dict[tuple[int, int], str]:
    """Host-only member functions of a class (and of its nested classes) that name something a unit cannot
    hold: a torch type the unit shim does not define (`torch::Tensor`, whose host API a unit has no
    business carrying) or a declaration of a library our parse shims stand for (cuBLAS, NCCL). Device code
    cannot call a host-only member, so the unit's copy of the class leaves it out; (start, end) -> why."""
    out: dict[tuple[int, int], str] = _unresolved_friends(ctx, cls)
    unknown_fields = {m.spelling for m in cls.get_children() if m.kind == K.FIELD_DECL and _unknown_type(ctx, m)}
    for m in cls.get_children():
        if m.kind in _CLASS_KINDS:
            out.update(_host_members_to_drop(ctx, m))
            continue
        e = m.extent
        if e.start.file is None or e.end.file is None:
            continue
        if m.kind in (K.FIELD_DECL, K.VAR_DECL):
            # A data member of a type no unit has (`at::Tensor weights;` in a parameter struct whose
            # static constants and nested enums device code uses): device code cannot touch it either. A static
            # one too (`static std::map<int, cublasHandle_t> handles;`, a host-side registry of library handles):
            # device code cannot read a host static member at all.
            lacks = _lacks_in(ctx, m, through=False)
            if not lacks and m.spelling in unknown_fields:
                lacks = "a data member of a type the parse could not resolve"
            if lacks:
                out[(e.start.offset, _field_end(ctx, m, e.end.offset))] = lacks
            continue
        if m.kind not in _MEMBER_FUNCS or any(ch.kind in _DEVICE_ATTRS for ch in m.get_children()):
            continue
        lacks = _lacks_in(ctx, m, through=True)
        if not lacks and unknown_fields and unknown_fields & set(_IDENT.findall(
                ctx.read(ctx.norm(e.start.file.name))[e.start.offset:e.end.offset].decode("latin-1"))):
            # (`~Matrix() { nosuchDestroyDescr(descr); }` on such a member: a call the parse could not check in a
            # template, and a name the unit's class no longer has)
            lacks = "a host-only member naming a data member of a type the parse could not resolve"
        if not lacks and ctx.has_errors(m):
            # (`c10::cuda::CUDACachingAllocator::raw_alloc(n)` in an allocator's host `allocate`: a name the parse
            # does not have, so no cursor says what it is; a unit, compiled without it, cannot hold it either)
            lacks = "a host-only member whose text names what the parse could not resolve"
        if not lacks:
            continue
        body = _body_range(ctx, m, cls, unresolved=True)
        if body is not None and not _lacks_in(ctx, m, through=True, outside=body) \
                and not ctx.has_errors_in(e.start.file.name, e.start.offset, body[0] - 1):
            # Only the body names what a unit lacks (a logger's template formatting through a library the tree
            # does not carry, a conversion operator checking with a missing header's macro): the declaration
            # stays, so kept code that names the member (`using Base::operator double;`, a host branch that
            # calls `Logger::Fail_`) still compiles; the unit is a shared library, so a body it never runs
            # is no link error.
            out[body] = DECLARED_ONLY_UNRESOLVED
        else:
            out[(_attributes_start(ctx, m, e.start.offset), e.end.offset)] = lacks
    return out


_FRIEND = lazy_re.compile(r"\bfriend\b")
_TEMPLATE_HEAD = lazy_re.compile(r"\btemplate\s*<[^;{}]*>\s*$")
UNRESOLVED_FRIEND = "a friend declaration naming what the parse could not resolve"


def _unresolved_friends(ctx: TUContext, cls: ci.Cursor) -> dict[tuple[int, int], str]:
    """Friend declarations of a class that name what the parse could not resolve (`friend class
    archive::access;` of a serialization library this machine lacks): clang drops such a declaration from the AST,
    so no member cursor covers its text, and the unit's copy of the class kept it ("invalid friend
    declaration"). A friend grants access and declares nothing device code uses; it goes, with its `template
    <...>` head; (start, end) -> why. One written with a body (a friend function defined in the class) stays."""
    e = cls.extent
    if e.start.file is None or e.end.file is None:
        return {}
    text = _blanked(ctx, ctx.norm(e.start.file.name))
    members = [(m.extent.start.offset, m.extent.end.offset) for m in cls.get_children()
               if m.extent.start.file is not None]
    # (a friend template naming an undeclared class is kept in the AST, with the error inside its extent)
    out: dict[tuple[int, int], str] = {
        (a, _field_end(ctx, m, b) + 1): UNRESOLVED_FRIEND for m in cls.get_children()
        if m.kind == K.FRIEND_DECL and m.extent.start.file is not None
        and ctx.has_errors_in(m.extent.start.file.name, a := m.extent.start.offset, b := m.extent.end.offset)}
    for f in _FRIEND.finditer(text, e.start.offset, e.end.offset):
        start = f.start()
        if any(a <= start < b for a, b in members):
            continue  # a friend the parse resolved (FRIEND_DECL), or text inside a member or nested class
        end = text.find(";", start, e.end.offset)
        if end < 0 or "{" in text[start:end] or not ctx.has_errors_in(e.start.file.name, start, end):
            continue
        head = _TEMPLATE_HEAD.search(text, max(e.start.offset, start - 400), start)
        out[(head.start() if head else start, end + 1)] = UNRESOLVED_FRIEND
    return out


def _field_end(ctx: TUContext, field: ci.Cursor, end: int) -> int:
    """Where a data member left out ends: its extent's end, or, where the parse gave up on its type, the end of
    its default member initializer. A member of a type the parse could not resolve (`NosuchEnv *env = NULL;`) is
    an invalid declaration whose extent stops at its name, so cutting the extent alone left `= NULL;` in the
    class ("expected a declaration"). The cut runs on to the `;` that ends the declaration (itself kept: an
    empty member declaration), but not past a `,` (a second declarator shares the type) nor out of the class."""
    text = _blanked(ctx, ctx.norm(field.extent.start.file.name))
    depth = 0
    for pos in range(end, min(len(text), end + 4000)):
        c = text[pos]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return end
            depth -= 1
        elif depth == 0 and c == ",":
            return end
        elif depth == 0 and c == ";":
            return pos
    return end


def _unknown_type(ctx: TUContext, field: ci.Cursor) -> bool:
    """Whether the parse reported an error in a data member's type (`nosuchMatDescr_t descr;`, a library handle
    whose header this machine lacks): no unit can hold the member, and device code cannot name it either."""
    e = field.extent
    return (e.start.file is not None and field.location.offset > e.start.offset
            and ctx.has_errors_in(e.start.file.name, e.start.offset, field.location.offset - 1))


def _body_range(ctx: TUContext, m: ci.Cursor, cls: ci.Cursor, unresolved: bool = False) -> tuple[int, int] | None:
    """(start, end) of a member's body with a constructor's member initializers, for a member whose body a unit
    may leave out (host_bodies: not the special, constexpr or virtual members kept callable); else None. With
    `unresolved` (the body names what the parse could not resolve, so no unit can hold it) a special or virtual
    member's body goes too, its declaration staying: leaving the whole member out changed the class (graphvite's
    `LRSchedule(const std::string &_type = "constant") : type(_type) { CHECK(...) << ...; }`, its default
    constructor, checked with glog: every unit holding a `LRSchedule schedule;` member failed on "no default
    constructor exists"). Never a `constexpr` one (device code may evaluate it)."""
    body = next((ch for ch in m.get_children() if ch.kind == K.COMPOUND_STMT), None)
    if body is None or body.extent.start.file is None:
        return None
    text = _blanked(ctx, ctx.norm(m.extent.start.file.name))  # as host_bodies reads it: the same ranges
    head = text[m.extent.start.offset:body.extent.start.offset]
    if (_CONSTEXPR.search(head) or m.is_default_method()) if unresolved else _kept_always(m, cls, head):
        return None
    return (_initializers_start(text, m.location.offset, body.extent.start.offset), body.extent.end.offset)


def _attributes_start(ctx: TUContext, m: ci.Cursor, start: int) -> int:
    """Where a member's leading `[[nodiscard]]`-style attributes begin (its extent starts after them): a member
    left out takes them along, else `[[nodiscard]] /* left out */ };` is no declaration."""
    data = ctx.read(ctx.norm(m.extent.start.file.name))
    pos = start
    while True:
        before = data[:pos].rstrip()
        if not before.endswith(b"]]"):
            return pos
        opened = before.rfind(b"[[")
        if opened < 0 or b";" in before[opened:] or b"}" in before[opened:]:
            return pos
        pos = opened


def _lacks_in(ctx: TUContext, decl: ci.Cursor, through: bool, outside: tuple[int, int] | None = None) -> str | None:
    """What no unit carries that `decl`'s text names; with `through`, also what the repo declarations it
    names carry in their own types (a field `at::Tensor poly;`, a host helper taking `const at::Tensor &`):
    a host constructor reading such a field or calling such a helper is host-only torch code too. With
    `outside` (a body's range), only what the text outside that range names."""
    for c in decl.walk_preorder():
        if c.kind not in _REF_KINDS or c is decl:
            continue
        if outside is not None and outside[0] <= c.extent.start.offset < outside[1]:
            continue
        lacks = (_unit_lacks(ctx, c.referenced) or (_signature_lacks(ctx, c.referenced) if through else None)
                 or _unresolved_alias(ctx, c.referenced))
        if lacks:
            return lacks
    return None


UNRESOLVED_ALIAS = "a typedef of a type the parse could not resolve"


def unresolvable_host_overload(ctx: TUContext, f: ci.Cursor) -> bool:
    """Whether `f`, a candidate of an unresolved overload set (a dependent call in a template kernel), is a host-only
    function whose parameters name what no unit can hold (a typedef of an absent library's type): a device
    overload of the same name is the one device code calls, and this one, taken along, stopped the unit."""
    if f.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) or any(ch.kind in _DEVICE_ATTRS for ch in f.get_children()):
        return False
    return any(_lacks_in(ctx, p, through=False) for p in f.get_children() if p.kind == K.PARM_DECL)


def _unresolved_alias(ctx: TUContext, r: ci.Cursor | None) -> str | None:
    """Why, where `r` is a project typedef or alias whose type the parse could not resolve (`typedef
    nosuchlib::mt19937 rng;`, the library's header absent): clang takes it as `int`, so a host member declared with
    `rng &` raised no error of its own and kept its declaration, which no unit can compile."""
    if r is None or r.kind not in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL) or r.location.file is None:
        return None
    e = r.extent
    return UNRESOLVED_ALIAS if ctx.has_errors_in(r.location.file.name, e.start.offset, e.end.offset) else None


def _signature_lacks(ctx: TUContext, r: ci.Cursor | None) -> str | None:
    """A repo field/variable whose type, or a host function whose parameters or result, no unit carries."""
    if r is None or r.location.file is None or _shim_rel(ctx, ctx.norm(r.location.file.name)) is not None:
        return None
    if r.kind in (K.FIELD_DECL, K.VAR_DECL):
        parts = [r]
    elif r.kind == K.FUNCTION_DECL and not any(ch.kind in _DEVICE_ATTRS for ch in r.get_children()):
        parts = [ch for ch in r.get_children() if ch.kind != K.COMPOUND_STMT]
    else:
        return None
    for part in parts:
        for c in part.walk_preorder():
            if c.kind in _REF_KINDS and c is not r and (lacks := _unit_lacks(ctx, c.referenced)):
                return lacks
    return None


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
    if (fw := framework_of_shim(ctx, path)) is not None:
        return None if top.spelling in _unit_shim_names(fw.name) else _qualified(top)
    return None if _toolkit_header_of_shim(ctx, path) is not None else _qualified(top)


def _qualified(c: ci.Cursor) -> str:
    return "::".join((*_enclosing_namespaces(c), c.spelling))


def _unit_shim_macros(ctx: TUContext | None = None) -> dict[str, str]:
    """The framework macros the unit shims define, each to its framework's name. With `ctx`, a framework whose
    macro names other code also defines (`CUDA_1D_KERNEL_LOOP`) counts only where the translation unit
    included its parse shim."""
    out: dict[str, str] = {}
    for fw in frameworks.FRAMEWORKS:
        if fw.macros_need_parse and ctx is not None and not _parsed_with(ctx, fw):
            continue
        for n in frameworks.unit_macros(fw.name):
            out.setdefault(n, fw.name)
    return out


def _parsed_with(ctx: TUContext, fw: Framework) -> bool:
    return ctx.memo(f"_parsed_with_{fw.name}", lambda: any(_shim_rel(ctx, p) == fw.parse_shim for p in ctx.files))


def _unit_shim_names(fw: str = "torch") -> frozenset[str]:
    """Identifiers a framework's unit shim (km_torch_unit.h, km_tf_unit.h) declares or mentions, comments left out."""
    return frameworks.unit_names(fw)


def in_unit_shim(ctx: TUContext, c: ci.Cursor) -> bool:
    """Whether the unit shim has what a declaration of one of our framework parse shims names: its namespace
    chain for a namespace (`at::indexing` is parse-only), its name for anything else."""
    fw = framework_of_shim(ctx, ctx.norm(c.location.file.name)) if c.location.file is not None else None
    name = fw.name if fw is not None else "torch"
    if c.kind == K.NAMESPACE:
        return _namespace_chain(c) in frameworks.unit_namespaces(name)
    return c.spelling in frameworks.unit_names(name)


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


UNRESOLVED_BASE = "unresolved base"
_HEAD_COLON = lazy_re.compile(r"(?<!:):(?!:)")


def unresolved_bases(ctx: TUContext, cls: ci.Cursor) -> dict[tuple[int, int], str]:
    """Base classes the parse could not resolve (`struct P : public lib::Parameter<P>` from a library the checkout
    lacks, an empty submodule): clang drops such a base from the AST, and nvcc fails on the unit's copy ("not a
    class or struct name"). They are cut from the class head (the whole clause when none is left); what device
    code uses of the class is its own. (start, end) -> UNRESOLVED_BASE."""
    e = cls.extent
    if e.start.file is None or not ctx.has_errors(cls):
        return {}
    data = ctx.read(ctx.norm(e.start.file.name))
    body = data.find(b"{", e.start.offset, e.end.offset)
    head = data[e.start.offset:body].decode("utf-8", "replace") if body > 0 else ""
    m = re.search(rf"\b(?:struct|class)\b[^{{;]*?\b{re.escape(cls.spelling)}\b", head) if cls.spelling else None
    colon = _HEAD_COLON.search(head, m.end()) if m else None
    if colon is None:
        return {}
    start = e.start.offset + len(head[:colon.start()].encode())
    clause = head[colon.end():]
    # each written base's (start, end) in the file
    written: list[tuple[int, int]] = []
    pos = start + 1
    for part in split_top(clause):
        raw = part.encode()
        at = data.find(raw.strip(), pos, body)
        if at < 0:
            return {}
        written.append((at, at + len(raw.strip())))
        pos = at + len(raw.strip())
    kept = [b.extent.start.offset for b in cls.get_children() if b.kind == K.CXX_BASE_SPECIFIER]
    missing = [i for i, (s0, e0) in enumerate(written) if not any(s0 <= k < e0 for k in kept)]
    if not missing or len(kept) + len(missing) != len(written):
        return {}
    if len(missing) == len(written):
        return {(start, written[-1][1]): UNRESOLVED_BASE}
    out: dict[tuple[int, int], str] = {}
    for i in missing:
        s0, e0 = written[i]
        # with the comma before it (after it, for the first)
        out[(written[i - 1][1], e0) if i > 0 else (s0, written[i + 1][0])] = UNRESOLVED_BASE
    return out
