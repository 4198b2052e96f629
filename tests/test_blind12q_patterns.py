"""`extract --build` on tests/fixtures/blind12q: patterns found on the twelfth set of repositories (issue 14,
scripts/corpus_repos_blind12.txt, development repos since session 14), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind12q")


def test_kernels_in_a_file_a_source_includes_are_found_whatever_its_suffix(dataset: dict[str, Any]) -> None:
    """`relax_driver.cu` includes `kernel_parts/relax.knl`, which includes `relax_tail.knl`: the kernels live in
    files of a suffix no list names, so the folder walk never read them ("no kernels found"). A file a source of
    the walked folder includes is a source whatever its suffix."""
    for name in ("relax_cells", "relax_clamp"):
        m = only_meta(dataset, name)
        assert m["source"]["path"].endswith(".knl"), m["source"]
        assert m["launches"] and m["launches"][0]["path"].endswith("relax_driver.cu"), m["launches"]
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_declaration_keeps_the_undef_of_the_macro_it_replaces(dataset: dict[str, Any]) -> None:
    """`#ifdef M_PI #undef M_PI #endif __device__ static const float M_PI = ...;`: the unit has <cmath> too but
    lacked the `#undef`, so nvcc read `float 3.14159... = ...` ("expected an identifier")."""
    m = only_meta(dataset, "wrap_angles")
    (unit,) = unit_texts(dataset, m)
    assert "#undef M_PI" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_an_extern_declaration_and_its_definition_are_not_both_in_the_unit(dataset: dict[str, Any]) -> None:
    """`extern __device__ HitCounters hits;` (header) and `__device__ HitCounters hits;` (the .cu): the project builds
    with `-rdc`; in one whole-program unit the pair stops nvcc's host pass ("redefinition of 'acme::hits'")."""
    m = only_meta(dataset, "count_hits")
    (unit,) = unit_texts(dataset, m)
    assert "extern __device__" not in unit and "__device__ HitCounters hits;" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_comment_after_a_macro_value_is_no_part_of_a_template_argument(dataset: dict[str, Any]) -> None:
    """`#define NUM_BANDS 3 // Default 3, RGB` and `shade_points<NUM_BANDS><<<...>>>`: the argument was recorded
    as `(3 // Default 3, RGB)` where the parse could not resolve the launch (a parameter type of a library nobody
    here has), which comments out the rest of the unit's line."""
    m = only_meta(dataset, "shade_points")
    assert [i["args"] for i in m["instantiations"]] == [["3"]], m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    m = only_meta(dataset, "splat_points")
    assert [i["args"] for i in m["instantiations"]] == [["3"]], m["instantiations"]


def test_a_declaration_that_stops_on_a_name_no_header_here_declares_fails_with_a_stated_reason(
        dataset: dict[str, Any]) -> None:
    """`splat_points(const vm::vec2 *scales, ...)` with `vm` from `<vecmath_missing/vec.hpp>`, which nobody here
    has: nvcc's first error ("explicit type is missing") names no symbol, and the one it names later (`n`, a
    parameter the broken declaration lost) is a consequence; the caret stands on `vm`, the name the unit's
    stated reason is about."""
    m = only_meta(dataset, "splat_points")
    (inst,) = m["instantiations"]
    assert inst["build"]["status"] == "failed"
    assert "vecmath_missing/vec.hpp" in inst["build"].get("toolkit_removed", ""), inst["build"]


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind12q_cmake")


def test_a_configured_header_gives_its_function_like_macros_and_the_toolkit_version_decides(
        configured: dict[str, Any]) -> None:
    """`<acme/acme_config.h>` is written by `configure_file()` from `cmake/acme_config.h.in` (another folder than
    the include names), whose macros are function-like (`#define ACME_IS_ON(F) F() == 1`, `#define
    ACME_HAVE_SYNC_SHUFFLE() @HAVE_SYNC_SHUFFLE@`) and whose values CMake sets by `CUDA_VERSION`: the template
    was not matched, function-like macros were skipped and `CUDA_VERSION` was unknown, so `#if ACME_IS_ON(...)`
    stopped the unit ("missing binary operator before token '('"), or it took the removed `__shfl_down`."""
    m = only_meta(configured, "row_sums")
    (unit,) = unit_texts(configured, m)
    assert "__shfl_down_sync" in unit and "__shfl_down(" not in unit, unit
    assert any(d.startswith("ACME_IS_ON(F)=") for d in m["parse_context"]["defines"]), m["parse_context"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_qualifier_macro_nothing_defines_before_launched_functions_is_global(dataset: dict[str, Any]) -> None:
    """`KERNELQUALIFIER void fill_slots(...)` with the macro from a helper library the build downloads: no file
    holds `__global__`, so no kernel was found. The functions it writes are launched with chevrons, so it stands
    for `__global__`; the units define it so and build."""
    for name in ("fill_slots", "count_slots"):
        m = only_meta(dataset, name)
        assert "KERNELQUALIFIER=__global__" in m["parse_context"]["defines"], m["parse_context"]
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_placeholder_the_source_leaves_undeclared_fails_with_a_stated_reason(dataset: dict[str, Any]) -> None:
    """An exercise's kernel writes `int i = FIXME;` for the learner to fill in: the name is declared nowhere, every
    header is here, and nvcc stops on it too, so no tool can build the original; the record says so instead of an
    unexplained "identifier FIXME is undefined"."""
    m = only_meta(dataset, "scale_exercise")
    (inst,) = m["instantiations"]
    assert inst["build"]["status"] == "failed"
    why = inst["build"].get("toolkit_removed", "")
    assert why.startswith("FIXME is declared nowhere") and "placeholder" in why, inst["build"]
