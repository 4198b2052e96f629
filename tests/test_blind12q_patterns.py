"""`extract --build` on tests/fixtures/blind12q: patterns found on the twelfth set of repositories (issue 14,
scripts/corpus_repos_blind12.txt, development repos since session 14), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind12q")


def test_kernels_in_a_file_a_source_includes_are_found_whatever_its_suffix(dataset: dict[str, Any]) -> None:
    """`relax_driver.cu` includes `kernel_parts/relax.knl`, which includes `relax_tail.knl`: the kernels live in
    files of a suffix no list names, so the folder walk never read them ("no kernels found"). A file a source of
    the walked folder includes is a source whatever its suffix."""
    for name in ("relax_cells", "relax_clamp"):
        m = only_meta(dataset, name)
        assert m["source"]["path"].endswith(".knl"), m["source"]
        assert m["launches"] and m["launches"][0]["path"].endswith("relax_driver.cu"), m["launches"]
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
