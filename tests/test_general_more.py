"""`extract --build` on tests/fixtures/general_more: further patterns of repositories the unit pipeline was not
tuned on (issue 14), each reproduced by a kernel of our own and judged by the real nvcc. Kept apart from
test_general_patterns.py so each module's extract stays short."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build
from tests.conftest import only_meta as _meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "general_more")


def _built(meta: dict[str, Any]) -> dict[str, str]:
    return build_statuses(meta)


def _unit_dir(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> Path:
    return Path(dataset["out"]) / meta["id"] / "units" / inst


def test_launcher_of_a_namespaced_kernel_sees_the_namespaces_types_and_keeps_its_c_symbol(
        dataset: dict[str, Any]) -> None:
    """Parameters typed by the kernel's namespace (an alias, an enum, a struct of an unnamed namespace inside
    it), written unqualified: the extern "C" launcher sits in those namespaces, under its unmangled name."""
    for name, inst in (("project_points_kernel", "float"), ("clip_points_kernel", "default")):
        m = _meta(dataset, name)
        assert _built(m) == {inst: "ok"}
        rec = m["instantiations"][0]
        lib = Path(dataset["out"]) / m["id"] / rec["build"]["library"]
        syms = subprocess.run(["nm", "-D", "--defined-only", str(lib)], capture_output=True, text=True,
                              check=True).stdout.split()
        assert rec["launcher"]["symbol"] in syms
    wrapper = _unit_dir(dataset, _meta(dataset, "project_points_kernel"), "float") / "host_wrapper.cu"
    assert "using namespace optics::kernels;" in wrapper.read_text(encoding="utf-8")


def test_c10_complex_arithmetic_conj_and_atomic_add_come_from_the_unit_shim(dataset: dict[str, Any]) -> None:
    """c10::complex<float> (public real_/imag_, std::conj/std::norm, complex op int, gpuAtomicAdd on a complex
    accumulator) is carried by the unit shim, like c10::Half: both the float and the complex instantiation build."""
    m = _meta(dataset, "rotate_accumulate_kernel")
    assert _built(m) == {"float": "ok", "cplx_t": "ok"}
    assert {"complex", "gpuAtomicAdd"} <= set(m["closure"]["shims"])
    assert "c10::complex" not in " ".join(m["closure"]["types"])


def test_a_helper_constrained_through_libcuxx_reaches_the_closure(dataset: dict[str, Any]) -> None:
    """`template <..., typename ::cuda::std::enable_if<...>::type = 0> void ucopy(...)` called from a class
    template's member: the parse sees <cuda/std/type_traits> as the standard header, the unit keeps the real one."""
    m = _meta(dataset, "stash_kernel")
    assert _built(m) == {"float": "ok"}
    assert "ucopy" in m["closure"]["functions"]
    assert "cuda/std/type_traits" in m["closure"]["includes"]


def test_a_helper_taking_a_libcuxx_barrier_reaches_the_closure(dataset: dict[str, Any]) -> None:
    """`__device__ void block_total(cuda::barrier<cuda::thread_scope_block> &, ...)`: the parse shim of
    <cuda/barrier> keeps it a function, so the kernel that calls it gets it in its unit."""
    m = _meta(dataset, "dot_norm_kernel")
    assert _built(m) == {"default": "ok"}
    assert "block_total" in m["closure"]["functions"]
    assert "cuda/barrier" in m["closure"]["includes"]
    assert m["unresolved"] == []


def test_a_macro_writing_a_kernel_and_the_host_specializations_that_launch_it(dataset: dict[str, Any]) -> None:
    """`DEFINE_GPU_UNARY(negate, ...)` writes the kernel and `template <> void gpu_negate<float>(...)`, which
    launches it: the unit carries the primary template that specialization needs, and those launches count."""
    for name, host in (("negate_kernel", "gpu_negate"), ("halve_kernel", "gpu_halve")):
        m = _meta(dataset, name)
        assert _built(m) == {"float": "ok", "double": "ok"}
        assert {i["origin"] for i in m["instantiations"]} == {"call_site"}
        assert host in m["closure"]["functions"]
        assert {lc["launcher"] for lc in m["launches"]} == {host}
        assert all(lc["values"]["block"] == 512 for lc in m["launches"])


def test_namespaced_and_complex_units_build_together_in_one_batch(dataset: dict[str, Any], tmp_path: Path) -> None:
    """A build batch wraps every unit in a namespace of its own: the launcher calls the kernel by its name
    (no `::ns::k`), and the shim's `namespace std` additions keep the rest of std visible."""
    from miner.builder.batch import batch_source
    from miner.builder.unit_split import collect_units, split_unit

    units = []
    for name in ("project_points_kernel", "clip_points_kernel", "rotate_accumulate_kernel"):
        m = _meta(dataset, name)
        got, _ = collect_units(Path(dataset["out"]) / m["id"], m)
        for u in got:
            split_unit(u)
            assert u.batchable
            units.append(u)
    src = tmp_path / "batch.cu"
    src.write_text(batch_source(units), encoding="utf-8")
    res = subprocess.run(["nvcc", "-c", "-arch=sm_90", "-std=c++17", str(src), "-o", str(tmp_path / "batch.o")],
                         capture_output=True, text=True, check=False)
    assert res.returncode == 0, res.stderr[-3000:]
