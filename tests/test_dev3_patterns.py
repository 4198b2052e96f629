"""`extract --build` on tests/fixtures/dev3: patterns found on the third development set (issue 14,
scripts/corpus_repos_dev3.txt), each reproduced by a kernel of our own and judged by the real libclang
parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "dev3")


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    return (Path(dataset["out"]) / meta["id"] / "units" / inst / "unit.cu").read_text(encoding="utf-8")


def test_headers_of_any_suffix_are_project_code(dataset: dict[str, Any]) -> None:
    # `#include <fx/fx_utils.hu>` and `#include "fx_consts.c"`: suffixes no header list names, still the
    # project's headers, so their macros, typedef and classes (and fx_utils.hu's <cstdarg>) reach the unit.
    m = only_meta(dataset, "fx_sum_kernel")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    unit = _unit(dataset, m, "default")
    for text in ("#define FX_CHECK(ans)", "typedef unsigned long long fx_acc_t;", "class FxRank {",
                 "#define FX_SCALE 3ull", "#include <cstdarg>"):
        assert text in unit, text
    assert m["launches"][0]["values"]["block"] == 128


def test_member_template_chain_defined_out_of_line(dataset: dict[str, Any]) -> None:
    # `Launch` calls `LaunchInner<double, 1024>` (a member template: libclang gives a method's specialization
    # no template arguments), which calls `LaunchInner0<HIST_T, N, uint8_t>`, ... down to the launch; each
    # member template is declared in the class and defined out of line, and both places are one host template.
    m = only_meta(dataset, "hist_rows_kernel")
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}, m["instantiations"]
    assert {tuple(i["args"]) for i in m["instantiations"]} == {
        (b, p, h, n) for b in ("unsigned char", "unsigned short") for p in ("unsigned short", "unsigned int")
        for h, n in (("double", "1024"), ("float", "2048"))}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_friend_named_with_a_qualifier_is_declared_first(dataset: dict[str, Any]) -> None:
    # `template <...> friend struct detail::caster;` in the class the kernel uses: the unit declares
    # `detail::caster` before the class, as the header does.
    m = only_meta(dataset, "scale16_kernel")
    assert build_statuses(m) == {"hq_half16": "ok"}, build_statuses(m)
    unit = _unit(dataset, m, "hq_half16")
    assert unit.index("template <typename T, typename U, int R> struct caster;") < unit.index("class half16 {")


def test_latin1_sources_and_a_project_header_named_like_the_toolkit(dataset: dict[str, Any]) -> None:
    # Latin-1 comments (not UTF-8) in the kernel file and its helper; the helper is `<cuda_kit_helper.h>`,
    # found through the build's -I: the project's header (inlined), not a toolkit one (kept as an include).
    m = only_meta(dataset, "kit_hash_64")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    unit = _unit(dataset, m, "default")
    assert "cuda_kit_helper.h" not in unit.split("// km:includes-end")[0]
    assert "uint32_t kit_swab32(uint32_t x)" in unit and "uint64_t KIT_ROTL64(" in unit


def test_cmake_definitions_cache_variable_and_hip_on_nvcc(tmp_path_factory: pytest.TempPathFactory) -> None:
    # `target_compile_definitions(t PUBLIC FX_REAL_SIZE=${FX_REAL_SIZE})` with `set(FX_REAL_SIZE "64" CACHE ...)`
    # in the top CMakeLists.txt: the build defines FX_REAL_SIZE=64, so `Real3` is double3 (not an #error).
    ds = extract_and_build(tmp_path_factory, "dev3_cmake")
    m = only_meta(ds, "fx_step_kernel")
    assert "-DFX_REAL_SIZE=64" in m["build_flags"]["nvcc"], m["build_flags"]
    # `if (ENABLE_HIP)` around `target_compile_definitions(... ENABLE_HIP)` in a build that also compiles its
    # HIP code with nvcc (`elseif(HIP_PLATFORM STREQUAL "nvcc")`): the switch is the NVIDIA GPU build's too.
    assert "-DENABLE_HIP" in m["build_flags"]["nvcc"], m["build_flags"]
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    unit = _unit(ds, m, "default")
    assert "typedef double3 Real3;" in unit and "#define FX_HD __host__ __device__" in unit


def test_kernel_file_included_by_the_program(dataset: dict[str, Any]) -> None:
    # main.cu includes common.h, then find_kernel.cu: the kernel file is part of main.cu's translation unit
    # (parsed alone it lacks bnode), and main's launch is its launch.
    m = only_meta(dataset, "bnode_find_kernel")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    assert "typedef struct bnode {" in _unit(dataset, m, "default")
    assert [(launch["path"], launch["values"]["block"]) for launch in m["launches"]] == [("included_cu/main.cu", 256)]


def test_same_named_include_taken_beside_its_includer(dataset: dict[str, Any]) -> None:
    # Two programs each include their own "define.c" (`#define real_t float` / `double`): each kernel's unit
    # has its own program's, not the first file of that name in the tree.
    for name, typ in (("alpha_axpy_kernel", "float"), ("beta_axpy_kernel", "double")):
        m = only_meta(dataset, name)
        assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
        assert f"#define real_t {typ}" in _unit(dataset, m, "default")


def test_launch_arguments_qualified_from_the_launch_scope(dataset: dict[str, Any]) -> None:
    # `at::native::k<cuda::device_type<T>, cuda::index_t>` written in `proj::ops`, where `cuda::` is
    # `proj::cuda`: the explicit instantiation, written in `at::native`, spells `proj::cuda::`.
    m = only_meta(dataset, "row_scale_kernel")
    assert {i["id"]: i["args"] for i in m["instantiations"]} == {
        "proj_cuda_device_type_float_unsigned_int": ["proj::cuda::device_type<float>", "unsigned int"],
        "proj_cuda_device_type_short_unsigned_int": ["proj::cuda::device_type<short>", "unsigned int"]}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_hip_include_under_a_hip_guard_leaves_a_cuda_file(dataset: dict[str, Any]) -> None:
    # `#ifdef FX_USE_HIP #include <hip/hip_runtime.h> ... #else #include <cuda_runtime.h>`: in the CUDA build
    # the file is CUDA, so its kernel is mined (and built) as CUDA, not only as a HIP-native variant.
    found = [m for m in dataset["metas"] if m["name"] == "fill_rows_kernel"]
    cuda = [m for m in found if (m.get("variant") or {}).get("toolchain") != "hip"]
    assert len(cuda) == 1, [m.get("variant") for m in found]
    assert build_statuses(cuda[0]) == {"float": "ok", "int": "ok"}, build_statuses(cuda[0])
