"""Kernels that the driver API loads from a module by name (`cuModuleGetFunction(&f, module, "name")`) and
launches through the handle (`cuLaunchKernel`): the sources name them only in a string, so they are not dead
code (`not_referenced`): the `cuLaunchKernel` of the handle the lookup filled is the launch, and one looked up but
never launched is `launch_missing: driver_api`, with the places that name it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import extract_and_build, only_meta


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "driver_module")


def test_a_kernel_looked_up_by_name_and_never_launched_states_driver_api(dataset: dict[str, Any]) -> None:
    """`fill_voxels` is looked up (`load_function(FUNC_FILL, "fill_voxels")`) but no `cuLaunchKernel` takes its
    handle: no launch, and the reason names the lookup."""
    assert dataset["proc"].returncode == 0, dataset["proc"].stdout + dataset["proc"].stderr
    m = only_meta(dataset, "fill_voxels")
    assert m["launches"] == []
    missing = m["launch_missing"]
    assert missing["reason"] == "driver_api", missing
    assert missing["mentions"] == ["volume_host.cpp:15"], missing
    assert '"fill_voxels"' in missing["detail"]
    assert [i["build"]["status"] for i in m["instantiations"]] == ["ok"]


def test_a_cuLaunchKernel_of_the_handle_the_lookup_filled_is_the_launch(dataset: dict[str, Any]) -> None:
    """`load_function(FUNC_SCALE, "scale_voxels")` fills `functions[FUNC_SCALE]` (FUNC_SCALE is the word no other
    lookup call holds); `cuLaunchKernel(functions[FUNC_SCALE], (n + 127) / 128, 1, 1, 128, 1, 1, 0, 0, ...)` is
    its launch, with that configuration, and the host wrapper takes its block."""
    m = only_meta(dataset, "scale_voxels")
    assert "launch_missing" not in m, m.get("launch_missing")
    [launch] = m["launches"]
    assert (launch["kind"], launch["path"], launch["line"], launch["launcher"]) == \
        ("cuLaunchKernel", "volume_host.cpp", 22, "scale"), launch
    assert launch["config"] == {"grid": "(n + 127) / 128", "block": "128", "shared_mem": "0", "stream": "0"}, launch
    assert launch["values"] == {"block": 128, "shared_mem": 0}, launch
    [inst] = m["instantiations"]
    assert inst["build"]["status"] == "ok", inst["build"]
    wrapper = (Path(dataset["out"]) / m["id"] / inst["host_wrapper"]).read_text(encoding="utf-8")
    assert re.search(r"\(256, 1, 1, 128, 1, 1, 0, nullptr", wrapper), wrapper  # grid 256 (its default), block 128


def test_a_loader_method_in_a_namespace_and_the_variable_it_initializes(dataset: dict[str, Any]) -> None:
    """`CUfunction clear_fn = loader.get("clear_voxels");` where `vol::Loader::get` calls cuModuleGetFunction: a
    lookup, and `cuLaunchKernel(clear_fn, n / 64, 1, 1, 64, ...)` its launch."""
    m = only_meta(dataset, "clear_voxels")
    [launch] = m["launches"]
    assert (launch["launcher"], launch["config"]["grid"], launch["config"]["block"]) == ("clear", "n / 64", "64"), \
        launch


def test_a_name_only_a_comment_or_another_call_holds_is_still_named_nowhere(dataset: dict[str, Any]) -> None:
    """`retired_voxels` is in a comment beside the lookups and passed to `log_name`, whose body looks nothing up."""
    assert only_meta(dataset, "retired_voxels")["launch_missing"]["reason"] == "not_referenced"
