"""`extract --build` on tests/fixtures/unseen: patterns found on repositories the miner was never tuned on
(issue 14's unseen set, scripts/corpus_repos_unseen.txt), each reproduced by a kernel of our own and judged
by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "unseen")


def _meta(dataset: dict[str, Any], name: str) -> dict[str, Any]:
    # the CUDA configuration; a HIP-native variant (a kernel under an `#if` on a HIP guard) is another record
    found = [m for m in dataset["metas"] if m["name"] == name and (m.get("variant") or {}).get("toolchain") != "hip"]
    assert len(found) == 1, [m["source"]["path"] for m in found]
    return found[0]


def _built(meta: dict[str, Any]) -> dict[str, str]:
    return build_statuses(meta)


def _origins(meta: dict[str, Any]) -> dict[str, str]:
    return {i["id"]: i["origin"] for i in meta["instantiations"]}


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    return (Path(dataset["out"]) / meta["id"] / "units" / inst / "unit.cu").read_text(encoding="utf-8")


def test_vllm_style_dispatch_switch_of_project_case_lists(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "scale_rows_kernel")
    assert _origins(m) == {"float_4": "dispatch", "half_4": "dispatch", "bf16_4": "dispatch"}, _origins(m)
    assert set(_built(m).values()) == {"ok"}, _built(m)


def test_dispatch_switch_of_atens_own_case_list(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "shift_rows_kernel")
    assert _origins(m) == {"double": "dispatch", "float": "dispatch", "half": "dispatch"}, _origins(m)
    assert set(_built(m).values()) == {"ok"}, _built(m)


def test_aten_warp_shuffle_helpers_build_for_every_dispatched_type(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "row_norm_kernel")
    assert set(_built(m).values()) == {"ok"} and len(m["instantiations"]) == 3, _built(m)
    assert {"WARP_SHFL", "WARP_SHFL_XOR"} <= set(m["closure"]["shims"])


def test_torch_macros_in_device_code_come_from_the_unit_shim(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "row_max_kernel")
    assert _built(m) == {"float": "ok", "double": "ok"}, _built(m)
    assert {"C10_WARP_SIZE", "C10_LAUNCH_BOUNDS_1", "C10_RESTRICT", "C10_LIKELY", "C10_DEVICE"} <= set(
        m["closure"]["shims"]), m["closure"]["shims"]
    assert "#define C10_WARP_SIZE 32" in _unit(dataset, m, "float")


def test_a_namespace_alias_of_cub_and_variable_templates_come_with_the_kernel(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "block_sum_kernel")
    assert _origins(m) == {"float_256": "call_site", "half_128": "call_site"}, _origins(m)
    assert set(_built(m).values()) == {"ok"}, _built(m)
    unit = _unit(dataset, m, "float_256")
    assert "namespace fix_cub = cub;" in unit and "hipcub" not in unit
    assert "is_half_like_v" in unit and "lanes_of" in unit


def test_host_template_instantiated_in_another_translation_unit_of_the_kernels_header(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "row_softmax_kernel")
    assert _origins(m) == {f"{t}_{v}": "host_template" for t in ("float", "double") for v in (5, 6)}, _origins(m)
    assert set(_built(m).values()) == {"ok"}, _built(m)


def test_a_project_header_named_like_a_c_header_does_not_shadow_it(dataset: dict[str, Any]) -> None:
    """`#include <math.h>` is the C library's even where the project has an `include/math.h` (with its
    own float3 operators, which then came into the unit twice)."""
    m = _meta(dataset, "pair_sum_norm_kernel")
    assert _built(m) == {"default": "ok"}, _built(m)
    assert not any("math.h" in s for s in m["closure"]["sources"]), m["closure"]["sources"]
    assert _built(_meta(dataset, "shade_kernel")) == {"default": "ok"}


def test_kernels_passed_to_the_projects_launch_helper_are_launched_there(dataset: dict[str, Any]) -> None:
    plain = _meta(dataset, "clamp_all")
    assert plain["launches"], plain.get("launch_missing")
    launch = plain["launches"][0]
    assert launch["launcher"] == "clamp" and launch["config"]["block"] == "kLinearThreads"
    assert "linear_blocks((n))" in launch["config"]["grid"]
    assert [a["expr"] for a in launch["args"]] == ["(n)", "-1.f", "1.f", "x"]
    m = _meta(dataset, "axpy_step")
    assert m["launches"], m.get("launch_missing")
    assert _origins(m) == {"float": "host_template", "double": "host_template"}, _origins(m)
    assert set(_built(m).values()) == {"ok"}, _built(m)


def test_a_cuda_version_test_in_a_header_keeps_cuda_h_in_the_unit(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "warp_max_kernel")
    assert _built(m) == {"default": "ok"}, _built(m)
    assert "#include <cuda.h>" in _unit(dataset, m, "default")


def test_cccl_version_macros_pick_the_branch_the_toolkit_would(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "block_max_kernel")
    assert _built(m) == {"default": "ok"}, _built(m)
    assert "cuda::maximum" in _unit(dataset, m, "default")


def test_a_vendored_header_that_includes_an_already_included_project_header_is_inlined(
        dataset: dict[str, Any]) -> None:
    """`dependencies/pcgx/pcgx.h` includes the project's `<nnlib/common.h>`, which `#pragma once` skips there (the
    TU's inclusion list has no edge for it): the library copied alone would not find it, so it is inlined; the
    self-contained `tables/` beside it under the same folder stays an `#include`."""
    m = _meta(dataset, "fill_uniform")
    assert _built(m) == {"default": "ok"}, _built(m)
    assert [(v["library"], v["headers"]) for v in m["closure"]["vendored"]] == [("tables", ["tables/tables.hpp"])]
    unit = _unit(dataset, m, "default")
    assert "struct Gen" in unit and "#include <pcgx/pcgx.h>" not in unit and "#include <tables/tables.hpp>" in unit


def test_class_templates_created_in_a_factory_chain_take_the_entry_points_instantiations(
        dataset: dict[str, Any]) -> None:
    """`new GridEncoder<T, 2>{}` in a host template reached (through a lambda-registered factory) from
    `template Encoder<float> *create_encoder(int, uint32_t);`, whose argument is deduced from its return type:
    the launches in the classes' methods get the real arguments, not inferred ones."""
    blob = _meta(dataset, "blob_kernel")
    assert _origins(blob) == {"float": "host_template", "half": "host_template"}, _origins(blob)
    grid = _meta(dataset, "grid_kernel")
    assert _origins(grid) == {f"{t}_{d}": "host_template" for t in ("float", "half") for d in (2, 3)}, _origins(grid)
    assert set(_built(blob).values()) == {"ok"} and set(_built(grid).values()) == {"ok"}, (_built(blob), _built(grid))


def test_device_lambdas_passed_to_a_launching_helper_become_functor_structs(dataset: dict[str, Any]) -> None:
    """`for_each_gpu(stream, n, [x] __device__ (size_t i) {...})` ends in `for_each_kernel<F><<<...>>>`: F is the
    lambda's closure type, which no unit can name; a struct of its captures with its body as `operator()` stands
    for it (a template over the host template's parameters it names), reached through deduced calls."""
    m = _meta(dataset, "for_each_kernel")
    assert _origins(m) == {"km_lambda_ops_14_27": "host_template", "km_lambda_ops_18_27": "host_template"}, _origins(m)
    assert set(_built(m).values()) == {"ok"}, _built(m)
    unit = _unit(dataset, m, "km_lambda_ops_14_27")
    assert "struct km_lambda_ops_14_27 {\n  float * x;\n  __device__ auto operator()(size_t i) const" in unit
    assert "float squash(float x)" in unit  # what the lambda's body calls comes with the closure
    t = _meta(dataset, "transform_kernel")
    assert {i["args"][1] for i in t["instantiations"]} == {"km_lambda_ops_7_33<float>", "km_lambda_ops_7_33<double>"}
    assert set(_built(t).values()) == {"ok"}, _built(t)


def test_a_kernel_header_included_only_under_an_ifdef_is_parsed_through_its_includer(dataset: dict[str, Any]) -> None:
    """`#ifdef WITH_EXTRA_OPT #include "extra_opt.h"` (a build-system define): the header, which relies on its
    includer's `decayed`, is parsed through that includer with the guard defined, not alone."""
    m = _meta(dataset, "extra_opt_step")
    assert "WITH_EXTRA_OPT" in m["parse_context"]["defines"], m["parse_context"]["defines"]
    assert _origins(m) == {"double": "host_template"}, _origins(m)
    assert _built(m) == {"double": "ok"}, _built(m)


def test_a_lambda_written_at_the_launch_itself_becomes_a_functor_struct(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "map_rows")
    assert _origins(m) == {"float_km_lambda_ops_28_64": "call_site"}, _origins(m)
    assert set(_built(m).values()) == {"ok"}, _built(m)


def test_a_lambda_naming_its_class_member_alias_declares_the_alias_in_its_struct(dataset: dict[str, Any]) -> None:
    (m,) = [x for x in dataset["metas"] if x["name"] == "set_scaled" and len(x["template_params"]) == 2]
    assert _origins(m) == {"float_km_lambda_ops_49_63": "call_site"}, _origins(m)
    assert set(_built(m).values()) == {"ok"}, _built(m)
    unit = _unit(dataset, m, "float_km_lambda_ops_49_63")
    assert "  using ROOT = float;\n" in unit and "template struct RootOpt" not in unit
