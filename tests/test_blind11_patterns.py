"""`extract --build` on tests/fixtures/blind11: patterns found on the eleventh set of repositories (issue 14,
scripts/corpus_repos_blind11.txt, development data from session 14: ginkgo's `cuda` folder, mlx's CUDA backend),
each reproduced by code of our own and judged by the real libclang parse and the real nvcc. The fixture is mined as
those were: one backend folder of a larger project (`--project`), whose checkout folder has the project's name."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from miner.source import build_flags
from miner.source.include_graph import tail_match
from miner.units.closure.context import _misread_function_end
from tests.conftest import FIXTURES, build_statuses, load_dataset, only_meta, run_miner, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

PROJECT = FIXTURES / "blind11" / "gridlib"


def _mine(tmp_path_factory: pytest.TempPathFactory, sub: str) -> dict[str, Any]:
    src = tmp_path_factory.mktemp("blind11-src") / "gridlib"  # the checkout folder is named like the project
    shutil.copytree(PROJECT, src)
    out = tmp_path_factory.mktemp("blind11-out")
    cache = tmp_path_factory.mktemp("blind11-cache")
    proc = run_miner("extract", src / sub, "-o", out, "--project", src, "--build", "-j", "2",
                     env={"XDG_CACHE_HOME": str(cache)}, timeout=600)
    return {"proc": proc, "out": out, "metas": load_dataset(out)}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _mine(tmp_path_factory, "cuda")


@pytest.fixture(scope="module")
def kernels_only(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Only the folder of the kernel files: the backend's `cuda/components` headers lie outside the inputs."""
    return _mine(tmp_path_factory, "cuda/kernels")


def test_an_include_tail_never_matches_through_the_checkout_folder_name(dataset: dict[str, Any]) -> None:
    """`#include <gridlib/core/types.hpp>` (the public header under `include/`) in a checkout named `gridlib`:
    the internal `gridlib/core/types.hpp` at the root ends with that tail too, once the checkout's own folder is
    counted, and was taken as the header. The real one was then no project file: its `GRID_INLINE` and
    `GRID_ATTR` never reached the unit ("this declaration has no storage class or type specifier")."""
    m = only_meta(dataset, "grid_search")
    (unit,) = unit_texts(dataset, m)
    assert "#define GRID_INLINE __forceinline__" in unit and "#define GRID_ATTR __host__ __device__" in unit
    assert "host_only_rank" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    root = "/w/gridlib"
    assert not tail_match(root + "/core/types.hpp", "/gridlib/core/types.hpp", frozenset({root}))
    assert tail_match(root + "/include/gridlib/core/types.hpp", "/gridlib/core/types.hpp", frozenset({root}))
    assert tail_match(root + "/cuda/x.cuh", "/cuda/x.cuh", frozenset({root}))  # the include dir is the root


def test_a_project_folder_named_like_a_toolkit_prefix_is_the_projects(kernels_only: dict[str, Any]) -> None:
    """`#include "cuda/components/groups.cuh"` from a header shared by the backends: `cuda/` is libcu++'s prefix,
    so the include was taken for the toolkit's and the header was never project context; `group::vote(group,
    ...)` (a dependent call) then named nothing the unit holds ("name followed by :: must be a class or namespace
    name"). A quoted include the project holds at that path is the project's."""
    m = only_meta(kernels_only, "grid_search")
    (unit,) = unit_texts(kernels_only, m)
    assert "unsigned vote(const Group& g, bool p)" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_the_root_dialect_reaches_a_backend_subdirectory(dataset: dict[str, Any]) -> None:
    """`set(CMAKE_CXX_STANDARD 20)` in the root CMakeLists.txt, a backend folder whose own file only adds sources
    and options: CMake variables reach subdirectories, so the backend builds at C++20 (a defaulted `operator==`
    failed at nvcc's C++17: "= default can only appear on default constructors ...")."""
    m = only_meta(dataset, "grid_search")
    assert m["build_flags"]["nvcc"][0] == "-std=c++20", m["build_flags"]
    assert "CMakeLists.txt" in m["build_flags"]["from"]
    got = build_flags.find(str(PROJECT / "cuda" / "kernels" / "search.cu"), str(PROJECT))
    assert got is not None and "-std=c++20" in got["nvcc"]


def test_a_defaulted_comparison_is_kept_as_written(dataset: dict[str, Any]) -> None:
    """A C++20 `bool operator==(const extent&) const = default;`: the parse gives it a body of the compiler's,
    located on `default`, and the host-only body cut left `= defaul;`. nvcc makes a defaulted member callable
    from device code (the kernel compares two extents), so it stays as written."""
    m = only_meta(dataset, "grid_search")
    (unit,) = unit_texts(dataset, m)
    assert "bool operator==(const extent&) const = default;" in unit
    assert "= defaul;" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)



def test_a_header_outside_the_mined_folder_is_no_header_the_project_lacks(dataset: dict[str, Any]) -> None:
    """`#include "common/shared/groups.hpp"` from the mined `cuda` folder, answered by the project root (an include
    dir of the parse, through --project): the unit said `km:toolkit-conflict ... which the project does not
    contain`, and a failed build counted as stated, since only the mined folder's file names were looked at."""
    m = only_meta(dataset, "grid_search")
    (unit,) = unit_texts(dataset, m)
    assert "which the project does not contain" not in unit
    assert not any("does not contain" in (u.get("reason") or "") for u in m.get("unresolved") or [])


def test_a_library_include_in_a_skipped_branch_stays_out(dataset: dict[str, Any]) -> None:
    """A header the backends share includes `<thrust/system/cuda/detail/execution_policy.h>` under `#if
    defined(GRID_COMPILING_CUDA)` and the HIP one under `#else`; the kernel names `thrust::` and its own files
    include none of it, so the unit takes the library headers its project headers include. The skipped branch's
    came too, and the unit stopped at `thrust/system/hip/...: No such file or directory`."""
    m = only_meta(dataset, "grid_scale")
    (unit,) = unit_texts(dataset, m)
    assert "#include <thrust/system/cuda/detail/execution_policy.h>" in unit
    assert "thrust/system/hip" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_kernel_handed_to_a_graph_node_helper_through_a_local_is_launched(dataset: dict[str, Any]) -> None:
    """`auto kernel = grid_axpy<double, 4>; enc.add_node(kernel, grid, block, x, y, a, n);` where `add_node(F*
    func, dim3 grid, dim3 block, Params&&... params)` hands the arguments' addresses to a method defined in a host
    source: no launch in the helper's body, and the argument names a local, not the kernel. The kernel was only
    `referenced`; the call is its launch now, with the helper's grid and block and the pack's arguments."""
    m = only_meta(dataset, "grid_axpy")
    assert m.get("launch_missing") is None, m.get("launch_missing")
    (launch,) = [la for la in m["launches"] if la["launcher"] == "axpy"]
    # The same call inside a generic lambda (a dependent call: its callee is an overload set of one) is a launch too.
    (dependent,) = [la for la in m["launches"] if la["launcher"] == "axpy_any"]
    assert dependent["template_args"][0] == "float" and dependent["config"]["block"] == "(dim3(128))"
    assert launch["kind"] == "<<<>>>" and launch["template_args"] == ["double", "4"]
    assert launch["config"]["block"] == "(dim3(128))"
    assert [a["expr"] for a in launch["args"]] == ["x", "y", "a", "n"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_function_the_parse_read_as_a_variable_keeps_its_body(dataset: dict[str, Any]) -> None:
    """`__device__ thrust::complex<float> complex_twice(thrust::complex<float> a, ...) { ... }`: the parse has no
    thrust, reads a variable `complex_twice` with two constructor arguments, and the piece ended at the name (the
    unit wrote `... thrust::complex<float> complex_twice;`: "an inline __device__ variable must have internal
    linkage"). The body after the name is the piece's too; so for an explicit specialization of a library template
    (`template <> complex<__half> sqrt<__half>(const complex<__half>& a) { ... }`)."""
    m = only_meta(dataset, "grid_accumulate")
    (unit,) = unit_texts(dataset, m)
    assert "return a + b + b;" in unit and "complex_twice;" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    text = b"template <>\nHD complex<__half> sqrt<__half>(const complex<__half>& a)\n{\n    return f(a);\n}\nint x;"
    at = text.index(b"sqrt") + len(b"sqrt")
    assert _misread_function_end(text, at) == text.index(b"}") + 1
    assert _misread_function_end(b"int x = 3; int f() {}", 5) is None
