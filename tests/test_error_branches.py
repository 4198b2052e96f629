"""`extract --build` on tests/fixtures/error_branches: a kernel whose loop a build option picks, with `#else #error
Must pick ...` when none is given; the option comes from the build system alone. The parse took the `#else` and the
unit stopped at the `#error` (a memory-bandwidth benchmark of the eleventh set). Now the kernel is parsed again with
the chain's first branch on, and the unit carries that define. Real libclang parse, real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "error_branches")


def test_the_first_branch_of_a_chain_ending_in_error_is_taken(dataset: dict[str, Any]) -> None:
    meta = only_meta(dataset, "triad")
    assert "GRID_STRIDE" in meta["parse_context"]["defines"], meta["parse_context"]
    assert set(build_statuses(meta).values()) == {"ok"}, build_statuses(meta)
    (unit,) = unit_texts(dataset, meta)
    assert "GRID_STRIDE" in unit.split("km:body-begin", 1)[0]


def test_earlier_branches_of_a_chain() -> None:
    from miner.frontends.treesitter_frontend import activating_defines, earlier_branches

    text = b"#if defined(A)\nint a;\n#elif defined(B)\nint b;\n#else\n#error none\n#endif\n"
    assert [activating_defines(text, at) for at in earlier_branches(text, text.index(b"#error"))] == [["A"], ["B"]]
    assert earlier_branches(text, text.index(b"int b")) == [text.index(b"int a")]
    assert earlier_branches(b"#ifndef A\n#error need A\n#endif\n", 10) == []
