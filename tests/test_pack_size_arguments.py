"""A kernel's template argument written as the size of its host template's pack (`gAggregate<sizeof...(Tensors)>`
in an NMT toolkit's element-wise launchers): each instance of the host template gives the pack's size, not its
elements. Before, the pack's types were put in its place (`sizeof...(float *, float *)`: "the sizeof... operator
can be used only in a variadic template"). Our own fixture, the real libclang parse and nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def packs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "pack_size")


def test_a_packs_size_as_a_template_argument_is_the_number_of_its_elements(packs: dict[str, Any]) -> None:
    m = only_meta(packs, "sum_k")
    assert sorted(tuple(i["args"]) for i in m["instantiations"]) == [("2",), ("3",)], m["instantiations"]
    assert all(i["origin"] == "host_template" for i in m["instantiations"]), m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
