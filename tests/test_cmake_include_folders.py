"""A library vendored twice in one project: the copy a CMake build's `include_directories` selects is the one the
parse, the context discovery and the unit use (source.cmake_includes). Seen on an NMT toolkit that vendors a
logging library in its old layout (`3rd_party/log/log.h`, declarations, with out-of-line definitions in
`details/`) and its newer one (`3rd_party/log/include/log/log.h`): `"log/log.h"` matched both by its tail and the
first by name was the newer copy, which the build never includes. Our own fixture, the real libclang parse and nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def whole(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "two_vendored_copies")


@pytest.fixture(scope="module")
def from_src(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Only `src/` mined, the checkout given as --project: the headers are context files, found by discovery."""
    return extract_and_build(tmp_path_factory, "two_vendored_copies", mined="src")


def _assert_old_layout(dataset: dict[str, Any]) -> None:
    m = only_meta(dataset, "scaled")
    assert m["diagnostics"]["errors"] == 0, m["diagnostics"]
    (unit,) = unit_texts(dataset, m)
    # The declaration of the copy the build includes comes before its out-of-line definition, and the copy
    # constructor the launch runs keeps its body (it was left out as naming "what the parse could not resolve").
    assert "int level(const char *name);" in unit, unit
    assert unit.index("int level(const char *name);") < unit.index("inline int logx::level(const char *name)"), unit
    assert 'if (other.s < 0.f) logx::level("negative");' in unit, unit
    assert "severity" not in unit, unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_the_include_graph_takes_the_copy_the_cmake_build_includes(whole: dict[str, Any]) -> None:
    """Both copies are inputs: the include graph answered `"logx/logx.h"` with the newer layout (the parse then
    had "no member named 'level' in namespace 'logx'"), now with `include_directories(third)`'s."""
    _assert_old_layout(whole)


def test_context_discovery_takes_the_copy_the_cmake_build_includes(from_src: dict[str, Any]) -> None:
    """Only `src/` is mined: context discovery found the newer layout's header by its tail, so the closure knew
    none of the old layout's files."""
    _assert_old_layout(from_src)
