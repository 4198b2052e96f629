"""`extract --build` on tests/fixtures/blind5q: launch patterns of quantized-inference and graph libraries found on
the fifth blind set (issue 14, scripts/corpus_repos_blind5.txt), each reproduced by kernels of our own and judged by
the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def nested_macro(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind5q/nested_macro_launch")


def test_launches_two_macros_deep_get_every_parameter_and_every_case(nested_macro: dict[str, Any]) -> None:
    """`#define TILE_CASE(BITS, ROWS, COLS, \\<newline> IS_SIGNED, GROUP, THREADS) ... tile_gemv<T, BITS, THREADS,
    ROWS, COLS, IS_SIGNED, GROUP><<<...>>>`, used twice by `#define TILE_CASES(BITS, COLS, THREADS)`, invoked as
    `TILE_CASES(4, 8, 128)` in a host template: the parameter after the line continuation was named
    `\\<newline> IS_SIGNED`, so it was never substituted (`identifier "IS_SIGNED" is undefined`), and both
    launches of one invocation sit at the invocation, so each got the first case's arguments (two of the four
    instantiations). The n-th reference of an invocation now takes the n-th argument list of its expansion."""
    m = only_meta(nested_macro, "tile_gemv")
    assert sorted(i["args"] for i in m["instantiations"]) == [
        ["float", "4", "128", "1", "8", "true", "0"], ["float", "4", "128", "2", "8", "false", "-1"],
        ["float", "8", "64", "1", "4", "true", "0"], ["float", "8", "64", "2", "4", "false", "-1"]]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
