"""`extract --build` on tests/fixtures/blind19: patterns found on the nineteenth set of repositories (issue 14,
scripts/corpus_repos_blind19.txt, ML-style repos measured in session 20), each reproduced by code of our own and
judged by the real build-file text, the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from miner.source import build_flags
from tests.conftest import build_statuses, extract_and_build, only_meta

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

FIXTURES = __import__("pathlib").Path(__file__).parent / "fixtures" / "blind19"


def test_a_makefile_s_cuda_flags_set_per_system_in_an_indented_conditional_are_the_linux_builds() -> None:
    """The GPU build sets its compiler and flags inside `ifdef CUDA_AVAILABLE`, per system (`ifeq
    ($(OS),Windows_NT)` / `else`), on tab-indented lines, after a `$(info ...: ...)` line: the `else` is the
    build on Linux, an indented line outside a rule is an assignment, and a message holding a colon is no rule.
    A flag only the Windows branch or the macOS test (`uname -s` = Darwin) writes is not the build's."""
    root = str((FIXTURES / "make_host_branch").resolve())
    got = build_flags.find(root + "/src/add.cu", root)
    assert got is not None, got
    assert got["nvcc"] == ["-std=c++17", "-DTE_GPU", "--expt-relaxed-constexpr"], got
    assert got["defines"] == {"-DTE_GPU": "Makefile"}, got


@_nvcc
def test_a_kernel_whose_types_need_the_linux_branchs_define_builds(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`te_scalar` exists only with the GPU build's `-DTE_GPU`; without the Makefile's flags the unit has no type."""
    ds: dict[str, Any] = extract_and_build(tmp_path_factory, "blind19/make_host_branch")
    m = only_meta(ds, "add_scalars")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    assert "-DTE_GPU" in m["build_flags"]["nvcc"], m["build_flags"]


@_nvcc
def test_a_kernel_using_any_toolkit_math_constant_parses_clean_and_builds(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """`<math_constants.h>` in the parse is the toolkit's own: `CUDART_SQRT_2PI`, `CUDART_SQRT_HALF_F`,
    `CUDART_MAX_NORMAL_F` (not among the parse stub's few `CUDART_*`) were undeclared identifiers, the kernel's
    body an error in the parse and its closure incomplete."""
    ds: dict[str, Any] = extract_and_build(tmp_path_factory, "blind19/toolkit_constants")
    for name in ("gauss_act_grad", "clamp_to_finite"):
        m = only_meta(ds, name)
        assert not m.get("unresolved"), m.get("unresolved")
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def index_types(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind19/index_types")


@_nvcc
@pytest.mark.parametrize(("kernel", "arg"), [
    # a local of the type parameter itself is a subscript (`const V at = start + j; ... cols[at]`)
    ("pick_neighbours", "int"),
    # an id type by its name (`IdType`): its values are hashed with `%` inside a helper class
    ("mark_slots", "int"),
    # an iterator the kernel dereferences (`*(first + i)`), beside a function object
    ("apply_each", "float *"),
    # the same, launched from templates nothing instantiates (a class template's method; a generic for-each):
    # the host parameters' defaults by their own names are `float`, the kernel's text says more
    ("copy_rows", "int"),
    ("visit_each", "float *"),
])
def test_an_inferred_type_argument_is_an_index_or_iterator_where_the_kernel_body_needs_one(
        index_types: dict[str, Any], kernel: str, arg: str) -> None:
    """With no launch giving arguments, the inferred default of a type parameter is `float`, which no subscript, `%` or
    `*` accepts: the kernel's own text says which parameters are indices or iterators."""
    m = only_meta(index_types, kernel)
    [inst] = m["instantiations"]
    assert inst["origin"] == "inferred" and inst["args"][0] == arg, inst["args"]
    assert inst["build"]["status"] == "ok", build_statuses(m)


@_nvcc
def test_a_feature_macro_of_a_clang_only_branch_is_written_under_that_branch(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """`#if defined(__clang__)` / `#if __has_feature(cxx_noexcept)` / `#define FX_HAVE_NOEXCEPT 1` / `#endif` /
    `#elif defined(__GNUC__)` ...: the parse is clang and took the clang branch; the inner chain copied alone
    asked g++'s preprocessor (nvcc's host pass) for `__has_feature`. The unit writes it under `defined(__clang__)`."""
    ds: dict[str, Any] = extract_and_build(tmp_path_factory, "blind19/clang_feature_branch")
    m = only_meta(ds, "scale_values")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
