"""`extract --build` on tests/fixtures/blind22: patterns found on the twenty-second set of repositories (issue 14,
scripts/corpus_repos_blind22.txt, measured before any change in session 21), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def macro_after_member(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind22/macro_after_member")


@_nvcc
def test_a_macro_defined_after_a_header_stays_after_the_template_that_declares_its_name(
        macro_after_member: dict[str, Any]) -> None:
    """`#define LANES 8` follows the `#include` of a header whose class template declares a member `LANES`: the
    unit keeps the macro after that template (moved in front of it, the member's declaration reads
    `static const uint32_t 8 = width;`, "expected an identifier"), and the unit builds."""
    m = only_meta(macro_after_member, "spread_lanes")
    assert build_statuses(m) == {"default": "ok"}, m["instantiations"]
    [text] = unit_texts(macro_after_member, m)
    assert text.index("static const uint32_t LANES = width;") < text.index("#define LANES 8"), text
