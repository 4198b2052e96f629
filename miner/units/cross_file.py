"""Definitions in another file of a separately compiled project (`nvcc -rdc=true`, CMake
`CUDA_SEPARABLE_COMPILATION`), the parts that run on a live translation unit.

Such a project declares a device function or a `__device__`/`__constant__` variable in a header
(`__device__ float scale(float);`, `extern __constant__ float coeffs[4];`) and defines it in one .cu; the
kernel's TU holds the declaration only, and its unit, compiled alone in whole-program mode, stops in ptxas
("Unresolved extern function"). `externals` lists what a kernel's closure reaches of that kind; extract
(`extract.cross_file`) finds the files that may define it (`units.definition_index`), parses them with
`DefinitionAnalysis`, which closes over each definition in its own TU, and merges that closure into the
kernel's (`units.cross_merge`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import clang.cindex as ci

from miner.units import closure
from miner.units.records import ClosureRecord, PieceText, plain

if TYPE_CHECKING:
    from miner.frontends.clang_frontend import LiveTU

K = ci.CursorKind
_DEVICE = {K.CUDADEVICE_ATTR, K.CUDAGLOBAL_ATTR}
# (`extern __shared__` is the launch's dynamic shared memory: no definition exists anywhere)
_DEVICE_VAR = {K.CUDADEVICE_ATTR, K.CUDACONSTANT_ATTR}
# A free function, or a member a class declares and another file defines out of line (`void P::advance(float d)
# {...}` in a .cpp the project compiles with `-x cu -dc`)
_FUNCTIONS = {K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR}
_CLASSES = {"STRUCT_DECL", "CLASS_DECL"}
_PIECES = {"FUNCTION_DECL", "VAR_DECL", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR"}


def _attrs(c: ci.Cursor) -> set[ci.CursorKind]:
    return {ch.kind for ch in c.get_children() if ch.kind.is_attribute()}


def kind_of(c: ci.Cursor) -> str | None:
    """"function" or "variable" for a declaration of external linkage that device code may need a definition
    of: a `__device__` function, a `__device__`/`__constant__` variable; else None."""
    try:
        if c.linkage != ci.LinkageKind.EXTERNAL:
            return None
    except ValueError:
        return None
    if c.kind in _FUNCTIONS and _attrs(c) & _DEVICE:
        return "function"
    if c.kind == K.VAR_DECL and _attrs(c) & _DEVICE_VAR:
        return "variable"
    return None


def externals(ctx: closure.TUContext, cl: closure.Closure, root: ci.Cursor) -> list[dict[str, Any]]:
    """The closure's pieces that only declare an external device function or variable this TU never defines,
    and that the code of the closure (from `root`, the kernel) names: the closure takes a name's whole overload
    set, and an overload nothing calls needs no definition."""
    out: dict[str, dict[str, Any]] = {}
    used: tuple[set[str], set[str]] | None = None
    for p, c in _declarations(ctx, cl):
        try:
            kind = kind_of(c)
            if kind is None or c.is_definition() or c.get_definition() is not None:
                continue
            if kind == "variable" and c.storage_class != ci.StorageClass.EXTERN:
                continue  # (`__device__ int n;` without extern is a definition)
        except ValueError:  # (a linkage or storage class this libclang binding does not name: not one of these)
            continue
        usr = c.get_usr()
        if not usr or usr in out:
            continue
        if used is None:
            used = _referenced(ctx, cl, root)
        if usr in used[0] or c.spelling in used[1]:
            out[usr] = {"name": c.spelling, "namespaces": list(p.namespaces), "symbol": symbol(c), "kind": kind,
                        "usr": usr, "path": p.path, "line": c.location.line}
    return list(out.values())


def symbol(c: ci.Cursor) -> str:
    """The qualified name (`ns::P::advance`), an unnamed namespace left out."""
    parts = [c.spelling]
    p = c.semantic_parent
    while p is not None and p.kind != K.TRANSLATION_UNIT:
        if p.spelling:
            parts.append(p.spelling)
        p = p.semantic_parent
    return "::".join(reversed(parts))


def _declarations(ctx: closure.TUContext, cl: closure.Closure) -> list[tuple[closure.Piece, ci.Cursor]]:
    """The closure's functions and variables, and the member functions of its classes (each with its class's
    piece)."""
    out = []
    for p in cl.pieces:
        if p.kind not in _PIECES and p.kind not in _CLASSES:
            continue
        found = ctx.piece_at(p.path, p.start)
        if found is None:
            continue
        if p.kind in _PIECES:
            out.append((p, found[1]))
        else:
            out += [(p, ch) for ch in found[1].get_children() if ch.kind in _FUNCTIONS]
    return out


def _referenced(ctx: closure.TUContext, cl: closure.Closure, root: ci.Cursor) -> tuple[set[str], set[str]]:
    """The USRs the closure's code refers to, and the names of its unresolved (dependent) calls, whose overload
    is chosen at instantiation: every overload of such a name counts."""
    usrs: set[str] = set()
    names: set[str] = set()
    cursors = [root, *(found[1] for p in cl.pieces if (found := ctx.piece_at(p.path, p.start)) is not None)]
    for cur in cursors:
        for n in cur.walk_preorder():
            if n.kind == K.OVERLOADED_DECL_REF:
                names.add(n.spelling)
            elif n.kind in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR, K.CALL_EXPR) and (r := n.referenced) is not None:
                usrs.add(r.get_usr())
    return usrs, names


class DefinitionsFound:
    """What `DefinitionAnalysis` found in one TU: per USR, the definition's closure (its own text the last
    piece of its kind and name), where it is, and the externals that closure reaches in turn."""

    def __init__(self) -> None:
        self.definitions: list[dict[str, Any]] = []
        self.error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"definitions": self.definitions}


class DefinitionAnalysis:
    """The analysis a defining file's parse runs (`clang_frontend.parse(..., analyse=)`): for each wanted USR
    that this TU defines (external linkage, so a static namesake of another file never matches), the
    definition's closure in this TU, rendered as the kernels' closures are."""

    every_tu = True  # (clang_frontend runs it on a TU without kernels)

    def __init__(self, usrs: set[str] | frozenset[str]) -> None:
        self.usrs = frozenset(usrs)

    def __call__(self, live: LiveTU) -> DefinitionsFound:
        out = DefinitionsFound()
        ctx = closure.TUContext(live.tu, live.inputs, live.norm, live.read, live.forced)
        ctx.given_defines = dict(live.command_line)
        try:
            self._find(ctx, out)
        except Exception as exc:  # noqa: BLE001 - one defining TU failing must not stop the run
            out.error = f"{type(exc).__name__}: {exc}"
        finally:
            ctx.__dict__.clear()  # (as units.analysis: the TU is freed as the parse returns)
        return out

    def _find(self, ctx: closure.TUContext, out: DefinitionsFound) -> None:
        done: set[str] = set()
        for path in sorted(ctx.pieces):
            for _s, _e, piece, cur in ctx.pieces[path]:
                if piece.kind not in _PIECES or not cur.is_definition():
                    continue
                if cur.location.file is None or ctx.norm(cur.location.file.name) != path:
                    continue
                usr = cur.get_usr()
                if usr not in self.usrs or usr in done or kind_of(cur) is None:
                    continue
                done.add(usr)
                out.definitions.append(_definition(ctx, piece, cur, usr))


def _definition(ctx: closure.TUContext, piece: closure.Piece, cur: ci.Cursor, usr: str) -> dict[str, Any]:
    cl = closure.compute(ctx, cur, piece.path, piece.start)
    if all((p.path, p.start) != (piece.path, piece.start) for p in cl.pieces):
        cl.pieces = sorted([*cl.pieces, piece], key=lambda p: ctx.sort_key(p.path, p.start))
    # One block before the kernel in the unit, in this TU's order: nothing of it follows the kernel there.
    pieces = [PieceText(**dict(p, after=False)) for p in closure.render_pieces(ctx, cl, piece.path, piece.start)]
    rec = ClosureRecord(piece.path, pieces, cl.includes, cl.shims, cl.unresolved, cl.vendored, cl.frameworks,
                        cl.lacking, externals(ctx, cl, cur))
    return {"usr": usr, "name": cur.spelling, "namespaces": list(piece.namespaces), "symbol": symbol(cur),
            "kind": kind_of(cur),
            "path": piece.path, "line": ctx.read(piece.path).count(b"\n", 0, piece.start) + 1,
            "closure": plain(rec)}
