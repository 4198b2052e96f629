"""The using-directives, using-declarations and namespace aliases a unit keeps (moved out of closure.compute)."""

from __future__ import annotations

import dataclasses
import os

import clang.cindex as ci

from miner import lazy_re
from miner.units.closure.context import K, Piece, TUContext
from miner.units.closure.shims import (
    _is_torch_shim,
    _namespace_chain,
    _toolkit_header_of_shim,
    framework_of_shim,
    in_unit_shim,
)
from miner.units.closure.vendored import Library, Vendored
from miner.units.headers import STD_HEADERS, toolkit_dirs


def overloaded(c: ci.Cursor) -> list[ci.Cursor]:
    """The declarations of an overloaded-declaration reference."""
    lib = ci.conf.lib
    return [lib.clang_getOverloadedDecl(c, i) for i in range(lib.clang_getNumOverloadedDecls(c))]


def usings(ctx: TUContext, files: set[str], pieces: list[Piece], seen: set[tuple[str, int]],
            before: tuple[int, int], with_shim: frozenset[str], libraries: dict[str, Library],
            includes: list[str]) -> list[Piece]:
    """`using namespace X;`, `using X::y;` and `namespace a = X;` seen before the kernel, kept when what
    they name is in the unit: a namespace or declaration of the closure, a toolkit header the unit includes,
    or the torch shim when the unit inlines it (`using namespace at;` in a kernel that uses no torch name is
    dropped: without the shim there is no `at` to name). `namespace cg = cooperative_groups;` in a file that
    has cooperative groups only through a project header is dropped from a unit that does not include them
    (a kernel of that file that uses no `cg::`): the alias alone was "name must be a namespace name"."""
    families = {_header_family(h) for h in includes}
    in_unit = {(p.path, p.start) for p in pieces}
    chains = {p.namespaces[:i] for p in pieces for i in range(1, len(p.namespaces) + 1)}
    out: list[Piece] = []
    # Every file of the translation unit, not only those the closure took pieces from: `namespace dgl { using
    # namespace runtime; }` in a header included before the kernel's, of which the kernel needs nothing else,
    # is what makes `accum_dtype` (dgl::runtime's) visible in dgl::aten::cuda.
    included = [lib for lib in libraries.values() if lib.wheel is None]
    for p, c in _using_pieces(ctx, files):
        if (p.path, p.start) in seen or ctx.sort_key(p.path, p.start) >= before:
            continue
        if any(lib.holds(p.path) for lib in included):
            # Written in a vendored library the unit #includes (`using std::size_t;` in Eigen/Core): the include
            # brings it, under the library's own #if. A copy lost that guard (Eigen's `EIGEN_USING_STD_COMPLEX_
            # OPERATORS;`, a macro defined only for the device pass: "this declaration has no storage class").
            continue
        refs = [ch.referenced for ch in c.get_children() if ch.referenced is not None]
        target = refs[-1] if refs else None
        if target is not None and target.kind == K.OVERLOADED_DECL_REF:
            # `using ns::CastF;` of a class template with explicit specializations (or of an overload
            # set) names a set: the declaration it stands for is the first one of the set found in
            # the unit (was: the set's own location, the using itself, never in the unit).
            decls = [d for d in overloaded(target) or overloaded(c) if d.location.file is not None]
            target = next((d for d in decls if _piece_in(ctx, d, in_unit)), decls[0] if decls else None)
        if target is None or target.location.file is None:
            continue
        tpath = ctx.norm(target.location.file.name)
        lib = Vendored.of(ctx).library_of(tpath)
        if lib is not None and lib.include_dir in libraries:
            keep = True  # `using namespace glm;` with glm kept as an #include
        elif lib is not None and lib.wheel is not None:
            # `namespace GMMA = cute::SM90::GMMA;` in a project header, in a unit that names nothing of the wheel's
            # library (so does not include it): the alias alone was "name must be a namespace name".
            keep = False
        elif tpath in ctx.inputs:
            if target.kind == K.NAMESPACE:
                chain = _namespace_chain(target)
                keep = chain in chains
                # Declared where the directive stands: only a namespace nested in the directive's own scope.
                if chain[:len(p.namespaces)] == p.namespaces and len(chain) > len(p.namespaces):
                    p = dataclasses.replace(p, declares=chain[len(p.namespaces):])
            else:
                d = target.get_definition() or target
                found = ctx.piece_at(ctx.norm(d.location.file.name), d.location.offset) if d.location.file else None
                keep = found is not None and (found[0].path, found[0].start) in in_unit
        elif _is_torch_shim(ctx, tpath):
            # Kept where the unit shim has the target: `using namespace at::indexing;` named a namespace
            # only the parse shim declares ("name must be a namespace name").
            fw = framework_of_shim(ctx, tpath)
            keep = fw is not None and fw.name in with_shim and in_unit_shim(ctx, target)
        else:
            h = _toolkit_header_of_shim(ctx, tpath)
            # (std's namespace is everywhere: a standard header's shim decides nothing)
            keep = h is None or h in STD_HEADERS or _header_family(h) in families
            if h is None and (real := _in_toolkit_folder(tpath)) is not None:
                # The toolkit's own header (`using thrust::counting_iterator;` of a library's iterator header): kept
                # where the unit includes that library, as for a shim's (was "identifier thrust is undefined").
                keep = _library_family(target, real) in families
            std = h if h in STD_HEADERS else _public_std_header(ctx, tpath) if h is None else None
            if std in _CXX_FORM and b"std::" in ctx.read(p.path)[p.start:p.end]:
                # `using std::uint8_t;`: the C header that declares `::uint8_t` (`<stdint.h>`, which the unit may
                # already include) puts nothing in std; its C++ form does (was "namespace std has no member").
                std = _CXX_FORM[std]
            if keep and std is not None and std not in includes:
                # `using std::bit_cast;` of a project header none of whose other pieces the unit holds: the
                # standard header it names comes along (was "namespace std has no member bit_cast").
                includes.append(std)
        if keep:
            seen.add((p.path, p.start))
            out.append(p)
    return out


# A C library header -> the C++ header that declares its names in namespace std too.
_CXX_FORM = {"stdint.h": "cstdint", "stddef.h": "cstddef", "stdlib.h": "cstdlib", "math.h": "cmath",
             "string.h": "cstring", "stdio.h": "cstdio", "float.h": "cfloat", "limits.h": "climits"}
_SYSTEM_STD = lazy_re.compile(r"/(?:c\+\+|include)/(?:v1/|\d[\w.]*/)?([a-z_]+(?:\.h)?)$")


def _system_std_header(path: str) -> str | None:
    """The standard header a system library path is (`/usr/include/c++/12/bit`: `bit`), None for an internal
    one (`bits/stl_vector.h`) or anything else."""
    m = _SYSTEM_STD.search(path)
    return m.group(1) if m and m.group(1) in STD_HEADERS else None


def _public_std_header(ctx: TUContext, path: str) -> str | None:
    """The standard header that brought a system library file into the translation unit: itself when it is one
    (`/usr/include/c++/12/bit`), else the nearest standard header up its include chain (`bits/shared_ptr.h`,
    which `<memory>` included: `using std::shared_ptr;` was kept without it, "namespace std has no member
    shared_ptr")."""
    parents = ctx.memo("_include_parents", lambda: _include_parents(ctx))
    seen: set[str] = set()
    while path not in seen:
        seen.add(path)
        if (std := _system_std_header(path)) is not None:
            return std
        path = parents.get(path, path)
    return None


def _include_parents(ctx: TUContext) -> dict[str, str]:
    """file -> the file whose #include first brought it into the translation unit."""
    # A precompiled prelude's files, which this parse did not enter, came first (frontends.prelude).
    out = {ctx.norm(f): ctx.norm(p) for f, p in ctx.tu.__dict__.get("km_prefix_parents", {}).items()}
    for inc in ctx.tu.get_includes():
        if inc.source is not None:
            out.setdefault(ctx.norm(inc.include.name), ctx.norm(inc.source.name))
    return out


def _using_pieces(ctx: TUContext, files: set[str]) -> list[tuple[Piece, ci.Cursor]]:
    """The using-directives, using-declarations and namespace aliases of the translation unit's files (`files`,
    the unit's own, first), listed once per translation unit."""
    every = ctx.memo("_using_pieces", lambda: {path: [(p, c) for _s, _e, p, c in found if p.kind in _USING_KINDS]
                                               for path, found in ctx.pieces.items()})
    order = [*(f for f in files if f in every), *(f for f in every if f not in files)]
    return [pc for f in order for pc in every[f]]


_USING_KINDS = ("USING_DIRECTIVE", "USING_DECLARATION", "NAMESPACE_ALIAS")


def _piece_in(ctx: TUContext, decl: ci.Cursor, in_unit: set[tuple[str, int]]) -> bool:
    """Whether the definition of `decl` (else `decl`) is a piece the unit holds."""
    d = decl.get_definition() or decl
    if d.location.file is None:
        return False
    found = ctx.piece_at(ctx.norm(d.location.file.name), d.location.offset)
    return found is not None and (found[0].path, found[0].start) in in_unit


def _in_toolkit_folder(path: str) -> str | None:
    """`thrust/iterator/counting_iterator.h` for a file that is (or stands in for, as the parse's framework shims
    do) a toolkit header with a folder: the longest tail of its path that nvcc's include folders hold."""
    from miner.units.closure.toolkit_copies import _in_toolkit

    parts = os.path.realpath(path).split(os.sep)
    for i in range(1, len(parts) - 1):
        rel = "/".join(parts[i:])
        if rel.count("/") and _in_toolkit(rel):
            return rel
    return None


def _library_family(target: ci.Cursor, header: str) -> str:
    """The toolkit library family a declaration of a toolkit header (or its stand-in) belongs to: its outermost
    namespace where the toolkit has a folder of that name (`thrust::counting_iterator`: `thrust`), else the
    header's. The parse's CCCL stand-ins share one vocabulary, declared by whichever of them comes first
    (`cuda/std/version` for `thrust::counting_iterator`): the file says nothing of the library."""
    p = target.semantic_parent
    outer = None
    while p is not None and p.kind == K.NAMESPACE:
        outer, p = p.spelling, p.semantic_parent
    if outer and any(os.path.isdir(os.path.join(d, outer)) for d in toolkit_dirs()):
        return outer
    return _header_family(header)


def _header_family(header: str) -> str:
    """`cooperative_groups/reduce.h` and `cooperative_groups.h` are one family: `cooperative_groups`."""
    first = header.split("/", 1)[0]
    return first[:-2] if first.endswith(".h") else first
