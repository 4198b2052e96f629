"""`extract --build` on tests/fixtures/te: patterns found on a development repository of fused transformer
kernels (issue 14, scripts/corpus_repos_dev2.txt), each reproduced by kernels of our own and judged by the real
libclang parse and the real nvcc."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from miner.frontends.config import toolkit_versions
from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "te")


def test_function_pointer_arguments_through_a_host_template_chain(dataset: dict[str, Any]) -> None:
    # `act_entry<float, NoParam, soft_clip<float, NoParam>>(...)` in a plain function: libclang spells no
    # function (nor `nullptr`) template argument, so the call's written text carries it down the chain of host
    # templates (a local `constexpr bool` included) to the launch; before, the kernel got only the defaults.
    m = only_meta(dataset, "map_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {
        "false_lib_NoParam_nullptr_float": "host_template",
        "true_lib_NoParam_soft_clip_float_NoParam_float": "host_template",
        "true_lib_NoParam_twice_float_NoParam_float": "host_template"}, m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_function_pointer_parameter_defaults_to_nullptr(dataset: dict[str, Any]) -> None:
    # Nothing instantiates this kernel: its function-pointer parameter takes `nullptr` (128 named no function,
    # so the explicit instantiation matched no template).
    m = only_meta(dataset, "lone_map_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {"float_float_nullptr": "inferred"}
    assert build_statuses(m) == {"float_float_nullptr": "ok"}, build_statuses(m)


def test_branch_gated_on_a_version_threshold_named_by_a_macro(dataset: dict[str, Any]) -> None:
    # `#if FAKEVENDOR_VERSION >= SEGSUM_MIN_LIBV` with `#define SEGSUM_MIN_LIBV 120400` above it: defining the
    # library's macro to the named threshold turns the branch on, so the kernel gets its AST, its launch and
    # the struct of that branch it takes by value (before: a tree-sitter-only kernel, "SegmentInfo" undefined).
    m = only_meta(dataset, "segment_sum_kernel")
    assert m["frontend"] == "clang"
    assert "FAKEVENDOR_VERSION=120400" in json.dumps(m)
    assert m["launches"], m.get("launch_missing")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


def test_branch_gated_on_the_toolkit_version_through_a_project_macro(dataset: dict[str, Any]) -> None:
    # `#define PACK4_SUPPORTED (CUDA_VERSION >= 12080)` then `#if PACK4_SUPPORTED`: the parse takes the branch
    # the installed nvcc takes (its CUDA_VERSION, not the stub's fixed 12.4), so the kernel has its AST, its
    # launch and its closure (before: tree-sitter only, `no_ast`, "uint8_t" undefined in the unit).
    if int(dict(toolkit_versions()).get("CUDA_VERSION", "0")) < 12080:
        pytest.skip("the installed toolkit is older than the branch's 12.8")
    m = only_meta(dataset, "pack4_quantize_kernel")
    assert m["frontend"] == "clang"
    assert m["launches"], m.get("launch_missing")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


def test_macro_defined_per_cuda_arch_branch_keeps_its_host_definition(dataset: dict[str, Any]) -> None:
    # `#ifdef __CUDA_ARCH__ / #define V ... = __CUDA_ARCH__; / #else / #define V ... = 0; / #endif`: the parse
    # chose the device definition; nvcc's host pass needs the other, so the unit carries the whole chain
    # (before: `__CUDA_ARCH__` undefined in the host pass).
    m = only_meta(dataset, "arch_scale_kernel")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    unit = (Path(dataset["out"]) / m["id"] / "units" / "default" / "unit.cu").read_text(encoding="utf-8")
    assert "#define DEVICE_ARCH_VALUE constexpr int dev_arch = 0;" in unit


def test_launch_bounds_constants_brought_in_by_a_using_directive(dataset: dict[str, Any]) -> None:
    # `using namespace detail::knobs;` in an unnamed namespace, then `__launch_bounds__(kBlock, kMinBlocks)`:
    # names libclang exposes no cursor for are looked up in the namespaces such a directive makes visible too
    # (before: "kBlock" undefined in the unit). A sibling namespace's using-directive keeps working.
    m = only_meta(dataset, "bounded_axpy_kernel")
    assert build_statuses(m) == {"4": "ok"}, build_statuses(m)
    assert build_statuses(only_meta(dataset, "fill_tile_kernel")) == {"float": "ok"}


def test_shift_count_parameter_defaults_to_a_small_power(dataset: dict[str, Any]) -> None:
    # `constexpr int cols = 1 << LOG2_COLS;` with no instantiation in the tree: the default 128 made `cols` 0
    # and the kernel's `cols / lanes` a division by zero; a shift count takes 5.
    m = only_meta(dataset, "warp_row_max_kernel")
    assert build_statuses(m) == {"float_5": "ok"}, build_statuses(m)


def test_body_only_for_a_newer_architecture_brings_no_names(dataset: dict[str, Any]) -> None:
    # The kernel's body sits under `#if (defined __CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000)`: neither nvcc's host
    # pass nor the sm_90 device pass compiles it, so its names (`kSpan`, declared there as a local) are not
    # looked up. Before, they were looked up in any namespace and brought `pass_b::kSpan`, whose initializer
    # needs a using-directive written after the kernel ("kLanes" undefined in the unit).
    m = only_meta(dataset, "lanes_scale_kernel")
    assert build_statuses(m) == {"float": "ok"}, build_statuses(m)
    unit = (Path(dataset["out"]) / m["id"] / "units" / "float" / "unit.cu").read_text(encoding="utf-8")
    assert "kLanes * 2" not in unit
    assert build_statuses(only_meta(dataset, "lanes_sum_kernel")) == {"default": "ok"}


@pytest.mark.parametrize(("kind", "cond", "value"), [
    (b"if", b" (defined __CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000)", False),
    (b"if", b" defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800  // bf16 path", False),
    (b"if", b" !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800", True),
    (b"if", b" __CUDA_ARCH__ < 800", True),
    (b"if", b" __CUDA_ARCH__ >= 800 && HAVE_X", False),
    (b"if", b" HAVE_X || __CUDA_ARCH__ >= 800", None),
    (b"if", b" FEATURE(SM100) || __CUDA_ARCH__", None),
    (b"ifdef", b" __CUDA_ARCH__", False),
    (b"ifndef", b" __CUDA_ARCH__", True),
    (b"else", b"", True),
])
def test_condition_in_the_host_pass(kind: bytes, cond: bytes, value: bool | None) -> None:
    from miner.units.closure.arch_branches import _host_value

    assert _host_value(kind, cond) is value


def test_static_launches_behind_a_build_switch(dataset: dict[str, Any]) -> None:
    # The kernels are compiled at run time by default; their static launches sit under `#if ROWSM_STATIC_KERNELS`
    # (a `switch` of `<<<`; the file's `#ifndef X / #define X 0` is a default, not a definition) or
    # `#if ROWNORM_STATIC_LAUNCHERS` (a registration macro that instantiates the host
    # template, its name pasted with `##`), switches only the build system defines. The translation unit is
    # parsed again with the switch on, so the kernels take the launched arguments; the launching template's
    # local alias hides the class template's name (`using RowNormTraits = RowNormTraits<T, ...>;`) and is
    # read through. Before: inferred `float_5` for the softmax, `float` for the norm ("name followed by '::'").
    m = only_meta(dataset, "row_softmax_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {"float_6": "call_site", "float_8": "call_site"}
    assert "ROWSM_STATIC_KERNELS" in m["parse_context"]["defines"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    m = only_meta(dataset, "row_norm_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {
        "RowNormTraits_float_128_4": "host_template", "RowNormTraits_float_256_2": "host_template"}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_four_bit_toolkit_types_in_the_parse(dataset: dict[str, Any]) -> None:
    # `__nv_fp4_e2m1` (cuda_fp4.h, toolkit 12.8+) and `__nv_fp8_e8m0` are declared by the parse shims: before, the
    # parse knew neither, so `Largest<e2m1>`'s specialization and the `block_scale_kernel<e2m1>` launch were
    # invalid and dropped (the unit of a kernel using `Largest<e2m1>` took the primary template:
    # "no suitable conversion function from __nv_fp4_e2m1 to const float").
    m = only_meta(dataset, "block_scale_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {
        "nv_fp4_e2m1": "call_site", "nv_fp8_e4m3": "call_site"}, m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    unit = (Path(dataset["out"]) / m["id"] / "units" / "nv_fp4_e2m1" / "unit.cu").read_text(encoding="utf-8")
    assert "#include <cuda_fp4.h>" in unit and "value = 6.0f" in unit
    assert build_statuses(only_meta(dataset, "pack_pairs_kernel")) == {"default": "ok"}


def test_unnamed_enable_if_template_parameter(dataset: dict[str, Any]) -> None:
    # `template <typename Spec, std::enable_if_t<Spec::kRowwise, int> = 0>`: the unnamed parameter (name "") was
    # substituted at every word boundary of the explicit instantiation (`0const0 0typename0 ...`: "expected a
    # type specifier").
    m = only_meta(dataset, "rowcast_kernel")
    assert build_statuses(m) == {"CastSpec_double_true_0": "ok"}, build_statuses(m)


def test_template_argument_of_an_unnamed_namespace(dataset: dict[str, Any]) -> None:
    # `bias_rows_kernel<4, BiasParam<float, double>>` with BiasParam in `namespace rows { namespace { ... } }`: the
    # parse spells the argument `rows::(anonymous namespace)::BiasParam<float, double>`, which the explicit
    # instantiation and the launcher wrote as is ("expected an identifier"); the unit names it `rows::BiasParam`.
    m = only_meta(dataset, "bias_rows_kernel")
    assert build_statuses(m) == {"4_rows_anonymous_namespace_BiasParam_float_double": "ok"}, build_statuses(m)


def test_stand_in_kernel_of_an_arch_branch_takes_its_twins_closure(dataset: dict[str, Any]) -> None:
    # `#if __CUDA_ARCH__ >= 900` / the kernel / `#else` / an empty kernel of the same signature: no define turns
    # the `#else` on for the parse, so tree-sitter alone sees the stand-in. It takes the closure and launches of
    # its parsed twin (before: no closure, "MC_MAX_THREADS is undefined", inferred `128`).
    found = sorted((m for m in dataset["metas"] if m["name"] == "mc_reduce_kernel"),
                   key=lambda m: m["source"]["start_line"])
    assert [m["frontend"] for m in found] == ["clang", "treesitter"]
    for m in found:
        assert build_statuses(m) == {"4": "ok", "8": "ok"}, build_statuses(m)
