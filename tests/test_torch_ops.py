"""`extract --build` on tests/fixtures/torch_ops: PyTorch-op style kernels (issue 14's findings on a further
set of PyTorch op kernels), each reproduced by a kernel of our own and judged by the real libclang parse
and the real nvcc: every dispatched type builds (float, double and Half, the int64_t-index variants, the
backward that accumulates with at::native::fastAtomicAdd), launch grid/block come out as numbers or a
formula the generated wrapper evaluates, and a unit that fails says why in `unresolved`."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from miner.validate.wrapper import launch_config
from tests.conftest import FIXTURES, build_statuses, extract_and_build, load_dataset, run_miner
from tests.conftest import only_meta as _meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "torch_ops")


def _origins(meta: dict[str, Any]) -> dict[str, str]:
    return {i["id"]: i["origin"] for i in meta["instantiations"]}


def _wrapper_cfg(meta: dict[str, Any]) -> dict[str, Any]:
    inst = meta["instantiations"][0]
    return launch_config(meta, list((inst.get("launcher") or {}).get("params") or []))


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    return (dataset["out"] / meta["id"] / "units" / inst / "unit.cu").read_text(encoding="utf-8")


def test_backward_with_fast_atomic_add_builds_for_float_double_and_half(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "patch_pool_backward_kernel")
    assert _origins(m) == {"float": "dispatch", "double": "dispatch", "half": "dispatch"}, _origins(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    for inst in ("float", "double", "half"):  # the shim is in every unit, not only the Half one
        unit = _unit(dataset, m, inst)
        assert "namespace native" in unit and "fastAtomicAdd" in unit, inst
        # the Half atomicAdd the shim's dependent call finds by ordinary lookup is declared before it
        assert unit.index("atomicAdd(c10::Half *p") < unit.index("void fastAtomicAdd("), inst
    # with fast atomics a Half is added as half of an aligned __half2 pair, as ATen's KernelUtils.cuh does
    assert "atomicAdd(reinterpret_cast<__half2 *>(target_addr), value2)" in _unit(dataset, m, "half")


def test_int64_index_variants_build_for_half(dataset: dict[str, Any]) -> None:
    """`Half op int64_t` (index_t = int64_t): the variant the op runs on large tensors."""
    m = _meta(dataset, "warp_sample_kernel")
    ids = {f"{t}_{i}" for t in ("float", "double", "half") for i in ("int", "long")}
    assert set(_origins(m)) == ids and set(_origins(m).values()) == {"dispatch"}, _origins(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_every_type_of_floating_types_and_half_is_dispatched_beside_host_checks(dataset: dict[str, Any]) -> None:
    """Host checks around the dispatch (at::TensorArg, checkAllSameGPU, CUDAGuard) drop no dispatched type."""
    m = _meta(dataset, "patch_pool_forward_kernel")
    assert _origins(m) == {"float": "dispatch", "double": "dispatch", "half": "dispatch"}, _origins(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_launch_from_min_of_ceil_div_is_a_formula_the_wrapper_evaluates(dataset: dict[str, Any]) -> None:
    """`dim3 grid(std::min(ceil_div(static_cast<int64_t>(n), static_cast<int64_t>(512)), ...4096)))`:
    the closing parentheses of the initializer are kept (the formula was unbalanced and dropped), and
    `dim3 block(512)` is the number 512 (the wrapper fell back to 256)."""
    for name in ("patch_pool_forward_kernel", "patch_pool_backward_kernel"):
        m = _meta(dataset, name)
        launch = m["launches"][0]
        assert launch["values"]["block"] == 512, launch
        assert launch["formula"]["grid"].count("(") == launch["formula"]["grid"].count(")"), launch["formula"]
        cfg = _wrapper_cfg(m)
        assert (cfg["grid"], cfg["block"]) == ("min(-(-nthreads // 512), 4096)", "512"), cfg


def test_square_grid_and_namespace_constant_block(dataset: dict[str, Any]) -> None:
    """`dim3 blocks(col_blocks, col_blocks); dim3 threads(threadsPerBlock);` with the namespace-scope
    `int const threadsPerBlock = sizeof(unsigned long long) * 8;`: block 64 and a 2-D grid over n_boxes."""
    m = _meta(dataset, "mask_overlap_kernel")
    assert set(build_statuses(m).values()) == {"ok"} and len(m["instantiations"]) == 3, build_statuses(m)
    launch = m["launches"][0]
    assert launch["values"]["block"] == 64, launch
    cfg = _wrapper_cfg(m)
    assert (cfg["grid"], cfg["block"]) == ("(-(-n_boxes // 64), -(-n_boxes // 64))", "64"), cfg
    rows = 130  # the wrapper's grid expression is Python over the kernel's parameters
    assert eval(cfg["grid"], {}, {"n_boxes": rows}) == (3, 3)  # noqa: S307 - our own generated expression


def test_a_namespace_constant_block_size_is_put_in(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "warp_sample_kernel")
    assert all(launch["values"]["block"] == 512 for launch in m["launches"]), m["launches"]
    assert _wrapper_cfg(m)["block"] == "512"


def test_a_launch_statement_that_does_not_parse_keeps_every_dispatched_type(dataset: dict[str, Any]) -> None:
    """`<<<fixlaunch::grid_for(n, 256), 256>>>` with the helper declared nowhere in the sources: clang drops
    the whole statement, so the kernel had no launch and one inferred instantiation (double and Half were
    silently lost). The statement is read back from the text, the dispatch's aliases give the types."""
    m = _meta(dataset, "row_scale_kernel")
    assert _origins(m) == {"float": "dispatch", "double": "dispatch", "half": "dispatch"}, _origins(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    assert [launch["template_args"] for launch in m["launches"]] == [["float"], ["double"], ["c10::Half"]]
    assert all(launch["values"]["block"] == 256 for launch in m["launches"]), m["launches"]
    assert "launch_missing" not in m or not m["launch_missing"], m.get("launch_missing")


def test_a_unit_that_fails_names_why_in_unresolved(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "tile_sum_kernel")
    assert _origins(m) == {"float": "dispatch", "double": "dispatch"}, _origins(m)
    assert all(i["build"]["status"] == "failed" for i in m["instantiations"]), build_statuses(m)
    built = [u for u in m["unresolved"] if u["reason"].startswith("build:")]
    assert built and built[0]["symbol"] == "FIX_TILE", m["unresolved"]


def test_thc_ceil_div_in_device_code_comes_from_the_unit_shim(dataset: dict[str, Any]) -> None:
    """THCCeilDiv (THC/THCDeviceUtils.cuh) is host and device: an op that sizes its mask rows with it in
    the kernel built only where the parse shim had it (host-only, and absent from the unit shim)."""
    m = _meta(dataset, "band_mask_kernel")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    assert "THCCeilDiv" in m["closure"]["shims"], m["closure"]["shims"]
    cfg = _wrapper_cfg(m)
    assert (cfg["grid"], cfg["block"]) == ("(-(-n // 64), -(-n // 64))", "64"), cfg


def test_types_under_the_builds_own_nvcc_define_reach_the_unit(dataset: dict[str, Any]) -> None:
    """`args['nvcc'] = ['-O3', '-DFIX_WITH_CUDA']` in the extension's setup.py, and the cell types under
    `#ifdef FIX_WITH_CUDA`: the parse and the unit are built with that define (was: cell_t undefined)."""
    m = _meta(dataset, "cell_to_code_kernel")
    assert "-DFIX_WITH_CUDA" in m["build_flags"]["nvcc"], m.get("build_flags")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)


def test_aten_atomics_for_int64_and_multiply_and_a_parse_only_namespace(dataset: dict[str, Any]) -> None:
    """atomicAdd(int64_t *, int64_t) and gpuAtomicMul (ATen/cuda/Atomic.cuh) come from the unit shim;
    `using namespace at::indexing;` (a namespace only the parse shim has) stays out of the unit."""
    m = _meta(dataset, "bin_stats_kernel")
    assert _origins(m) == {"float": "dispatch", "double": "dispatch", "half": "dispatch"}, _origins(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    for inst in ("float", "half"):
        unit = _unit(dataset, m, inst)
        assert "using namespace at::indexing" not in unit
        assert "gpuAtomicMul(c10::Half *address" in unit and "atomicAdd(int64_t *p" in unit


def test_a_dependent_atomic_add_into_int64_gets_atens_overload(dataset: dict[str, Any]) -> None:
    """`atomicAdd(sums + i, static_cast<out_t>(v))` with out_t = int64_t, short or unsigned char (a project
    dispatch binding two aliases per case): CUDA has no atomicAdd for them, ATen's Atomic.cuh has; the parse
    saw an overload set, so the unit shim comes by the instantiation's type."""
    m = _meta(dataset, "seg_sum_kernel")
    assert _origins(m) == {"int_long": "dispatch", "long_long": "dispatch", "float_float": "dispatch",
                           "short_short": "dispatch", "unsigned_char_unsigned_char": "dispatch"}, _origins(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    assert "atomicAdd(int64_t *p" in _unit(dataset, m, "long_long")
    assert "KM_ATOMIC_ADD_INT(int16_t)" in _unit(dataset, m, "short_short")
    assert "km_torch_unit" not in _unit(dataset, m, "float_float") and "c10::Half" not in _unit(
        dataset, m, "float_float")


def test_a_name_only_the_host_pass_compiles_comes_with_the_kernel(dataset: dict[str, Any]) -> None:
    """`#if __CUDA_ARCH__ >= 800 __hmul #else fix_bf16_mul_fallback #endif`: the parse (sm_90) skips the
    fallback, nvcc's host pass compiles it, so the unit needs the fallback too (was: undefined)."""
    m = _meta(dataset, "bf16_scale_kernel")
    assert build_statuses(m) == {"default": "ok"}, build_statuses(m)
    assert "inline __nv_bfloat16 fix_bf16_mul_fallback(" in _unit(dataset, m, "default")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_a_kernel_taking_atens_philox_state_builds_and_is_launched(tmp_path: Path) -> None:
    """`at::PhiloxCudaState` by value, `at::cuda::philox::unpack` in the kernel, the generator's host API
    in the launcher (was: `identifier "at" is undefined` in the unit, the launcher's body invalid)."""
    out = tmp_path / "out"
    proc = run_miner("extract", FIXTURES / "torch_random", "-o", out, "--build", "-j", "2",
                     env={"XDG_CACHE_HOME": str(tmp_path / "cache")}, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (meta,) = load_dataset(out)
    assert build_statuses(meta) == {"float": "ok", "double": "ok"}, build_statuses(meta)
    assert meta["launches"], meta.get("launch_missing")
