"""`extract --build` on tests/fixtures/build_config: what a unit needs of the configuration its project builds
in (a feature switch only the build defines, torch's flags for a torch source with no build script beside it,
a toolkit namespace alias a unit must not keep alone), judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build
from tests.conftest import only_meta as _meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


# The kernels these tests judge. The whole tree is extracted (each folder's build files are part of what its
# kernels are judged against), but the other folders' kernels are built and judged by test_build_helpers, each
# folder mined alone: compiling them here too cost half this fixture's nvcc time. A test of another kernel of
# the tree adds its name here.
JUDGED = ("add3_kernel", "row_sum_kernel", "scale_store_kernel", "masked_row_max_kernel", "pack_kernel",
          "copy_rows_kernel", "poly_warp_kernel", "norm_rows_kernel")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "build_config", built=JUDGED)


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    return (Path(dataset["out"]) / meta["id"] / "units" / inst / "unit.cu").read_text(encoding="utf-8")


def test_a_toolkit_namespace_alias_is_not_kept_without_its_header(dataset: dict[str, Any]) -> None:
    add3 = _meta(dataset, "add3_kernel")
    assert build_statuses(add3) == {"default": "ok"}, build_statuses(add3)
    assert "namespace cg" not in _unit(dataset, add3, "default")
    rows = _meta(dataset, "row_sum_kernel")  # the kernel that uses the alias keeps it, with its header
    assert build_statuses(rows) == {"default": "ok"}, build_statuses(rows)
    unit = _unit(dataset, rows, "default")
    assert "namespace cg = cooperative_groups;" in unit and "#include <cooperative_groups.h>" in unit


def test_an_instantiation_under_a_build_only_switch_is_mined_with_that_switch(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "scale_store_kernel")
    assert build_statuses(m) == {"float": "ok", "half": "ok", "bf16": "ok"}, build_statuses(m)
    assert "KM_HAVE_BF16" in m["parse_context"]["defines"], m["parse_context"]["defines"]
    unit = _unit(dataset, m, "bf16")
    assert "#define KM_HAVE_BF16 1" in unit and "__float2bfloat16" in unit


def test_a_torch_source_without_a_build_file_gets_relaxed_constexpr(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "masked_row_max_kernel")
    assert build_statuses(m) == {"float": "ok", "double": "ok"}, build_statuses(m)
    assert m["build_flags"] == {"nvcc": ["--expt-relaxed-constexpr"], "from": ["source: includes torch"]}
    # a file that includes no torch header gets no flag it was not given
    assert "build_flags" not in _meta(dataset, "add3_kernel")


def test_a_launch_macros_parameter_is_an_instantiation_value_not_its_name(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "pack_kernel")
    ids = {f"float_{u}_{b}" for u in (1, 2) for b in (8, 4)}
    assert build_statuses(m) == dict.fromkeys(ids, "ok"), build_statuses(m)
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}


def test_a_toolkit_type_named_only_in_the_instantiation_brings_its_header(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "copy_rows_kernel")
    assert build_statuses(m) == {"float": "ok", "half": "ok"}, build_statuses(m)
    assert "#include <cuda_fp16.h>" in _unit(dataset, m, "half")


def test_a_torch_class_holding_tensors_keeps_only_what_device_code_can_use(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "poly_warp_kernel")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    unit = _unit(dataset, m, "default")
    # the struct stays (its constant and enum are used), its tensor member and the host constructor that
    # reads it do not, nor the host helper only that constructor called
    assert "struct WarpParams : public torch::CustomClassHolder" in unit and "at::Tensor coeffs" not in unit
    assert "pad_coeffs" not in unit and "CustomClassHolder" in m["closure"]["shims"]


def test_deduced_explicit_instantiations_written_through_a_macro_bind_its_argument(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "norm_rows_kernel")
    assert build_statuses(m) == {"float_2": "ok", "double_2": "ok"}, build_statuses(m)
