"""`extract --build` on tests/fixtures/launchwrap: launches that reach the kernel through a project's launch
library (issue 14, the sixteenth set's wrapper-library and portable-launch repositories), each reproduced by code of
our own and judged by the real libclang parse and the real nvcc. Each launch gives the unit's wrapper the original's
grid and block (miner.validate.wrapper.launch_config), or says why it cannot."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from typing import Any

import pytest

from miner.validate.wrapper import launch_config
from tests.conftest import FIXTURES, ROOT, build_statuses, extract_and_build, load_dataset, only_meta, run_miner

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def forwarded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The fixture's `examples/` mined with the whole fixture as the project (its library lies in `include/`)."""
    found = extract_and_build(tmp_path_factory, "launchwrap/forwarded", mined="examples", env={"KM_PARSE_CACHE": "off"})
    assert found["proc"].returncode == 0, found["proc"].stderr[-2000:]
    return found


def _one_launch(data: dict[str, Any], name: str) -> dict[str, Any]:
    m = only_meta(data, name)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    assert len(m["launches"]) == 1, (m["launches"], m.get("launch_missing"))
    return m


def test_a_kernel_and_its_configuration_object_travel_through_forwarding_helpers(forwarded: dict[str, Any]) -> None:
    """`relay::launch(k, cfg, args...)` -> `enqueue` -> a tag-dispatched `detail::dispatch` -> `launch_raw`, whose
    body is `kernel<<<cfg.dims.grid, cfg.dims.block, cfg.smem_bytes, stream>>>(params...)`. Only a helper whose own
    body launches its parameter was taken: the kernels were `unresolved`. The configuration object comes from
    `make_config((n + threads - 1) / threads, threads, 0)` (a local) or `config{64, 512}` (a temporary): its
    arguments in launch order are the launch's grid, block and shared memory."""
    m = _one_launch(forwarded, "scale_by")
    rec = m["launches"][0]
    assert rec["config"]["grid"] == "(n + threads - 1) / threads", rec["config"]
    assert rec["values"]["block"] == 256 and rec["values"]["shared_mem"] == 0, rec["values"]
    assert [a["expr"] for a in rec["args"]] == ["x", "2.0f", "n"], rec["args"]
    cfg = launch_config(m, m["params"])
    assert cfg["block"] == "256" and cfg["grid"] is not None and "n" in cfg["grid"], cfg
    assert "config_unread" not in rec, rec
    rec = _one_launch(forwarded, "add_one")["launches"][0]
    assert (rec["values"]["grid"], rec["values"]["block"]) == (64, 512), rec
    assert [a["expr"] for a in rec["args"]] == ["y", "n"], rec["args"]


def test_a_helper_handing_its_kernel_to_an_overload_of_its_own_name_is_a_helper(forwarded: dict[str, Any]) -> None:
    """`relay::run(fill_ramp, y, n)` calls `run(p, f, args...)` with a default policy, which launches
    `f<<<p.grid_size(), p.block_size()>>>(args...)`: two levels, taken as one launch. The grid and block are a
    policy object's run-time answers: the launch says so (`config_unread`)."""
    rec = _one_launch(forwarded, "fill_ramp")["launches"][0]
    assert rec["config"]["grid"] == "p.grid_size()", rec["config"]
    assert [a["expr"] for a in rec["args"]] == ["y", "n"], rec["args"]
    assert set(rec["config_unread"]) == {"grid", "block"}, rec
    assert rec["config_unread"]["grid"].startswith("object_read"), rec


def test_cuda_launch_kernel_ex_reads_its_launch_config_fields(forwarded: dict[str, Any]) -> None:
    """`cudaLaunchKernelEx(&cfg, halve, x, n)` with `cfg.gridDim = dim3((n + 127) / 128); cfg.blockDim =
    dim3(128); ...` set field by field before it: the launch had no grid or block at all."""
    m = _one_launch(forwarded, "halve")
    rec = m["launches"][0]
    assert rec["kind"] == "cudaLaunchKernelEx", rec
    assert rec["config"]["grid"] == "dim3((n + 127) / 128)" and rec["config"]["block"] == "dim3(128)", rec
    assert rec["config"]["stream"] == "s", rec
    cfg = launch_config(m, m["params"])
    assert cfg["block"] == "128" and cfg["grid"] is not None, cfg


def test_a_helper_launching_its_parameter_through_cuda_launch_kernel_is_a_helper(forwarded: dict[str, Any]) -> None:
    """`launch_with_args(K kernel, dim3 grid, dim3 block, void** args, stream)` whose body is
    `cudaLaunchKernel(kernel, grid, block, args, 0, s)`: a launch API's kernel argument that is a parameter made no
    helper (only `kernel<<<...>>>` did), and `negate` was `unresolved`."""
    rec = _one_launch(forwarded, "negate")["launches"][0]
    assert rec["kind"] == "cudaLaunchKernel", rec
    assert rec["values"]["grid"] == 16, rec
    assert "256" in rec["config"]["block"], rec


def test_a_configuration_built_by_named_setters_is_read(forwarded: dict[str, Any]) -> None:
    """`relay::config_builder().total_threads(n).block_size(128).build()` passed to `relay::launch`: the setters'
    names say what each sets; the total over the block is the grid."""
    m = _one_launch(forwarded, "square_all")
    rec = m["launches"][0]
    assert rec["config"]["grid"] == "((n) + (128) - 1) / (128)" and rec["values"]["block"] == 128, rec
    cfg = launch_config(m, m["params"])
    assert cfg["block"] == "128" and cfg["grid"] is not None and "n" in cfg["grid"], cfg


def test_a_call_taking_a_kernel_and_a_launch_configuration_object_is_a_launch(forwarded: dict[str, Any]) -> None:
    """`relay::submit(K&& kernel, const launch_config_t& lc, P&&... params)` type-erases the kernel and launches it
    in the library's own source, which a parse of the examples never sees: the call is known by its signature (a
    kernel, a parameter declared as a launch configuration, a trailing pack). The object's construction gives the
    grid and block (`launch_config_t lc{(n + 255) / 256, 256}`); where it does not (`occupancy_config(...)`, a
    run-time query), the launch says why."""
    m = _one_launch(forwarded, "saxpy")
    rec = m["launches"][0]
    assert rec["config"]["grid"] == "(n + 255) / 256" and rec["values"]["block"] == 256, rec
    assert [a["expr"] for a in rec["args"]] == ["2.0f", "x", "y", "n"], rec["args"]
    rec = _one_launch(forwarded, "count_up")["launches"][0]
    assert rec["config"]["grid"] is None and rec["config"]["config"] == "sized", rec
    assert rec["config_unread"]["grid"].startswith("config_object"), rec


@pytest.fixture(scope="module")
def braced(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "launchwrap/braced")


def test_dropped_launches_of_overloaded_kernels_are_told_apart_by_argument_count(braced: dict[str, Any]) -> None:
    """`smooth<bx, by><<<grid, {bx, by, 1}>>>(...)`: clang drops a statement with a braced block (nvcc takes it),
    and the text recovery of dropped launches took only a name with one kernel; `smooth` has two overloads (four
    and three parameters), so neither had a launch. The site's argument count picks the overload; the braced
    block is a dim3."""
    metas = [m for m in braced["metas"] if m["name"] == "smooth"]
    assert sorted(len(m["params"]) for m in metas) == [3, 4], [m["params"] for m in metas]
    for m in metas:
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
        assert len(m["launches"]) == 1, (len(m["params"]), m["launches"], m.get("launch_missing"))
        rec = m["launches"][0]
        assert rec["config"]["block"] == "dim3(bx, by, 1)", rec
        assert len(rec["args"]) == len(m["params"]), rec["args"]
        assert rec["template_args"] == ["32", "8"], rec


def test_the_corpus_tally_counts_a_triton_kernels_launches(tmp_path_factory: pytest.TempPathFactory) -> None:
    """scripts/mine_corpus.py counted a kernel as launched by its metadata's `launches`; a Triton kernel keeps its
    `kernel[grid](...)` launches under `triton.launches`, so every Triton kernel of a set read as never launched
    (with no stated reason either)."""
    spec = importlib.util.spec_from_file_location("mine_corpus", ROOT / "scripts" / "mine_corpus.py")
    assert spec is not None and spec.loader is not None
    mine_corpus = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mine_corpus", mine_corpus)  # (its dataclasses look their module up)
    spec.loader.exec_module(mine_corpus)
    src = tmp_path_factory.mktemp("triton-src") / "triton_count"
    shutil.copytree(FIXTURES / "launchwrap/triton_count", src)
    out = tmp_path_factory.mktemp("triton-out")
    proc = run_miner("extract", src, "-o", out, env={"XDG_CACHE_HOME": str(tmp_path_factory.mktemp("c"))})
    assert proc.returncode == 0, proc.stderr[-2000:]
    metas = load_dataset(out)
    assert [m["name"] for m in metas] == ["scale_kernel"] and metas[0]["triton"]["launches"], metas
    row = mine_corpus.tally(metas)[0]
    assert (row["kernels"], row["launched"]) == (1, 1), dict(row)


@pytest.fixture(scope="module")
def unparsed_call(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "launchwrap/unparsed_call")


def test_a_kernel_passed_to_a_call_the_parse_cannot_type_says_so(unparsed_call: dict[str, Any]) -> None:
    """`q.submit(add_offset, grid, block, args...)` on a queue whose member is a vendor's handle type
    (`vendor_stream_t`, from a header nobody here has): the class is invalid to the parse, the call is a recovery
    expression with no callee (and no error of its own), and the kernel read as plainly `unresolved`. It now says
    which call and why. (The fixture's first form, a driver-API `CUstream`, is typed since the parse has the
    toolkit's `<cuda.h>`: test_a_launch_queue_on_a_driver_api_stream_is_read.)"""
    m = only_meta(unparsed_call, "add_offset")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    assert not m["launches"], m["launches"]
    why = m["launch_missing"]
    assert why["reason"] == "call_unparsed", why
    assert "q.submit" in why["detail"] and "offsets.cu:15" in why["detail"] and "vendor_stream.h" in why["detail"], why


@pytest.fixture(scope="module")
def driver_queue(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "launchwrap/driver_queue")


def test_a_launch_queue_on_a_driver_api_stream_is_read(driver_queue: dict[str, Any]) -> None:
    """The same queue on a driver-API `CUstream`: with the toolkit's own `<cuda.h>` in the parse
    (config.toolkit_driver_header) the class is valid, `submit` is a helper launching through `cudaLaunchKernel`,
    and the call is a launch with the original's grid and block."""
    m = only_meta(driver_queue, "add_offset")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    (launch,) = m["launches"]
    assert launch["config"]["grid"] == "dim3((n / 128))" and launch["config"]["block"] == "dim3((128))", launch
    assert "launch_missing" not in m, m.get("launch_missing")
