"""The project's nvcc -D flags where its build writes them: a builder class's method in a Python file
outside the mined folder (miner.source.py_build), CMake's definitions, a Makefile's nvcc flags."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from miner.source import build_flags, cmake_version, py_build
from tests.conftest import FIXTURES, build_statuses, extract_and_build, load_dataset, run_miner
from tests.conftest import only_meta as _meta

BUILDER = FIXTURES / "build_config" / "builder_class"
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """`extract ext/csrc --project ROOT --build`: the mined folder holds no build file at all."""
    src = tmp_path_factory.mktemp("builder-src") / "builder_class"
    shutil.copytree(BUILDER, src)
    out = tmp_path_factory.mktemp("builder-out")
    cache = tmp_path_factory.mktemp("builder-cache")
    proc = run_miner("extract", src / "ext" / "csrc", "-o", out, "--project", src, "--build", "-j", "2",
                     env={"XDG_CACHE_HOME": str(cache)}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {"proc": proc, "out": out, "metas": load_dataset(out)}


def test_a_builder_method_and_its_base_class_give_the_sources_they_name_their_defines() -> None:
    root = str(BUILDER.resolve())
    scale, scopes = py_build.source_flags(root, root + "/ext/csrc/kernels/scale.cu")
    got = {v for v, _ in scale}
    assert {"-DKM_WITH_GPU", "-U__CUDA_NO_HALF_OPERATORS__", "-O3"} <= got, got
    assert not {"-DKM_CXX_ONLY", "-DKM_TILE=32", "-DKM_FROM_ENV"} & got, got
    assert scopes == ["ext/ops/scale_op.py (ScaleOp)"]
    tile = build_flags.find(root + "/ext/csrc/kernels/tile.cu", root)
    assert tile is not None
    assert [f for f in tile["nvcc"] if f.startswith(("-D", "-U")) and "__CUDA_NO_" not in f] == [
        "-DKM_TILE=32", "-DKM_WITH_GPU"], tile
    assert tile["defines"] == {"-DKM_TILE=32": "ext/ops/tile_op.py:15", "-DKM_WITH_GPU": "ext/gpu_builder.py:23"}
    assert "-U__CUDA_NO_HALF_OPERATORS__" not in tile["nvcc"]  # the scale op's own flag
    # a source no builder names gets nothing from the builders
    assert py_build.source_flags(root, root + "/ext/csrc/kernels/none.cu") == ([], [])


@needs_nvcc
def test_the_define_a_base_class_method_returns_makes_the_functor_host_device(dataset: dict[str, Any]) -> None:
    """KM_HD is `__host__ __device__` only under KM_WITH_GPU, which the builder's base class returns from
    `nvcc_flags()` in a file outside the mined folder (was: calling a __host__ function from a __global__
    function)."""
    m = _meta(dataset, "scale_kernel")
    assert build_statuses(m) == {"float": "ok"}, build_statuses(m)
    assert m["build_flags"]["defines"] == {"-DKM_WITH_GPU": "ext/gpu_builder.py:23"}, m["build_flags"]
    assert "ext/ops/scale_op.py (ScaleOp)" in m["build_flags"]["from"], m["build_flags"]
    assert "-U__CUDA_NO_HALF_OPERATORS__" in m["build_flags"]["nvcc"]


@needs_nvcc
def test_each_builder_gives_only_its_own_sources_its_defines(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "tile_sum_kernel")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    assert "-DKM_TILE=32" in m["build_flags"]["nvcc"] and "-DKM_FROM_ENV" not in m["build_flags"]["nvcc"]
    assert "-DKM_TILE=32" not in _meta(dataset, "scale_kernel")["build_flags"]["nvcc"]


CMAKE_MAKE = FIXTURES / "build_config" / "cmake_make"


def test_cmake_definitions_and_makefile_nvcc_flags() -> None:
    root = str(CMAKE_MAKE.resolve())
    cm = build_flags.find(root + "/cm/cm_kernel.cu", root)
    assert cm is not None and cm["nvcc"] == ["-DKM_CM_GPU", "-DKM_CM_VEC=4", "-DKM_CM_TILE=8", "-DKM_CM_CUDA"], cm
    assert cm["defines"]["-DKM_CM_GPU"] == "cm/CMakeLists.txt"
    mk = build_flags.find(root + "/mk/mk_kernel.cu", root)
    assert mk is not None and mk["nvcc"] == ["-DKM_MK_BLOCK=128", "-DKM_MK_SCALE=2"], mk
    assert mk["from"] == ["mk/Makefile"]


@needs_nvcc
def test_units_of_cmake_and_make_projects_build_with_their_defines(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    metas = extract_and_build(tmp_path_factory, "build_config/cmake_make")
    assert metas["proc"].returncode == 0, metas["proc"].stderr[-2000:]
    for name in ("cm_kernel", "mk_kernel"):
        assert set(build_statuses(_meta(metas, name)).values()) == {"ok"}, build_statuses(_meta(metas, name))


CMAKE_NESTED = FIXTURES / "build_config" / "cmake_nested"


def test_directory_definitions_of_parent_cmakelists_are_inherited() -> None:
    """`add_definitions` in the root CMakeLists.txt reaches `src/`, whose own CMakeLists.txt gives flags too
    (CMake's directory definitions are inherited); a target's definitions are not."""
    root = str(CMAKE_NESTED.resolve())
    got = build_flags.find(root + "/src/nest_kernel.cu", root)
    assert got is not None and got["nvcc"] == ["-DKM_NEST_TILE=4", "--extended-lambda", "-DKM_NEST_WITH_CUDA"], got
    assert got["defines"]["-DKM_NEST_WITH_CUDA"] == "CMakeLists.txt" and "CMakeLists.txt" in got["from"], got


@needs_nvcc
def test_a_kernel_under_an_inherited_cmake_define_is_found_and_builds(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    dataset = extract_and_build(tmp_path_factory, "build_config/cmake_nested")
    assert dataset["proc"].returncode == 0, dataset["proc"].stderr[-2000:]
    m = _meta(dataset, "nest_kernel")
    assert m["frontend"] == "clang" and build_statuses(m) == {"default": "ok"}, (m["frontend"], build_statuses(m))


JIT = FIXTURES / "build_config" / "jit_load"


def test_f_string_defines_of_jit_loaded_extensions_reach_the_nearest_generations_source() -> None:
    """`load(sources=["cuda/decay.cu"], extra_cuda_cflags=[f"-DSPAN={SPAN_LEN}"])`: the f-string's value is
    read (a module constant; a number read from the environment gets the assumed value, said so), and of two
    scripts naming `cuda/decay.cu`, each gives its flags to the file beside it only."""
    root = str(JIT.resolve())
    gen1 = build_flags.find(root + "/gen1/cuda/decay.cu", root)
    gen2 = build_flags.find(root + "/gen2/cuda/decay.cu", root)
    assert gen1 is not None and gen2 is not None
    assert gen1["defines"] == {"-DSPAN=64": "gen1/src/layer.py:8 (value assumed: 64; the build reads it at run "
                                            "time)"}, gen1
    # set under an option together with the flag list and the load() that reads it
    assert gen2["defines"] == {"-DWIDTH=96": "gen2/src/layer.py:8", "-DTILE_ROWS=8": "gen2/src/layer.py:8"}, gen2
    assert gen1["from"] == ["gen1/src/layer.py:7"] and gen2["from"] == ["gen2/src/layer.py:9"]


@needs_nvcc
def test_units_of_jit_loaded_kernels_compile_with_their_loaders_sizes(tmp_path: Any) -> None:
    src = tmp_path / "jit_load"
    shutil.copytree(JIT, src)
    out = tmp_path / "out"
    proc = run_miner("extract", src, "-o", out, "--build", "-j", "2",
                     env={"XDG_CACHE_HOME": str(tmp_path / "cache")}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    metas = load_dataset(out)
    assert len(metas) == 2
    for m in metas:
        assert build_statuses(m) == {"default": "ok"}, (m["location"], build_statuses(m))
CUDA_VERSION_FIXTURE = FIXTURES / "build_config" / "cmake_cuda_version"


def test_cmake_conditions_on_the_cuda_version_are_decided_for_the_toolkit() -> None:
    """Only comparisons of CUDA version variables are decided; an option beside one leaves the condition open."""
    holds = cmake_version.holds
    assert holds('${CUDA_VERSION_MAJOR} VERSION_GREATER_EQUAL "11"', (13, 0)) is True
    assert holds('(${CUDA_VERSION_MAJOR} VERSION_EQUAL "11" AND ${CUDA_VERSION_MINOR} VERSION_GREATER_EQUAL "8") '
                 'OR (${CUDA_VERSION_MAJOR} VERSION_GREATER_EQUAL "12")', (11, 4)) is False
    assert holds('(${CUDA_VERSION_MAJOR} VERSION_EQUAL "11" AND ${CUDA_VERSION_MINOR} VERSION_GREATER_EQUAL "8")',
                 (11, 8)) is True
    assert holds('NOT CUDA_VERSION VERSION_LESS "12.0"', (12, 4)) is True
    assert holds('KMV_WITH_TRACING AND CUDA_VERSION VERSION_GREATER_EQUAL "12.0"', (13, 0)) is None
    assert holds("WITH_CUDA", (13, 0)) is None


@needs_nvcc
def test_definitions_a_new_enough_toolkit_turns_on_are_the_builds() -> None:
    """`if(${CUDA_VERSION_MAJOR} VERSION_GREATER_EQUAL "11") add_definitions("-DKMV_HAS_BF16")`: with CUDA 13 every
    build defines it (it was read as an option and left out); the `else()` of a failing version test is taken, an
    option's branch is not."""
    root = str(CUDA_VERSION_FIXTURE.resolve())
    got = build_flags.find(root + "/src/pairs.cu", root)
    assert got is not None and got["nvcc"] == ["-DKMV_HAS_BF16", "-DKMV_HAS_FP8", "-DKMV_MODERN_TOOLKIT"], got


@needs_nvcc
def test_a_kernel_under_a_toolkit_version_feature_gets_the_helpers_of_the_other_version_feature(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """The fp8 kernel (under `#ifdef KMV_HAS_FP8`) calls a bf16 helper under `#ifdef KMV_HAS_BF16`: parsed with
    only the define that turns the kernel's own branch on, its unit lacked the helper ("identifier kmv_widen is
    undefined"), as FasterTransformer's fp8 kernels lacked its bf16 conversions."""
    dataset = extract_and_build(tmp_path_factory, "build_config/cmake_cuda_version")
    m = _meta(dataset, "fp8_pairs_to_float_kernel")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
