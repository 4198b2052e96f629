"""`extract --build` on tests/fixtures/blind23 (template deduction, closure and include patterns): patterns found
on the twenty-third set of repositories (issue 14, scripts/corpus_repos_blind23.txt, measured in session 21), each
reproduced by code of our own and judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def class_param_deduced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/class_param_deduced")


@_nvcc
@pytest.mark.parametrize(("kernel", "expected"), [
    ("merge_wide", {("double", "13", "14", "1"), ("double", "13", "15", "2")}),
    ("sort_wide", {("12", "1", "double"), ("16", "1", "double"), ("12", "2", "double"), ("16", "2", "double")}),
])
def test_a_type_deduced_from_a_class_member_binds_the_class_parameter_not_the_members(
        class_param_deduced: dict[str, Any], kernel: str, expected: set[tuple[str, ...]]) -> None:
    """`sort_pairs<BITS>(keys, payload, n)` in `Bench<K>::sweep<BITS>`, `payload` a `K *`: the parse spells its type
    `type-parameter-0-0 *` (the class's first parameter, depth 0), which was read as the member's first parameter,
    so `P` took the number `BITS` (`double` comes from the class's instantiation, by its probe)."""
    m = only_meta(class_param_deduced, kernel)
    got = {tuple(i["template_args"].values()) for i in m["instantiations"]}
    assert got == expected, got
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def inactive_instantiation(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/inactive_instantiation")


@_nvcc
@pytest.mark.parametrize(("kernel", "expected"), [
    # through the host template the macro instantiates (launches.tables)
    ("reset_cells", {("float", "3"), ("double", "2")}),
    # the kernel's own explicit instantiation the macro writes (units.analysis)
    ("scale_values", {("float",), ("double",)}),
])
def test_a_macro_instantiation_in_a_skipped_branch_instantiates_nothing(
        inactive_instantiation: dict[str, Any], kernel: str, expected: set[tuple[str, ...]]) -> None:
    """`#ifdef GRID_INST_T GRID_INSTANTIATE(GRID_INST_T, GRID_INST_N) #else GRID_INSTANTIATE(float, 3) ...`: the
    macro's invocations were read from the whole text, so the branch a build's `-D` would switch on gave an
    instantiation with the undefined names (`identifier "GRID_INST_T" is undefined`)."""
    m = only_meta(inactive_instantiation, kernel)
    got = {tuple(i["template_args"].values()) for i in m["instantiations"]}
    assert got == expected, got
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def shadowed_toolkit_header(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/shadowed_toolkit_header")


@_nvcc
def test_a_compiler_header_is_not_matched_to_a_project_file_whose_folder_shadows_a_toolkit_header(
        shadowed_toolkit_header: dict[str, Any]) -> None:
    """`#include <omp.h>` (gcc's OpenMP header) was matched by its tail to the library's `builder/omp.h`, which made
    `geo/builder` an include dir of the run: `<cuda.h>` in `math/vec.h` then read the library's `builder/cuda.h`,
    which includes the boxes before the vectors exist, and the unit put `box_pod` (`using vec_t = geo::vec_t<S,
    N>`) before `vec_t` ("namespace geo has no member vec_t")."""
    m = only_meta(shadowed_toolkit_header, "clear_boxes")
    assert "geo/builder" not in m["parse_context"]["include_dirs"], m["parse_context"]
    got = {tuple(i["template_args"].values()) for i in m["instantiations"]}
    assert got == {("float", "3"), ("double", "2")}, got
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def local_enum_argument(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/local_enum_argument")


@_nvcc
def test_a_local_enumerator_as_a_launch_argument_is_its_value(local_enum_argument: dict[str, Any]) -> None:
    """`enum { kAxes = 2, kDims };` in the launching host template, `clear_bins<T, kDims><<<...>>>`: the argument
    stayed `kDims`, undefined in the unit; libclang gives the enumerators of an enumeration in a template's body the
    value 0, so the value is the compiler's evaluation of the initializers (kDims: one more than kAxes)."""
    m = only_meta(local_enum_argument, "clear_bins")
    got = {tuple(i["template_args"].values()) for i in m["instantiations"]}
    assert got == {("float", "3"), ("double", "3")}, got
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def dependent_value_argument(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/dependent_value_argument")


@_nvcc
def test_a_value_argument_deduced_from_a_dependent_specialization_is_the_hosts(
        dependent_value_argument: dict[str, Any]) -> None:
    """`refit(tree, s)` in `build<T, D>(tree_t<T, D>& tree, ...)`: the parse spells the argument's canonical type
    `tree_t<type-parameter-0-0, _dims>`, the class template's own value parameter where the host's `D` is meant, so
    the launch in `refit` took `_dims` ("identifier _dims is undefined")."""
    m = only_meta(dependent_value_argument, "reset_nodes")
    got = {tuple(i["template_args"].values()) for i in m["instantiations"]}
    assert got == {("float", "3"), ("double", "2")}, got
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
