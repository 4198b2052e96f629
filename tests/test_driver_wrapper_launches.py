"""Driver-API launches the direct `cuLaunchKernel(handle, ...)` search missed: through the project's own wrapper
around `cuLaunchKernel` whose handle is a parameter (one level, and a function handing its own parameter on to it:
two), and through a table of handles indexed by a variable. A variable index a switch pins (`op = OP_FILL;` in each
case) launches each constant it is given; one the code does not pin (read at run time) launches no kernel for sure,
so a kernel of that table with no other launch is `launch_missing: driver_api_table`. HIP's spelling
(`hipModuleGetFunction`, `hipModuleLaunchKernel`) goes the same way. Fixture `driver_wrappers`."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import extract_and_build, only_meta


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "driver_wrappers")


def _one_launch(dataset: dict[str, Any], name: str) -> dict[str, Any]:
    m = only_meta(dataset, name)
    assert "launch_missing" not in m, m.get("launch_missing")
    assert [i["build"]["status"] for i in m["instantiations"]] == ["ok"], m["instantiations"]
    [launch] = m["launches"]
    return launch


def test_a_call_of_the_projects_cuLaunchKernel_wrapper_is_the_launch(dataset: dict[str, Any]) -> None:
    """`dev_->launch(rows_, row_block, row_grid, 2, out, in)` where `rows_ = dev_->lookup("blur_rows")` and
    `Device::launch(CUfunction fn, Dims block, Dims grid, int count, ...)` calls `cuLaunchKernel(fn, grid.x, grid.y,
    grid.z, block.x, block.y, block.z, 0, stream_, ...)`: the call is the launch, the wrapper's grid and block
    parameters replaced by the call's arguments."""
    assert dataset["proc"].returncode == 0, dataset["proc"].stdout + dataset["proc"].stderr
    launch = _one_launch(dataset, "blur_rows")
    assert (launch["kind"], launch["launcher"], launch["path"], launch["line"]) == \
        ("cuLaunchKernel", "Filters::blur", "device.cpp", 63), launch
    assert launch["config"] == {"grid": "row_grid", "block": "row_block", "shared_mem": "0", "stream": "stream_",
                                "through": "Device::launch"}, launch


def test_a_function_handing_its_parameter_on_to_the_wrapper_is_a_wrapper_too(dataset: dict[str, Any]) -> None:
    """`run(cols_, Dims{1, (height + 63) / 64, 1}, out, in)` where `Filters::run(CUfunction f, Dims grid, ...)` calls
    `dev_->launch(f, Dims{1, 64, 1}, grid, 2, out, in)`: two levels, the block the inner call's, the grid the outer
    call's argument; the lookup's literal on the line after the call's `(`."""
    launch = _one_launch(dataset, "blur_cols")
    assert (launch["launcher"], launch["line"]) == ("Filters::blur", 64), launch
    assert launch["config"]["grid"] == "(Dims{1, (height + 63) / 64, 1})", launch
    assert launch["config"]["block"] == "(Dims{1, 64, 1})", launch
    assert launch["config"]["through"] == "Filters::run -> Device::launch", launch


def test_a_table_index_a_switch_pins_launches_each_constant(dataset: dict[str, Any]) -> None:
    """`cuLaunchKernel(ops[op], ...)` where the local `op` is given `OP_FILL` in one case and `OP_SCALE` in the
    other: both kernels are launched there, each saying which assignment pins it."""
    for name, pinned in (("fill_values", "op = OP_FILL"), ("scale_values", "op = OP_SCALE")):
        launch = _one_launch(dataset, name)
        assert (launch["launcher"], launch["path"], launch["line"]) == ("apply", "ops.cpp", 28), launch
        assert launch["config"]["pinned"] == pinned, launch
        assert (launch["config"]["block"], launch["values"]["block"]) == ("256", 256), launch


def test_a_wrapper_whose_parameter_is_the_table_index(dataset: dict[str, Any]) -> None:
    """`run_op(OP_CLAMP, v, n)` where `run_op(int op, ..., bool sync)` launches `ops[op]` (the call leaves the
    declared default of `sync` out): the call is the launch of the entry `OP_CLAMP` names."""
    launch = _one_launch(dataset, "clamp_values")
    assert (launch["launcher"], launch["line"], launch["config"]["through"]) == ("clamp", 39, "run_op"), launch
    assert (launch["config"]["grid"], launch["values"]["block"]) == ("n / 64", 64), launch


def test_a_table_entry_only_an_unpinned_index_may_launch_is_driver_api_table(dataset: dict[str, Any]) -> None:
    """`shift_values` is looked up into `ops[OP_SHIFT]`, and the only launch that could take it is `ops[op]` with
    `op = read_op(script, s)`: not launched for sure, and the reason says which launch picks at run time."""
    m = only_meta(dataset, "shift_values")
    assert m["launches"] == []
    missing = m["launch_missing"]
    assert missing["reason"] == "driver_api_table", missing
    assert missing["mentions"] == ["ops.cpp:18"], missing
    assert "`ops[op]` at ops.cpp:47" in missing["detail"], missing


def test_hips_module_launch_through_a_wrapper(dataset: dict[str, Any]) -> None:
    """`hipModuleGetFunction(&negate_fn, hip_module, "negate_values")`, then `hip_run(negate_fn, (n + 31) / 32,
    args)` where `hip_run` calls `hipModuleLaunchKernel(kernel, blocks, 1, 1, 32, ...)`."""
    launch = _one_launch(dataset, "negate_values")
    assert (launch["kind"], launch["launcher"], launch["line"]) == ("hipModuleLaunchKernel", "negate", 21), launch
    assert (launch["config"]["grid"], launch["config"]["through"]) == ("((n + 31) / 32)", "hip_run"), launch
