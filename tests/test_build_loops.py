"""Configurations a build runs in a loop (issue 14): a shell script that compiles the same source once per value of a
list (`for w in $WIDTH_LIST; do ${NVCC} -DTILE_WIDTH=$w wide.cu; done`), through a variable named for the compiler the
caller passes in. Reproduced by code of our own under tests/fixtures/build_loops and judged by the real libclang parse
and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from miner.frontends.clang_frontend import command_line_defines
from miner.source import build_flags, shell_builds
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


def test_the_defines_every_nvcc_command_string_passes(tmp_path: Path) -> None:
    """`build_lib.py` writes `f'{nvcc_cmd} ... -DRING_ENABLE_GPU=1 -o "{out}" -c "{cu_path}"'` twice (debug and
    release): the switch both pass counts, the build mode's `-D_DEBUG` / `-DNDEBUG` does not, nor the `c++` line's."""
    project = tmp_path / "p"
    shutil.copytree(FIXTURES / "build_loops" / "py_command_string", project)
    found = build_flags.find(str(project / "native" / "ring.cu"), str(project))
    assert found is not None and found["nvcc"] == ["-DRING_ENABLE_GPU=1"], found
    assert found["from"] == ["tools/build_lib.py"], found
    assert build_flags.find(str(project / "native" / "gpu_util.h"), str(project)) is None


@pytest.fixture(scope="module")
def py_command_string(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "build_loops/py_command_string")


@_nvcc
def test_a_switch_only_a_python_nvcc_command_string_defines_reaches_the_parse(
        py_command_string: dict[str, Any]) -> None:
    """The device helper `ring_index` and the launch macro sit under `#if RING_ENABLE_GPU` (0 unless the build defines
    it): with the command string's define the parse sees both, the kernel's launch is read through the macro and the
    unit, which calls `ring_index`, builds."""
    m = only_meta(py_command_string, "ring_shift")
    assert m["build_flags"]["nvcc"] == ["-DRING_ENABLE_GPU=1"], m["build_flags"]
    assert build_statuses(m) == {"default": "ok"}, m["instantiations"]
    assert m["launches"], m.get("launch_missing")
