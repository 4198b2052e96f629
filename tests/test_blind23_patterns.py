"""Which build configuration applies to a source (issue 14, session 22): patterns of the twenty-second and
twenty-third sets (scripts/corpus_repos_blind22.txt, scripts/corpus_repos_blind23.txt) where the miner read the wrong
build description, each reproduced by code of our own under tests/fixtures/blind23 and judged by the real libclang
parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from miner.source import build_flags
from tests.conftest import FIXTURES, build_statuses, extract_and_build, only_meta

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def shell_build(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/shell_build")


@_nvcc
def test_a_shell_scripts_nvcc_line_naming_the_source_beats_an_extension_nothing_can_import(
        shell_build: dict[str, Any]) -> None:
    """`lib/compile.sh` runs `nvcc -std=c++17 ... scale.cu -o libscale.so` (the library the project loads with
    ctypes); `lib/setup.py` beside it names `scale.cu` in a `CUDAExtension` none of whose sources defines a Python
    module. The unit gets the script's flags, not torch's `-D__CUDA_NO_BFLOAT16_CONVERSIONS__` (under which the
    kernel's `(float)bf16` does not compile), and both instantiations build."""
    m = only_meta(shell_build, "scale_rows_kernel")
    assert m["build_flags"]["from"] == ["lib/compile.sh"], m["build_flags"]
    assert m["build_flags"]["nvcc"] == ["-std=c++17"], m["build_flags"]
    assert build_statuses(m) == {"4_256": "ok", "8_512": "ok"}, m["instantiations"]


def test_an_importable_extension_still_counts_beside_a_shell_script(tmp_path: Path) -> None:
    """The control: where the extension's sources define the module (`PYBIND11_MODULE` in its binding file), the
    extension is a build of the source as the script is, and its torch flags stay; a script that names another
    file says nothing about this one."""
    src = FIXTURES / "blind23" / "shell_build" / "lib"
    lib = tmp_path / "lib"
    shutil.copytree(src, lib)
    (lib / "setup.py").write_text((src / "setup.py").read_text().replace('["scale.cu"]', '["scale.cu", "bind.cpp"]'))
    (lib / "bind.cpp").write_text("#include <torch/extension.h>\nPYBIND11_MODULE(scale_cuda, m) {}\n")
    found = build_flags.find(str(lib / "scale.cu"), str(tmp_path))
    assert found is not None and found["from"] == ["lib/compile.sh", "lib/setup.py"], found
    assert "-D__CUDA_NO_BFLOAT16_CONVERSIONS__" in found["nvcc"], found
    other = tmp_path / "other"  # (a folder of its own: the build files' readings are cached per path)
    shutil.copytree(src, other)
    (other / "compile.sh").write_text("nvcc -std=c++20 --shared other.cu -o libother.so\n")
    found = build_flags.find(str(other / "scale.cu"), str(tmp_path))
    assert found is not None and found["from"] == ["other/setup.py"] and "-std=c++20" not in found["nvcc"], found


@pytest.fixture(scope="module")
def cmake_function_define(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/cmake_function_define")


@_nvcc
def test_a_define_given_through_a_cmake_function_of_the_project_reaches_the_cuda_translation_unit(
        cmake_function_define: dict[str, Any]) -> None:
    """The CMakeLists gives every switch through a function of its own (`config_switch(VAR VALUE)` wrapping
    `target_compile_definitions(... ${VAR}=${VALUE})`), `BUILD_GPU 1` under `if (ENABLE_CUDA OR ENABLE_HIP)` (the GPU
    build, CUDA's included) and `BUILD_GPU 0` in its else. The `.cpp` the build compiles as CUDA includes the kernels'
    header under `#if BUILD_GPU`, after the header defining the kernels' `FIXED_OR_RUNTIME` macro. With
    `BUILD_GPU=1` the `.cpp` is the kernel's translation unit: its launches are read, the header's `#error` and the
    macro's names are no failure, and both launched instantiations build."""
    m = only_meta(cmake_function_define, "flip_bits_kernel")
    assert "-DBUILD_GPU=1" in m["build_flags"]["nvcc"] and "-DAMP_PRECISION=2" in m["build_flags"]["nvcc"], \
        m["build_flags"]
    assert m["parse_context"]["translation_unit"] == "src/backend.cpp", m["parse_context"]
    assert {launch["launcher"] for launch in m["launches"]} == {"flip_bits"}, m["launches"]
    assert sorted(i["args"] for i in m["instantiations"]) == [["-1"], ["2"]], m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, m["instantiations"]


@pytest.fixture(scope="module")
def make_continued(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/make_continued")


@_nvcc
def test_a_make_variable_continued_over_lines_gives_its_defines(make_continued: dict[str, Any]) -> None:
    """The Makefile writes its value types one define a line (`FE_TYPES = \\`, `-DFE_SCALAR=double \\`,
    `-DFE_ORDINAL=int`) and passes `$(FE_TYPES)` through `CPPFLAGS` to nvcc; the kernel's header uses `FE_SCALAR`
    with no default of its own. Read as make reads it (continued lines joined), the build gives both defines, the
    launch's `FE_ORDINAL` is `int`, and the unit builds."""
    m = only_meta(make_continued, "weigh_kernel")
    assert {"-DFE_SCALAR=double", "-DFE_ORDINAL=int", "-DUSE_ELL"} <= set(m["build_flags"]["nvcc"]), m["build_flags"]
    assert build_statuses(m) == {"int": "ok"}, m["instantiations"]


@pytest.fixture(scope="module")
def make_include_order(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/make_include_order")


@_nvcc
def test_the_makefiles_include_folders_decide_which_copy_of_a_header_the_translation_unit_reads(
        make_include_order: dict[str, Any]) -> None:
    """Two versions of one program lie side by side (`serial/` and `gpu/`, each with a `driver.hpp`; `box.hpp` in
    `serial/` and `utils/`). `gpu/main.cu` includes `<box.hpp>` and `<driver.hpp>`; its Makefile passes `-I.
    -I../utils`. Read in that order, `main.cu` includes the GPU `driver.hpp` and is the translation unit of the kernel
    its `scale_ops.hpp` defines: the launch in `scale_vec<VecPOD<double>>` gives the class argument (not an inferred
    `float`, which names no `ScalarType`), and the unit builds."""
    m = only_meta(make_include_order, "scale_vec_kernel")
    assert m["parse_context"]["translation_unit"] == "gpu/main.cu", m["parse_context"]
    [inst] = m["instantiations"]
    assert inst["origin"] != "inferred" and "double" in " ".join(inst["args"]), inst
    assert inst["build"]["status"] == "ok", inst["build"]


@pytest.fixture(scope="module")
def feature_chain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/feature_chain")


@_nvcc
def test_a_translation_units_feature_chain_ending_in_error_is_parsed_in_its_first_branch(
        feature_chain: dict[str, Any]) -> None:
    """`api/field_api.cu` chooses the field its kernels compute with by the consumer's define (`#if
    defined(FEATURE_SMALL_PRIME)` one header, `#elif defined(FEATURE_LARGE_PRIME)` another, `#else #error "no
    FEATURE"`), then includes the kernels' header, which names `fr_t`. No project file defines either switch: the
    kernels are parsed through that unit with the chain's first branch on (the unit records and defines
    `FEATURE_SMALL_PRIME`), and both build."""
    for name in ("square_kernel", "fold_kernel"):
        m = only_meta(feature_chain, name)
        assert m["parse_context"]["translation_unit"] == "api/field_api.cu", m["parse_context"]
        assert "FEATURE_SMALL_PRIME" in m["parse_context"]["defines"], m["parse_context"]
        assert set(build_statuses(m).values()) == {"ok"}, m["instantiations"]


@pytest.fixture(scope="module")
def member_call_view(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/member_call_view")


@_nvcc
def test_a_kernel_parameter_given_a_member_calls_result_is_not_the_launchers_same_named_parameter(
        member_call_view: dict[str, Any]) -> None:
    """`scale<Vector>(const Vector &x, ...)` launches `scale_view_kernel<<<32, 128>>>(x.getPOD(), alpha)`, the kernel
    taking `const Vector x` (its own template parameter, named like the launcher's). The argument is what `getPOD()`
    returns (a `VectorView<double>` for the launcher's `HostVector<double>`), so the launcher's `Vector` is not the
    kernel's: the instantiation is the deduced view, and it builds (with `HostVector<double>` it had no member `n`)."""
    m = only_meta(member_call_view, "scale_view_kernel")
    assert [i["args"] for i in m["instantiations"]] == [["VectorView<double>"]], m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, m["instantiations"]


def test_a_cmake_modules_function_called_elsewhere_keeps_the_definitions_it_gives(tmp_path: Path) -> None:
    """The expansion of a project's CMake functions at their calls leaves a function the file defines and does not
    call as written: a module's `add_gpu_library(name ...)` (called by other folders' CMakeLists) gives every target
    passed in `target_compile_definitions(${name} PUBLIC GPU_LIB_BUILD=1)`, which the module reader keeps."""
    (tmp_path / "cmake").mkdir()
    (tmp_path / "cmake" / "gpu_setup.cmake").write_text(
        "function(add_gpu_library name)\n  add_library(${name} ${ARGN})\n"
        "  target_compile_definitions(${name} PUBLIC GPU_LIB_BUILD=1)\nendfunction()\n")
    (tmp_path / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\nproject(p LANGUAGES CXX CUDA)\ninclude(cmake/gpu_setup.cmake)\n"
        "add_subdirectory(lib)\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "CMakeLists.txt").write_text("add_gpu_library(core k.cu)\n")
    (tmp_path / "lib" / "k.cu").write_text("__global__ void k() {}\n")
    found = build_flags.find(str(tmp_path / "lib" / "k.cu"), str(tmp_path))
    assert found is not None and "-DGPU_LIB_BUILD=1" in found["nvcc"], found
