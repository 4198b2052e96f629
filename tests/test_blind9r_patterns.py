"""`extract --build` on tests/fixtures/blind9r: patterns found on the ninth set of repositories (issue 14,
scripts/corpus_repos_blind9.txt, development data; session 13), each reproduced by code of our own and judged by the
real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from miner.source import configured_headers
from tests.conftest import FIXTURES, build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

CONFIGURED = FIXTURES / "blind9r" / "configured_api"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind9r")


def test_a_template_with_declarations_is_written_as_the_build_writes_it() -> None:
    """`commkit.h.in` holds types and prototypes beside its version macros. Its own placeholders (`${commkit:Code}`)
    are replaced by a `cmake -DCODE=${COMMKIT_VERSION_CODE} -P` script (`math(EXPR)` over `project(VERSION)`) and by
    a Makefile's `sed` (`$(COMMKIT_API)` from a make fragment that CMake also reads with `file(READ)`); a value a
    shell command computes is unknown: that `#define` is left out, and inside a string literal it becomes empty."""
    text = configured_headers.configured_text(str(CONFIGURED / "src" / "commkit.h.in"), str(CONFIGURED))
    assert text is not None
    for line in ("#define COMMKIT_MAJOR 3", "#define COMMKIT_VERSION_CODE 30201", "#define COMMKIT_API_LEVEL 7",
                 '#define COMMKIT_NAME "commkit "', "#define COMMKIT_WIDE_SLOTS", "#define COMMKIT_CHECKED 0",
                 "typedef struct commkitWindow_st* commkit_window_t;"):
        assert line in text.splitlines(), line
    assert "#define COMMKIT_BUILD_STAMP" not in text and "${" not in text and "@" not in text


def test_a_configured_header_with_declarations_reaches_the_units(dataset: dict[str, Any]) -> None:
    """`#include "commkit.h"`, which only the build writes: its types were undefined in every unit ("identifier
    commkit_team_t is undefined") and the version test chose the branch that cannot compile. The header is written
    as the build would into the cache, parsed as project context and inlined where used."""
    m = only_meta(dataset, "fold_slots")
    (unit,) = unit_texts(dataset, m)
    assert "#define COMMKIT_VERSION_CODE 30201" in unit and "} commkit_team_t;" in unit
    assert "km:toolkit-conflict" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_project_template_wins_over_the_parse_shim_of_that_name(dataset: dict[str, Any]) -> None:
    """A serial build's own `mpi.h` from `mpi.h.in`: the parse shim of that name (which stands in for the real MPI
    of a project that only uses it) hid the template, and `MPI_Layout` was undefined."""
    m = only_meta(dataset, "spread_layout")
    (unit,) = unit_texts(dataset, m)
    assert "} MPI_Layout;" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
