"""The closure of one kernel: the pieces, macros, shims and headers it reaches, walked on the live AST."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable

import clang.cindex as ci

from miner import lazy_re
from miner.units.closure import pasted
from miner.units.closure.arch_branches import arch_chain, arch_dependent, host_pass_names
from miner.units.closure.context import (
    _CLASS_KINDS,
    _IDENT,
    _REF_KINDS,
    _STRING_OR_COMMENT,
    Closure,
    K,
    Macro,
    Piece,
    TUContext,
    _class_key,
    _is_variable_template,
)
from miner.units.closure.dropped import dropped_pieces, names_in, visible
from miner.units.closure.host_bodies import host_bodies_to_drop, unresolved_free_body
from miner.units.closure.invalid_vars import invalid_variables
from miner.units.closure.macro_scope import _undef_of, _undef_scanned  # noqa: F401 (tests patch them here)
from miner.units.closure.operators import operators_of
from miner.units.closure.shims import (
    _DEVICE_ATTRS,
    _enclosing_namespaces,
    _host_members_to_drop,
    _is_torch_shim,
    _toolkit_header_of_shim,
    _unit_shim_macros,
    framework_of_shim,
    unresolvable_host_overload,
    unresolved_bases,
)
from miner.units.closure.siblings import specialized_template, written_with
from miner.units.closure.system_headers import included_header, std_counterpart
from miner.units.closure.text import _cut, _includes, _lacking_headers, _unresolved
from miner.units.closure.toolkit_copies import ToolkitCopies
from miner.units.closure.unvisited import candidate_scopes, qualified_names, specialization_span, using_scopes
from miner.units.closure.usings import overloaded, usings
from miner.units.closure.vendored import Library, Vendored

# The toolkit's vector types (vector_types.h), which a repo may give operators of its own.
_VECTOR_TYPE = lazy_re.compile(
    r"(?:u?char|u?short|u?int|u?long|u?longlong|float|double)[1-4]|__half2|half2|__nv_bfloat162")
_ARG_TYPE_KINDS = {"STRUCT_DECL", "CLASS_DECL", "UNION_DECL", "ENUM_DECL", "TYPEDEF_DECL", "TYPE_ALIAS_DECL",
                   "CLASS_TEMPLATE", "TYPE_ALIAS_TEMPLATE_DECL"}
_ARG_FUNCTION_KINDS = {"FUNCTION_DECL", "FUNCTION_TEMPLATE"}
_FRIEND_KINDS = {K.CLASS_TEMPLATE, K.CLASS_DECL, K.STRUCT_DECL, K.FUNCTION_TEMPLATE, K.FUNCTION_DECL}


def compute(ctx: TUContext, kernel_cursor: ci.Cursor, kernel_path: str, kernel_start: int,
            arg_names: list[str] | tuple[str, ...] = (), extra: list[ci.Cursor] | tuple[ci.Cursor, ...] = (),
            skip: set[tuple[str, int]] | frozenset[tuple[str, int]] = frozenset()) -> Closure:
    """The closure of one kernel; `arg_names` are the names in its instantiations' template arguments,
    whose types (declared at any namespace scope of the project) the unit needs as well; `extra` are further
    roots (the lambdas a functor struct in those arguments is written from: what their bodies name); declarations
    at `skip` (path, offset) are not followed (class member aliases such a struct declares itself)."""
    out = Closure()
    seen: set[tuple[str, int]] = {(kernel_path, kernel_start)}
    hosts: set[tuple[str, int]] = set()
    for lam in extra:
        # The function (or class) the lambda sits in is not the unit's: its captured locals and the lambda's own
        # parameters resolve to it, and nothing of its same-name set comes along for them.
        if lam.location.file is not None and (
                host := ctx.piece_at(ctx.norm(lam.location.file.name), lam.extent.start.offset)) is not None:
            hosts.add((host[0].path, host[0].start))
    seen |= hosts
    # Declarations the parse dropped (closure.dropped): taken as text when a name they declare is written in the
    # closure; what their own text names is looked up as for a piece whose parse had errors.
    dropped, texts = dropped_pieces(ctx), list[Piece]()
    with_members: set[tuple[str, int]] = set()
    pieces: list[Piece] = []
    shims: set[str] = set()
    used_frameworks: set[str] = set()  # (frontends.frameworks) whose unit shim the unit inlines
    work = [(kernel_cursor, _enclosing_namespaces(kernel_cursor))] + [(c, _enclosing_namespaces(c)) for c in extra]
    # A macro that writes the kernel may write more beside it (`template <> void gpu_abs<float>(...) {
    # k<float><<<...>>>(...); }`): that text is the kernel's text too, so what it names comes along.
    siblings = written_with(kernel_cursor, ctx.memo("_siblings", dict))
    work += [(c, _enclosing_namespaces(c)) for c in siblings]
    tokens: list[str] = []
    headers: dict[str, None] = {}  # toolkit headers whose declarations the closure names
    vend = Vendored.of(ctx)
    # A library's own kernel inlines its own part (`3rdparty/hash/`) as before; the other parts of that
    # third-party folder (a header-only `3rdparty/robin_hood.h` beside it) stay #includes.
    # (`own_lib`, not `own`: a walk's local of that name once shadowed it in `vendored`, inlining no part)
    own_lib = vend.library_of(kernel_path)
    own_part = own_lib.part_of(kernel_path) if own_lib is not None else None
    own_rest = own_lib.without(own_part) if own_lib is not None and own_part is not None else None
    used: dict[str, Library] = {}  # vendored libraries the unit #includes instead of inlining

    copies = ToolkitCopies.of(ctx)
    # (a kernel inside a bundled copy of a toolkit library is mined with its own copy's declarations)
    in_copy = copies.header_of(kernel_path) is not None

    def vendored(path: str) -> bool:
        if not in_copy and (h := copies.header_of(path)) is not None:
            headers.setdefault(h)  # the toolkit's own header, not the project's copy (closure.toolkit_copies)
            return True
        lib = vend.library_of(path)
        if lib is not None and lib is own_lib:
            lib = None if lib.part_of(path) == own_part else own_rest
        if lib is None:
            return False
        used.setdefault(lib.include_dir, lib)
        return True

    def with_operators(piece: Piece) -> None:
        # A type's device operators come with it (closure.operators).
        if piece.kind in _ARG_TYPE_KINDS or piece.kind == "TYPE_ALIAS_TEMPLATE_DECL":
            operators_for(piece.name)

    def operators_for(type_name: str) -> None:
        for op, oc in operators_of(ctx, type_name):
            if oc is not None:
                take(op, oc)
            elif (op.path, op.start) not in seen:
                seen.add((op.path, op.start))
                pieces.append(op)
                texts.append(op)

    def take(piece: Piece, pc: ci.Cursor) -> None:
        # Overloads and specializations share a name: take the whole set at that scope.
        group = ctx.by_name.get((piece.namespaces, piece.name), [(piece, pc)])
        # A host overload no unit can hold beside a device one (closure.shims.unresolvable_host_overload): the
        # device one is what device code calls, though the parse, taking the absent type for `int`, may have
        # resolved a call to the host one.
        # (once per name and TU: a path tracer's `operator*` has dozens of overloads, and each kernel's closure
        # takes the set at every use: the test over the whole set, per use, was a tenth of a cold extract)
        skip = ctx.memo(f"host_overloads:{'::'.join(piece.namespaces)}::{piece.name}:{len(group)}",
                        lambda: _unresolvable_host_overloads(ctx, group))
        for i, (gp, gc) in enumerate(group):
            if i in skip:
                continue
            key: tuple = (gp.path, gp.start)
            if key in ctx.twice:  # one text in two namespaces: each copy is taken on its own
                key = (*key, gp.namespaces)
            if key not in seen and vendored(gp.path):
                seen.add(key)  # kept as the library's #include, not inlined
            elif key not in seen:
                seen.add(key)
                pieces.append(gp)
                work.append((gc, gp.namespaces))
                with_operators(gp)
                for ip, ic in ctx.inner.get(key, ()):
                    # (a class's too: `CVT(kHalf, half)` writing `to_dtype<half>` and `from_dtype<kHalf>`)
                    if ip.name and ip.name != gp.name and (
                            ip.kind in ("FUNCTION_DECL", "FUNCTION_TEMPLATE")
                            or (ic.kind in _CLASS_KINDS and specialized_template(ic) is not None)):
                        work.append((ic, ip.namespaces))
                        take(ip, ic)  # (its name's set: the primary template it specializes)
                    else:
                        # Whatever else the invocation writes is in the unit's text too (the operator class
                        # `MY_OP(add, Add, +)` writes beside `scalar_add`): what it names comes along.
                        work.append((ic, ip.namespaces))
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
        t = specialized_template(c)
        if t is not None and t.location.file is not None:
            found = ctx.piece_at(ctx.norm(t.location.file.name), t.extent.start.offset)
            if found is not None:
                take(*found)
    # A constant named only in the kernel's head (`LAUNCH_BOUNDS(SORT_CTA_SIZE)` between `__global__ void` and the
    # name): an attribute's argument is no cursor the walk visits, so it is looked up by name from the kernel's scope.
    head = ctx.read(kernel_path)[kernel_start:kernel_cursor.location.offset].decode("latin-1")
    kernel_ns = _enclosing_namespaces(kernel_cursor)
    for name in dict.fromkeys(_IDENT.findall(_STRING_OR_COMMENT.sub(" ", head))):
        for i in range(len(kernel_ns), -1, -1):
            if lst := ctx.by_name.get((kernel_ns[:i], name)):
                consts = [(gp, gc) for gp, gc in lst if gp.kind == "VAR_DECL"]
                if consts:
                    take(*consts[0])
                break
    # A toolkit type named only in the template arguments (`__half` in `k<__half>`, from an explicit
    # instantiation's text) needs its header in the unit, which writes the instantiation and the launcher.
    tokens += list(arg_names)
    for name in arg_names:
        for lst in ctx.groups_named(name):
            typed = [(gp, gc) for gp, gc in lst if gp.kind in _ARG_TYPE_KINDS]
            # A device function given as a template argument (`k<float, square_op<float>>`, a function
            # pointer parameter): its definition, when no type of that name is.
            typed = typed or [(gp, gc) for gp, gc in lst if gp.kind in ("FUNCTION_TEMPLATE", "FUNCTION_DECL")
                              and any(ch.kind in _DEVICE_ATTRS for ch in gc.get_children())]
            if typed:
                take(*typed[0])
            else:
                # A device function given as a function-pointer argument (`k<float, act<float>>`): the
                # kernel body names only the parameter, so nothing else brings the function along.
                for gp, gc in lst:
                    if gp.kind in _ARG_FUNCTION_KINDS and any(ch.kind in _DEVICE_ATTRS for ch in gc.get_children()):
                        take(gp, gc)
                    elif gp.kind in _ARG_FUNCTION_KINDS and _constexpr(ctx, gp, gc):
                        # A host constexpr function that computes a value argument (`k<W, rows_per_thread(W)>` in
                        # a launcher template): the unit's instantiation and launcher write the call.
                        take(gp, gc)
                    elif gp.kind == "VAR_DECL" and gc.type.is_const_qualified():
                        # A namespace-scope constant given as a value argument (`k<T, kTileV1, kRowsV1>` in an
                        # explicit instantiation, `constexpr int32_t kTileV1 = 32;` beside it) that the kernel's
                        # body never names: the unit's instantiation writes it.
                        take(gp, gc)

    def take_text(scope: tuple[str, ...], text: str) -> None:
        for quals, name, is_global in names_in(text):
            for dp in visible(dropped, scope, quals, name, is_global):
                if (dp.path, dp.start) not in seen:
                    seen.add((dp.path, dp.start))
                    pieces.append(dp)
                    texts.append(dp)
                    with_operators(dp)

    events_of = ctx.memo("_closure_events", dict)  # per TU: see _events
    vector_types: set[str] = set()
    while True:
        while work or texts:
            if texts:
                dp = texts.pop()
                text = _STRING_OR_COMMENT.sub(" ", ctx.read(dp.path)[dp.start:dp.end].decode("latin-1"))
                names = _IDENT.findall(text)
                tokens += names
                take_text(dp.namespaces, text)
                for name in dict.fromkeys(names):
                    if found := next((lst[:1] for i in range(len(dp.namespaces), -1, -1)
                                      if (lst := ctx.by_name.get((dp.namespaces[:i], name)))), None):
                        take(*found[0])
                continue
            cur, scope = work.pop()
            got = events_of.get((cur, scope))
            if got is None:
                got = events_of[(cur, scope)] = _events(ctx, cur, scope)
            idents, events = got
            tokens += idents
            for ev in events:
                if ev[0] == "take":
                    take(ev[1], ev[2])
                elif ev[0] == "ref":  # (definition's path and offset), its piece or None
                    if skip and ev[1] in skip:
                        continue
                    if (found := ev[2]) is not None and (found[0].path, found[0].start) not in hosts:
                        take(*found)
                elif ev[0] == "text":
                    if dropped:
                        take_text(scope, ev[1])
                elif ev[0] == "shim":
                    shims.add(ev[1])
                    used_frameworks.add(ev[2])
                elif ev[0] == "lib":  # a declaration of a wheel's header library (CUTLASS): its #include
                    vendored(ev[1])
                else:
                    headers.setdefault(ev[1])
        # The repo's device operators on a toolkit vector type the closure names (`operator+(const double3 &,
        # const double3 &)` for `cub::BlockReduce<double3, N>(tmp).Sum(v)`, which adds inside the library where
        # the parse sees no call): a toolkit type is no piece, so with_operators never saw it.
        more = {t for t in tokens if _VECTOR_TYPE.fullmatch(t)} - vector_types
        if not more:
            break
        vector_types |= more
        for name in sorted(more):
            operators_for(name)
    files = {kernel_path} | {p.path for p in pieces}
    using_files, with_shim = set(files), frozenset(used_frameworks)
    kernel_key = ctx.sort_key(kernel_path, kernel_start)
    piece_keys = [ctx.sort_key(p.path, p.start) for p in pieces]
    out.macros = _macros(ctx, tokens, kernel_key, vendored, max([kernel_key, *piece_keys]), piece_keys)
    files |= {m.path for m in out.macros}
    for m in out.macros:
        tokens += _IDENT.findall(m.body)
    # Framework macros (torch's `C10_WARP_SIZE`, TensorFlow's `GPU_1D_KERNEL_LOOP`) expand in the parse to our
    # parse shim's text and leave no cursor to follow; the unit shim defines them, unless the repo defines the
    # name itself.
    shim_macros = _unit_shim_macros(ctx)
    for t in tokens:
        if t in shim_macros and not ctx.active_macro(t):
            shims.add(t)
            used_frameworks.add(shim_macros[t])
    _wheel_libraries(vend, tokens, used)
    out.shims = sorted(shims)
    out.frameworks = sorted(used_frameworks)
    out.includes = _includes(ctx, files, tokens, list(headers), {p.name for p in pieces})
    pieces += usings(ctx, using_files, pieces, seen, ctx.sort_key(kernel_path, kernel_start), with_shim, used,
                      out.includes)
    out.pieces = sorted(pieces, key=lambda p: ctx.sort_key(p.path, p.start))
    out.vendored = [{"include_dir": lib.include_dir, "parts": list(lib.parts), "headers": list(lib.headers),
                     "defines": [m.name for m in vend.config_defines(lib)], "prelude": vend.prelude(lib),
                     **({"wheel": lib.wheel.wheel} if lib.wheel is not None else {})}
                    for lib in sorted(used.values(), key=lambda lib: lib.first)]
    out.unresolved = _unresolved(ctx, files, {(p.path, p.start, p.end) for p in pieces},
                                 (kernel_path, kernel_cursor.extent.start.offset, kernel_cursor.extent.end.offset),
                                 [(p.path, s, e) for p in pieces for s, e, _w in p.cuts])
    out.lacking = _lacking_headers(ctx)
    return out


def _declared_before(ctx: TUContext, cur: ci.Cursor) -> tuple[Piece, ci.Cursor] | None:
    """For a function defined out of line with its namespace's qualifier (`__global__ void codec::scale(...)
    {...}` in an implementation file, declared inside `namespace codec` in a header): the piece that declares it
    first. A qualified definition needs that declaration before it ("name followed by '::' must be a class or
    namespace name" otherwise)."""
    if cur.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE) or cur.semantic_parent is None \
            or cur.semantic_parent.kind != K.NAMESPACE or cur.lexical_parent == cur.semantic_parent:
        return None
    first = cur.canonical
    if first is None or first.location.file is None or first == cur:
        return None
    found = ctx.piece_at(ctx.norm(first.location.file.name), first.extent.start.offset)
    return found if found is not None and found[1] != cur else None


def _unresolvable_host_overloads(ctx: TUContext, group: list[tuple[Piece, ci.Cursor]]) -> tuple[int, ...]:
    """The positions in an overload set of the host overloads no unit can hold beside a device one
    (closure.shims.unresolvable_host_overload); none where the set has no device member."""
    device = len(group) > 1 and any(ch.kind in _DEVICE_ATTRS for _gp, gc in group for ch in gc.get_children())
    return tuple(i for i, (_gp, gc) in enumerate(group) if device and unresolvable_host_overload(ctx, gc))


def _events(ctx: TUContext, cur: ci.Cursor, scope: tuple[str, ...]) -> tuple[list[str], list[tuple]]:
    """What the closure's walk of one declaration finds, in order, for `compute` to replay: its identifiers, and
    ("take", piece, cursor) | ("ref", (definition's path, offset), (piece, cursor) or None) | ("text", its own
    text, for the dropped declarations it names) | ("shim", name) | ("header", toolkit header). It depends on the
    declaration and its scope alone, so a translation unit's kernels share it: one walk per declaration, not one
    per kernel whose closure reaches it (a helper header's device functions were walked again for every kernel).
    What one kernel keeps of it (`skip`, the lambdas' hosts, what it has taken already) is decided in the replay."""
    events: list[tuple] = []
    drop: dict[tuple[int, int], str] = {}
    if cur.kind in _CLASS_KINDS:
        drop = _host_members_to_drop(ctx, cur)
        drop.update(host_bodies_to_drop(ctx, cur, drop))
        drop.update(unresolved_bases(ctx, cur))
    else:
        drop = unresolved_free_body(ctx, cur)
    if drop:
        found = ctx.piece_at(ctx.norm(cur.extent.start.file.name), cur.extent.start.offset)
        if found is not None:
            found[0].cuts = tuple((s0, e0, why) for (s0, e0), why in sorted(drop.items()))
    own = _own_text(ctx, cur, drop)
    idents = _IDENT.findall(own)
    events.append(("text", own))
    if (first := _declared_before(ctx, cur)) is not None:
        events.append(("ref", (first[0].path, first[0].start), first))
    for c in _walk(cur, drop):
        if c.kind == K.NAMESPACE_REF and c.referenced is not None and c.referenced.kind == K.NAMESPACE_ALIAS:
            refs = [c.referenced]  # `my_cub::BlockLoad`: the alias `namespace my_cub = cub;` comes along
        elif c.kind == K.FRIEND_DECL:
            # `template <typename, typename, int> friend struct detail::caster;`: a friend named with a
            # qualifier must be declared before the class, so its first declaration comes along (an
            # unqualified friend declares itself in the enclosing namespace and needs nothing).
            refs = [ch.canonical for ch in c.get_children()
                    if ch.kind in _FRIEND_KINDS and ch.semantic_parent is not None
                    and cur.semantic_parent is not None and ch.semantic_parent != cur.semantic_parent
                    and ch.canonical.location.file is not None]
            # Its first declaration in its namespace, not its definition: that may follow the class (`template
            # <...> class helper;` / the class befriending `detail::helper` / `class helper {...}` in an
            # implementation header included at the end), and libclang's canonical declaration of a friend
            # template is the friend declaration itself.
            for r in refs:
                first = min(ctx.by_name.get((_enclosing_namespaces(r), r.spelling), []),
                            key=lambda t: ctx.sort_key(t[0].path, t[0].start), default=None)
                if first is not None and not (first[0].start <= r.location.offset <= first[0].end
                                              and first[0].path == ctx.norm(r.location.file.name)):
                    events.append(("ref", (first[0].path, first[0].start), first))
        elif c.kind not in _REF_KINDS:
            continue
        elif c.kind == K.OVERLOADED_DECL_REF:
            # Unresolved overload set (dependent call): every repo function of that name, and the
            # shim it names (`at::native::fastAtomicAdd(p, i, n, v, true)` in a template kernel).
            refs = [gc for lst in ctx.groups_named(c.spelling) for _gp, gc in lst]
            # A CUDA built-in the shim overloads for Half (`atomicAdd`) stays a built-in.
            decls = [d for d in overloaded(c) if d is not None and d.location.file is not None]
            if decls and all(_is_torch_shim(ctx, ctx.norm(d.location.file.name)) for d in decls):
                refs += decls
        else:
            refs = [c.referenced]
        for r in refs:
            if r is None or r.location.file is None:
                continue
            rpath = ctx.norm(r.location.file.name)
            if rpath not in ctx.inputs:
                if (lib := Vendored.of(ctx).library_of(rpath)) is not None and lib.wheel is not None:
                    events.append(("lib", rpath))
                elif (fw := framework_of_shim(ctx, rpath)) is not None:
                    events.append(("shim", r.spelling, fw.name))
                elif (h := _toolkit_header_of_shim(ctx, rpath)) is not None:
                    # `half2` that the repo only had through torch/extension.h: the unit, which has
                    # no torch, includes the toolkit header our parse shim stands for.
                    events.append(("header", h))
                elif (h := included_header(ctx, rpath) or std_counterpart(c, rpath)) is not None:
                    # `backtrace` of the <execinfo.h> a project header includes, `<cstring>` for `std::strncpy`
                    # (closure.system_headers)
                    events.append(("header", h))
                continue
            d = r.get_definition() or r
            dpath = ctx.norm(d.location.file.name) if d.location.file else rpath
            events.append(("ref", (dpath, d.location.offset),
                           ctx.piece_at(dpath, d.location.offset, _enclosing_namespaces(d))))
    for name in dict.fromkeys(idents):
        # A type named through a using-declaration (`namespace k { using ::int32; }`, then `int32 n;` in
        # `k::inner`) is a UsingType to libclang 18, which exposes no TYPE_REF for it: no reference reaches the
        # using-declaration or the typedef it names. A name of the text whose innermost visible declaration is
        # a using-declaration brings it, and its walk the declarations it names.
        # Only one that names a project declaration: whether one naming a torch or toolkit name is kept stays
        # closure.usings' decision (the unit may hold no shim of it).
        hit = next((lst[0] for i in range(len(scope), -1, -1) if (lst := ctx.by_name.get((scope[:i], name)))), None)
        if hit is not None and hit[0].kind == "USING_DECLARATION" and _names_project_declaration(ctx, hit[1]):
            events.append(("take", *hit))
    for quals, name, is_global in _unvisited(ctx, cur, drop):
        # `noexcept(detail::sw::nothrow<T>::value)`, `__launch_bounds__(kThreads)`, `alignas(kAlign)`:
        # libclang exposes no cursor for these argument lists (closure.unvisited), so the names they
        # write are looked up in the scopes visible from the declaration; a qualifier that is no
        # namespace (`Outer::kSize`) brings the class that owns the name.
        for ns, nm in [(s, name) for s in candidate_scopes(scope, quals, is_global)] + [
                (s, quals[0]) for s in candidate_scopes(scope, (), is_global) if quals]:
            if found_here := ctx.by_name.get((ns, nm), [])[:1]:
                events.append(("take", *found_here[0]))
                break
        else:  # none there: the namespaces a `using namespace` brings into view
            for ns in using_scopes(ctx, scope):
                if found_here := ctx.by_name.get((ns + quals, name), [])[:1]:
                    events.append(("take", *found_here[0]))
                    break
    if invalid := invalid_variables(ctx):
        # A variable the parse found invalid is named by no expression of the AST (closure.invalid_vars).
        for name in dict.fromkeys(idents):
            if found := next((hit for i in range(len(scope), -1, -1) if (hit := invalid.get((scope[:i], name)))),
                             None):
                events.append(("take", *found))
    if ctx.has_errors(cur) or _is_variable_template(cur):
        # A variable template is one cursor without children in libclang 18: what its initializer
        # names is found through its text, as in a function whose expressions the parse dropped.
        # The parse dropped invalid expressions (a name its stub lacked): their calls are missing
        # from the AST. Fall back to the names in the text, looked up in the scopes visible here.
        for name in dict.fromkeys(idents):
            for i in range(len(scope), -1, -1):
                for gp, gc in ctx.by_name.get((scope[:i], name), [])[:1]:
                    events.append(("take", gp, gc))
        # A qualified name (`compat::maxOp()` whose deduced type the parse lost) lives in the namespace its
        # qualifiers name, which no enclosing scope of the cursor reaches.
        for quals, name, is_global in names_in(own):
            if quals and (found := next((lst[:1] for s in candidate_scopes(scope, quals, is_global)
                                         if (lst := ctx.by_name.get((s, name)))), None)):
                events.append(("take", *found[0]))
    if cur.kind in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD) or cur.kind in _CLASS_KINDS:
        # nvcc's host pass compiles the `#else` of `#if __CUDA_ARCH__ >= 800` the parse skipped; in a
        # class, the branches of its members' bodies (a `__host__ __device__` destructor whose host side
        # calls a function only declared in the header).
        # Looked up in the scopes visible here, else in any (a `using namespace` makes it visible, as
        # for a dependent call's overload set).
        for name in host_pass_names(ctx, cur):
            found = next((lst[:1] for i in range(len(scope), -1, -1)
                          if (lst := ctx.by_name.get((scope[:i], name), []))), None)
            for gp, gc in found if found is not None else [g[0] for g in ctx.groups_named(name)]:
                events.append(("take", gp, gc))
    return idents, events


def _wheel_libraries(vend: Vendored, tokens: list[str], used: dict[str, Library]) -> None:
    """A wheel's header library (CUTLASS/CuTe) the translation unit includes joins the unit's #includes when the
    closure's text names it: its namespaces (`cutlass::half_t`, `cute::Tensor`) or its macros (`CUTLASS_DEVICE`,
    which the parse expands and no cursor names). The declarations the walk reached in its files did already
    ("lib" events); without the wheel, the parse found none, and the names are all there is."""
    wheels = [lib for lib in vend.libraries if lib.wheel is not None and lib.include_dir not in used]
    if not wheels:
        return
    names = set(tokens)
    for lib in wheels:
        if names & lib.wheel.names or any(t.startswith(lib.wheel.macro_prefixes) for t in names):
            used.setdefault(lib.include_dir, lib)


def _names_project_declaration(ctx: TUContext, using: ci.Cursor) -> bool:
    """Whether a using-declaration names a declaration of the project's files (`using ::int32;` of a typedef in
    the project's header), not one of the toolkit's or a framework shim's."""
    for ch in using.get_children():
        refs = overloaded(ch) if ch.kind == K.OVERLOADED_DECL_REF else [ch.referenced]
        if any(r is not None and r.location.file is not None and ctx.norm(r.location.file.name) in ctx.inputs
               for r in refs):
            return True
    return False


def _unvisited(ctx: TUContext, cur: ci.Cursor,
               drop: dict[tuple[int, int], str]) -> list[tuple[tuple[str, ...], str, bool]]:
    """The names of a cursor's text inside argument lists libclang does not visit (closure.unvisited)."""
    e = cur.extent
    if e.start.file is None:
        return []
    data = ctx.read(ctx.norm(e.start.file.name))
    if b"(" not in data[e.start.offset:e.end.offset]:
        return []
    text = _STRING_OR_COMMENT.sub(" ", _cut(data, e.start.offset, e.end.offset, [(s, t) for s, t in drop])
                                  .decode("utf-8", "replace"))
    special = (specialization_span(text, cur.spelling)
               if cur.kind == K.FUNCTION_DECL and specialized_template(cur) is not None else None)
    return qualified_names(text, special)


def _undefined_after(ctx: TUContext, m: Macro) -> bool:
    """Whether the file of `m` `#undef`s its name after it, before defining it again: a scoped macro."""
    return _undef_of(ctx, m) is not None


def _scope_closed_unused(ctx: TUContext, m: Macro, kernel_key: tuple[int, ...],
                         piece_keys: list[tuple[int, ...]]) -> bool:
    """Whether `m` is `#undef`'d in its file before the kernel and no piece the unit takes lies in between (the
    pieces generated under it, `#define OP ...` / `ATOMIC(Add)` / `#undef OP`, need it at their place)."""
    u = _undef_of(ctx, m)
    return u is not None and ctx.sort_key(m.path, u) < kernel_key and not _scope_holds_piece(ctx, m, piece_keys)


def _constexpr(ctx: TUContext, piece: Piece, cur: ci.Cursor) -> bool:
    """Whether a function's declaration says `constexpr` before its name."""
    head = ctx.read(piece.path)[piece.start:cur.location.offset]
    return re.search(rb"\bconstexpr\b", _STRING_OR_COMMENT_B.sub(b" ", head)) is not None


_STRING_OR_COMMENT_B = lazy_re.compile(rb'/\*.*?\*/|//[^\n]*|"(?:[^"\\\n]|\\.)*"', re.S)


def _scope_holds_piece(ctx: TUContext, m: Macro, piece_keys: list[tuple[int, ...]]) -> bool:
    """Whether a piece the unit takes lies between `m` and the `#undef` that closes it."""
    u = _undef_of(ctx, m)
    if u is None:
        return False
    start, end = ctx.sort_key(m.path, m.start), ctx.sort_key(m.path, u)
    return any(start < k < end for k in piece_keys)


def _macros(ctx: TUContext, tokens: list[str], kernel_key: tuple[int, ...],
            vendored: Callable[[str], bool] = lambda _p: False,
            last_piece: tuple[int, ...] | None = None, piece_keys: list[tuple[int, ...]] = ()) -> list[Macro]:
    """The definitions the unit needs. A macro defined once: the definition in force at the kernel.
    A macro redefined before the kernel (`#define OP(X, Y) X + Y` / `ATOMIC(Add)` / `#undef OP` /
    `#define OP(X, Y) X * Y` / `ATOMIC(Mul)`): every active definition before it, each emitted at its
    place so that the pieces between see the one they saw in the source. Pieces that follow the kernel in the
    source (`last_piece`: operators a header generates after the kernel's own header included it) see the
    redefinitions before them too (`#define DEFINE_OPERATOR(op, opas)` ... `#undef` ... `#define
    DEFINE_OPERATOR(op)` then `DEFINE_OPERATOR(<)`); render places those after the kernel, as the pieces."""
    chosen: dict[str, list[Macro]] = {}
    # A name whose every #define sits in an inactive branch is no macro in this configuration: in CUDA,
    # `h2rcp` under `#if defined(USE_ROCM) ... #define h2rcp __compat_h2rcp` is the toolkit intrinsic.
    todo = [t for t in dict.fromkeys(tokens) if ctx.active_macro(t)]
    expanded: set[str] = set()
    while todo:
        while todo:
            name = todo.pop()
            if name in chosen:
                continue
            cands = [m for m in ctx.macros[name] if m.active]
            if any(vendored(m.path) for m in cands):
                # A vendored library's macro (GLM_FUNC_QUALIFIER): its #include defines it.
                chosen[name] = []
                continue
            # (a scoped definition its file `#undef`s before the kernel is in force at neither the kernel nor what
            # follows it: graphvite's `#define _Index typename _Solver::Index` / one class head / `#undef _Index`,
            # read before a kernel header, turned `template<class _T, class _Index = size_t>` of every later class
            # into "expected an identifier")
            before = sorted((m for m in cands if ctx.sort_key(m.path, m.start) < kernel_key
                             and not _scope_closed_unused(ctx, m, kernel_key, piece_keys)),
                            key=lambda m: ctx.sort_key(m.path, m.start))
            if last_piece is not None and last_piece > kernel_key:
                later = [m for m in cands if kernel_key < ctx.sort_key(m.path, m.start) < last_piece]
                if len(before) + len(later) > 1:
                    before += sorted(later, key=lambda m: ctx.sort_key(m.path, m.start))
            if not before:
                # Defined only after the kernel: a definition its own file `#undef`s a few lines on (`#define
                # Float typename Solver::Float` / one declaration / `#undef Float`) is in force there alone,
                # never at the kernel; taken, it turned every later `class Float` into `class typename ...`.
                # Unless a piece the unit takes lies in that scope (`#define SCALAR float` / `#include "ops-inl.h"` /
                # `#undef SCALAR` after the kernel's header: the operators it declares name it).
                cands = [m for m in cands if not _undefined_after(ctx, m) or _scope_holds_piece(ctx, m, piece_keys)]
                if not cands:
                    chosen[name] = []
                    continue
            chosen[name] = before or [min(cands, key=lambda m: ctx.sort_key(m.path, m.start))]
            todo += [t for m in chosen[name] for t in _IDENT.findall(m.body) if ctx.active_macro(t) and t not in chosen]
            # A definition the unit writes with its `#if` chain (arch_branches.arch_chain): the chain's conditions
            # name macros too (`#if LIB_IS_DEVICE_CODE`).
            for m in chosen[name]:
                if chain := arch_chain(ctx.read(m.path), m.start, m.name, arch_dependent(ctx)):
                    todo += [t for t in _IDENT.findall(_STRING_OR_COMMENT.sub(" ", chain))
                             if ctx.active_macro(t) and t not in chosen]
        # Names built by token pasting (`CAT3(LIB_, BACKEND_NS, _HOST_DEVICE)` -> `LIB_CUDA_HOST_DEVICE`): named
        # by no kept text, found by expanding the kept macros (closure.pasted).
        if any("##" in m.body for ms in chosen.values() for m in ms):
            words = set(tokens)
            for name in [n for n in chosen if n not in expanded]:
                expanded.add(name)
                for m in chosen[name]:
                    params, body = pasted.split_definition(m.body)
                    todo += [t for t in pasted.expansion_names(body, ctx.macro_lookup)
                             if t not in chosen and ctx.active_macro(t)]
                    # `Start(ctx, MSG)` with `#define Start(c, KIND) ... BLOCK_##KIND`: the argument is a word of the
                    # kept text, and the pasted name (`BLOCK_MSG`) a macro.
                    todo += [t for t in pasted.pasted_with_words(params, body, words, ctx.macros)
                             if t not in chosen and ctx.active_macro(t)]
    return sorted((m for ms in chosen.values() for m in ms), key=lambda m: ctx.sort_key(m.path, m.start))


def _own_text(ctx: TUContext, cur: ci.Cursor, drop: dict[tuple[int, int], str] | None = None) -> str:
    """A cursor's own text, comments, strings and dropped members left out: its identifiers are read from it
    rather than from libclang's tokens, since clang_tokenize returns nothing for some header cursors."""
    e = cur.extent
    if e.start.file is None:
        return ""
    path = ctx.norm(e.start.file.name)
    data = ctx.read(path)
    end = e.end.offset
    if end <= e.start.offset and (found := ctx.piece_at(path, e.start.offset)) is not None:
        end = found[0].end  # a declaration written inside a nested macro's argument: the invocation's text
    text = _cut(data, e.start.offset, end, [(s, t) for s, t in (drop or {})]).decode("utf-8", "replace")
    return _STRING_OR_COMMENT.sub(" ", text)



def _walk(cur: ci.Cursor, drop: dict[tuple[int, int], str]):
    """cur.walk_preorder() without the subtrees inside dropped ranges (members, or a member's body and its
    constructor initializers: cursors of their own that only lie inside the range)."""
    if not drop:
        yield from cur.walk_preorder()
        return
    ranges = sorted(drop)
    starts = [s for s, _e in ranges]
    home = cur.extent.start.file.name if cur.extent.start.file is not None else None
    stack = [cur]
    while stack:
        c = stack.pop()
        e = c.extent
        i = bisect.bisect_right(starts, e.start.offset) - 1
        if (c is not cur and i >= 0 and e.end.offset <= ranges[i][1] and e.start.file is not None
                and e.start.file.name == home):
            continue
        yield c
        stack.extend(reversed(list(c.get_children())))
