"""`extract --build` on tests/fixtures/blind27: patterns found on the twenty-seventh set of repositories (issue 14,
scripts/corpus_repos_blind27.txt, last session's holdout), each reproduced by code of our own and judged by the
real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def xmacro_members(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind27/xmacro_members", mined="src/kernel")


@_nvcc
def test_a_list_header_included_inside_a_declaration_is_inlined(xmacro_members: dict[str, Any]) -> None:
    """`enum FilmPass`, `struct FilmExposure` and a `switch` each take their entries from `#include
    "kernel/film/passes.h"` (spelled from `src/`, which the CMake build gives with `-I`; the mined folder is
    `src/kernel`) under a `FILM_PASS` of their own, and that list includes a second one. The unit kept the
    directive inside the copied declarations and nvcc stopped at it ("No such file or directory"). The lists'
    text takes each directive's place, the nested one too, and the unit builds. The list is also included at the
    top level, where it declares a default per pass that the kernel uses: the closure takes those declarations as
    pieces of the list's own file, and its inclusions inside declarations are still inlined. The list includes a
    guarded header of its types (`pass_types.h`), whose declarations the unit has already: that directive goes."""
    m = only_meta(xmacro_members, "tonemap_passes")
    (unit,) = unit_texts(xmacro_members, m)
    body = unit.split("km:body-begin", 1)[1]
    assert "#include" not in body, unit
    assert body.count("kernel-miner: kernel/film/passes.h") == 3, unit
    assert body.count("kernel-miner: kernel/film/passes_extra.h") == 3, unit
    assert "default_depth" in body and body.count("pass_types.h included before") == 3, unit
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def version_branch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind27/version_branch")


@_nvcc
def test_a_kernel_under_a_dependency_version_test_says_which_branch_and_why(version_branch: dict[str, Any]) -> None:
    """`window_exchange` is written under `#if COLL_VERSION_CODE >= COLL_VERSION(3, 2, 0)`, macros of a library header
    the project includes but does not contain: the parse skips the branch, tree-sitter alone finds the kernel, and
    the stated reason was only "an inactive #if branch". It names the directive, its line and the macros no project
    file defines; the kernel outside the branch is parsed and launched as before."""
    m = only_meta(version_branch, "window_exchange")
    missing = m["launch_missing"]
    assert missing["reason"] == "no_ast", missing
    assert "`#if COLL_VERSION_CODE >= COLL_VERSION(3, 2, 0)`, src/exchange.cu:9" in missing["detail"], missing
    assert "names COLL_VERSION_CODE, COLL_VERSION, which no file of the project defines" in missing["detail"], missing
    other = only_meta(version_branch, "scale_chunks")
    assert other["frontend"] == "clang" and other["launches"], other
