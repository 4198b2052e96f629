"""`extract --build` on tests/fixtures/deep_headers: kernels whose helpers live in deeper project headers written
over a library the parse does not read (issue 14: the pattern of a plugin collection's shared headers), judged by
the real libclang parse and nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "deep_headers")


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    return (Path(dataset["out"]) / meta["id"] / "units" / inst / "unit.cu").read_text(encoding="utf-8")


def test_aliases_the_parse_dropped_come_as_text_with_the_library_header(dataset: dict[str, Any]) -> None:
    # `using sum_pair = cub::KeyValuePair<...>` and the alias template are invalid against the parse's CCCL
    # stand-in, so clang leaves no declaration; the unit takes their text and the header that includes cub.
    m = only_meta(dataset, "rowNormalize")
    assert build_statuses(m) == {"128": "ok"}, build_statuses(m)
    assert {"sum_pair", "pair_of"} <= set(m["closure"]["types"])
    assert "cub/cub.cuh" in m["closure"]["includes"]


def test_a_function_template_the_parse_dropped_is_taken_as_text(dataset: dict[str, Any]) -> None:
    m = only_meta(dataset, "keyBits")
    assert build_statuses(m) == {"float": "ok"}, build_statuses(m)
    assert "orderedBits" in m["closure"]["functions"]


def test_a_types_device_operator_comes_with_the_type(dataset: dict[str, Any]) -> None:
    # The operator is only called from a generic lambda handed to the library: no reference in the AST.
    m = only_meta(dataset, "rowTotal")
    assert build_statuses(m) == {"64": "ok"}, build_statuses(m)
    assert "sum_pair_d operator+(" in _unit(dataset, m, "64")


def test_a_project_namespace_is_declared_before_its_using_directive(dataset: dict[str, Any]) -> None:
    m = only_meta(dataset, "padRows")
    assert build_statuses(m) == {"float": "ok"}, build_statuses(m)
    text = _unit(dataset, m, "float")
    assert text.index("namespace deepproj { }") < text.index("using namespace deepproj;")


def test_a_qualified_call_reaches_a_dropped_function_of_another_namespace(dataset: dict[str, Any]) -> None:
    # `libcompat::largerOf()` returns a library functor: its deduction fails in the parse, which drops it.
    m = only_meta(dataset, "rowMax")
    assert build_statuses(m) == {"256": "ok"}, build_statuses(m)
    assert "largerOf" in m["closure"]["functions"]


def test_a_unit_taking_the_shim_for_int64_atomics_keeps_halfs_operators(dataset: dict[str, Any]) -> None:
    # torch's __CUDA_NO_HALF_OPERATORS__ belongs to torch code: the project's `v > *slot` on __half needs them on.
    m = only_meta(dataset, "scatterCombine")
    assert build_statuses(m) == {"float": "ok", "long": "ok"}, build_statuses(m)
    assert "__CUDA_NO_HALF_OPERATORS__" not in _unit(dataset, m, "long")


def test_a_host_template_named_in_a_table_of_function_pointers_gives_its_arguments(dataset: dict[str, Any]) -> None:
    # `{0, decodeBoxesGpu<float, 4, float4>}`: libclang leaves the name unresolved; the written arguments
    # instantiate the host template as a call would (they were inferred, float4 becoming float).
    m = only_meta(dataset, "decodeBoxes")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {"float_4_float4": "host_template"}
    assert build_statuses(m) == {"float_4_float4": "ok"}, build_statuses(m)
