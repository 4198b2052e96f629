"""Kernel template arguments from the instantiations the translation unit itself makes.

A header-only template library launches its kernels from host templates several calls below its public
API (`(out = conv(a, b)).run()` -> an operator class's `exec` -> `conv_impl<Out, In, F>` -> `k<...><<<>>>`),
and the arguments are the library's own expression types, which the program that includes the library
(an example, a test) builds by calling that API. Pushing those types down the call graph by text (the
host-chain propagation) stops at the first operator, deduced return type or member of a class template.
clang has instantiated the whole chain in the parse already: a call in a function's body refers to the
callee's specialization, whose definition cursor walks the *instantiated* body, where the launch refers to
the kernel's specialization with concrete arguments. This module follows those references from the main
file's own (non-template) functions and hands each launch or reference site the kernel arguments reaching
it (`apply`)."""

from __future__ import annotations

import os
from collections.abc import Sequence

import clang.cindex as ci

from miner import lazy_re
from miner.frontends import cindex_speed
from miner.frontends.model import Kernel
from miner.source.include_graph import TU_SUFFIXES
from miner.units.launches.cursors import _key, _primary, _template_args
from miner.units.launches.record import K, Launch
from miner.units.launches.state import _State

_CALLABLE = {K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR, K.CONVERSION_FUNCTION}
# The nodes of a body that name a callee: a call and a reference (`(void*)k<T, 4>`, `&k<T>`).
_NAMING = frozenset({K.CALL_EXPR.value, K.DECL_REF_EXPR.value})
_CALL = K.CALL_EXPR.value
_CALLABLE_IDS = frozenset(k.value for k in _CALLABLE)

# A bound on the functions walked per translation unit: the instantiated call graph of a program that
# includes a large library is a few thousand functions; the bound only stops a runaway walk.
_MAX_FUNCTIONS = 20000

# Programs parsed besides the main file, per translation unit (each is a parse with instantiations).
_MAX_PROGRAMS = 6
# A name defined in more classes or files than this (`run`, `exec`, `operator()`) links no call chain to a program.
_GENERIC = 3
_MAX_NAMES = 400
_MAX_LEVELS = 4
_FAN_IN = 8
_MAX_PROGRAM_FILES = 4000
_MAX_PROGRAM_BYTES = 1 << 20
_IDENT = lazy_re.compile(r"[A-Za-z_]\w*")
_UNNAMEABLE = lazy_re.compile(r"\((?:lambda|unnamed|anonymous) (?:at|struct|class|union|enum|namespace)\b")
_STD_NAME = lazy_re.compile(r"(?<![\w:])std::(\w+)")
_CUDA_STD_NAME = lazy_re.compile(rb"\bcuda::std::(\w+)")
_FUNCS_DEFINED = {K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.CONSTRUCTOR, K.CONVERSION_FUNCTION}
_CLASSES = {K.CLASS_DECL, K.STRUCT_DECL, K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION}

# (kernel key, path, line) of a site -> the concrete argument lists that reach it, in order of discovery.
Sites = dict[tuple[tuple[str, int], str, int], list[list[str]]]


def _needy(st: _State, rec: Launch) -> bool:
    """A launch or reference of a template kernel left with no concrete arguments (its host template's
    defaults, or none). A kernel that is no template has nothing to learn (its launches have no template
    arguments either: each TU launching one was parsed a second time for nothing)."""
    return (rec.kernel is not None and rec.template_args is None and not rec.dispatch_args
            and bool(getattr(st.kernels.get(rec.kernel), "template_params", None))
            and (rec.host_defaulted or not rec.host_template_args))


def wanted(st: _State, records: list[Launch]) -> bool:
    """Whether any launch or reference is `_needy`: only then are programs parsed again with their
    instantiations."""
    return any(_needy(st, rec) for rec in records)


def other_programs(st: _State, left: list[Launch], defs: list[tuple[str, ci.Cursor]], main: str) -> list[str]:
    """Programs of the project (translation units outside the inputs, under the folder the inputs and the main
    file share: a library's examples and tests) that name the API above the sites in `left`, the fewest that
    cover the most sites first, at most `_MAX_PROGRAMS`. Above a site: the functions whose text names the
    function holding it, and so on up (`_callers`); a member brings its class too (an operator class is named by
    the API function that builds it, not by its generic `exec`). A name many functions define (`run`, `exec`)
    says nothing of which program reaches the site and is not followed."""
    ctx = st.ctx
    if not left:
        return []
    root = os.path.commonpath([main, *ctx.inputs]) if ctx.inputs else ""
    if root.count(os.sep) < 2:
        return []
    callers, holders = _callers(ctx, defs)
    wants: dict[tuple, set[str]] = {}
    for rec in left:
        start = holders.get((rec.path, rec.line), set()) | {rec.launcher}
        wants[(rec.kernel, rec.path, rec.line)] = _above(start, callers)
    if not any(wants.values()):
        return []
    named: dict[str, set[tuple]] = {}
    for path in _project_programs(root, ctx.inputs | {main}):
        try:
            with open(path, "rb") as fh:
                idents = set(_IDENT.findall(fh.read(_MAX_PROGRAM_BYTES).decode("latin-1")))
        except OSError:
            continue
        if got := {site for site, names in wants.items() if names & idents}:
            named[path] = got
    chosen: list[str] = []
    todo = set(wants)
    while todo and len(chosen) < _MAX_PROGRAMS:
        best = min(named, key=lambda p: (-len(named[p] & todo), os.path.getsize(p), p), default=None)
        if best is None or not named[best] & todo:
            break
        chosen.append(best)
        todo -= named.pop(best)
    return chosen


def _callers(ctx, defs: list[tuple[str, ci.Cursor]]) -> tuple[dict[str, set[str]], dict[tuple[str, int], set[str]]]:
    """name -> the names of the functions (and their classes) whose text names it, for the names defined in at
    most `_GENERIC` classes or files; and (path, line) -> the names holding that line."""
    # A name's scopes: the classes it is a member of, else the files that define it (a free function's overloads,
    # `conv(a, b)` and `conv(a, b, mode)`, are one API; `exec` as a member of every operator class is none).
    scopes: dict[str, set[str]] = {}
    for path, d in defs:
        if d.kind in _FUNCS_DEFINED:
            parent = d.semantic_parent
            scope = parent.spelling if parent is not None and parent.kind in _CLASSES else path
            scopes.setdefault(d.spelling, set()).add(scope)
    defined = {name: len(where) for name, where in scopes.items()}
    callers: dict[str, set[str]] = {}
    holders: dict[tuple[str, int], set[str]] = {}
    for path, d in defs:
        if d.kind not in _FUNCS_DEFINED:
            continue
        owners = {d.spelling} if defined.get(d.spelling, 0) <= _GENERIC else set()
        parent = d.semantic_parent
        if parent is not None and parent.kind in _CLASSES:
            owners.add(parent.spelling)
        if not owners:
            continue
        e = d.extent
        for line in range(e.start.line, e.end.line + 1):
            holders.setdefault((path, line), set()).update(owners)
        text = ctx.read(path)[e.start.offset:e.end.offset].decode("latin-1")
        for ident in set(_IDENT.findall(text)) - owners:
            if defined.get(ident, 0) <= _GENERIC:
                callers.setdefault(ident, set()).update(owners)
    return callers, holders


def _above(start: set[str], callers: dict[str, set[str]]) -> set[str]:
    """`start` and the names up to `_MAX_LEVELS` calls above it in `callers`. The reverse graph is read from text,
    where a variable named like a function (`filter`) links it: further up, every name of a library is reached
    and names nothing of the site, so the walk is short (`k` <- `impl_internal` <- `impl` <- `Op` <- `op()`)."""
    out = set(start)
    level = set(start)
    for _ in range(_MAX_LEVELS):
        # (a name many functions use, `make`, is a utility: the way up through it leads anywhere)
        level = {c for n in level if len(callers.get(n, ())) <= _FAN_IN for c in callers.get(n, ()) if c not in out}
        out |= level
        if not level or len(out) >= _MAX_NAMES:
            break
    return out


def _project_programs(root: str, skip: set[str]) -> list[str]:
    """The translation units under `root` (at most `_MAX_PROGRAM_FILES`), hidden folders left out."""
    out: list[str] = []
    for here, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            p = os.path.join(here, f)
            if os.path.splitext(f)[1].lower() in TU_SUFFIXES and p not in skip:
                out.append(p)
                if len(out) >= _MAX_PROGRAM_FILES:
                    return out
    return out


def program_sites(st: _State, records: list[Launch], defs: list[tuple[str, ci.Cursor]]) -> Sites:
    """Kernel specializations named (called or referenced) in the bodies the main file's own functions
    reach through instantiated calls, by the site that names them; then the same in the project's other
    programs that name the API above the sites still without arguments (`other_programs`). The parse leaves
    the end-of-TU instantiations out (clang_frontend.INCOMPLETE, for speed), so the bodies are read in a
    second parse that makes them (the probe, `instantiate=True`)."""
    ctx = st.ctx
    found: Sites = {}
    if ctx.probe is None:
        return found
    main = ctx.norm(ctx.tu.spelling)
    if _roots(ctx.tu.cursor, ctx, main):
        _walk_main(st, main, found)
    if any(key[0] == main for key in st.kernels):
        # A file defining kernels is its project's own translation unit, one of many: parsing further programs
        # for each of them costs a parse per program per unit. Only a program that includes the kernels' headers
        # (a header-only library's example, the umbrella's choice) looks further.
        return found
    left = [rec for rec in records if _needy(st, rec) and (rec.kernel, rec.path, rec.line) not in found]
    for program in other_programs(st, left, defs, main):
        if (tu := ctx.probe("", instantiate=True, program=program)) is not None:
            _walk_program(st, tu, ctx.norm(program), found)
    return found


class _BlankReached(Exception):
    """The walk of a parse with blanked kernel bodies reached one of them (`_walk_main`)."""


def _walk_main(st: _State, main: str, found: Sites) -> None:
    """`_walk_program` of the main file's parse with its instantiations. That parse instantiated every
    kernel template the program names (a file with a table of kernel specializations: most of the parse's
    time), yet the walk never enters a known kernel (its references are sites, not calls to follow). So the
    main file's kernel templates are parsed with their bodies blank (`_kernel_bodies`): the host functions'
    instantiations do not depend on a kernel's body, and every offset and line stays as it was. Should the
    walk still reach a blanked definition (a redeclaration the search does not know as the kernel), it is
    walked again over the parse with the bodies."""
    ctx = st.ctx
    blank = _kernel_bodies(st, main)
    if blank and (tu := ctx.probe("", instantiate=True, blank=[b for _, b in blank])) is not None:
        local: Sites = {}
        try:
            _walk_program(st, tu, main, local, [d for d, _ in blank])
        except _BlankReached:
            pass
        else:
            for site, lists in local.items():
                found.setdefault(site, []).extend(lists)
            return
    if (tu := ctx.probe("", instantiate=True)) is not None:
        _walk_program(st, tu, main, found)


def _kernel_bodies(st: _State, main: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(definition, body) byte ranges of the kernel templates the main file defines, the body's between its
    braces."""
    ctx = st.ctx
    out = []
    file = None
    for key, k in st.kernels.items():
        if key[0] != main or not isinstance(k, Kernel):
            continue
        file = file or ctx.tu.get_file(ctx.tu.spelling)
        c = ci.Cursor.from_location(ctx.tu, ci.SourceLocation.from_offset(ctx.tu, file, key[1]))
        if c is None or c.kind != K.FUNCTION_TEMPLATE or c.location.offset != key[1]:
            continue
        body = next((ch for ch in c.get_children() if ch.kind == K.COMPOUND_STMT), None)
        if body is None:
            continue
        out.append(((c.extent.start.offset, c.extent.end.offset),
                    (body.extent.start.offset + 1, body.extent.end.offset - 1)))
    return out


def _walk_program(st: _State, tu: ci.TranslationUnit, main: str, found: Sites,
                  blanked: Sequence[tuple[int, int]] = ()) -> None:
    """`program_sites` for one parse of a program whose main file is `main`; `blanked`: the main file's
    definitions whose bodies that parse left blank (reaching one raises `_BlankReached`)."""
    ctx = st.ctx
    seen: set[int] = set()
    # Only bodies of the program and of the project's files are walked: a launch of a project kernel sits in
    # one of those, and the toolkit's and standard library's bodies are most of the instantiated graph.
    walkable = ctx.inputs | {main}
    stack: list[ci.Cursor] = [c for c in _roots(tu.cursor, ctx, main)]
    if blanked and any(_inside(c, main, blanked, ctx) for c in stack):
        raise _BlankReached
    # What a walk needs of a callee depends on the callee alone: found once per declaration (a body names the
    # same few functions and kernels over and over; a program's instantiations repeat them per specialization).
    callees: dict[tuple, tuple[tuple[str, int] | None, list[str] | None, int | None, ci.Cursor | None]] = {}
    while stack and len(seen) < _MAX_FUNCTIONS:
        fn = stack.pop()
        for d in cindex_speed.descendants_of_kinds(fn, _NAMING):
            r = cindex_speed.referenced_unchecked(d)
            if r._kind_id not in _CALLABLE_IDS:
                continue  # (the null cursor too: nothing referenced)
            ckey = cindex_speed.cursor_key(r)
            callee = callees.get(ckey)
            if callee is None:
                callee = callees[ckey] = _callee(st, r, walkable)
            kkey, args, h, body = callee
            if kkey is not None:
                if args is not None and d.location.file is not None:
                    site = (kkey, ctx.norm(d.location.file.name), d.location.line)
                    lists = found.setdefault(site, [])
                    if args not in lists:
                        lists.append(list(args))
                continue
            if body is None or d._kind_id != _CALL or h in seen:
                continue
            seen.add(h)
            if blanked and _inside(body, main, blanked, ctx):
                raise _BlankReached
            stack.append(body)


def _inside(c: ci.Cursor, main: str, ranges: Sequence[tuple[int, int]], ctx) -> bool:
    """Whether the definition `c` sits in one of the main file's byte `ranges`."""
    f = c.location.file
    if f is None or ctx.norm(f.name) != main:
        return False
    at = c.location.offset
    return any(start <= at < end for start, end in ranges)


def _callee(st: _State, r: ci.Cursor, walkable: set[str]
            ) -> tuple[tuple[str, int] | None, list[str] | None, int | None, ci.Cursor | None]:
    """What `_walk_program` reads of a callee `r`: a kernel's key and the arguments its specialization is
    written with (None where it has none, or one has no name a unit can write), else the hash and cursor of
    its definition where that is in a walkable file."""
    ctx = st.ctx
    kkey = _key(ctx, _primary(r))
    if kkey in st.kernels:
        args = _template_args(r) if r.get_num_template_arguments() > 0 else None
        # A closure or unnamed type (`(lambda at f.cu:49:63)`) has no name a unit can write: the call
        # site's own reading (a lambda made a functor struct) stays what it was.
        if args is not None and not any(_UNNAMEABLE.search(a) for a in args):
            return kkey, [_libcuxx_respelled(ctx, a) for a in args], None, None
        return kkey, None, None, None
    body = r.get_definition()
    if body is None or body.location.file is None or ctx.norm(body.location.file.name) not in walkable:
        return None, None, None, None
    return None, None, body.hash, body


def _libcuxx_respelled(ctx, arg: str) -> str:
    """`std::array<long long, 2>` back to `cuda::std::array<...>` where the project writes `cuda::std::array`: the
    parse reads libcu++'s `<cuda/std/X>` through a stand-in that names the host standard library into `cuda::std`
    (frontends.config.framework_overlay), so clang spells the canonical type of `cuda::std::array` as
    `std::array`; the unit includes the real `<cuda/std/array>`, a different type (and host-only). A kernel's
    argument is device code: where the project uses libcu++'s name, that is the one meant."""
    if "std::" not in arg:
        return arg
    names = ctx.memo("_libcuxx_names", lambda: _libcuxx_names(ctx))
    return _STD_NAME.sub(lambda m: f"cuda::std::{m.group(1)}" if m.group(1) in names else m.group(0), arg)


def _libcuxx_names(ctx) -> frozenset[str]:
    """The names the translation unit's project files write as `cuda::std::NAME`."""
    out: set[str] = set()
    for path in ctx.inputs:
        try:
            out.update(m.decode() for m in _CUDA_STD_NAME.findall(ctx.read(path)))
        except OSError:
            continue
    return frozenset(out)


def _roots(parent: ci.Cursor, ctx, main: str) -> list[ci.Cursor]:
    """The non-template function definitions the main file writes (in namespaces too): a program's own
    code, where every call names a concrete specialization."""
    out: list[ci.Cursor] = []
    for c in parent.get_children():
        if c.location.file is None or ctx.norm(c.location.file.name) != main:
            continue
        if c.kind == K.NAMESPACE:
            out += _roots(c, ctx, main)
        elif c.kind in (K.FUNCTION_DECL, K.CXX_METHOD) and c.is_definition() and not cindex_speed.instantiated(c):
            out.append(c)
    return out


def apply(records: list[Launch], sites: Sites) -> None:
    """Each launch or reference at a site the program's instantiations reach takes their arguments: they
    replace a host template's defaults (arguments that stood for nothing) and join known ones. A launch dispatched
    over a list takes none, and one in a generic lambda only where it has none of its own: their arguments are the
    tags the dispatch calls them with (launches.sites), which the instantiated program spells through sugar
    (`std::conditional_t<true, long, int>` beside `long`), joined as more instantiations of one."""
    if not sites:
        return
    for rec in records:
        lists = sites.get((rec.kernel, rec.path, rec.line)) if rec.kernel is not None else None
        if not lists:
            continue
        if rec.dispatch_args:
            continue  # (a dispatched launch's arguments are the tags its dispatch calls it with: sites.py)
        if rec.host_defaulted or (rec.template_args is None and not rec.host_template_args):
            rec.host_template_args = [list(a) for a in lists]
            rec.host_defaulted = False
            rec.resolved_text = None
            continue
        if rec.in_lambda:
            continue  # (a generic lambda's arguments come from the tags it is called with: sites.py)
        if rec.template_args is not None:
            continue  # (concrete as written: the instantiation is that one)
        for a in lists:
            if list(a) not in rec.host_template_args:
                rec.host_template_args.append(list(a))
