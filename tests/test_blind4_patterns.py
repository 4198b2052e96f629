"""`extract --build` on tests/fixtures/blind4: patterns found on the fourth blind set (issue 14,
scripts/corpus_repos_blind4.txt: a speech toolkit whose integer types come from an external library's header
unless the build's version value selects its own typedefs, types named through using-declarations, launch
bounds chosen by `#if __CUDA_ARCH__`), each reproduced by code of our own and judged by the real libclang parse
and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from miner.frontends.common import conditional_start
from miner.source import missing_headers
from tests.conftest import build_statuses, extract_and_build, only_meta

needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind4")


@needs_nvcc
def test_a_branch_that_includes_a_header_found_nowhere_is_switched_to_the_one_with_its_own_typedefs(
        dataset: dict[str, Any]) -> None:
    """`#if GRAPHLIB_VER >= 20300` / `typedef int32_t idx32;` ... / `#else` / `#include <graphlib/basic_types.h>`:
    with nothing defined the parse took the `#else`, whose header exists nowhere, so `idx32` was unknown and every
    unit failed ("identifier idx32 is undefined", "the global scope has no idx32"). The translation unit is parsed
    with the value that selects the project's own typedefs, and its units carry it."""
    for name in ("clamp_scores_kernel", "count_arcs_kernel"):
        m = only_meta(dataset, name)
        assert "GRAPHLIB_VER=20300" in m["parse_context"]["defines"], m["parse_context"]
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    m = only_meta(dataset, "clamp_scores_kernel")
    unit = (dataset["out"] / m["id"] / "units" / "default" / "unit.cu").read_text(encoding="utf-8")
    assert "#define GRAPHLIB_VER 20300" in unit and "typedef int32_t idx32;" in unit


@needs_nvcc
def test_a_type_named_through_a_using_declaration_brings_the_declaration_and_its_typedef(
        dataset: dict[str, Any]) -> None:
    """`namespace spn { using ::uidx32; }` then `uidx32 *arc_offsets;` in `spn::dec`: libclang 18 exposes no
    reference for a type named through a using-declaration, so neither the using nor the typedef entered the
    unit ("identifier uidx32 is undefined")."""
    m = only_meta(dataset, "count_arcs_kernel")
    unit = (dataset["out"] / m["id"] / "units" / "default" / "unit.cu").read_text(encoding="utf-8")
    assert "using ::uidx32;" in unit and "typedef uint32_t uidx32;" in unit
    assert "using ::score_t;" in unit


@needs_nvcc
def test_launch_bounds_chosen_by_an_arch_conditional_stay_inside_their_conditional(dataset: dict[str, Any]) -> None:
    """`#if __CUDA_ARCH__ == 800` / `__launch_bounds__(256, 1)` / `#else` / `__launch_bounds__(256, 2)` / `#endif`
    before the kernel: its extent started in the `#else` the parse took, so the unit held an `#endif` without its
    `#if`. The kernel's text starts at the conditional's `#if`."""
    m = only_meta(dataset, "column_sums_kernel")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    text = (dataset["out"] / m["id"] / "kernel.cu").read_text(encoding="utf-8")
    assert text.startswith("#if __CUDA_ARCH__ == 800") and m["source"]["start_line"] == 5


@needs_nvcc
def test_the_toolkits_half_typedef_named_only_in_the_instantiation_brings_cuda_fp16(dataset: dict[str, Any]) -> None:
    """`template void scale_logits<half>(...)` in a file that reaches cuda_fp16.h through a project header the
    closure takes nothing from: `scale_logits_kernel<half, true>` named `half` with no header declaring it."""
    m = only_meta(dataset, "scale_logits_kernel")
    assert build_statuses(m) == {i: "ok" for i in ("float_true", "half_true", "float_false", "half_false")}, \
        build_statuses(m)
    unit = (dataset["out"] / m["id"] / "units" / "half_true" / "unit.cu").read_text(encoding="utf-8")
    assert "#include <cuda_fp16.h>" in unit


@needs_nvcc
def test_cub_functors_cccl3_removed_are_declared_as_its_migration_guide_replaces_them(
        dataset: dict[str, Any]) -> None:
    """`BlockReduce(tmp).Reduce(v, cub::Max(), n)` written for CUDA 11/12: CCCL 3 has no `cub::Max`, `cub::Min`,
    `cub::Sum` ("namespace cub has no member Max"). The unit declares them (`::cuda::maximum<>`, ...) where its CUB
    lacks them, in a block a build batch's namespace can hold."""
    m = only_meta(dataset, "row_extrema_kernel")
    assert build_statuses(m) == {"256": "ok"}, build_statuses(m)
    unit = (dataset["out"] / m["id"] / "units" / "256" / "unit.cu").read_text(encoding="utf-8")
    assert "using Max = ::cuda::maximum<>;" in unit and "using namespace ::cub;" in unit
    other = only_meta(dataset, "column_sums_kernel")  # a unit that names none of them has no such block
    text = (dataset["out"] / other["id"] / "units" / "default" / "unit.cu").read_text(encoding="utf-8")
    assert "namespace cub" not in text


@needs_nvcc
def test_namespace_constants_named_only_in_explicit_instantiations_come_with_the_unit(
        dataset: dict[str, Any]) -> None:
    """`template __global__ void rel_bias_kernel<T, kTileWideV1, kRowsWideV1>(...)` through a macro, the constants
    `constexpr int kTileWideV1 = 32;` beside it and named nowhere in the kernel: the unit's instantiation wrote
    them with no declaration ("identifier kTileWideV1 is undefined")."""
    m = only_meta(dataset, "rel_bias_kernel")
    assert len(m["instantiations"]) == 4 and set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    unit = (dataset["out"] / m["id"] / "units" / "float_kTileWideV1_kRowsWideV1" / "unit.cu").read_text(
        encoding="utf-8")
    assert "constexpr int kTileWideV1 = 32;" in unit


def test_conditional_start_balances_only_what_the_text_leaves_open() -> None:
    data = b"int a;\n#if X\nA\n#else\nB\n#endif\nvoid f() {\n#ifdef Y\n  g();\n#endif\n}\n"
    f = data.index(b"void f")
    assert conditional_start(data, f, len(data)) == f  # balanced inside: unchanged
    b = data.index(b"B\n")
    assert conditional_start(data, b, len(data)) == data.index(b"#if X")


def test_missing_header_switches_leave_platform_guards_and_project_names_alone() -> None:
    """Only a one-name condition on a name no source defines, and not a platform selector, is switched; a
    target branch with an #error or no code is not taken."""
    def found(_path: str, name: str, _quoted: bool) -> bool:
        return not name.startswith("gone/")

    texts = {
        "a.h": b"#if DEP_VER >= 300\ntypedef int i32;\n#else\n#include <gone/types.h>\n#endif\n",
        "b.h": b"#ifndef USE_ROCM\n#include <gone/cuda_only.h>\n#else\nint x;\n#endif\n",
        "c.h": b"#define OWN_SWITCH 1\n#if OWN_SWITCH\n#include <gone/x.h>\n#else\nint y;\n#endif\n",
        "d.h": b"#ifndef NO_DEP\n#include <gone/dep.h>\n#else\n#error no dep\n#endif\n",
        "e.h": b"#ifndef NO_DEP2\n#include <gone/dep2.h>\n#endif\n",
        "f.h": b"#if defined(HAVE_DEP)\n#include <gone/dep.h>\n#else\nint z;\n#endif\n",
    }
    assert missing_headers.switches(texts, found) == {"a.h": {"DEP_VER": 300}}
