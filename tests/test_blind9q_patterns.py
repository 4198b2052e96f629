"""`extract --build` on tests/fixtures/blind9q: patterns found on the ninth set of repositories (issue 14,
scripts/corpus_repos_blind9.txt, development repos since session 12), each reproduced by code of our own and judged
by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind9q")


def _units(dataset: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    folder = Path(dataset["out"]) / meta["id"]
    return [(folder / inst["unit"]).read_text(encoding="utf-8") for inst in meta["instantiations"]]


def test_a_using_declaration_of_a_standard_name_brings_its_header(dataset: dict[str, Any]) -> None:
    """`using std::bit_cast;` in a project header (C++20 from meson's `cpp_std`) of which the kernel needs nothing
    else: the unit kept the using-declaration but not `<bit>` ("namespace std has no member bit_cast")."""
    m = only_meta(dataset, "scale_kernel")
    (unit,) = _units(dataset, m)
    assert "using std::bit_cast;" in unit and "#include <bit>" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_an_argument_class_from_another_translation_unit_brings_its_headers(dataset: dict[str, Any]) -> None:
    """The kernel's closure is taken in the first TU that includes its header, which launches nothing; the TU that
    launches it with `OpMax<float>` gives the argument's class and its member specializations (`-FLT_MAX`,
    `INT_MIN`) and, now, the `<float.h>` / `<limits.h>` its header includes (was "identifier FLT_MAX is
    undefined" in every instantiation)."""
    m = only_meta(dataset, "block_reduce")
    assert len(m["instantiations"]) == 3, [i["args"] for i in m["instantiations"]]
    assert all("#include <float.h>" in u and "#include <limits.h>" in u for u in _units(dataset, m))
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_bundled_toolkit_detail_header_is_included_through_its_public_header(dataset: dict[str, Any]) -> None:
    """A project's copy of a toolkit header (`nvtx3/nvToolsExtPayload.h`) whose macro lives in an implementation
    header that refuses a direct include (`#error Never include this file directly`): the unit includes the
    toolkit's public header, not the detail one."""
    m = only_meta(dataset, "fill_slots")
    (unit,) = _units(dataset, m)
    assert "#include <nvtx3/nvToolsExtPayload.h>" in unit and "nvtxDetail" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
