"""`extract --build` on tests/fixtures/blind9r: patterns found on the ninth set of repositories (issue 14,
scripts/corpus_repos_blind9.txt, development data; session 13), each reproduced by code of our own and judged by the
real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from miner import cuda_libs
from miner.source import configured_headers
from tests.conftest import FIXTURES, build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

CONFIGURED = FIXTURES / "blind9r" / "configured_api"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind9r")


def test_a_template_with_declarations_is_written_as_the_build_writes_it() -> None:
    """`commkit.h.in` holds types and prototypes beside its version macros. Its own placeholders (`${commkit:Code}`)
    are replaced by a `cmake -DCODE=${COMMKIT_VERSION_CODE} -P` script (`math(EXPR)` over `project(VERSION)`) and by
    a Makefile's `sed` (`$(COMMKIT_API)` from a make fragment that CMake also reads with `file(READ)`); a value a
    shell command computes is unknown: that `#define` is left out, and inside a string literal it becomes empty."""
    text = configured_headers.configured_text(str(CONFIGURED / "src" / "commkit.h.in"), str(CONFIGURED))
    assert text is not None
    for line in ("#define COMMKIT_MAJOR 3", "#define COMMKIT_VERSION_CODE 30201", "#define COMMKIT_API_LEVEL 7",
                 '#define COMMKIT_NAME "commkit "', "#define COMMKIT_WIDE_SLOTS", "#define COMMKIT_CHECKED 0",
                 "typedef struct commkitWindow_st* commkit_window_t;"):
        assert line in text.splitlines(), line
    assert "#define COMMKIT_BUILD_STAMP" not in text and "${" not in text and "@" not in text


def test_a_configured_header_with_declarations_reaches_the_units(dataset: dict[str, Any]) -> None:
    """`#include "commkit.h"`, which only the build writes: its types were undefined in every unit ("identifier
    commkit_team_t is undefined") and the version test chose the branch that cannot compile. The header is written
    as the build would into the cache, parsed as project context and inlined where used."""
    m = only_meta(dataset, "fold_slots")
    (unit,) = unit_texts(dataset, m)
    assert "#define COMMKIT_VERSION_CODE 30201" in unit and "} commkit_team_t;" in unit
    assert "km:toolkit-conflict" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_project_template_wins_over_the_parse_shim_of_that_name(dataset: dict[str, Any]) -> None:
    """A serial build's own `mpi.h` from `mpi.h.in`: the parse shim of that name (which stands in for the real MPI
    of a project that only uses it) hid the template, and `MPI_Layout` was undefined."""
    m = only_meta(dataset, "spread_layout")
    (unit,) = unit_texts(dataset, m)
    assert "} MPI_Layout;" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_specialization_under_an_arch_test_keeps_its_guard(dataset: dict[str, Any]) -> None:
    """`template <> struct ScaleOp<Scaler<__half>, 2>` exists only under `#if __CUDA_ARCH__ >= 530`, where the
    member it multiplies is a `__half2`; the parse took that branch and the unit copied the specialization bare, so
    nvcc's host pass compiled `__hmul2(__half2, float)` ("no instance of overloaded function" in nccl). The unit writes
    it under the same condition."""
    m = only_meta(dataset, "scale_packs")
    assert len(m["instantiations"]) == 2, [i["args"] for i in m["instantiations"]]
    for unit in unit_texts(dataset, m):
        head, _, rest = unit.partition("struct ScaleOp<Scaler<__half>, 2>")
        assert head.rstrip().endswith("#if __CUDA_ARCH__ >= 530\ntemplate <>"), head[-200:]
        assert rest.split("};", 1)[1].lstrip().startswith("#endif")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_macro_pasted_from_a_number_comes_along(dataset: dict[str, Any]) -> None:
    """`DEFINE_WIDTH_TRAITS(2)` pastes `LANES_FOR_WIDTH_##W` into `LANES_FOR_WIDTH_2`: a number is no identifier of
    the kept text, so the pasted macro was never looked for ("identifier LANES_FOR_WIDTH_1 is undefined")."""
    m = only_meta(dataset, "mark_active_lanes")
    (unit,) = unit_texts(dataset, m)
    assert "#define LANES_FOR_WIDTH_1 32" in unit and "#define LANES_FOR_WIDTH_2 16" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_parameter_used_as_a_class_takes_no_scalar_beside_real_arguments(dataset: dict[str, Any]) -> None:
    """`tile_run<Cfg>` names `Cfg::Params` and `Cfg::kThreads`; a benchmark class template nothing instantiates takes
    `(void*)tile_run<Cfg>`, whose defaults gave `float` as a `reference` beside the two real `TileConfig<128, ...>`
    of the launching host template (lc0's `attention_kernel_batched_impl`: "expected an identifier" for
    `float::Params`). A defaulted reference is a guess like a defaulted launch, and a scalar never stands for a
    class."""
    m = only_meta(dataset, "tile_run")
    assert sorted(i["args"][0] for i in m["instantiations"]) == ["TileConfig<128, false>", "TileConfig<128, true>"]
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_class_parameter_without_arguments_states_why(dataset: dict[str, Any]) -> None:
    """`tile_probe<Cfg>` is only referenced in the uninstantiated class template: its `float` default cannot be a
    class, and the metadata says so (`args_missing: class_parameter`) instead of passing as a real argument."""
    m = only_meta(dataset, "tile_probe")
    assert [i["origin"] for i in m["instantiations"]] == ["inferred"]
    assert (m.get("args_missing") or {}).get("reason") == "class_parameter", m.get("args_missing")


def test_a_dependent_type_argument_is_not_written_typename_typename(dataset: dict[str, Any]) -> None:
    """`using Cfg = typename PickConfig<width>::Kernel;` gives `tile_copy<Cfg>` the argument `typename
    PickConfig<64>::Kernel`; put in for `Cfg` in `typename Cfg::Params`, the launcher's parameter read `typename
    typename ...` ("expected an identifier", lc0's backward attention kernels)."""
    m = only_meta(dataset, "tile_copy")
    # (the member type is read by the compiler since launches.member_types: the concrete class it names)
    assert sorted(i["args"][0] for i in m["instantiations"]) == ["TileConfig<256, false>", "TileConfig<64, false>"]
    assert all("typename typename" not in u for u in unit_texts(dataset, m))
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.mark.skipif(cuda_libs.header_library_dir(cuda_libs.HEADER_LIBRARIES[0]) is None,
                    reason="nvidia-cutlass is not installed")
def test_a_quoted_cutlass_include_is_no_header_the_project_lacks(dataset: dict[str, Any]) -> None:
    """`#include "cutlass/array.h"` in a tree without CUTLASS: the wheel's headers answer it, but the unit said
    `km:toolkit-conflict ... includes "cutlass/array.h", which the project does not contain` and mine_corpus counted
    the kernel as stated (lc0's backward attention kernels), whatever its real build result."""
    m = only_meta(dataset, "add_pairs")
    (unit,) = unit_texts(dataset, m)
    assert "km:toolkit-conflict" not in unit and "#include <cutlass/array.h>" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_headers_the_build_copies_under_another_folder_name_are_read_in_place(dataset: dict[str, Any]) -> None:
    """`#include "meshio/meshio_device.h"`: the tree holds `vendor/meshio-kit/include/meshio_device.h`, which the
    CMake files copy into the build tree's `meshcomm/meshio/`. No `-I` finds it, so the transport's enums were
    undefined in the unit (nccl's GIN kernels and `doca_gpunetio/`). The folder is reached through a link in the
    cache and its files are inlined as the project's."""
    m = only_meta(dataset, "post_all")
    (unit,) = unit_texts(dataset, m)
    assert "MESHIO_POST_DEFAULT = 0," in unit and "struct meshio_queue {" in unit
    # (`#include "cuda_runtime.h"` with quotes is the toolkit's, no header the project lacks: nccl's examples)
    assert "km:toolkit-conflict" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_helper_written_only_for_the_clang_parser_keeps_its_guard(dataset: dict[str, Any]) -> None:
    """`#if defined(__clang__) && defined(__CUDA__)` around the project's own `__stwt`: libclang (the parse) takes
    that branch, nvcc never does and declares `__stwt` itself, so the bare copy made the call ambiguous ("more than
    one instance of overloaded function", nccl's GIN proxy). The unit keeps the condition."""
    m = only_meta(dataset, "store_through")
    (unit,) = unit_texts(dataset, m)
    assert "#if defined(__clang__) && defined(__CUDA__)\n__device__ inline void __stwt" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_function_under_an_arch_test_stays_bare_for_the_kernel_specialization_calling_it(
        dataset: dict[str, Any]) -> None:
    """`halve<__half>` is specialized under `#if __CUDA_ARCH__ >= 530` and calls `halve_in_place`, defined under the
    same test. The unit writes the kernel bare (its host pass compiles the body), so the function must stay bare too:
    guarded like the struct specializations, it was undefined in the host pass (MMCV's `bbox_overlaps_cuda_kernel`)."""
    spec = [m for m in dataset["metas"] if m["name"] == "halve" and m["is_specialization"]]
    assert len(spec) == 1
    (unit,) = unit_texts(dataset, spec[0])
    assert "#if __CUDA_ARCH__ >= 530\n__device__ void halve_in_place" not in unit
    assert set(build_statuses(spec[0]).values()) == {"ok"}, build_statuses(spec[0])
