"""cindex_speed.binary_operator_kind: a binary operator told apart by libclang's operator kind, not its tokens."""

from __future__ import annotations

from pathlib import Path

import clang.cindex as ci
import pytest

from miner.units.launches.chosen import _is_assignment


def test_an_assignment_is_told_from_other_binary_operators_without_tokenizing_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_is_assignment` read the operator from the expression's tokens: every binary operator of every function the
    launch walk passes was tokenized whole, which took most of a cold extract of a path tracer whose kernels share
    one translation unit of megabytes of device code. The operator's kind comes from libclang; no token is read."""
    src = tmp_path / "ops.cpp"
    src.write_text("int f(int a, int b) { int c; c = a + b; c += a; return (c == b) + (a = b); }\n")
    tu = ci.Index.create().parse(str(src))
    ops = [c for c in tu.cursor.walk_preorder() if c.kind == ci.CursorKind.BINARY_OPERATOR]

    def no_tokens(self: ci.Cursor) -> None:
        raise AssertionError("tokenized")

    monkeypatch.setattr(ci.Cursor, "get_tokens", no_tokens)
    got = [(c.extent.start.column, _is_assignment(c)) for c in ops]
    # `c = a + b` (col 30), `a + b` (34), `(c == b) + (a = b)` (56), `c == b` (57), `a = b` (68)
    assert got == [(30, True), (34, False), (56, False), (57, False), (68, True)], got
