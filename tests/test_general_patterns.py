"""`extract --build` on tests/fixtures/general: patterns of repositories the unit pipeline was not tuned on
(issue 14), each reproduced by a kernel of our own. Every unit is judged by the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, load_dataset, run_miner

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    src = tmp_path_factory.mktemp("general-src") / "general"
    shutil.copytree(FIXTURES / "general", src)
    out = tmp_path_factory.mktemp("general-out")
    cache = tmp_path_factory.mktemp("general-cache")
    proc = run_miner("extract", src, "-o", out, "--build", "-j", "2", env={"XDG_CACHE_HOME": str(cache)},
                     timeout=600)
    return {"proc": proc, "out": out, "metas": load_dataset(out)}


def _meta(dataset: dict[str, Any], name: str) -> dict[str, Any]:
    found = [m for m in dataset["metas"] if m["name"] == name]
    assert len(found) == 1, [m["source"]["path"] for m in found]
    return found[0]


def _built(meta: dict[str, Any]) -> dict[str, str]:
    return {i["id"]: i["build"]["status"] + (": " + (i["build"].get("error") or "") if i["build"].get("error") else "")
            for i in meta["instantiations"]}


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    return (Path(dataset["out"]) / meta["id"] / "units" / inst / "unit.cu").read_text(encoding="utf-8")


def test_using_namespace_of_a_shimmed_framework_is_dropped_when_no_shim_is_inlined(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "axpb_kernel")
    assert _built(m) == {"default": "ok"}
    assert "using namespace at;" not in _unit(dataset, m, "default")


def test_fast_atomic_add_and_int64_half_arithmetic_build_for_every_dispatched_type(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "weighted_scatter_backward")
    assert _built(m) == {"float": "ok", "double": "ok", "half": "ok"}
    assert "fastAtomicAdd" in m["closure"]["shims"]


def test_tensor_info_by_value_and_no_type_dropped_near_a_host_call_the_shim_declares(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "strided_copy")
    assert _built(m) == {"float": "ok", "double": "ok"}
    assert {"TensorInfo", "IndexToOffset"} <= set(m["closure"]["shims"])


def test_explicit_instantiations_written_through_project_macros(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "tile_sum")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {
        "float_64": "explicit", "float_256": "explicit", "double_64": "explicit", "double_256": "explicit"}
    assert set(_built(m).values()) == {"ok"}


def test_types_named_only_in_template_arguments_enter_the_unit(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "insert_keys")
    assert _built(m) == {"ProbeTable_long_int_view_long": "ok"}
    assert "ProbeTable" in m["closure"]["types"]


def test_enum_values_from_a_project_switch_dispatch_and_a_redefined_helper_macro(dataset: dict[str, Any]) -> None:
    """std::optional in the launcher's signature, a switch-based dispatch macro binding an enum constant,
    and helpers generated under two successive definitions of KM_OP."""
    m = _meta(dataset, "pairwise_combine")
    assert m["launches"]
    built = _built(m)
    assert set(built) == {f"{t}_{k}" for t in ("float", "double", "half", "bf16") for k in (0, 1)}, built
    assert set(built.values()) == {"ok"}, built
    text = _unit(dataset, m, "float_1")
    assert "static_cast<CombineKind>(1)" in text
    assert text.index("((X) + (Y))") < text.index("KM_MAKE_COMBINE(sum)") < text.index("#undef KM_OP") \
        < text.index("((X) > (Y)") < text.index("KM_MAKE_COMBINE(max)")


def test_launch_written_with_spaced_chevrons(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "accumulate_channels")
    assert _built(m) == {"3": "ok"}
    assert m["instantiations"][0]["origin"] == "call_site"
    assert m["launches"][0]["config"]["grid"] == "(n + 255) / 256" and m["launches"][0]["values"]["block"] == 256


def test_grid_and_block_from_local_variables_become_a_formula_the_wrapper_evaluates(dataset: dict[str, Any]) -> None:
    from miner.validate.wrapper import launch_config

    m = _meta(dataset, "weighted_scatter_backward")
    launch = m["launches"][0]
    assert launch["config"]["grid"] == "blocks" and launch["values"]["block"] == 512
    assert "4096" in launch["formula"]["grid"]
    cfg = launch_config(m, m["instantiations"][0]["launcher"]["params"])
    assert cfg["block_int"] == 512
    assert eval(cfg["grid"], {}, {"numel": 10_000}) == 20  # noqa: S307 - our own generated expression
    assert eval(cfg["grid"], {}, {"numel": 1 << 30}) == 4096  # noqa: S307


def test_python_expr_understands_min_ceil_div_casts_and_dim3() -> None:
    from miner.validate.wrapper import python_expr

    assert python_expr("dim3(at::ceil_div(n, 16), (int)(m + 15) / 16)", {"n", "m"}) == "(-(-n // 16), (m + 15) // 16)"
    assert python_expr("std::min(static_cast<int>((n + 511) / 512), 4096)", {"n"}) == "min((n + 511) // 512, 4096)"
    assert python_expr("(512)", set()) == "512"
    assert python_expr("helper(n)", {"n"}) is None


def test_the_repos_own_half_atomic_add_replaces_the_shims(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "splat_add")
    assert _built(m) == {"float": "ok", "double": "ok", "half": "ok"}
    text = _unit(dataset, m, "half")
    assert text.count("atomicAdd(at::Half *address") == 1 and "km:atomicAdd-Half-begin" not in text


def test_cached_loads_of_half_and_bfloat16_use_torchs_ldg_overloads(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "gather_rows_ldg")
    built = _built(m)
    assert {i.split("_")[0] for i in built} >= {"float", "double", "half", "bf16"}, built
    assert set(built.values()) == {"ok"}, built
    assert not [u for u in m["unresolved"] if u["symbol"] == "__ldg"], m["unresolved"]


def test_traits_alias_in_a_bool_switch_lambda_of_a_host_template_fixed_by_explicit_instantiations(
        dataset: dict[str, Any]) -> None:
    """`using Traits = ScanTraits<kThreads, kIsEven, T>; auto kernel = &k<Traits>;` inside a BOOL_SWITCH
    lambda of a host template whose instantiations come from `template void f<float>(...)` lines."""
    m = _meta(dataset, "prefix_scan_kernel")
    built = _built(m)
    assert set(built) == {f"ScanTraits_{n}_{e}_{t}" for n in (64, 256) for e in ("true", "false")
                          for t in ("float", "double")}, built
    assert set(built.values()) == {"ok"}
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}
    assert not any("KM_BOOL_SWITCH" in i["id"] for i in m["instantiations"])


def test_class_template_methods_instantiated_by_a_framework_macro(dataset: dict[str, Any]) -> None:
    """`KM_INSTANTIATE_GPU_FORWARD(ClampLayer);` writes `template void ClampLayer<float>::forward_gpu(...)`:
    the launch inside that method gets the class's float and double instantiations."""
    m = _meta(dataset, "clamp_forward")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {"float": "host_template", "double": "host_template"}
    assert set(_built(m).values()) == {"ok"}


def test_torch_extension_flags_relaxed_constexpr_and_half_defines_the_build_undoes(dataset: dict[str, Any]) -> None:
    """A constexpr host call in device code needs torch's --expt-relaxed-constexpr; a float -> __half
    assignment needs the conversions the extension's setup.py re-enables with -U."""
    m = _meta(dataset, "clamp_far_kernel")
    assert m["build_flags"]["from"][-1].endswith("relaxed_ext/setup.py")
    flags = m["build_flags"]["nvcc"]
    assert {"--expt-relaxed-constexpr", "-U__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__"} <= set(flags)
    assert "-O3" not in flags and "-D__CUDA_NO_HALF_CONVERSIONS__" not in flags
    assert _built(m) == {"float": "ok", "double": "ok", "half": "ok"}
    assert "#define __CUDA_NO_HALF_CONVERSIONS__" not in _unit(dataset, m, "half")
    assert not m["unresolved"]  # the parse honoured the -U too


def test_cxx20_dialect_from_cmake_and_a_concept_in_the_closure(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "sum_pos_kernel")
    assert m["build_flags"]["nvcc"] == ["-std=c++20", "--expt-relaxed-constexpr"]
    assert "Arithmetic" in m["closure"]["types"]
    assert _built(m) == {"float": "ok"}


def test_cxx20_dialect_from_the_source_when_no_build_file_says(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "halve_kernel")
    assert m["build_flags"] == {"nvcc": ["-std=c++20"], "from": ["source"]}
    assert _built(m) == {"default": "ok"}


def test_wmma_kernel_from_a_host_template_with_a_local_const_template_argument(dataset: dict[str, Any]) -> None:
    """mma.h is shimmed for the parse (else the launching function loses its body), and
    `const int N_ITERS = WIDTH >= 64 ? 2 : 4;` is folded per instantiation of the host template."""
    m = _meta(dataset, "tile_mma_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {
        "16_4_float": "host_template", "64_2_float": "host_template",
        "16_4_half": "host_template", "64_2_half": "host_template"}
    assert set(_built(m).values()) == {"ok"}


def test_enum_class_argument_from_a_qualified_enumerator_and_launch_bounds_constant(dataset: dict[str, Any]) -> None:
    """`launch<Mode::Accumulate>()` gives 1 (not `Mode::1`), cast to the enum with its namespaces in the
    global-scope launcher; `__launch_bounds__(kThreads)` brings the constant from an anonymous namespace."""
    m = _meta(dataset, "write_grad_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {"1": "host_template", "0": "host_template"}
    assert "kThreads" in m["closure"]["globals"]
    assert set(_built(m).values()) == {"ok"}
    assert "static_cast<::acc::Mode>(1)" in _unit(dataset, m, "1")


def test_a_kernel_without_a_launch_says_why(dataset: dict[str, Any]) -> None:
    spare = _meta(dataset, "spare_fill_kernel")
    assert not spare["launches"]
    assert any(u["reason"].startswith("no launch: the kernel is named nowhere else") for u in spare["unresolved"])
    named = _meta(dataset, "registry_scale_kernel")
    reasons = [u["reason"] for u in named["unresolved"] if u["symbol"] == "registry_scale_kernel"]
    assert reasons and reasons[0].startswith("no launch resolved: named at ") and "spare.cu:15" in reasons[0]


def test_deduced_launch_in_an_out_of_line_method_of_an_explicitly_instantiated_class_template(
        dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "project_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {"Pinhole": "host_template",
                                                                   "Fisheye": "host_template"}
    assert set(_built(m).values()) == {"ok"}


def test_dispatch_v2_body_naming_scalar_t_and_opmath_type(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "scale_opmath_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {"float_float": "dispatch", "half_float": "dispatch"}
    assert set(_built(m).values()) == {"ok"}
