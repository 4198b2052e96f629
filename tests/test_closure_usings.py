"""`using ns::name;` in a kernel's file, where the name is an overload set to libclang (a class template
with explicit specializations, a function template): the using is kept when the unit holds the set."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build
from tests.conftest import only_meta as _meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "closure_usings")


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    i = next(i for i in meta["instantiations"] if i["id"] == inst)
    return (dataset["out"] / meta["id"] / i["unit"]).read_text(encoding="utf-8")


def test_using_of_a_specialized_class_template_reaches_the_unit(dataset: dict[str, Any]) -> None:
    """Was: identifier "CastF" is undefined (the using named an overload set, whose own location is
    the using itself, never a piece of the unit)."""
    m = _meta(dataset, "cast_kernel")
    assert build_statuses(m) == {"float_half": "ok", "half_float": "ok"}, build_statuses(m)
    assert "using kmproj::funcs::CastF;" in _unit(dataset, m, "float_half")


def test_using_of_a_function_template_an_enum_and_a_trait(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "row_max_kernel")
    assert build_statuses(m) == {"float": "ok", "double": "ok"}, build_statuses(m)
    unit = _unit(dataset, m, "float")
    for name in ("Acc", "Reduce", "warp_reduce"):
        assert f"::{name};" in unit, name
    assert "using kmproj::funcs::CastF;" not in unit  # what the kernel does not use stays out
