"""`extract --build` on tests/fixtures/blind22: patterns found on the twenty-second set of repositories (issue 14,
scripts/corpus_repos_blind22.txt, measured before any change in session 21), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, build_statuses, extract_and_build, only_meta, unit_texts

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def macro_after_member(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind22/macro_after_member")


@_nvcc
def test_a_macro_defined_after_a_header_stays_after_the_template_that_declares_its_name(
        macro_after_member: dict[str, Any]) -> None:
    """`#define LANES 8` follows the `#include` of a header whose class template declares a member `LANES`: the
    unit keeps the macro after that template (moved in front of it, the member's declaration reads
    `static const uint32_t 8 = width;`, "expected an identifier"), and the unit builds."""
    m = only_meta(macro_after_member, "spread_lanes")
    assert build_statuses(m) == {"default": "ok"}, m["instantiations"]
    [text] = unit_texts(macro_after_member, m)
    assert text.index("static const uint32_t LANES = width;") < text.index("#define LANES 8"), text


@pytest.fixture(scope="module")
def device_pass_only(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind22/device_pass_only")


@_nvcc
def test_a_name_missing_in_a_device_pass_only_template_is_not_stated_as_the_originals_failure(
        device_pass_only: dict[str, Any], tmp_path: Path) -> None:
    """A library header chooses its implementation per pass (`#if defined(__CUDA_ARCH__)` the device one, else a
    host one); a class template of the device one names `wide_or` and `width`, declared nowhere, in a member nothing
    instantiates. nvcc's device pass leaves that unchecked and the original compiles; the unit copies the template
    bare, its host pass stops on the names. The failure is the unit's: no stated reason says the original does not
    compile. A template every pass reads with such a name keeps that statement (the original fails there too)."""
    src = FIXTURES / "blind22" / "device_pass_only"
    original = subprocess.run(["nvcc", "-c", str(src / "zeros.cu"), "-o", str(tmp_path / "zeros.o")],
                              capture_output=True, text=True, check=False)
    assert original.returncode == 0, original.stderr
    [inst] = only_meta(device_pass_only, "count_zero_vectors")["instantiations"]
    assert inst["build"]["status"] == "failed", inst["build"]
    assert "does not compile" not in (inst["build"].get("toolkit_removed") or ""), inst["build"]
    [other] = only_meta(device_pass_only, "sum_first")["instantiations"]
    assert (other["build"].get("toolkit_removed") or "").startswith("pending_total is declared nowhere"), other["build"]


@pytest.fixture(scope="module")
def stored_chooser(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind22/stored_chooser")


def test_a_launch_through_a_member_a_chooser_set_elsewhere_is_the_chosen_kernels_launch(
        stored_chooser: dict[str, Any]) -> None:
    """`coder_setup` stores `(void *)select_convert<ORDER_RGB>(bytes)` (a chooser returning `&convert_kernel<order,
    3>` or `<order, 4>`) in `s->kernel`; `coder_run` reads it into a local pointer and launches `kernel<<<grid, 128, 0,
    stream>>>(...)`. The kernel's launches are that launch, once per kernel the chooser returns (not "referenced
    only"), with its configuration; the chooser's instantiations give the arguments."""
    m = only_meta(stored_chooser, "convert_kernel")
    assert m.get("launch_missing") is None, m.get("launch_missing")
    launches = m["launches"]
    assert {(lc["launcher"], lc["config"]["block"], lc["config"]["grid"]) for lc in launches} == \
        {("coder_run", "128", "grid")}, launches
    assert sorted(lc["template_args"][1] for lc in launches) == ["3", "4"], launches
    assert {i["id"] for i in m["instantiations"]} == {"0_3", "1_3", "0_4", "1_4"}, m["instantiations"]


@pytest.fixture(scope="module")
def array_params(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind22/array_params")


@_nvcc
def test_pointer_to_array_parameters_through_commented_macros_build(array_params: dict[str, Any]) -> None:
    """`const T (*rows)[WIDTH]` with `#define WIDTH (1 << LOG_WIDTH) /* ... */` and `#define LOG_WIDTH 6 // ...`, and a
    two-dimensional `const T stage[4][8]`: the launcher names its parameters inside their declarators
    (`const float (*km_rows)[(1 << 6)]`, `const float (*km_stage)[8]`), the macros' comments left out (one put
    into the launcher's line would comment out the rest of it), and the unit builds."""
    m = only_meta(array_params, "scale_rows")
    assert build_statuses(m) == {"float": "ok"}, m["instantiations"]
    [text] = unit_texts(array_params, m)
    assert "const float (*km_rows)[(1 << 6)]" in text and "const float (*km_stage)[8]" in text, text


@pytest.fixture(scope="module")
def grid_constant_first(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind22/grid_constant_first")


@_nvcc
def test_a_grid_constant_written_before_the_type_is_repeated_in_the_explicit_instantiation(
        grid_constant_first: dict[str, Any]) -> None:
    """`__grid_constant__ const char *const chars` (the annotation in front of the type, whose parsed spelling drops
    it): the unit's explicit instantiation writes it on every such parameter (without, nvcc stops: "incompatible
    __grid_constant__ annotation for parameter in instantiation directive"), and the unit builds."""
    m = only_meta(grid_constant_first, "score_lanes")
    assert build_statuses(m) == {"4_int": "ok"}, m["instantiations"]
    [text] = unit_texts(grid_constant_first, m)
    directive = next(line for line in text.splitlines() if line.startswith("template __global__"))
    assert directive.count("__grid_constant__") == 3, directive
