"""`extract --build` on tests/fixtures/blind14: patterns found on the fourteenth set of repositories (issue 14,
scripts/corpus_repos_blind14.txt, development repos since session 15), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def port_sim(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind14/port_sim")


def test_a_cuda_project_written_with_hip_names_is_mined_as_cuda(port_sim: dict[str, Any]) -> None:
    """`src/utils/gpu.hpp` includes <hip/hip_runtime.h> only under `#ifdef O_HIP` and, on its CUDA side, defines
    `hipLaunchKernelGGL(F, G, B, M, S, ...)` as `F<<<G, B, M, S>>>(__VA_ARGS__)`; every launch is written with
    that name. Both kernels were taken for HIP sources (`variant.toolchain: hip`) and never built by nvcc."""
    for name in ("relax_cells", "gpu_zero"):
        m = only_meta(port_sim, name)
        assert m.get("variant") is None, m.get("variant")
        assert m["launches"], name
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_makefile_gives_the_defines_of_the_build_type_it_includes(port_sim: dict[str, Any]) -> None:
    """The recipe runs `$(GPUCXX) $(GPUFLAGS)` (`GPUCXX ?= nvcc`), `GPUFLAGS += $(DFLAGS)`, and `DFLAGS` is filled
    by `include builds/make.type.$(TYPE)` with `TYPE ?= base`: `-DPRECISION=2` decides which `typedef ... Real;`
    exists. Without it every unit failed on `Real` ("incomplete type void"). An option's define (`ifeq
    ($(findstring -DSTRICT,...))`) and the HIP side's (`ifdef HIPCONFIG`) are not the build's."""
    m = only_meta(port_sim, "relax_cells")
    nvcc = m["build_flags"]["nvcc"]
    assert "-DPRECISION=2" in nvcc and "-DDENSITY_FLOOR" in nvcc, m["build_flags"]
    assert "-DSTRICT_BOUNDS" not in nvcc and "-DO_HIP" not in nvcc and "-DPRECISION=1" not in nvcc, nvcc
    assert "--extended-lambda" in nvcc, nvcc
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def scoped_macro(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind14/scoped_macro")


def test_a_macro_its_file_undefines_after_one_declaration_stays_out_of_units_before_it(
        scoped_macro: dict[str, Any]) -> None:
    """`bind.h` includes the kernel's header, then writes `#define Float typename Solver::Float` for one
    declaration and `#undef Float` after it. The kernel's `typedef typename Vector::Float Float;` names `Float`,
    no definition precedes the kernel, and the closure took the later one: `template<class Float>` of every helper
    became `template<class typename Solver::Float>` ("expected an identifier")."""
    m = only_meta(scoped_macro, "scale_rows")
    (unit,) = unit_texts(scoped_macro, m)
    assert "#define Float" not in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def cut_branch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind14/cut_branch")


def test_a_member_cut_out_of_a_class_keeps_the_conditionals_around_its_declaration(
        cut_branch: dict[str, Any]) -> None:
    """`#if CUDA_VERSION >= 12000` / `static void Describe(const double4_16a &val, ...)` / `#else` / `... (const
    double4 &val, ...)` / `#endif` / the body: a host-only member whose type the parse does not know, so the unit
    leaves it out; its range starts after the `#if` and took the `#else` and `#endif` with it ("unterminated
    #if")."""
    m = only_meta(cut_branch, "copy_modified")
    (unit,) = unit_texts(cut_branch, m)
    assert unit.count("#if CUDA_VERSION >= 12000") == 1 and "host-only member left out" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def cccl_qualifiers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind14/cccl_qualifiers")


def test_members_spelled_with_ccl_execution_space_macros_are_device_code_with_their_header(
        cccl_qualifiers: dict[str, Any]) -> None:
    """`static _CCCL_DEVICE _CCCL_FORCEINLINE T Add(T *ptr, T val)` in a header that includes nothing: the project
    had CCCL's macros through Thrust, included by the launching file. The parse took the member for host code
    naming an unknown type, and the unit named `_CCCL_DEVICE` without the header that defines it."""
    m = only_meta(cccl_qualifiers, "expand_frontier")
    (unit,) = unit_texts(cccl_qualifiers, m)
    assert "#include <cuda/__cccl_config>" in unit and "_CCCL_DEVICE" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def namesake_host(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind14/namesake_host")


def test_a_kernel_named_only_by_a_host_function_of_its_name_is_no_unresolved_launch(
        namesake_host: dict[str, Any]) -> None:
    """`double Smooth(Image &, Image &)` is a host function that launches `SmoothTiled` in an `#if 1` and the
    kernel `Smooth` in its `#else`; `Normalize` (host) launches `NormalizeFast`, and the kernel `Normalize` is
    launched nowhere. Calls and heads of the host functions (`Smooth(b, a)`) were counted as places a launch
    of the kernel went unresolved ("unresolved"); a name followed by `(` is no launch."""
    smooth = only_meta(namesake_host, "Smooth")
    assert not smooth["launches"] and smooth["launch_missing"]["reason"] == "disabled_code", smooth["launch_missing"]
    assert "(blur_host.cu:19)" in smooth["launch_missing"]["detail"], smooth["launch_missing"]
    norm = only_meta(namesake_host, "Normalize")
    assert not norm["launches"] and norm["launch_missing"]["reason"] == "other_definition", norm["launch_missing"]
    for name in ("SmoothTiled", "NormalizeFast"):
        assert only_meta(namesake_host, name)["launches"], name
    assert set(build_statuses(smooth).values()) == {"ok"}, build_statuses(smooth)


def test_a_kernel_launched_only_under_an_option_the_build_leaves_off_says_so(namesake_host: dict[str, Any]) -> None:
    """`ScaleManaged<<<...>>>` is written only under `#ifdef MANAGED_MEMORY`, which nothing defines: the parse's
    preprocessor skipped it, and the kernel said "unresolved" (a launch the miner missed)."""
    m = only_meta(namesake_host, "ScaleManaged")
    lm = m["launch_missing"]
    assert not m["launches"] and lm["reason"] == "configuration_skipped", lm
    assert "blur_host.cu:33 under `#ifdef MANAGED_MEMORY`" in lm["detail"], lm


@pytest.fixture(scope="module")
def other_config(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind14/other_config")


def test_a_kernel_of_another_build_configuration_states_the_switches_its_names_need(
        other_config: dict[str, Any]) -> None:
    """`grains.cu` is compiled only under `#ifdef GRAINS` (the miner defines it to reach the kernel); the kernel
    needs `part_int_t`, typedef'd only under `#ifdef PARTICLES`, and an enumerator declared only under `#ifdef
    SCALARS`. The stated reason named `<hdf5.h>` (included by the same file, not installed here), which declares
    neither: the switches the configuration leaves off are the cause."""
    m = only_meta(other_config, "grow_grains")
    (build,) = [i["build"] for i in m["instantiations"]]
    stated = build.get("toolkit_removed") or ""
    assert build["status"] == "failed" and "hdf5" not in stated, build
    assert "`#ifdef PARTICLES`" in stated and "`#ifdef SCALARS`" in stated and "GRAINS" in stated, stated
    assert set(build_statuses(only_meta(other_config, "add_energy")).values()) == {"ok"}


@pytest.fixture(scope="module")
def host_logging(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind14/host_logging")


def test_a_free_host_function_whose_body_names_an_unknown_logging_macro_is_declared_only(
        host_logging: dict[str, Any]) -> None:
    """The kernel takes `Buffer<...>` by value; the class's destructor calls `release()`, which checks
    `cudaFree` through `GPU_CHECK` -> `GpuCheck(error, file, line)`, a free host function whose body is glog's
    `CHECK(cond) << ...` (`<glog/logging.h>` is not installed). The unit took the body whole and failed on
    `CHECK` ("a header nobody here has"); no device code can call the function, so its declaration is enough."""
    m = only_meta(host_logging, "Pick")
    (unit,) = unit_texts(host_logging, m)
    assert "CHECK(error == cudaSuccess)" not in unit and "GpuCheck(cudaError_t error" in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_default_constructor_whose_body_names_an_unknown_logging_macro_keeps_its_declaration(
        host_logging: dict[str, Any]) -> None:
    """`Optimizer(float _lr = 1e-3f) : lr(_lr) {}` default-constructs its `Schedule schedule;`, whose default
    constructor checks its name with glog's `CHECK(...) << ...`. The whole constructor was left out of the unit
    (a special member keeps its body or goes), so `Optimizer`'s constructor failed with "no default constructor
    exists for class Schedule"; its declaration stays, its body goes."""
    m = only_meta(host_logging, "Descend")
    (unit,) = unit_texts(host_logging, m)
    assert 'Schedule(const std::string &_type = "constant") ;' in unit and "CHECK(type" not in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def policy_dispatch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind14/policy_dispatch")


def test_a_launch_in_a_function_the_parse_misread_states_why_its_arguments_are_guesses(
        policy_dispatch: dict[str, Any]) -> None:
    """`void multiply(thrust::cuda::execution_policy<DerivedPolicy>& exec, const MatrixType& A, ...)` launches
    `ell_spmv_kernel<IndexIterator, ...>` with the container iterators its callers fix; the parse does not read
    Thrust, took the head for a variable of type void and skipped the body, so the launch was no call in the
    AST. The kernel said "unresolved" and its guessed iterator arguments had no stated reason. The launch is now
    read back from the dropped definition's text (launches.recovered), but its template arguments are that
    function's own aliases, which only its callers fix: no instantiation may be spelled with them, and the guessed
    arguments keep their stated reason."""
    m = only_meta(policy_dispatch, "ell_spmv_kernel")
    assert [(lc["line"], lc["config"]["grid"], lc["config"]["block"]) for lc in m["launches"]] == \
        [(36, "blocks", "BLOCK_SIZE")], m["launches"]
    assert not any("Iterator" in i["id"] for i in m["instantiations"]), [i["id"] for i in m["instantiations"]]
    why = m.get("args_missing") or {}
    assert why.get("reason") == "launcher_unparsed" and "IndexIterator" in why["detail"], why


@pytest.fixture(scope="module")
def scoped_before(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind14/scoped_before")


def test_a_macro_scoped_to_one_class_head_before_the_kernel_stays_out_of_its_unit(
        scoped_before: dict[str, Any]) -> None:
    """`sampler.h` writes `#define _Index typename _Solver::Index` / a class head / `#undef _Index`, and is included
    before the kernel's header; the kernel's `Buffer<_T, _Index = unsigned long>` names `_Index` as its own
    parameter. The definition preceded the kernel, so the unit took it (and moved it before the template naming
    it): `class _Index` became `class typename _Solver::Index` ("expected an identifier")."""
    m = only_meta(scoped_before, "attract")
    (unit,) = unit_texts(scoped_before, m)
    assert "#define _Index" not in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def dead_chain(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind14/dead_chain")


def test_a_launcher_called_only_by_a_template_nothing_calls_is_not_instantiated(dead_chain: dict[str, Any]) -> None:
    """`launch_axpy<T, BLOCK>` launches `axpy_kernel<T, BLOCK>` and is called only by `axpy<T>`, a function template
    nothing in the tree names (its users are outside). The call in `axpy` counted as a use of the launcher, so the
    guessed arguments had no stated reason (cusp's `__spmv_coo_flat_k`, called only by `spmv_coo_flat_k`)."""
    m = only_meta(dead_chain, "axpy_kernel")
    assert (m.get("args_missing") or {}).get("reason") == "launcher_not_instantiated", m.get("args_missing")
