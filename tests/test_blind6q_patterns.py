"""`extract --build` on tests/fixtures/blind6q: class patterns of a graph library's runtime and a 3D library's
logger found on the sixth blind set (issue 14, scripts/corpus_repos_blind6.txt), each reproduced by code of our
own and judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def host_member_body(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind6q/host_member_body")


def test_a_host_member_whose_body_names_what_the_parse_lacks_stays_declared(host_member_body: dict[str, Any]) -> None:
    """`operator double() const { CHECK_EQ(code_, kFloat) ...; }` with the checking header absent, re-exported by
    `using PodValue_::operator double;` in a derived class the kernel takes; and a logger's
    `template <typename... Args> static void Fail_(...) { ... fmtlib::format(...) ... }` called by a kept
    `__host__ __device__` member's host branch. The member was left out whole, so the using-declaration and the
    call named a member the class no longer had (`class "PodValue_" has no member "operator double"`); now only
    the body is left out and the declaration stays."""
    m = only_meta(host_member_body, "scale_by_arg")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    unit = (Path(host_member_body["out"]) / m["id"] / m["instantiations"][0]["unit"]).read_text()
    said = "; /* kernel-miner: host-only body left out: it names what the parse could not resolve */"
    for decl in ("operator double() const", "operator int64_t() const", "operator int() const",
                 "static void Fail_ [[noreturn]] (const char* file, int line, const char* format, Args&&... args)"):
        assert f"{decl} {said}" in unit, decl
    # what those bodies named is not in the unit's code (the trailing `// km:` lines may name the absent headers),
    # and the members nothing unresolved was named in keep theirs
    code = unit.split("// km:body-end")[0]
    assert "CHECK_EQ" not in code and "fmtlib" not in code
    assert "using PodValue_::operator double;" in unit


@pytest.fixture(scope="module")
def using_elsewhere(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind6q/using_elsewhere")


def test_a_using_directive_of_a_header_the_closure_takes_nothing_from_is_kept(using_elsewhere: dict[str, Any]) -> None:
    """`namespace graphlib { using namespace runtime; }` stands in segment.cuh, included before spmv.cuh, whose
    kernel names `accum_type_of<DType>` (graphlib::runtime's) from graphlib::ops without a directive of its own.
    The unit kept only the using-directives of files it took pieces from, and it takes nothing from segment.cuh,
    so `accum_type_of is not a template`; the directives of every file before the kernel are now considered."""
    m = only_meta(using_elsewhere, "spmv_rows")
    assert sorted(i["args"] for i in m["instantiations"]) == [["double"], ["float"]]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    unit = (Path(using_elsewhere["out"]) / m["id"] / m["instantiations"][0]["unit"]).read_text()
    assert "using namespace runtime;" in unit
