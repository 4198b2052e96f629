"""`extract --build` on tests/fixtures/partial_explicit: host templates instantiated explicitly with only their
leading template arguments written (`template void launch_bias<true>(const float *, ...);` of
`template <bool R, typename T>`), the rest deduced by the compiler from the parameter types the line spells. The
kernels they launch took an inferred default instead (a transformer-inference repo of the nineteenth set lost its
`true` instantiation when the instantiated-program walk stopped listing explicit specializations as roots).
Real libclang parse, real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from miner.units.launches import deduced
from tests.conftest import build_statuses, extract_and_build, only_meta

nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "partial_explicit")


@nvcc
def test_written_leading_argument_reaches_the_kernel(dataset: dict[str, Any]) -> None:
    meta = only_meta(dataset, "bias_kernel")
    got = {(i["template_args"]["WithResidual"], i["origin"]) for i in meta["instantiations"]}
    assert got == {("true", "host_template"), ("false", "host_template")}, got
    assert set(build_statuses(meta).values()) == {"ok"}, build_statuses(meta)


@nvcc
def test_deduced_type_argument_comes_from_the_line(dataset: dict[str, Any]) -> None:
    meta = only_meta(dataset, "block_sum")
    got = {(i["template_args"]["Block"], i["template_args"]["Index"]) for i in meta["instantiations"]}
    assert got == {("128", "long long"), ("256", "unsigned")}, got
    assert set(build_statuses(meta).values()) == {"ok"}, build_statuses(meta)


def test_bind_rest_needs_every_parameter_bound_consistently() -> None:
    decl = ("void", ["const T *", "Index", "T *"])
    params = ["N", "T", "Index"]
    assert deduced.bind_rest(decl, ["const float *", "long", "float *"], params, ["4"]) == ["4", "float", "long"]
    # T faces two different types: no instantiation of this template
    assert deduced.bind_rest(decl, ["const float *", "long", "double *"], params, ["4"]) is None
    # a written argument that the types contradict
    assert deduced.bind_rest(decl, ["const float *", "long", "float *"], params, ["4", "double"]) is None
    # a parameter no type names stays unbound
    assert deduced.bind_rest(("void", ["int"]), ["int"], ["N", "M"], ["4"]) is None
