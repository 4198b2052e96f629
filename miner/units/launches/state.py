"""The state of one translation unit's launch search, and the small steps every walker shares:
kernel keys, kernels named by an expression, the template arguments written at a reference."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import clang.cindex as ci

from miner.units.closure import TUContext
from miner.units.launches.cursors import _aliases, _key, _primary, _Resolver, _targets
from miner.units.launches.record import _COMMENT, MAX_HOST_INSTANTIATIONS, K, Launch
from miner.units.launches.text import (
    _angle_args,
    _named_args,
    _src,
    expand_macros,
    macro_argument_lists,
)


@dataclass
class _DepCall:
    caller: tuple[str, int]
    caller_params: list[str]
    callee: tuple[str, int]
    args_text: list[str]
    # (caller's template parameter, class): an argument typed by that parameter meets a `Class &` parameter of
    # the callee; only the caller's instantiations with that class reach this overload (launches.overload_fit).
    binds: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class _State:
    ctx: TUContext
    kernels: dict[tuple[str, int], Any]
    resolver: _Resolver
    launches: list[Launch] = field(default_factory=list)
    refs: list[Launch] = field(default_factory=list)
    concrete: dict[tuple[str, int], list[list[str]]] = field(default_factory=dict)
    dep_calls: list[_DepCall] = field(default_factory=list)
    host_params: dict[tuple[str, int], list[ci.Cursor]] = field(default_factory=dict)
    host_names: dict[str, set[tuple[str, int]]] = field(default_factory=dict)  # template name -> keys
    host_cursors: dict[tuple[str, int], ci.Cursor] = field(default_factory=dict)  # function templates by key
    consumed: set[int] = field(default_factory=set)
    seen_refs: set[tuple[Any, ...]] = field(default_factory=set)
    names: set[str] = field(default_factory=set)  # kernel names: a cheap test before resolving a reference
    bodies: dict[tuple[str, int], tuple[list[tuple[ci.Cursor, ci.Cursor]], dict[int, str]]] = field(
        default_factory=dict)  # a function's kernel references and the fields they are stored into
    # A function's assignments by the variable their left-hand side names (miner.units.launches.dataflow).
    assignments: dict[int, tuple[ci.Cursor, dict[int, list[tuple[ci.Cursor, ci.Cursor]]]]] = field(
        default_factory=dict)
    # Generic lambda parameters (by declaration) dispatched over a list of values, and those values.
    lists: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    scanned: set[int] = field(default_factory=set)  # scopes searched for explicit class instantiations
    # Partial specializations of each class template: (key, written arguments, parameter names).
    # An out-of-line member template's in-class declaration -> its definition (the host key of its body): a call
    # names the declaration, which libclang gives no definition to find.
    out_of_line: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    # A class template (or partial specialization) key -> its base class templates as written, in its own
    # parameters: (base primary key, the base's written arguments, the class's parameter names). An instantiated
    # class instantiates its bases (tables._bases).
    bases: dict[tuple[str, int], list[tuple[tuple[str, int], list[str], list[str]]]] = field(default_factory=dict)
    partials: dict[tuple[str, int], list[tuple[tuple[str, int], list[str], list[str]]]] = field(
        default_factory=dict)
    # A class template's instantiations that a partial specialization took instead of it (host_chain._add_instance),
    # as written for the primary: still the class's arguments, which an unselected sibling reads (finish).
    routed: dict[tuple[str, int], list[list[str]]] = field(default_factory=dict)
    # Launch helpers (functions that launch one of their parameters) by name, and the calls that pass a
    # kernel to a function, matched to them after the walk (miner.units.launches.helpers).
    helpers: dict[str, list[Any]] = field(default_factory=dict)
    helper_calls: list[Any] = field(default_factory=list)
    # Calls that hand one of the calling function's own parameters on to another function (a helper forwarding
    # its kernel to the helper that launches it), matched to the helpers after the walk, level by level.
    forward_calls: list[Any] = field(default_factory=list)
    # Launches of a kernel pointer a function chose, kernel unknown in this TU (miner.units.launches.chosen).
    chosen: list[Launch] = field(default_factory=list)
    # Names cast to `void *` (by cursor hash) and the member each such cast is stored into (launches.chosen).
    as_pointer: set[int] = field(default_factory=set)
    stored: dict[int, str] = field(default_factory=dict)
    # Members a method stores one of its parameters in, and members a method launches, by the member's USR
    # (miner.units.launches.stored): a setter's callers with a kernel are launches of it.
    member_stores: dict[str, list[Any]] = field(default_factory=dict)
    member_launches: dict[str, list[Any]] = field(default_factory=dict)
    # Kernels stored in a function-pointer typedef's variables, and launches through one that name no kernel, by
    # the typedef's USR (miner.units.launches.typed_pointers).
    typed_kernels: dict[str, list[tuple[ci.Cursor, ci.Cursor]]] = field(default_factory=dict)
    typed_launches: list[Any] = field(default_factory=list)
    # Local objects constructed with arguments the AST leaves out (launches.stored.note_construction).
    constructions: list[Any] = field(default_factory=list)
    # A host key inside a class template (one of its methods: the class's key; a member function template: its
    # own key) -> the class template's cursor and key (miner.units.launches.class_scope).
    classes: dict[tuple[str, int], ci.Cursor] = field(default_factory=dict)
    class_keys: dict[tuple[str, int], tuple[str, int]] = field(default_factory=dict)
    # What an expression's subtree holds (`subtree_flags`), by (cursor kind, the expression's address).
    flags: dict[tuple[int, int], int] = field(default_factory=dict)
    flag_walks: int = 0  # subtrees walked for their flags (a test reads it)
    # Calls of a member of a class template's member object (`impl_->insert(first, last, ref(), s)` in a method of
    # the class), whose type depends on the class's parameters: resolved per class instantiation by a probe
    # (class_scope.objects).
    object_calls: list[Any] = field(default_factory=list)
    # Methods called on each concrete instance of a project class template, from non-dependent code ((class key,
    # arguments) -> method names; `""` for a constructor), and the instances an explicit instantiation or
    # declaration names, and those a concrete type names: C++ instantiates an implicit instance's method only where
    # it is used (launches.used_methods).
    method_calls: dict[tuple[tuple[str, int], tuple[str, ...]], set[str]] = field(default_factory=dict)
    explicit_classes: set[tuple[tuple[str, int], tuple[str, ...]]] = field(default_factory=set)
    typed_classes: set[tuple[tuple[str, int], tuple[str, ...]]] = field(default_factory=set)  # from concrete types
    # The references of one name at one macro invocation, in the parse's order (`_rank_in_expansion`).
    expansion_refs: dict[tuple[str, int, str], list[list[ci.Cursor]]] = field(default_factory=dict)
    # (text, place, name) -> the argument lists a macro invocation writes for `name`, unique and all: a table of
    # several hundred references sits at one invocation, whose expansion is read once.
    written_at: dict[tuple[str, tuple[str, int] | None, str], tuple[list[list[str]], list[list[str]]]] = field(
        default_factory=dict)


class HostNames(list):
    """A host template's own parameter names, and (`outer`) those of the class templates around it, outermost
    first: in a member template of a class template, libclang spells the member's parameters
    `type-parameter-1-i` and the class's `type-parameter-0-i` (`_type_text` reads them by depth)."""

    outer: list[list[str]]

    def __init__(self, names: list[str], outer: list[list[str]] | None = None) -> None:
        super().__init__(names)
        self.outer = outer or []


def host_names(st: _State, host_key: tuple[str, int] | None, fn: ci.Cursor | None = None) -> HostNames:
    """The names of a host template's parameters, as deduction reads argument types in its body: a member
    template of a class template carries its class's parameters as the outer level (as the definition names
    them, `class_scope.scope_params`), so an argument of type `ref_type` (`bag_ref<T>`) reads `bag_ref<T>`,
    which the class's probe then fills per class instantiation."""
    own = [p.spelling for p in st.host_params.get(host_key, [])] if host_key is not None else []
    cls = st.classes.get(host_key) if host_key is not None else None
    if cls is None or st.class_keys.get(host_key) == host_key:
        return HostNames(own)
    from miner.units.launches.class_scope import scope_params  # (class_scope imports this module)

    fn = fn if fn is not None else st.host_cursors.get(host_key)
    if fn is None:
        return HostNames(own)
    outer, _ = scope_params(fn, cls)
    return HostNames(own, [outer])


# Flags of a subtree: a reference that may name a kernel (what `_kernel_refs` resolves), a lambda.
REF, LAMBDA = 1, 2
_REF_KINDS = (K.DECL_REF_EXPR.value, K.OVERLOADED_DECL_REF.value)
_LAMBDA_KIND = K.LAMBDA_EXPR.value


def _flag_key(c: ci.Cursor) -> tuple[int, int] | None:
    """An expression's or statement's key: its kind and the address of the clang node (a cursor's second data
    word); other cursors (declarations) have none."""
    kid = c._kind_id
    return (kid, c.data[1]) if 100 <= kid < 350 and c.data[1] else None  # (Expr 100-199, Stmt 200-349)


def subtree_flags(st: _State, c: ci.Cursor) -> int:
    """REF | LAMBDA as `c`'s subtree holds them. The walk visits a call's arguments before the calls inside
    them, and each call asked its arguments' subtrees again (`note_call`, `_lambda_lists`): a tenth of an MMCV
    run. Now the first asked walks its subtree once and keeps the flags of every expression in it."""
    key = _flag_key(c)
    got = st.flags.get(key) if key is not None else None
    if got is not None:
        return got
    st.flag_walks += 1
    keys: list[tuple[int, int] | None] = []
    parents: list[int] = []
    flags: list[int] = []
    stack: list[tuple[ci.Cursor, int]] = [(c, -1)]
    names = st.names
    while stack:
        d, parent = stack.pop()
        kid = d._kind_id
        f = 0
        if kid in _REF_KINDS:
            name = d.spelling
            f = REF if not name or name in names else 0
        elif kid == _LAMBDA_KIND:
            f = LAMBDA
        index = len(flags)
        flags.append(f)
        parents.append(parent)
        keys.append(_flag_key(d))
        children = list(d.get_children())
        children.reverse()
        stack.extend((ch, index) for ch in children)
    for i in range(len(flags) - 1, 0, -1):  # preorder: a parent comes before its children
        flags[parents[i]] |= flags[i]
    table = st.flags
    for k, f in zip(keys, flags, strict=True):
        if k is not None:
            table[k] = f
    return flags[0]


def _add(table: dict[tuple[str, int], list[list[str]]], key: tuple[str, int], args: list[str]) -> bool:
    lst = table.setdefault(key, [])
    if args in lst or len(lst) >= MAX_HOST_INSTANTIATIONS:
        return False
    lst.append(args)
    return True


def _kernel_refs(st: _State, c: ci.Cursor) -> list[tuple[ci.Cursor, ci.Cursor]]:
    """(reference expression, kernel declaration) pairs in `c`'s subtree."""
    key = _flag_key(c)
    if key is not None and (st.flags.get(key, REF) & REF) == 0:
        return []  # its subtree holds no reference a kernel could be named by (`subtree_flags`)
    out = []
    seen: set[tuple[Any, ...]] = set()
    for d in _ref_walk(st, c):
        if d.kind not in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF):
            continue
        # A reference names what it refers to: one whose name is no kernel's cannot resolve to a kernel (a
        # cheap test before resolving it; an unnamed one is resolved, as the walk does).
        name = d.spelling
        if name and name not in st.names:
            continue
        for t in _targets(st.ctx, d):
            key = _kernel_key(st, t)
            # A DECL_REF_EXPR and its OVERLOADED_DECL_REF child name the same kernel at the same place.
            sig = (key, d.location.offset)
            if key is not None and sig not in seen:
                seen.add(sig)
                out.append((d, t))
    return out


def _ref_walk(st: _State, c: ci.Cursor) -> Iterator[ci.Cursor]:
    """`c.walk_preorder()` but for the subtrees `subtree_flags` found to hold no possible kernel reference
    (the references come out in the same order: only nodes nothing is read from are left out)."""
    flags = st.flags
    stack = [c]
    while stack:
        d = stack.pop()
        yield d
        children = [ch for ch in d.get_children() if (k := _flag_key(ch)) is None or flags.get(k, REF) & REF]
        children.reverse()
        stack.extend(children)


def _kernel_key(st: _State, t: ci.Cursor) -> tuple[str, int] | None:
    key = _key(st.ctx, t)
    if key in st.kernels:
        return key
    key = _key(st.ctx, _primary(t))
    if key in st.kernels:
        return key
    # A dependent call's overload set holds the declaration lookup found (`template <class T> __global__ void
    # k(T*);` in the project's header): the kernel is its definition, later in the TU.
    # A specialization the parse did not instantiate (incomplete TUs skip that) has no definition of its own:
    # its primary template's is the kernel.
    for d in (t.get_definition(), _primary(t).get_definition()):
        key = _key(st.ctx, d) if d is not None and d != t else None
        if key in st.kernels:
            return key
    return None


@functools.lru_cache(maxsize=4096)
def _name_patterns(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """`name` as the text starts with it, and with a template argument list after it. Compiled once per name: a
    walk asks this of every call of a function (thousands of names), past `re`'s cache of 512 patterns."""
    return (re.compile(rf"(?:[\w:]*::)?{re.escape(name)}\b"), re.compile(rf"(?:[\w:]*::)?{re.escape(name)}\s*<(?!<)"))


def _written_args(st: _State, ref: ci.Cursor, name: str) -> list[list[str]]:
    """Template argument lists written at a reference; through the macro invocation it sits in."""
    text = _src(st.ctx, ref)
    stripped = _COMMENT.sub(" ", text).strip()
    named, listed = _name_patterns(name)
    if named.match(stripped):
        m = listed.match(stripped)
        got = _angle_args(stripped, m.end() - 1) if m else None
        return [got[0]] if got else []
    loc = ref.extent.start
    at = (st.ctx.norm(loc.file.name), loc.offset) if loc.file is not None else None
    # Object-like macros too, and deeper: a table of a host template's instances written by a chain of them
    # (`DefineAll` -> `DefineInterp` -> `DefineLayout(...)` -> ... -> `impl<InputFormat::RGB, ...>,`).
    if (text, at, name) not in st.written_at:
        expanded = expand_macros(st.ctx, text, at=at)
        if not _named_args(expanded, name) and re.fullmatch(r"\w+", stripped):
            expanded = expand_macros(st.ctx, text, depth=8, at=at, objects=True)
        found = _named_args(expanded, name)
        st.written_at[(text, at, name)] = found, (_named_args(expanded, name, unique=False) if len(found) > 1 else [])
    found, every = st.written_at[(text, at, name)]
    found = list(found)
    if len(found) > 1:
        # One invocation that writes several references (`CASES(4, 8)` expanding to `CASE(4, 1, 8) CASE(4, 2, 8)`,
        # each `k<T, BITS, ROWS, COLS><<<...>>>`): all of them sit at the invocation, so the text cannot tell them
        # apart, but the parse keeps them in the expansion's order: the n-th reference gets the n-th list.
        rank = _rank_in_expansion(st, ref, name)
        if rank is not None and rank[1] == len(every):
            pick = every[rank[0]]
            found = [pick] + [f for f in found if f != pick]
    return found


def _rank_in_expansion(st: _State, ref: ci.Cursor, name: str) -> tuple[int, int] | None:
    """`ref`'s place among the references named `name` that sit where it does (one macro invocation), in the
    parse's order, and their count; None where `ref` is not one of them."""
    loc = ref.extent.start
    if loc.file is None or ref.kind not in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF):
        return None
    key = (loc.file.name, loc.offset, name)
    refs = st.expansion_refs.get(key)
    if refs is None:
        refs = st.expansion_refs[key] = _refs_at(ref.translation_unit.cursor, loc.file.name, loc.offset, name)
    for i, cursors in enumerate(refs):
        if ref in cursors:
            return i, len(refs)
    return None


def _refs_at(root: ci.Cursor, path: str, offset: int, name: str) -> list[list[ci.Cursor]]:
    """The references named `name` whose extent starts at `offset` of `path`, in preorder, each as the cursors
    that stand for it (a dependent name is a DECL_REF_EXPR without a spelling over an OVERLOADED_DECL_REF, one
    reference; a DECL_REF_EXPR may hold its OVERLOADED_DECL_REF again); the walk enters only the cursors whose
    extent holds that place."""
    out: list[list[ci.Cursor]] = []
    stack: list[tuple[ci.Cursor, ci.Cursor | None]] = [(root, None)]
    while stack:
        c, parent = stack.pop()
        if c.kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF) and c.spelling == name:
            start = c.extent.start
            if start.offset == offset and start.file is not None and start.file.name == path:
                if out and parent is not None and parent in out[-1]:
                    out[-1].append(c)
                else:
                    out.append([c] + ([parent] if parent is not None and parent.kind == K.DECL_REF_EXPR else []))
        children = []
        for ch in c.get_children():
            ext = ch.extent
            if (ext.start.file is not None and ext.start.file.name == path
                    and ext.start.offset <= offset <= ext.end.offset):
                children.append((ch, c))
        stack.extend(reversed(children))
    return out


def _record_aliases(st: _State, rec: Launch, ref: ci.Cursor) -> None:
    found: dict[str, list[str]] = {}
    rec._aliases = _aliases(st.ctx, ref, st.lists, found)  # type: ignore[attr-defined]
    name = st.kernels[rec.kernel].name if rec.kernel in st.kernels else ""
    for param, values in macro_argument_lists(st.ctx, ref, name, rec.template_args_text).items():
        found.setdefault(param, values)  # one launch per value of a launch macro's parameter
    rec._lists = found  # type: ignore[attr-defined]
