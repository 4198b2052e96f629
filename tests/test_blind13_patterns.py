"""`extract --build` on tests/fixtures/blind13q: patterns found on the thirteenth set of repositories (issue 14,
scripts/corpus_repos_blind13.txt, development repos since session 15), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind13q")


def test_a_legacy_texture_reference_is_kept_and_its_removal_stated(dataset: dict[str, Any]) -> None:
    """`texture<float, 2, cudaReadModeElementType> lutTable2D;` in a header, read by `tex2D(lutTable2D, u, v)` in a
    device function: the parse stub has no `texture` template, clang keeps the declaration as invalid and no
    expression that names it, so the unit lacked it ("identifier lutTable2D is undefined", unstated). The unit
    keeps the references as written (a toolkit before 12.0 builds it) and the build states why this one cannot."""
    m = only_meta(dataset, "lut_resample")
    (unit,) = unit_texts(dataset, m)
    for decl in ("texture<float, 1, cudaReadModeElementType> lutWeights;",
                 "texture<float, 2, cudaReadModeElementType> lutTable2D;", "texture<float2> lutSamples;"):
        assert decl in unit, unit
    (inst,) = m["instantiations"]
    assert inst["build"]["status"] == "failed"
    why = inst["build"].get("toolkit_removed", "")
    assert why.startswith("texture references") and "CUDA 12.0" in why, inst["build"]
    assert set(build_statuses(only_meta(dataset, "lut_scale")).values()) == {"ok"}


def test_a_using_declaration_inside_an_included_vendored_library_is_not_copied(dataset: dict[str, Any]) -> None:
    """`external/vmath` (a vendored header library the unit #includes) writes `namespace vmath {
    VMATH_USING_STD_DEVICE_MATH }` under `#if defined(VMATH_CUDACC) && defined(VMATH_DEVICE_PASS)`, a macro of
    using-declarations defined for the device pass only (Eigen's `EIGEN_USING_STD_COMPLEX_OPERATORS`). The unit
    copied the library's using-declarations beside its #include, without that guard: nvcc's host pass read
    `VMATH_USING_STD_DEVICE_MATH;` ("this declaration has no storage class or type specifier")."""
    m = only_meta(dataset, "march_rays")
    (unit,) = unit_texts(dataset, m)
    assert "#include <vmath/vmath.h>" in unit
    assert "VMATH_USING_STD_DEVICE_MATH" not in unit and "using std::size_t" not in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def cub_tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind13q_cub/cub")  # the mined folder is the library's own


def test_a_kernel_of_cub_itself_builds_when_it_needs_nothing_of_its_release(cub_tree: dict[str, Any]) -> None:
    """The mined tree is CUB (`cub/version.cuh`: 2.2.0). Both kernels' files include
    `<cub/detail/cpp_compatibility.cuh>`, a header of this release that the toolkit's CUB (CCCL 3.0) lacks; one file
    also includes thrust, and the toolkit's thrust stops on any CUB but its own. The units used to name the missing
    header as the toolkit's and fail (`DeviceFillKernel`'s with the statement "the kernel is CUB's own (CUB 2.2.0)",
    since its original cannot build here either). A name under a toolkit folder that the toolkit lacks is the
    project's (units.headers.toolkit_lacks), and neither kernel uses anything of it: the units leave it out and
    build with the toolkit alone, stating nothing. A project's copy of CUB below the mined folder that a unit does
    need keeps its statement (test_blind7q_patterns, "a vendored CUB")."""
    for name in ("DeviceFillKernel", "FillSlotsKernel"):
        m = only_meta(cub_tree, name)
        (inst,) = m["instantiations"]
        assert inst["build"]["status"] == "ok", inst["build"]
        assert not inst["build"].get("toolkit_removed"), inst["build"]
        (unit,) = unit_texts(cub_tree, m)
        assert "cub/detail/cpp_compatibility.cuh" not in unit, unit


def test_thrust_headers_of_the_files_host_code_are_not_in_a_unit_that_names_no_thrust(
        dataset: dict[str, Any]) -> None:
    """`cells.cu` includes `<thrust/sort.h>`, `<thrust/device_vector.h>` and CUB for its host code and one kernel;
    `cell_index` names none of them. Its unit kept every toolkit include of the file: nvcc's front end spent seconds
    on thrust per unit (an SPH solver's 333 units at ~16 s each, 2 s without), for nothing the kernel uses.
    `cell_total`, which names `cub::`, and `warp_lanes`, which writes CUB's macro `CUB_PTX_WARP_THREADS`, keep them."""
    m = only_meta(dataset, "cell_index")
    (unit,) = unit_texts(dataset, m)
    assert "#include <thrust/" not in unit and "#include <cub/" not in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    for name in ("cell_total", "warp_lanes"):  # `cub::BlockReduce`; CUB's macro `CUB_PTX_WARP_THREADS`
        m = only_meta(dataset, name)
        (unit,) = unit_texts(dataset, m)
        assert "#include <cub/util_arch.cuh>" in unit, unit
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_header_included_in_two_namespaces_gives_each_kernel_its_own_copy(dataset: dict[str, Any]) -> None:
    """`kernel_fun_iker.h` has no include guard and is included inside `namespace sph {` and, through
    `vres_iker.cu` (which `solver_ker.cu` includes whole), inside `namespace vres {`: one text, two declarations
    `sph::kfun::weight` and `vres::kfun::weight`. The index folded the second into the first, so `vres_density`'s
    unit had `kfun` only inside `sph` ("name followed by '::' must be a class or namespace name"); an SPH solver's
    variable-resolution kernels failed so, 67 instantiations."""
    m = only_meta(dataset, "vres_density")
    (unit,) = unit_texts(dataset, m)
    assert "namespace vres {\nnamespace kfun {" in unit, unit
    # `kfun::weight_k<K>(...)` in a template kernel is a dependent call: every `weight_k` of the TU comes along,
    # each copy in its own namespace (one key per text had kept whichever came first).
    for name in ("vres_density", "sph_density", "vres_smooth", "sph_smooth"):
        assert set(build_statuses(only_meta(dataset, name)).values()) == {"ok"}, name
