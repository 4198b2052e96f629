"""`extract --build` on tests/fixtures/range_dispatch: functor class templates whose static `run` launches a kernel,
handed to a range-dispatch helper (`DispatchRange<SquaredNormsFunctor, MIN_DIM, MAX_DIM>(dim, ...)`, and a
two-dimensional one) that instantiates the functor for every value between the bounds through a recursive struct.
The kernels took inferred arguments (`D = 128`); a point-cloud neighbour-search library of the twelfth set had 7 of
8 template kernels so. Real libclang parse, real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "range_dispatch")


def _args(meta: dict[str, Any]) -> set[tuple[str, ...]]:
    return {tuple(i["template_args"].values()) for i in meta["instantiations"]}


def test_every_value_of_the_range_is_an_instantiation(dataset: dict[str, Any]) -> None:
    meta = only_meta(dataset, "squared_norms")
    assert _args(meta) == {("2",), ("3",), ("4",)}, _args(meta)
    assert {i["origin"] for i in meta["instantiations"]} == {"host_template"}
    assert set(build_statuses(meta).values()) == {"ok"}


def test_a_two_dimensional_range_gives_every_pair(dataset: dict[str, Any]) -> None:
    meta = only_meta(dataset, "top_k")
    assert _args(meta) == {("2", "1"), ("2", "2"), ("3", "1"), ("3", "2")}, _args(meta)
    assert set(build_statuses(meta).values()) == {"ok"}


def test_a_typed_helper_passes_its_type_and_a_large_range_is_sampled(dataset: dict[str, Any]) -> None:
    """`DispatchTyped<GatherFunctor, double, 1, 600>`: `GatherFunctor<double, W>` for W in 1..600, which the
    original compiles all of; the unit set keeps the first widths and the last (each a real instantiation)."""
    meta = only_meta(dataset, "gather_rows")
    got = _args(meta)
    assert {a[0] for a in got} == {"double"}, got
    widths = sorted(int(a[1]) for a in got)
    assert widths[:3] == [1, 2, 3] and widths[-1] == 600 and len(widths) == 16, widths
    assert set(build_statuses(meta).values()) == {"ok"}
