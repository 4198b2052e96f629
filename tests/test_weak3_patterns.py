"""Template arguments only the compiler can deduce (branch weak, session 20): fixtures tests/fixtures/weak3/*,
ours, each reproducing a pattern of unseen code whose template kernels were left with only inferred arguments."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta
from tests.test_build import needs_nvcc

pytestmark = needs_nvcc


@pytest.fixture(scope="module")
def member_expr_args(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "weak3/member_expr_args")


@pytest.mark.parametrize(("kernel", "expected"), [
    ("copy_diagonal", [("double",), ("float",)]),
    ("scale_by_index", [("int", "double"), ("int", "float")]),
])
def test_arguments_deduced_from_member_expressions_of_a_dependent_type(
        member_expr_args: dict[str, Any], kernel: str, expected: list[tuple[str, ...]]) -> None:
    """`copy_diagonal<<<...>>>(A.values.raw(), A.diag.raw(), out.raw(), ...)` in `LevelBase<C>::export_diagonal(const
    Matrix<TConfig> &A, ...)`, and `scale_by_index<<<...>>>(this->m_index.raw(), A.values.raw(), alpha, n)`: no
    template argument is written and every argument's type depends on the configuration, so the parse types none
    of them and the kernels took defaults (`inferred`). The class's probe now deduces them the compiler's way per
    explicit instantiation of the derived `Level<Config<V, I>>` (its base instantiated with it)."""
    assert member_expr_args["proc"].returncode == 0, member_expr_args["proc"].stderr
    m = only_meta(member_expr_args, kernel)
    assert sorted(tuple(i["args"]) for i in m["instantiations"]) == expected, m["instantiations"]
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_host_template_call_with_leading_arguments_deduces_the_rest_in_the_class_probe(
        member_expr_args: dict[str, Any]) -> None:
    """`sum_dispatch<kCta, true>(ws, A.diag.raw(), A.values.raw(), out.raw(), A.rows)` in a method of
    `LevelBase<C>`: `Workspace` is deduced from `ws` (`Workspace<C>`), `ValueType` from nothing the parse types, so
    the dispatcher's instantiation bound three of four parameters and its launch `sum_rows<ValueType, kThreads,
    kHasDiag>` kept `ValueType` ("identifier ValueType is undefined"). The class's probe deduces the whole list."""
    m = only_meta(member_expr_args, "sum_rows")
    args = sorted(tuple(i["args"]) for i in m["instantiations"])
    assert args == [("double", "256", "false"), ("double", "256", "true"),
                    ("float", "256", "false"), ("float", "256", "true")], args
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def scoped_functor_names(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "weak3/scoped_functor_names")


def test_namespace_heads_of_explicit_lines_are_spelled_as_their_scope_reads_them(
        scoped_functor_names: dict[str, Any]) -> None:
    """`using namespace fn;` then `template void ReducePairs<Binary<ops::Max>>(...);` inside `namespace proj {
    namespace gpu {`: `ops` is `proj::fn::ops`, seen through the using-directive. The functor reached the kernel
    `reduce_pairs<float, Binary<ops::Max>>`, instantiated in `proj::gpu` where no using-directive holds: "identifier
    ops is undefined". The compiler now reads the head in the line's scope (a namespace alias probe)."""
    assert scoped_functor_names["proc"].returncode == 0, scoped_functor_names["proc"].stderr
    m = only_meta(scoped_functor_names, "reduce_pairs")
    args = sorted(tuple(i["args"]) for i in m["instantiations"])
    assert args == [("float", "Binary<proj::fn::ops::Max>"), ("float", "Binary<proj::fn::ops::Sum>")], args
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def wrapped_thrust(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "weak3/wrapped_thrust")


def test_thrust_wrapped_in_the_builds_namespace_is_typed_in_the_parse(wrapped_thrust: dict[str, Any]) -> None:
    """The build wraps thrust and CUB in a namespace (`-DTHRUST_CUB_WRAPPED_NAMESPACE=wrapns`, passed to the parse
    too), and the code spells `wrapns::thrust::device_vector<double>`. The parse's thrust stand-in declared its
    vocabulary in `::thrust` only, so the vector, the launch's argument and its type were invalid and the kernel took
    `float` (`inferred`); declared where the macros put it, the argument deduces `double`."""
    assert wrapped_thrust["proc"].returncode == 0, wrapped_thrust["proc"].stderr
    m = only_meta(wrapped_thrust, "scale")
    assert m["diagnostics"]["errors"] == 0, m["diagnostics"]["messages"]
    assert [(i["args"], i["origin"]) for i in m["instantiations"]] == [(["double"], "call_site")], m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_dispatch_the_probe_cannot_deduce_leaves_no_parameter_name_in_the_arguments(
        member_expr_args: dict[str, Any]) -> None:
    """`sum_untyped_dispatch<64, true>(w2, A.diag.raw(), vals, ...)` with `auto vals = A.values.raw();`: the probe
    writes no deduction for an `auto` local, and the dispatcher's instantiation binds `kThreads, kHasDiag,
    Workspace` only. Its launch `sum_rows_untyped<ValueType, kThreads, kHasDiag>` was given `ValueType` as written
    ("identifier ValueType is undefined"); an instantiation binding fewer parameters than the text uses now gives
    the launch defaults, which build."""
    m = only_meta(member_expr_args, "sum_rows_untyped")
    assert all("ValueType" not in a for i in m["instantiations"] for a in i["args"]), m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
