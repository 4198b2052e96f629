"""Configurations a build runs in a loop (issue 14): a shell script that compiles the same source once per value of a
list (`for w in $WIDTH_LIST; do ${NVCC} -DTILE_WIDTH=$w wide.cu; done`), through a variable named for the compiler the
caller passes in. Reproduced by code of our own under tests/fixtures/build_loops and judged by the real libclang parse
and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from miner.frontends.clang_frontend import command_line_defines
from miner.source import shell_builds
from tests.conftest import FIXTURES, build_statuses, extract_and_build, only_meta

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
_SCRIPT = FIXTURES / "build_loops" / "shell_loop" / "kernels" / "make_ptx.sh"


def test_a_loops_nvcc_line_takes_the_first_value_of_the_list() -> None:
    """`${CUDA_COMPILER_NVCC}` runs nvcc (its value is the script's first argument); `$here` is `.`; the loop variable
    `w` is the first word of `$WIDTH_LIST`, in a loop joined by `\\` and in one written over several lines."""
    lines = shell_builds.nvcc_lines(str(_SCRIPT))
    by_file = {src.rsplit("/", 1)[-1]: cmd for srcs, cmd in lines for src in srcs}
    assert set(by_file) == {"narrow.cu", "wide.cu", "wide_sum.cu"}, lines
    assert "-DTILE_WIDTH=4" in by_file["narrow.cu"].split(), by_file
    assert "-DTILE_WIDTH=8" in by_file["wide.cu"].split(), by_file
    assert "-DTILE_WIDTH=8" in by_file["wide_sum.cu"].split(), by_file
    assert all(src.startswith(str(_SCRIPT.parent)) for srcs, _ in lines for src in srcs), lines


def test_command_line_defines_read_every_spelling() -> None:
    assert command_line_defines(["-DA=4", "-D", "B", "-DC=x=y", "-I.", "-DA=5"]) == {"A": "5", "B": "1", "C": "x=y"}


@pytest.fixture(scope="module")
def shell_loop(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "build_loops/shell_loop")


@_nvcc
@pytest.mark.parametrize(("kernel", "width"), [("narrow_scale", "4"), ("wide_scale", "8"), ("wide_row_sum", "8")])
def test_a_unit_compiles_in_the_first_configuration_of_the_loop(shell_loop: dict[str, Any], kernel: str,
                                                                width: str) -> None:
    """Each kernel's sizes are pasted from the width (`PICK(ROWS_PER_TILE, TILE_WIDTH)` -> `ROWS_PER_TILE_W8`), defined
    by nothing but the build's command line. The unit carries the script's `-DTILE_WIDTH`, and its closure takes the
    pasted macro, which it finds by expanding with the command line's value even where the parse ran through a
    precompiled prelude (three translation units: the prelude holds the `-D`, the unit's record lists none)."""
    m = only_meta(shell_loop, kernel)
    assert m["build_flags"]["nvcc"] == [f"-DTILE_WIDTH={width}"], m["build_flags"]
    assert build_statuses(m) == {"default": "ok"}, m["instantiations"]
