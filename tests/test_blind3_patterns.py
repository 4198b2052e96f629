"""`extract --build` on tests/fixtures/blind3: launch patterns found on the third blind set (issue 14,
scripts/corpus_repos_blind3.txt: a C++ library's own launch helpers over device lambdas and launcher objects,
PyTorch ops that launch a kernel pointer a template chose), each reproduced by kernels of our own and judged by
the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind3")


def _launches(meta: dict[str, Any]) -> list[dict[str, Any]]:
    return [lc for lc in meta["launches"] if lc["kind"] != "reference"]


def test_a_launcher_objects_call_operator_is_the_launch_with_the_configuration_its_constructor_kept(
        dataset: dict[str, Any]) -> None:
    """`gpu::Launcher run{blocks, 256}; run(clear_rows, a, b);` and `gpu::Launcher{g, kWidth, 0, s}(scale_rows<float,
    kWidth>, d, n, 2.0f)`: the call operator launches its first parameter with members the constructor set (a
    dim3 `{grid, 1, 1}`, a defaulted stream); before, the kernels were `unresolved` / `referenced_only`."""
    m = only_meta(dataset, "clear_rows")
    (lc,) = _launches(m)
    assert (lc["config"]["grid"], lc["config"]["block"], lc["config"]["stream"]) == ("(blocks)", "(256)", "(nullptr)")
    assert [a["expr"] for a in lc["args"]] == ["a", "b"] and "launch_missing" not in m
    m = only_meta(dataset, "scale_rows")
    (lc,) = _launches(m)
    assert "kWidth" in lc["config"]["grid"] and lc["config"]["stream"] == "(s)", lc["config"]
    assert [(i["origin"], i["args"]) for i in m["instantiations"]] == [("call_site", ["float", "128"])]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_device_lambdas_passed_to_a_helper_with_defaulted_leading_parameters_become_functor_instantiations(
        dataset: dict[str, Any]) -> None:
    """`template <int kItems = 4, int kThreads = 128, typename Fn> void for_n(n, stream, Fn fn)` called as
    `for_n(n, s, [=] __device__ ...)`, and its overload forwarding `for_n<kItems, kThreads>(n, nullptr, fn)`:
    the defaults are taken and `Fn` deduced, so `for_n_kernel<Fn>` gets each lambda's functor struct (it had an
    inferred `float`: "expression preceding parentheses of apparent call must have function type"). A lambda whose
    attributes a project macro writes (`[=] HD (size_t i)`), passed with the leading arguments written
    (`for_n<2, 64>(n, s, ...)`), gets one too."""
    m = only_meta(dataset, "for_n_kernel")
    insts = m["instantiations"]
    assert len(insts) == 3 and all(i["origin"] == "host_template" for i in insts), insts
    assert all(i["args"][0].startswith("km_lambda_axpy_") for i in insts), insts
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    unit = (dataset["out"] / m["id"] / "units" / "km_lambda_axpy_15_27" / "unit.cu").read_text(encoding="utf-8")
    assert "__host__ __device__ auto operator()(std::size_t i) const" in unit


def test_a_launch_of_a_kernel_pointer_a_template_chose_in_another_file_reaches_the_chosen_kernels(
        dataset: dict[str, Any]) -> None:
    """ops_launch.cpp names no kernel: `kern = pick_scale<float>(p); cudaLaunchKernel(kern, blocks, threads, ...)`
    and `spec = pick_blur<float>(p); cudaLaunchKernel(spec.run, ...)`; the choosers are defined beside the kernels.
    Each launch goes to the references inside its chooser (the member read matched to the member stored)."""
    m = only_meta(dataset, "scale_kernel")
    lcs = _launches(m)
    assert lcs and {(lc["kind"], lc["config"]["grid"], lc["config"]["block"]) for lc in lcs} == {
        ("cudaLaunchKernel", "blocks", "threads")}, lcs
    assert sorted(i["id"] for i in m["instantiations"]) == ["double_1", "double_2", "float_1", "float_2"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    blur = only_meta(dataset, "blur_kernel")
    assert {lc["config"]["block"] for lc in _launches(blur)} == {"spec.warps * 32"}, _launches(blur)
    prep = only_meta(dataset, "prep_taps")
    assert [(lc["config"]["grid"], lc["config"]["block"]) for lc in _launches(prep)] == [("1", "32")]
    assert set(build_statuses(prep).values()) == {"ok"}, build_statuses(prep)


def test_a_host_member_left_out_takes_its_leading_attributes_along(dataset: dict[str, Any]) -> None:
    """`[[nodiscard]] [[maybe_unused]] torch::Device AsTorch() const {...}` in a value type device code uses: the
    member's extent starts after its attributes, so leaving it out kept `[[nodiscard]] [[maybe_unused]]` before
    `};` ("expected a declaration"). The device members keep theirs."""
    m = only_meta(dataset, "count_gpu_ords")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    unit = (dataset["out"] / m["id"] / "units" / "default" / "unit.cu").read_text(encoding="utf-8")
    assert "[[nodiscard]] __host__ __device__ constexpr bool IsGpu()" in unit and "AsTorch" not in unit
    assert "[[maybe_unused]]" not in unit


def test_a_base_class_the_parse_could_not_resolve_is_cut_from_the_class_head(dataset: dict[str, Any]) -> None:
    """`struct ParamBase : public extparam::Parameter<Derived>` with `<extparam/parameter.h>` absent (an empty
    submodule): clang drops the base, the unit's copy kept it ("not a class or struct name"). It is cut, the whole
    clause when it was the only base, itself and its comma when another base stays."""
    m = only_meta(dataset, "apply_step")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    unit = (dataset["out"] / m["id"] / "units" / "default" / "unit.cu").read_text(encoding="utf-8")
    # (the code between the body markers: a trailing `// km:lacks-headers` line may name the absent header)
    body = unit.split("// km:body-begin", 1)[1].split("// km:body-end", 1)[0]
    assert "extparam" not in body and "struct StepParam : public ParamBase<StepParam>" in body
    m = only_meta(dataset, "count_hits")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    unit = (dataset["out"] / m["id"] / "units" / "default" / "unit.cu").read_text(encoding="utf-8")
    assert "struct Tracked : public Counter /* kernel-miner: base class left out" in unit


def test_expt_flags_in_a_cmake_module_the_root_includes_reach_the_units(tmp_path_factory: pytest.TempPathFactory
                                                                         ) -> None:
    """tests/fixtures/blind3_cmake: `include(cmake/CudaOptions.cmake)` in the root CMakeLists.txt, whose function
    gives each CUDA target `--expt-relaxed-constexpr`; the folders above the source (src/, the root) never say
    it, so the unit of a kernel calling a constexpr host function failed to build without it."""
    ds = extract_and_build(tmp_path_factory, "blind3_cmake")
    m = only_meta(ds, "clamp_values")
    assert "--expt-relaxed-constexpr" in m["build_flags"]["nvcc"], m["build_flags"]
    assert "cmake/CudaOptions.cmake" in m["build_flags"]["from"], m["build_flags"]
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def blind5_cmake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """tests/fixtures/blind5_cmake extracted and built once for the two tests below (each ran it)."""
    return extract_and_build(tmp_path_factory, "blind5_cmake")


def test_expt_flags_in_a_cmake_module_included_by_name_from_the_module_path_reach_the_units(
        blind5_cmake: dict[str, Any]) -> None:
    """tests/fixtures/blind5_cmake: `list(APPEND CMAKE_MODULE_PATH "${CMAKE_CURRENT_SOURCE_DIR}/cmake")` then
    `include(RangesCudaWarnings)`: a module included by name, not by path (`include(CheckLanguage)`, a standard
    module, is in no project folder and is passed over)."""
    ds = blind5_cmake
    m = only_meta(ds, "saturate_to_int16")
    assert "--expt-relaxed-constexpr" in m["build_flags"]["nvcc"], m["build_flags"]
    assert "cmake/RangesCudaWarnings.cmake" in m["build_flags"]["from"], m["build_flags"]
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


def test_definitions_a_cmake_modules_function_gives_every_target_select_the_cuda_build(
        blind5_cmake: dict[str, Any]) -> None:
    """The same module's function gives each target `RANGES_BUILD_CUDA_MODULE` under
    `if (RANGES_BUILD_CUDA_MODULE)` (a platform switch): with it the project's `RANGES_HD` is `__host__
    __device__` (was: calling a __host__ function from a __global__ function). A definition naming a variable,
    a non-platform option's and a named vendored target's are not the kernel's."""
    ds = blind5_cmake
    m = only_meta(ds, "midpoints")
    assert m["build_flags"]["defines"] == {"-DRANGES_BUILD_CUDA_MODULE": "cmake/RangesCudaWarnings.cmake"}, \
        m["build_flags"]
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


def test_standard_function_objects_in_launch_arguments_bring_their_header(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """tests/fixtures/blind5_std: `segment_scan<float, 16, std::plus<float>>` launched from a file that reached
    <functional> through a host header the closure takes nothing from (was: namespace "std" has no member
    "plus")."""
    ds = extract_and_build(tmp_path_factory, "blind5_std")
    m = only_meta(ds, "segment_scan")
    statuses = build_statuses(m)
    assert len(statuses) == 2 and set(statuses.values()) == {"ok"}, statuses
