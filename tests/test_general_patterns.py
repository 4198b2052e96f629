"""`extract --build` on tests/fixtures/general: patterns of repositories the unit pipeline was not tuned on
(issue 14), each reproduced by a kernel of our own. Every unit is judged by the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, build_statuses, extract_and_build, load_dataset, run_miner
from tests.conftest import only_meta as _meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "general")


def _built(meta: dict[str, Any]) -> dict[str, str]:
    return build_statuses(meta)


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


def test_half2_that_only_torch_brought_in_adds_cuda_fp16_to_float_units(dataset: dict[str, Any]) -> None:
    """`half2` in a kernel whose file includes only torch/extension.h: its float and double units inline no
    torch shim, so the toolkit header of the name (cuda_fp16.h) comes in; no shim is recorded for it."""
    m = _meta(dataset, "pair_copy_rows")
    assert _built(m) == {"float": "ok", "double": "ok", "half": "ok"}
    assert "cuda_fp16.h" in m["closure"]["includes"]
    assert "half2" not in m["closure"]["shims"]
    assert "#include <cuda_fp16.h>" in _unit(dataset, m, "float")
    assert "launch_missing" not in m


def test_a_kernel_nothing_launches_says_so(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "pair_add_unused")
    assert m["launches"] == []
    assert m["launch_missing"]["reason"] == "not_referenced"


def test_shims_are_told_apart_by_their_path_under_the_shim_folder(tmp_path: Path) -> None:
    """A miner installed under a folder whose name holds `torch` must not take every parse shim (cuda_fp16.h's
    `half2`) for a torch one."""
    from miner.units.closure.shims import _is_torch_shim, _toolkit_header_of_shim

    class Ctx:
        stub = str(tmp_path / "torchext" / "include")

    shims = Ctx.stub + "/shims/"
    assert not _is_torch_shim(Ctx(), shims + "cuda_fp16.h")
    assert _toolkit_header_of_shim(Ctx(), shims + "cuda_fp16.h") == "cuda_fp16.h"
    assert _is_torch_shim(Ctx(), shims + "ATen/Dispatch.h") and _is_torch_shim(Ctx(), shims + "km_torch_parse.h")
    assert _toolkit_header_of_shim(Ctx(), shims + "cublas_v2.h") is None
    assert _toolkit_header_of_shim(Ctx(), "/elsewhere/cuda_fp16.h") is None


def test_host_members_naming_torch_tensor_are_left_out_of_the_units_class(dataset: dict[str, Any]) -> None:
    """A map class whose constructor and methods take torch::Tensor, used by the kernel through its device
    view: the unit keeps the class with its device members and leaves out the host ones that need torch."""
    m = _meta(dataset, "slot_fill_kernel")
    assert set(_built(m).values()) == {"ok"}, _built(m)
    assert "SlotMap" in m["closure"]["types"]
    text = _unit(dataset, m, m["instantiations"][0]["id"])
    assert "torch::Tensor" not in text and "at::Tensor &keys" not in text
    assert text.count("host-only member left out of the unit") == 3
    assert "__device__ void put(" in text and "explicit SlotMap(int slots)" in text
    assert not m["closure"]["shims"]


def test_device_members_defined_outside_their_class_come_with_it(dataset: dict[str, Any]) -> None:
    """`map.get(k)` on a template parameter is a dependent call with no reference to follow: the class's
    out-of-line device members come with the class (its out-of-line host members, written with torch, not)."""
    m = _meta(dataset, "slot_get_kernel")
    assert set(_built(m).values()) == {"ok"}, _built(m)
    assert "view::get" in m["closure"]["functions"]
    text = _unit(dataset, m, m["instantiations"][0]["id"])
    assert "::view::get(key_t k) const {" in text
    assert "::find(" not in text and "::fill(" not in text


def test_curand_device_api_builds_from_a_library_wheel_or_fails_classified(dataset: dict[str, Any]) -> None:
    """`#include <curand_kernel.h>` stays in the unit; the build finds the header in the toolkit or an
    installed nvidia-curand wheel (recorded), or says which header is missing, not a stray identifier."""
    from miner import cuda_libs
    from miner.builder.toolchain import find_nvcc

    m = _meta(dataset, "jitter_walk")
    assert "#include <curand_kernel.h>" in _unit(dataset, m, "default")
    plain = _meta(dataset, "shift_all")  # same file, no cuRAND name: no cuRAND header, builds anywhere
    assert "curand" not in _unit(dataset, plain, "default") and _built(plain) == {"default": "ok"}
    assert not [u for u in m["unresolved"] if "curand" in u["symbol"]], m["unresolved"]
    b = m["instantiations"][0]["build"]
    found = cuda_libs.locate("curand_kernel.h", find_nvcc())
    if found.where == "missing":
        assert b["status"] == "failed" and b["error_class"] == "missing_toolkit_header", b
        assert b["error"].startswith("missing_toolkit_header: <curand_kernel.h>") and "nvidia-curand" in b["error"]
    else:
        assert b["status"] == "ok", b
        if found.where == "wheel":
            assert b["external_includes"] == [{"header": "curand_kernel.h", "include_dir": found.include_dir,
                                               "package": found.package}]


def test_a_header_found_nowhere_fails_the_unit_as_missing_toolkit_header(dataset: dict[str, Any], tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from miner import cuda_libs
    from miner.builder.driver import build_dataset
    from miner.builder.toolchain import BuildOptions, find_nvcc

    m = _meta(dataset, "jitter_walk")
    out = tmp_path / "ds"
    shutil.copytree(Path(dataset["out"]) / m["id"], out / m["id"])
    real = cuda_libs.locate
    monkeypatch.setattr(cuda_libs, "locate", lambda h, nvcc: cuda_libs.Found(h, "missing")
                        if h.startswith("curand") else real(h, nvcc))
    rep = build_dataset(out, BuildOptions(cache_dir=tmp_path / "cache"), find_nvcc())
    b = load_dataset(out)[0]["instantiations"][0]["build"]
    assert rep.failed == 1 and rep.nvcc_calls == 0
    assert b["status"] == "failed" and b["error_class"] == "missing_toolkit_header" and b["missing_include"] == \
        "curand_kernel.h", b


def test_library_headers_are_found_in_wheel_include_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from miner import cuda_libs
    from miner.builder.toolchain import find_nvcc

    inc = tmp_path / "nvidia" / "cu13" / "include"
    inc.mkdir(parents=True)
    (inc / "km_fake_lib.h").write_text("#pragma once\n", encoding="utf-8")
    monkeypatch.setattr(cuda_libs, "wheel_include_dirs", lambda: (str(inc),))
    nvcc = find_nvcc()
    found = cuda_libs.locate("km_fake_lib.h", nvcc)
    assert (found.where, found.include_dir) == ("wheel", str(inc))
    assert cuda_libs.locate("cuda_runtime.h", nvcc).where == "toolkit"
    assert cuda_libs.locate("km_nowhere_lib.h", nvcc).where == "missing"

def _cuda_and_hip(dataset: dict[str, Any], name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    found = [m for m in dataset["metas"] if m["name"] == name]
    cuda = [m for m in found if not m.get("variant")]
    assert len(cuda) == 1, [m["id"] for m in found]
    return cuda[0], [m for m in found if m.get("variant")]


def test_a_define_only_in_an_inactive_rocm_branch_is_no_macro_in_the_cuda_unit(dataset: dict[str, Any]) -> None:
    """`#if defined(USE_ROCM) ... #define h2rcp __km_compat_h2rcp #endif`: in CUDA `h2rcp` and
    `__shfl_xor_sync` are the toolkit's, so the unit takes neither define; the HIP variant keeps both."""
    m, hip = _cuda_and_hip(dataset, "recip_gate_kernel")
    assert _built(m) == {"default": "ok"}
    assert m["closure"]["macros"] == []
    assert "__km_compat_h2rcp" not in _unit(dataset, m, "default")
    assert len(hip) == 1 and hip[0]["variant"]["defines"] == ["USE_ROCM"]
    assert set(hip[0]["closure"]["macros"]) == {"h2rcp", "__shfl_xor_sync"}
    assert "__km_compat_h2rcp" in hip[0]["closure"]["functions"]


def test_toolkit_header_reached_only_through_a_header_the_closure_does_not_take(dataset: dict[str, Any]) -> None:
    """`half` in a kernel whose file gets <cuda_fp16.h> from a host-only header: the unit includes it."""
    m = _meta(dataset, "zero_rows_kernel")
    assert _built(m) == {"default": "ok"}
    assert "cuda_fp16.h" in m["closure"]["includes"]


def test_launches_in_a_project_dtype_dispatch_after_options_from_a_typemeta(dataset: dict[str, Any]) -> None:
    """`TensorOptions().dtype(x.dtype())` and `oss << dtype` in the dispatch macro's error branch must parse:
    otherwise the launches' arguments are invalid, T is not deduced and the kernel falls back to `inferred`."""
    m = _meta(dataset, "row_scale_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {
        f"{r}_128_{t}": "call_site" for r in (1, 2) for t in ("half", "bf16")}
    assert set(_built(m).values()) == {"ok"}


def test_host_constants_over_the_hosts_parameters_sizeof_and_is_same_of_an_alias_template(
        dataset: dict[str, Any]) -> None:
    """`constexpr int VEC = Dh_MAX * sizeof(T) / 16;` and `constexpr bool CROSS = std::is_same<P,
    CrossAttendParams<T>>::value;` in a host template fixed two calls up, the kernel launched through
    `auto kernel = k<...>` in a macro: one instantiation per host instantiation and branch, values folded."""
    m = _meta(dataset, "attend_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {
        **{f"float_{dh}_{v}_{b}_false": "host_template" for dh, v in ((32, 8), (48, 16)) for b in (64, 128)},
        **{f"unsigned_short_{dh}_{v}_{b}_true": "host_template" for dh, v in ((32, 4), (48, 8)) for b in (64, 128)}}
    assert set(_built(m).values()) == {"ok"}


def test_kernels_written_by_a_macro_with_c_linkage_keep_their_parameter_types(dataset: dict[str, Any]) -> None:
    """`LERP_OP(float, lerp_f32, lo + x + w * (y - x))`: the parameters' extents are the invocation's, whose
    text names `lo` and `w` in the expression argument; their types come from the expansion."""
    for name, t in (("lerp_f32", "float"), ("lerp_f64", "double"), ("lerp_f16", "__half")):
        m = _meta(dataset, name)
        assert _built(m) == {"default": "ok"}, name
        types = {p["name"]: p["type"] for p in m["params"]}
        assert types == {"n": "const size_t", "rank": "const size_t", "layout": "const size_t *",
                         "a": f"const {t} *", "b": f"const {t} *", "out": f"{t} *", "lo": f"const {t}",
                         "w": f"const {t}"}, types
        assert m["launch_missing"]["reason"] == "not_referenced"



def test_kernels_redeclared_in_a_host_cpp_and_launched_through_cuda_launch_kernel(dataset: dict[str, Any]) -> None:
    """`void BlendScaleKernel(const BlendParams p);` in a host .cpp that includes nothing of the kernel's
    file, `cudaLaunchKernel((void*)BlendScaleKernel, grid, block, args, 0, stream)`: the launch is matched
    to the kernel by name and signature, with its configuration and the declaration it went through."""
    for name, line in (("BlendScaleKernel", 6), ("BlendAccumulateKernel", 7)):
        m = _meta(dataset, name)
        assert "launch_missing" not in m, m["launch_missing"]
        [launch] = m["launches"]
        assert launch["kind"] == "cudaLaunchKernel"
        assert launch["path"].endswith("host/blend_host.cpp")
        assert launch["declaration"].endswith(f"host/blend_host.cpp:{line}")
        assert launch["config"] == {"grid": "grid", "block": "block", "shared_mem": "0", "stream": "stream"}
        assert launch["formula"]["block"].replace(" ", "") == "(dim3(128,1,1))"
        assert set(_built(m).values()) == {"ok"}


def test_a_redeclaring_launcher_outside_the_inputs_is_found_as_project_context(tmp_path: Path) -> None:
    """Only the kernels' folder mined: the host .cpp in a sibling folder names the kernels and calls a
    launch API, so the project scan takes it as context, and its launches count."""
    src = tmp_path / "proj"
    shutil.copytree(FIXTURES / "general" / "redeclared_launch", src)
    out = tmp_path / "out"
    proc = run_miner("extract", src / "kernels", "--project", src, "-o", out, "-q",
                     env={"XDG_CACHE_HOME": str(tmp_path / "cache")})
    assert proc.returncode == 0, proc.stderr
    metas = {m["name"]: m for m in load_dataset(out)}
    assert set(metas) == {"BlendScaleKernel", "BlendAccumulateKernel"}
    for m in metas.values():
        assert [(lc["kind"], lc["path"]) for lc in m["launches"]] == [("cudaLaunchKernel", "blend_host.cpp")]

def test_vendored_template_library_with_out_of_line_member_templates(dataset: dict[str, Any]) -> None:
    """A glm-style header-only library of the project's own (inlined; a vendored one is #included, see
    test_vendored.py): class templates (partial specializations) whose members are defined in a `.inl`
    the `.hpp` includes, some of them member templates written under two template parameter lists, some
    reached only by a call in a template (`m[0]` on a dependent `mat`)."""
    for name in ("transform_points", "widen_points"):
        m = _meta(dataset, name)
        assert _built(m) == {"default": "ok"}, name
    text = _unit(dataset, _meta(dataset, "transform_points"), "default")
    # The member template keeps the class's parameter list written before its own.
    head = ("template <typename T, qualifier Q>\ntemplate <qualifier P>\n"
            "TL_FUNC_QUALIFIER TL_CONSTEXPR mat<3, 3, T, Q>::mat(")
    assert head in text
    assert "mat<3, 3, T, Q>::operator[](\n    length_type i) const" in text


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
    """`launch<Mode::Accumulate>()` gives 1 (not `Mode::1`), cast to the enum with its namespaces (from the
    outermost one: a build batch wraps the unit in one more); `__launch_bounds__(kThreads)` brings the
    constant from an anonymous namespace."""
    m = _meta(dataset, "write_grad_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {"1": "host_template", "0": "host_template"}
    assert "kThreads" in m["closure"]["globals"]
    assert set(_built(m).values()) == {"ok"}
    assert "static_cast<acc::Mode>(1)" in _unit(dataset, m, "1")


def test_a_kernel_without_a_launch_says_why(dataset: dict[str, Any]) -> None:
    spare = _meta(dataset, "spare_fill_kernel")
    assert not spare["launches"]
    assert spare["launch_missing"]["reason"] == "not_referenced"
    # Named only in a comment and a string literal (registered by name elsewhere): no use in code.
    named = _meta(dataset, "registry_scale_kernel")
    assert not named["launches"]
    assert named["launch_missing"]["reason"] == "not_referenced", named["launch_missing"]


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
