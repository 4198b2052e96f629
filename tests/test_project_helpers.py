"""`extract --build` on tests/fixtures/project_helpers: a C++ project with its own bundled hash-table header and
launch helpers (issue 14, the former blind set), each pattern a kernel of our own, judged by the real libclang
parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "project_helpers")


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    return (Path(dataset["out"]) / meta["id"] / "units" / inst / "unit.cu").read_text(encoding="utf-8")


def test_names_used_only_in_noexcept_and_alignas_of_an_inlined_library_come_along(dataset: dict[str, Any]) -> None:
    m = only_meta(dataset, "slot_values")
    assert build_statuses(m) == {"int_float": "ok"}, build_statuses(m)
    body = _unit(dataset, m, "int_float")
    body = body[body.index("// km:body-begin"):]
    # the library was inlined (it includes a project header), with what only unvisited argument lists name
    assert "struct nothrow" in body and "kSlotAlign = 16" in body and "using std::swap;" in body
