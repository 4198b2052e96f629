"""units.cross_merge on records alone: where a definition block goes in a kernel's closure, what is emitted once,
and the closures' other parts merged (no parse, no nvcc)."""

from __future__ import annotations

from typing import Any

from miner.units.cross_merge import merge
from miner.units.records import ClosureRecord, PieceText, plain


def _piece(kind: str, name: str, text: str, path: str, line: int, after: bool = False) -> PieceText:
    return PieceText(kind, name, [], text, path, line, after=after)


def _definition(kind: str, name: str, pieces: list[PieceText], unresolved: list[dict[str, Any]]) -> dict[str, Any]:
    rec = ClosureRecord("/p/def.cu", pieces, ["cstdio"], [], unresolved)
    return {"usr": f"c:@{name}", "name": name, "namespaces": [], "symbol": name, "kind": kind, "path": "/p/def.cu",
            "line": pieces[-1].line, "closure": plain(rec)}


def test_a_variable_takes_its_extern_declarations_place_a_function_goes_before_the_kernel() -> None:
    """`extern __device__ int n;` is replaced by `__device__ int n = 0;` at its place (whole-program nvcc refuses
    the pair); the function's definition follows the kernel's pieces; the shared type is emitted once, at its
    earlier place; an `after` piece of the kernel stays after; includes and unresolved entries (whose values may
    be lists) are merged without repeats."""
    shared = _piece("STRUCT_DECL", "S", "struct S { int a; };", "/p/h.cuh", 1)
    rec = ClosureRecord("/p/k.cu", [
        shared,
        _piece("VAR_DECL", "n", "extern __device__ int n;", "/p/h.cuh", 2),
        _piece("FUNCTION_DECL", "f", "__device__ int f(S s);", "/p/h.cuh", 3),
        _piece("FUNCTION_DECL", "g", "template <> __device__ int g<1>();", "/p/k.cu", 9, after=True),
    ], ["cuda_runtime.h"], [], [{"symbol": "x", "reason": "r", "where": "k.cu:1", "switched_off": ["A", "B"]}])
    var = _definition("variable", "n", [_piece("VAR_DECL", "n", "__device__ int n = 0;", "/p/def.cu", 4)],
                      [{"symbol": "x", "reason": "r", "where": "k.cu:1", "switched_off": ["A", "B"]}])
    fn = _definition("function", "f", [shared, _piece("MACRO", "B", "#define B 2", "/p/def.cu", 2),
                                       _piece("FUNCTION_DECL", "f", "__device__ int f(S s) { return s.a + B; }",
                                              "/p/def.cu", 5)], [])
    out = merge(rec, [var, fn], [])
    assert [p.text for p in out.pieces] == [
        "struct S { int a; };", "__device__ int n = 0;", "__device__ int f(S s);", "#define B 2",
        "__device__ int f(S s) { return s.a + B; }", "template <> __device__ int g<1>();"]
    assert not any(p.after for p in out.pieces[:-1]) and out.pieces[-1].after
    assert out.includes == ["cuda_runtime.h", "cstdio"]
    assert len(out.unresolved) == 1
    assert [(c["symbol"], c["line"]) for c in out.cross_file] == [("n", 4), ("f", 5)]
