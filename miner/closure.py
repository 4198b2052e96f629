"""Dependency closure of a kernel, computed on the libclang AST of the unit that includes it.

Everything the kernel reaches in the repo's own files (functions, overloads of built-ins, types,
globals, macros) is collected as whole top-level pieces with their enclosing namespaces, then
emitted in original source order. Names declared by our parse stub are CUDA built-ins; names from
the torch shims are recorded as shims; toolkit and C++ headers stay as `#include`s.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field
from typing import Any

import clang.cindex as ci

from miner.frontends.config import stub_dir

K = ci.CursorKind
_PIECE_KINDS = {
    K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.STRUCT_DECL, K.CLASS_DECL, K.UNION_DECL, K.ENUM_DECL,
    K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL, K.TYPE_ALIAS_TEMPLATE_DECL, K.VAR_DECL, K.CLASS_TEMPLATE,
    K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, K.USING_DIRECTIVE, K.USING_DECLARATION,
}
_SCOPE_KINDS = {K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL}
_REF_KINDS = {K.DECL_REF_EXPR, K.MEMBER_REF_EXPR, K.TYPE_REF, K.TEMPLATE_REF, K.CALL_EXPR,
              K.OVERLOADED_DECL_REF, K.MEMBER_REF, K.VARIABLE_REF}
_DEFINE = re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)((?:[^\n\\]|\\.|\\\n)*)", re.M)
_IDENT = re.compile(r"[A-Za-z_]\w*")
_SYS_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*<([^>\n]+)>', re.M)
# Toolkit and standard headers a unit may keep; torch/framework headers never enter a unit.
_KEEP_INCLUDE = re.compile(
    r"^(c[a-z]+|[a-z_]+\.h|cuda_fp16\.h|cuda_bf16\.h|cuda_fp8\.h|cooperative_groups(/.*)?(\.h)?|cub/.*"
    r"|mma\.h|cuda/.*|thrust/.*|cuda_runtime\.h|vector_types\.h|math_constants\.h|type_traits|limits"
    r"|utility|algorithm|array|tuple|climits|cfloat|cstdint|cmath|cassert|cstdio|cstdlib|cstring"
    r"|initializer_list|numeric|functional|iterator|new|complex)$")
_FRAMEWORK = re.compile(r"^(ATen|c10|torch|THC|pybind11|parrots|caffe2|Python)\b|^Python\.h$")
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


@dataclass
class Macro:
    name: str
    path: str
    start: int
    end: int
    body: str


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
        self.order: dict[str, int] = {}  # file -> first-inclusion rank, for source order
        for inc in tu.get_includes():
            self.order.setdefault(norm(inc.include.name), len(self.order))
        self.order.setdefault(norm(tu.spelling), len(self.order))
        self.pieces: dict[str, list[tuple[int, int, Piece, ci.Cursor]]] = {}
        self.by_name: dict[tuple[tuple[str, ...], str], list[tuple[Piece, ci.Cursor]]] = {}
        self.macros: dict[str, list[Macro]] = {}
        self._index(tu.cursor, ())
        for lst in self.pieces.values():
            lst.sort(key=lambda t: t[0])
        for path in self.order:
            if path in inputs:
                self._index_macros(path)

    def _index(self, scope: ci.Cursor, ns: tuple[str, ...]) -> None:
        for c in scope.get_children():
            f = c.location.file
            if f is None:
                continue
            path = self.norm(f.name)
            if path not in self.inputs:
                continue
            if c.kind in _SCOPE_KINDS:
                self._index(c, ns + ((c.spelling or "",) if c.kind == K.NAMESPACE else ()))
            elif c.kind in _PIECE_KINDS:
                e = c.extent
                if e.start.file is None or self.norm(e.start.file.name) != path:
                    continue
                p = Piece(path, e.start.offset, e.end.offset, ns, c.kind.name, c.spelling)
                self.pieces.setdefault(path, []).append((p.start, p.end, p, c))
                if c.spelling:
                    self.by_name.setdefault((ns, c.spelling), []).append((p, c))

    def _index_macros(self, path: str) -> None:
        data = self.read(path)
        for m in _DEFINE.finditer(data):
            body = m.group(2).decode("utf-8", "replace")
            macro = Macro(m.group(1).decode(), path, m.start(), m.end(), body)
            self.macros.setdefault(macro.name, []).append(macro)

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

    def sort_key(self, path: str, offset: int) -> tuple[int, int]:
        return (self.order.get(path, 1 << 30), offset)


def _text(ctx: TUContext, p: Piece | Macro) -> str:
    return ctx.read(p.path)[p.start:p.end].decode("utf-8", "replace")


def compute(ctx: TUContext, kernel_cursor: ci.Cursor, kernel_path: str, kernel_start: int) -> Closure:
    out = Closure()
    seen: set[tuple[str, int]] = {(kernel_path, kernel_start)}
    pieces: list[Piece] = []
    shims: set[str] = set()
    work = [kernel_cursor]
    tokens: list[str] = []
    while work:
        cur = work.pop()
        tokens += [t.spelling for t in cur.get_tokens() if t.kind == ci.TokenKind.IDENTIFIER]
        for c in cur.walk_preorder():
            if c.kind not in _REF_KINDS:
                continue
            if c.kind == K.OVERLOADED_DECL_REF:
                # Unresolved overload set (dependent call): every repo function of that name.
                refs = [gc for (_ns, nm), lst in ctx.by_name.items() if nm == c.spelling for _gp, gc in lst]
            else:
                refs = [c.referenced]
            for r in refs:
                if r is None or r.location.file is None:
                    continue
                rpath = ctx.norm(r.location.file.name)
                if rpath not in ctx.inputs:
                    if rpath.startswith(ctx.stub) and "km_torch_parse" in rpath or "/shims/" in rpath and (
                            "ATen" in rpath or "c10" in rpath or "torch" in rpath or "THC" in rpath):
                        shims.add(r.spelling)
                    continue
                d = r.get_definition() or r
                dpath = ctx.norm(d.location.file.name) if d.location.file else rpath
                found = ctx.piece_at(dpath, d.location.offset)
                if found is None:
                    continue
                piece, pc = found
                # Overloads and specializations share a name: take the whole set at that scope.
                group = ctx.by_name.get((piece.namespaces, piece.name), [(piece, pc)])
                for gp, gc in group:
                    key = (gp.path, gp.start)
                    if key not in seen:
                        seen.add(key)
                        pieces.append(gp)
                        work.append(gc)
    out.pieces = sorted(pieces, key=lambda p: ctx.sort_key(p.path, p.start))
    out.macros = _macros(ctx, tokens, kernel_path)
    out.shims = sorted(shims)
    files = {kernel_path} | {p.path for p in pieces} | {m.path for m in out.macros}
    out.includes = _includes(ctx, files)
    out.unresolved = _unresolved(ctx, files, {(p.path, p.start, p.end) for p in pieces},
                                 (kernel_path, kernel_cursor.extent.start.offset, kernel_cursor.extent.end.offset))
    return out


def _macros(ctx: TUContext, tokens: list[str], kernel_path: str) -> list[Macro]:
    chosen: dict[str, Macro] = {}
    todo = [t for t in dict.fromkeys(tokens) if t in ctx.macros]
    while todo:
        name = todo.pop()
        if name in chosen:
            continue
        cands = ctx.macros[name]
        # The kernel's own file first, then the earliest included file (its real configuration).
        m = min(cands, key=lambda m: (m.path != kernel_path, ctx.sort_key(m.path, m.start)))
        chosen[name] = m
        todo += [t for t in _IDENT.findall(m.body) if t in ctx.macros and t not in chosen]
    return sorted(chosen.values(), key=lambda m: ctx.sort_key(m.path, m.start))


def _includes(ctx: TUContext, files: set[str]) -> list[str]:
    out: list[str] = []
    for path in sorted(files, key=lambda p: ctx.order.get(p, 0)):
        for m in _SYS_INCLUDE.finditer(ctx.read(path)):
            name = m.group(1).decode().strip()
            if _FRAMEWORK.search(name) or not _KEEP_INCLUDE.match(name):
                continue
            if name not in out:
                out.append(name)
    return out


def _unresolved(ctx: TUContext, files: set[str], ranges: set[tuple[str, int, int]],
                kernel: tuple[str, int, int]) -> list[dict[str, str]]:
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
        if not any(p == path and s <= off <= e for p, s, e in spans):
            continue
        m = _UNDECLARED.search(d.spelling)
        if m and m.group(1) not in seen:
            seen.add(m.group(1))
            out.append({"symbol": m.group(1), "reason": d.spelling,
                        "where": f"{os.path.basename(path)}:{d.location.line}"})
    return out


def render_pieces(ctx: TUContext, closure: Closure) -> list[dict[str, Any]]:
    """Pieces and macros as text, interleaved in source order, each with its namespace chain."""
    items: list[tuple[tuple[int, int], dict[str, Any]]] = []
    for p in closure.pieces:
        items.append((ctx.sort_key(p.path, p.start), {
            "kind": p.kind, "name": p.name, "namespaces": list(p.namespaces), "text": _text(ctx, p),
            "path": p.path, "line": ctx.read(p.path).count(b"\n", 0, p.start) + 1}))
    for m in closure.macros:
        items.append((ctx.sort_key(m.path, m.start), {
            "kind": "MACRO", "name": m.name, "namespaces": [], "text": _text(ctx, m), "path": m.path,
            "line": ctx.read(m.path).count(b"\n", 0, m.start) + 1}))
    return [d for _, d in sorted(items, key=lambda t: t[0])]
