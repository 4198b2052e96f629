"""Kernels that the driver API loads from a module by name (`cuModuleGetFunction(&f, module, "name")`) and
launches through the handle (`cuLaunchKernel`): the sources name them only in a string, so they are not dead
code (`not_referenced`) but `launch_missing: driver_api`, with the places that name them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import extract_and_build, only_meta


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "driver_api")


def test_a_kernel_looked_up_by_name_in_a_module_is_a_driver_api_launch(dataset: dict[str, Any]) -> None:
    assert dataset["proc"].returncode == 0, dataset["proc"].stdout + dataset["proc"].stderr
    for name, line in (("fill_voxels", 15), ("scale_voxels", 17)):
        m = only_meta(dataset, name)
        assert m["launches"] == []
        missing = m["launch_missing"]
        assert missing["reason"] == "driver_api", missing
        assert missing["mentions"] == [f"volume_host.cpp:{line}"], missing
        assert f'"{name}"' in missing["detail"]
        assert [i["build"]["status"] for i in m["instantiations"]] == ["ok"]


def test_a_name_only_a_comment_holds_is_still_named_nowhere(dataset: dict[str, Any]) -> None:
    assert only_meta(dataset, "retired_voxels")["launch_missing"]["reason"] == "not_referenced"
