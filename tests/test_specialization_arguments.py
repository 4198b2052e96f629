"""What an explicit specialization of a function template names in its template argument list comes with it into
the unit. Seen on an NMT toolkit's type tags (`template <> inline bool matchType<packed16>(Type)` beside the
`float` one): the closure takes a function template's whole specialization set, and libclang 18 exposes no cursor
for a function specialization's written arguments, so `packed16` was left out ("identifier is undefined"). Our
own fixture, the real libclang parse and nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def specialized(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "specialized_types")


def test_a_type_named_only_by_a_function_specializations_arguments_comes_with_it(
        specialized: dict[str, Any]) -> None:
    m = only_meta(specialized, "fill")
    (unit,) = unit_texts(specialized, m)
    assert "struct packed16 { uint16_t x; };" in unit, unit
    assert unit.index("struct packed16") < unit.index("matches<packed16>"), unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
