"""`kernel-miner build --toolchain hip`: units translated with torch's hipify mapping, built by the real
hipcc for gfx90a, portability findings recorded, a missing hipcc one line and exit 2.

No AMD GPU exists here: these tests compile HIP units and load nothing on a device."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from miner.builder import hip_translate, portability
from miner.dataset import schema
from tests.conftest import FIXTURES, load_dataset, run_miner

HIPCC = shutil.which("hipcc")
HIPIFY = hip_translate.available()
needs_hipify = pytest.mark.skipif(not HIPIFY, reason="torch.utils.hipify is not installed (extra 'hip')")
needs_hipcc = pytest.mark.skipif(HIPCC is None or not HIPIFY,
                                 reason="hipcc (apt-get install hipcc) or torch.utils.hipify is not installed")
PORT = FIXTURES / "hip" / "port"


def _by_name(out: Path) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in load_dataset(out)}


@pytest.fixture(scope="module")
def hip_built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, subprocess.CompletedProcess[str]]:
    if HIPCC is None or not HIPIFY:
        pytest.skip("hipcc or torch.utils.hipify is not installed")
    base = tmp_path_factory.mktemp("hip")
    out, cache = base / "out", base / "cache"
    r = run_miner("extract", PORT, "-o", out, "-q", "-j", "1")
    assert r.returncode == 0, r.stderr
    r = run_miner("build", out, "--toolchain", "hip", "--arch", "gfx90a", "-j", "2", "--cache-dir", cache,
                  timeout=600)
    return out, cache, r


@needs_hipcc
def test_hip_units_build_with_findings_and_classes(hip_built: tuple[Path, Path, Any]) -> None:
    out, _cache, r = hip_built
    assert r.returncode == 1, r.stderr  # two units fail on purpose
    metas = _by_name(out)
    for m in metas.values():
        assert schema.errors(m) == []
        assert m["build_hip"]["hipcc"] != "unknown" and m["build_hip"]["arch"] == "gfx90a"
        assert "build" not in m  # the CUDA block is another toolchain's, untouched
    ok = metas["scale_kernel"]["instantiations"][0]["build_hip"]
    assert ok["status"] == "ok" and ok["portable"] is True and ok["portability"] == []
    kdir = out / metas["scale_kernel"]["id"]
    hip_unit = (kdir / ok["unit"]).read_text(encoding="utf-8")
    assert "#include <hip/hip_runtime.h>" in hip_unit and "hipStream_t" in hip_unit and "cuda" not in hip_unit
    res = ok["resources"]
    assert res["arch"] == "gfx90a" and res["vgprs"] > 0 and res["sgprs"] > 0 and res["occupancy"] > 0
    assert "scale_kernel" in res["kernel"]
    # Same launcher ABI as the CUDA unit: the symbol metadata names is exported by the HIP library.
    nm = shutil.which("nm")
    if nm:
        syms = subprocess.run([nm, "-D", "--defined-only", str(kdir / ok["library"])], capture_output=True,
                              text=True, check=True).stdout
        assert ok["symbol"] in syms and ok["symbol"] == metas["scale_kernel"]["instantiations"][0]["launcher"]["symbol"]

    # The full-mask shuffle is HIP's __shfl_down at width 32 (hip_port.py): it builds, with its wave64 findings.
    warp = metas["warp_sum_kernel"]["instantiations"][0]["build_hip"]
    assert warp["status"] == "ok" and warp["portable"] is False, warp
    whats = " | ".join(f["what"] for f in warp["portability"])
    assert {f["kind"] for f in warp["portability"]} == {"wave64"}
    assert "__shfl_down_sync with 32-bit mask FULL_MASK" in whats and "WARP_SIZE 32" in whats
    assert "offset 16" in whats
    assert [p["what"].split(" ->")[0] for p in warp["ported"]] == ["__shfl_down_sync(full mask, ...)"]

    ptx = metas["ptx_add_kernel"]["instantiations"][0]["build_hip"]
    assert ptx["status"] == "failed" and ptx["error_class"] == "inline_ptx"
    assert [f["kind"] for f in ptx["portability"]] == ["inline_ptx"]


@needs_hipcc
def test_hip_rebuild_is_cached(hip_built: tuple[Path, Path, Any]) -> None:
    out, cache, _ = hip_built
    r = run_miner("build", out, "--toolchain", "hip", "-j", "2", "--cache-dir", cache)
    assert "4 cached" in r.stdout and "0 hipcc calls" in r.stdout, r.stdout + r.stderr


@needs_hipcc
def test_hazard_that_builds_is_not_plain_ok(hip_built: tuple[Path, Path, Any]) -> None:
    """A unit that compiles for gfx90a but hard-codes a 32-lane warp says so."""
    out, _cache, r = hip_built
    assert "3/4 units built, 2 of them with portability findings" in r.stdout
    m = _by_name(out)["lane_kernel"]
    b = m["instantiations"][0]["build_hip"]
    assert b["status"] == "ok" and b["portable"] is False
    assert [f["kind"] for f in b["portability"]] == ["wave64"] and "threadIdx.x & 31" in b["portability"][0]["what"]
    assert m["build_hip"]["with_findings"] == 1


@needs_hipify
def test_findings_from_real_unit_text() -> None:
    cuda = (PORT / "port_kernels.cu").read_text(encoding="utf-8") + (
        "cublasHandle_t h;\nvoid f() { cudaFrobnicate(0); }\n")
    found = portability.find(cuda, hip_translate.translate(cuda), hip_translate.is_mapped)
    kinds = {(f.kind, f.what.split()[0]) for f in found}
    assert ("unmapped_api", "cudaFrobnicate") in kinds
    assert ("library", "cublasHandle_t") in kinds
    assert ("inline_ptx", "inline") in kinds
    assert not any(f.kind == "unmapped_api" and f.what.startswith(("cudaStream_t", "cudaGetLastError")) for f in found)


@needs_hipify
def test_translation_keeps_lines_and_launcher() -> None:
    cuda = (PORT / "port_kernels.cu").read_text(encoding="utf-8")
    hip = hip_translate.translate(cuda)
    assert hip.count("\n") == cuda.count("\n")
    assert "<<<(n + 255) / 256, 256, 0, s>>>" in hip and "hipStream_t s" in hip


def _path_without_hipcc(tmp_path: Path) -> str:
    """PATH with only python and nvcc (if any): no hipcc."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("nvcc", "c++filt", "g++", "nm"):
        if found := shutil.which(tool):
            os.symlink(found, bin_dir / tool)
    return str(bin_dir)


def test_missing_hipcc_is_one_line_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_miner("extract", PORT, "-o", out, "-q", "-j", "1").returncode == 0
    env = {"PATH": _path_without_hipcc(tmp_path), "ROCM_PATH": str(tmp_path / "none"),
           "HIP_PATH": str(tmp_path / "none")}
    r = run_miner("build", out, "--toolchain", "hip", env=env)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.count("\n") == 1 and r.stderr.startswith("kernel-miner: error: ")
    assert "hipcc" in r.stderr or "hipify" in r.stderr
    r = run_miner("build", out, "--toolchain", "cuda,hip", "--hipcc", str(tmp_path / "nope"), env=env)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "hipcc not found" in r.stderr
    for m in load_dataset(out):  # nothing was built before the check
        assert "build" not in m and "build_hip" not in m


@pytest.mark.parametrize("args, message", [
    (["--toolchain", "hip", "--arch", "sm_90"], "is a cuda target"),
    (["--toolchain", "rocm"], "unknown 'rocm'"),
    (["--toolchain", "hip", "--arch", "gfx9x"], "'gfx9x' is not a gfx target"),
    (["--toolchain", "cuda,hip", "--arch", "gfx9x"], "neither an nvcc target"),
])
def test_bad_toolchain_arguments(tmp_path: Path, args: list[str], message: str) -> None:
    out = tmp_path / "out"
    out.mkdir()
    r = run_miner("build", out, *args)
    assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr


def test_hip_modules_import_without_torch_package() -> None:
    """The mapping is loaded from its files: importing torch itself would cost seconds and libtorch."""
    code = ("import sys; from miner.builder import hip_translate; hip_translate.available(); "
            "print('torch' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       cwd=Path(__file__).resolve().parents[1])
    assert r.stdout.strip() == "False"


NATIVE = FIXTURES / "hip" / "native"


@pytest.fixture(scope="module")
def native_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("native") / "out"
    r = run_miner("extract", NATIVE, "-o", out, "-q", "-j", "1")
    assert r.returncode == 0, r.stderr
    return out


def test_hip_branches_give_a_variant_with_its_defines(native_out: Path) -> None:
    metas = {m["id"].rsplit("-", 1)[0]: m for m in load_dataset(native_out)}
    assert set(metas) == {"block_sum_kernel", "block_sum_kernel_hip", "copy_kernel", "hip_scale_kernel",
                          "lane_id_kernel", "lane_id_kernel_hip"}
    # A branch inside the kernel's own text: the variant's unit carries the define that selects it.
    lane = metas["lane_id_kernel_hip"]
    lane_unit = (native_out / lane["id"] / lane["instantiations"][0]["unit"]).read_text(encoding="utf-8")
    assert "#define LANELIB_WITH_HIP" in lane_unit and lane["variant"]["of"] == metas["lane_id_kernel"]["id"]
    v = metas["block_sum_kernel_hip"]
    assert v["variant"] == {"toolchain": "hip", "defines": ["LANELIB_WITH_HIP"], "of": metas["block_sum_kernel"]["id"],
                            "reason": "HIP branches (#if on LANELIB_WITH_HIP)"}
    assert "LANELIB_WITH_HIP" in v["parse_context"]["defines"] and schema.errors(v) == []
    unit = (native_out / v["id"] / v["instantiations"][0]["unit"]).read_text(encoding="utf-8")
    assert "#define LANES 64" in unit and "__shfl_down((v), (o))" in unit and "_sync" not in unit
    cuda_unit = (native_out / metas["block_sum_kernel"]["id"] / "units/default/unit.cu").read_text(encoding="utf-8")
    assert "#define LANES 32" in cuda_unit
    # copy_kernel uses nothing the HIP branch changes: no variant of it.
    assert "variant" not in metas["copy_kernel"] and "variant" not in metas["block_sum_kernel"]
    native = metas["hip_scale_kernel"]
    assert native["variant"] == {"toolchain": "hip", "defines": [], "reason": "HIP source (.hip file)"}
    assert native["launches"] and native["instantiations"][0]["id"] == "default"


def test_toolchains_build_only_their_variants() -> None:
    from miner.builder.toolchains import Hipcc, Nvcc
    hip_variant = {"variant": {"toolchain": "hip"}}
    assert not Nvcc("").wants(hip_variant) and Hipcc("").wants(hip_variant)
    assert Nvcc("").wants({}) and Hipcc("").wants({})


@needs_hipcc
def test_hip_variants_build_with_hipcc(native_out: Path, tmp_path: Path) -> None:
    r = run_miner("build", native_out, "--toolchain", "hip", "-j", "2", "--cache-dir", tmp_path / "cache",
                  "--kernels", "*_hip-*", "--kernels", "hip_scale_kernel*", timeout=600)
    assert r.returncode == 0, r.stderr
    assert "3/3 units built" in r.stdout
    for m in load_dataset(native_out):
        if "variant" in m:
            b = m["instantiations"][0]["build_hip"]
            assert b["status"] == "ok" and b["resources"]["vgprs"] > 0, b


def test_harness_picks_the_hip_library_on_rocm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The validation path on a ROCm PyTorch: the harness loads build_hip's library, never nvcc's."""
    from miner import harness
    kdir = tmp_path / "k"
    (kdir / "units" / "float").mkdir(parents=True)
    for name in ("libunit.so", "libunit_hip.so", "unit.cu"):
        (kdir / "units" / "float" / name).write_text("", encoding="utf-8")
    entry = {"id": "float", "unit": "units/float/unit.cu",
             "build": {"status": "ok", "library": "units/float/libunit.so"},
             "build_hip": {"status": "ok", "library": "units/float/libunit_hip.so"}}
    monkeypatch.setenv("KM_TOOLCHAIN", "hip")
    assert harness.library_path(kdir, entry) == kdir / "units/float/libunit_hip.so"
    del entry["build_hip"]
    assert harness.library_path(kdir, entry) is None  # not built for HIP: never the CUDA library
    monkeypatch.setenv("KM_TOOLCHAIN", "cuda")
    assert harness.library_path(kdir, entry) == kdir / "units/float/libunit.so"
    monkeypatch.delenv("KM_TOOLCHAIN")

    class FakeVersion:  # torch.version as a ROCm wheel has it (only the attribute is read)
        hip = "6.3"
    monkeypatch.setitem(sys.modules, "torch", type("T", (), {"version": FakeVersion})())
    assert harness.toolchain() == "hip"


@needs_hipcc
def test_unknown_gfx_target_is_one_line_exit_2(native_out: Path, tmp_path: Path) -> None:
    """A target the installed hipcc does not know would fail every unit alike: refused before any build."""
    r = run_miner("build", native_out, "--toolchain", "hip", "--arch", "gfx90a,gfx9ff", "--cache-dir", tmp_path,
                  timeout=300)
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "gfx9ff is not a target this hipcc knows" in r.stderr


@needs_hipcc
def test_torch_shim_warp_helpers_build_as_hip(tmp_path: Path) -> None:
    """ATen's warp helpers (WARP_SHFL_XOR, WARP_SHFL_DOWN, C10_WARP_SIZE) come from the unit shim in both of
    ATen's forms: hip-clang compiles the HIP one (ATen's USE_ROCM branch), so a unit that uses them builds and
    carries no finding of the shim's; the project's own 16-lane start of a helper-based reduction is one."""
    out = tmp_path / "out"
    assert run_miner("extract", FIXTURES / "unseen" / "warp_helpers", "-o", out, "-q", "-j", "1").returncode == 0
    r = run_miner("build", out, "--toolchain", "hip", "-j", "2", "--cache-dir", tmp_path / "cache", timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    metas = _by_name(out)
    for inst in metas["row_max_kernel"]["instantiations"]:
        assert inst["build_hip"]["status"] == "ok" and inst["build_hip"]["portability"] == [], inst["build_hip"]
    for inst in metas["row_norm_kernel"]["instantiations"]:
        b = inst["build_hip"]
        assert b["status"] == "ok" and [f["what"] for f in b["portability"]] == [
            "shuffle reduction from offset 16: reduces 32 lanes, not 64"], b


@needs_hipcc
def test_bundled_examples_build_as_hip(tmp_path: Path) -> None:
    """What Dockerfile.rocm's smoke test runs: every unit of examples/ built by hipcc for gfx90a."""
    out = tmp_path / "out"
    r = run_miner("extract", Path(__file__).resolve().parents[1] / "examples", "-o", out, "--build",
                  "--toolchain", "hip", "--arch", "gfx90a", "--jobs", "2",
                  env={"XDG_CACHE_HOME": str(tmp_path / "cache")}, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    units = [i for m in load_dataset(out) for i in m["instantiations"]]
    assert units and all(i["build_hip"]["status"] == "ok" for i in units)
    assert len(list(out.glob("*/units/*/libunit_hip.so"))) == len(units)
