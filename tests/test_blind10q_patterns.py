"""`extract --build` on tests/fixtures/blind10q: patterns found on the tenth set of repositories (issue 14,
scripts/corpus_repos_blind10.txt, development repos since session 13), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind10q")


def test_a_same_named_header_is_the_one_beside_its_includer(dataset: dict[str, Any]) -> None:
    """Two projects of one tree each include their own `"types.h"` (found by no -I the miner knows): the first
    one found became a shared include dir and answered the other project's include too, whose kernel then
    lacked its `Det` and `kDetFloats` ("identifier Det is undefined"). Each translation unit now gets the
    header nearest to it."""
    for name, needs in (("scale_boxes", "kBoxFloats"), ("decode_dets", "kDetFloats")):
        m = only_meta(dataset, name)
        (unit,) = unit_texts(dataset, m)
        assert needs in unit.split("// the kernel")[0], unit
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
        own = m["source"]["path"].split("/")[1]
        assert m["parse_context"]["include_dirs"][0].endswith(f"{own}/include"), m["parse_context"]
