"""`extract --build` on tests/fixtures/overloaded_host_templates: two host function templates share a name, one over a
configuration class and one over numbers that builds the class in a local typedef and calls the first. The dependent
call `RunTiled<Config>(...)` names the whole overload set, and its written argument was also mapped onto the numeric
overload's parameters (`kItemsX = TileConfig<...>`): 12 of 16 instantiations of the kernel were garbage that does not
compile (a sparse linear algebra library of the twelfth set). Real libclang parse, real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "overloaded_host_templates")


def test_written_arguments_go_only_to_the_overload_that_takes_them(dataset: dict[str, Any]) -> None:
    meta = only_meta(dataset, "tile_copy")
    configs = sorted(i["template_args"]["Config"].replace(" ", "") for i in meta["instantiations"])
    assert configs == ["TileConfig<32,4,32>", "TileConfig<32/2,4,32>", "TileConfig<64,8,64>",
                       "TileConfig<64/2,8,64>"], configs
    assert set(build_statuses(meta).values()) == {"ok"}
