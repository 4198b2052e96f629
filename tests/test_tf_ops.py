"""`extract --build` on tests/fixtures/tf_ops: a TensorFlow-style custom op of our own (`scale_op_gpu.cu.cc`, TF's
`.cu.cc` naming), whose kernels use gpu_kernel_helper.h's vocabulary (GPU_1D_KERNEL_LOOP, GPU_AXIS_KERNEL_LOOP,
GpuGridRangeY, ldg, int64, GpuAtomicAdd) and are launched by functor partial specializations through
`TF_CHECK_OK(GpuLaunchKernel(k, grid, block, smem, stream, args...))` with GetGpuLaunchConfig, instantiated by
`template struct Functor<GPUDevice, T>;` (one list through TF_CALL_GPU_NUMBER_TYPES). TensorFlow's headers are not
there: the parse reads our shim of them (shims/km_tf_parse.h) and the units inline our unit shim
(unit/km_tf_unit.h). Judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def tf_ops(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "tf_ops")



def test_the_cu_cc_file_is_parsed_as_cuda(tf_ops: dict[str, Any]) -> None:
    """TensorFlow names its CUDA translation units `*.cu.cc`: both kernels are found there, under `#if GOOGLE_CUDA`
    (which TensorFlow's CUDA build defines), by the CUDA parse (`-x cuda`)."""
    for name in ("ScaleAndCountKernel", "ShiftRowsKernel"):
        m = only_meta(tf_ops, name)
        assert m["source"]["path"].endswith("scale_op_gpu.cu.cc"), m["source"]
        assert "GOOGLE_CUDA" in m["parse_context"]["defines"], m["parse_context"]


def test_functor_instantiations_reach_the_kernels(tf_ops: dict[str, Any]) -> None:
    """`template struct ScaleAndCount<GPUDevice, T>;` instantiates the partial specialization written
    `ScaleAndCount<GPUDevice, T>` with `typedef Eigen::GpuDevice GPUDevice;`: the typedef in the pattern is matched
    as the type it names, so each explicit instantiation reaches the launch (before: one `float` guess)."""
    scale = only_meta(tf_ops, "ScaleAndCountKernel")
    assert sorted(tuple(i["args"]) for i in scale["instantiations"]) == [("Eigen::half",), ("double",), ("float",)]
    shift = only_meta(tf_ops, "ShiftRowsKernel")
    assert sorted(tuple(i["args"]) for i in shift["instantiations"]) == [("float",), ("int",)]
    assert {i["origin"] for i in scale["instantiations"] + shift["instantiations"]} == {"host_template"}


def test_gpu_launch_kernel_is_a_launch_with_its_configuration(tf_ops: dict[str, Any]) -> None:
    """`TF_CHECK_OK(GpuLaunchKernel(k<T>, grid, block, smem, stream, args...))` is recorded as `k<<<grid, block,
    smem, stream>>>(args...)` would be: grid, block, shared memory, stream and the arguments by parameter."""
    (launch,) = only_meta(tf_ops, "ScaleAndCountKernel")["launches"]
    assert launch["config"] == {"grid": "(config.block_count)", "block": "(config.thread_per_block)",
                                "shared_mem": "(0)", "stream": "(d.stream())"}, launch
    assert "GetGpuLaunchConfig(count, d)" in launch["formula"]["grid"], launch
    assert [a["expr"] for a in launch["args"]] == ["count", "in.data()", "factor", "out.data()", "hits"], launch
    (launch,) = only_meta(tf_ops, "ShiftRowsKernel")["launches"]
    assert (launch["config"]["grid"], launch["config"]["block"]) == ("(grid)", "(block)"), launch
    assert "dim3(32, 8)" in launch["formula"]["block"], launch


def test_units_inline_the_tf_shim_and_build(tf_ops: dict[str, Any]) -> None:
    """The units carry no TensorFlow header: the names the kernels use (the loops, `ldg`, `int64`, `GpuAtomicAdd`,
    `Eigen::half` of the half instantiation) come from the unit shim, and every unit builds with nvcc."""
    for name, names in (("ScaleAndCountKernel", {"GPU_1D_KERNEL_LOOP", "ldg", "int64", "GpuAtomicAdd"}),
                        ("ShiftRowsKernel", {"GPU_AXIS_KERNEL_LOOP", "GpuGridRangeY", "ldg", "int64"})):
        m = only_meta(tf_ops, name)
        assert m["closure"]["frameworks"] == ["tf"], m["closure"]
        assert names <= set(m["closure"]["shims"]), m["closure"]["shims"]
        for unit in unit_texts(tf_ops, m):
            assert "kernel-miner unit shim: the TensorFlow and Eigen names" in unit
            assert "#include <tensorflow" not in unit and "km_torch_unit" not in unit
            assert "c10::Half" not in unit  # (torch's shim is not inlined)
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
