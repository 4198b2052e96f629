"""`extract --build` on tests/fixtures/project_helpers: a C++ project with its own bundled hash-table header and
launch helpers (issue 14, the former blind set), each pattern a kernel of our own, judged by the real libclang
parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "project_helpers")


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    return (Path(dataset["out"]) / meta["id"] / "units" / inst / "unit.cu").read_text(encoding="utf-8")


def test_names_used_only_in_noexcept_and_alignas_of_an_inlined_library_come_along(dataset: dict[str, Any]) -> None:
    m = only_meta(dataset, "slot_values")
    assert build_statuses(m) == {"int_float": "ok"}, build_statuses(m)
    body = _unit(dataset, m, "int_float")
    body = body[body.index("// km:body-begin"):]
    # the library was inlined (it includes a project header), with what only unvisited argument lists name
    assert "struct nothrow" in body and "kSlotAlign = 16" in body and "using std::swap;" in body


def test_arguments_named_by_a_class_templates_member_aliases_take_each_class_instantiation(
        dataset: dict[str, Any]) -> None:
    # `fill_slots<coordinate_type, size_type, index_type, map_type>` in a method of `Table<int, pool_alloc>`
    # (explicitly instantiated, a template template argument): `size_type` comes through a base class and
    # `map_type` names a CUB type the parse does not have; the compiler reads what it can, the rest is
    # written out from the member aliases.
    m = only_meta(dataset, "fill_slots")
    (inst,) = m["instantiations"]
    assert inst["origin"] == "host_template", inst
    assert inst["args"][:3] == ["int", "unsigned int", "unsigned int"], inst["args"]
    assert "open_map<cub::KeyValuePair<int, unsigned int>, tbl::pool_alloc<cub::KeyValuePair<int, unsigned int>>>" in \
        inst["args"][3].replace("tbl::open_map", "open_map"), inst["args"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    # the allocator's host-only `allocate`, whose library the parse lacks, is left out of the unit
    unit = _unit(dataset, m, inst["id"])
    assert "struct pool_alloc" in unit and "vendor_cache" not in unit


def test_a_member_templates_launch_takes_the_class_and_its_own_instantiations(dataset: dict[str, Any]) -> None:
    # out of line as `template <typename C, template <typename T> class A> template <bool remap>`
    m = only_meta(dataset, "insert_slots")
    assert [(i["origin"], i["args"][0], i["args"][2]) for i in m["instantiations"]] == [
        ("host_template", "unsigned int", "true")], m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_an_explicit_instantiation_with_a_qualified_return_type_fixes_the_host_template(
        dataset: dict[str, Any]) -> None:
    # `template ops::status launch_scale<float, holder>(...);`: a template template argument, and the index type
    # a member alias of it
    m = only_meta(dataset, "scale_values")
    assert [(i["origin"], i["args"]) for i in m["instantiations"]] == [
        ("host_template", ["float", "long"])], m["instantiations"]  # holder<float>::index_type, read by the compiler
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_dispatch_lambdas_call_of_the_launching_host_template_takes_each_dispatched_type(
        dataset: dict[str, Any]) -> None:
    # `gather_gpu<scalar_t, default_types::index_type, Alloc<char>>(...)`: `>>` closes two lists, the index type
    # is a member typedef reached through an alias (not `type_wrapper<...>::unsigned int`), and the statement is
    # kept by the parse now that `getCurrentCUDAStream().stream()` is valid there.
    m = only_meta(dataset, "gather_rows")
    assert sorted((i["origin"], tuple(i["args"])) for i in m["instantiations"]) == [
        ("host_template", ("double", "unsigned int")), ("host_template", ("float", "unsigned int"))], \
        m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_host_template_call_clang_dropped_is_read_back_once_per_dispatched_type(dataset: dict[str, Any]) -> None:
    # the statement names SCATTER_BLOCK, which only the real build defines: no call in the AST
    m = only_meta(dataset, "scatter_rows")
    assert sorted((i["origin"], i["args"][0]) for i in m["instantiations"]) == [
        ("host_template", "double"), ("host_template", "float")], m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_launch_whose_overload_set_holds_the_kernels_forward_declaration_is_the_kernels(
        dataset: dict[str, Any]) -> None:
    # `count_rows<Dtype><<<...>>>(map, out, n)` in a host template, the kernel declared above and defined below
    m = only_meta(dataset, "count_rows")
    assert [(i["origin"], i["args"]) for i in m["instantiations"]] == [("host_template", ["float", "uint32_t"])], \
        m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_an_explicit_instantiation_with_a_templated_return_type_and_a_comment(dataset: dict[str, Any]) -> None:
    m = only_meta(dataset, "halve_values")
    assert [(i["origin"], i["args"]) for i in m["instantiations"]] == [("host_template", ["double"])], \
        m["instantiations"]


def test_a_class_template_written_with_thrust_pair_comes_with_the_kernel(dataset: dict[str, Any]) -> None:
    m = only_meta(dataset, "read_table")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    assert "struct pair_table" in _unit(dataset, m, m["instantiations"][0]["id"])


def test_a_member_constant_the_compiler_evaluates_is_its_value_not_its_written_expression(
        dataset: dict[str, Any]) -> None:
    # `level_sum<T, N_PER_LEVEL, N_PER_THREAD>` with `N_PER_THREAD = std::min(2u, N_PER_LEVEL)` in
    # `Levels<float, 1>` and `Levels<float, 4>`: the values 1 and 2, never `std::min(2u, 1)`.
    m = only_meta(dataset, "level_sum")
    got = sorted(tuple(i["args"]) for i in m["instantiations"])
    assert got == [("float", "1", "1"), ("float", "4", "2")], m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
