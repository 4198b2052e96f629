"""A ROCm install in a prefix of its own (--hip-path / $KM_HIP_PATH): found in both layouts, refused in one
line when it is not one, and, where one is installed (KM_HIP=trixie scripts/install.sh: Debian trixie's HIP
5.7 beside bookworm's 5.2), used whole by the real build, its HIP and clang versions recorded."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from miner.builder import hip_implied, hip_translate, portability
from miner.builder.toolchains import rocm_prefix
from miner.errors import UsageError
from tests.conftest import FIXTURES, load_dataset, run_miner

NEWER = FIXTURES / "hip" / "newer"


def _installed_prefix() -> str | None:
    for cand in (os.environ.get(rocm_prefix.ENV_VAR), "/opt/rocm-trixie"):
        if cand:
            try:
                return str(rocm_prefix.resolve(cand).root)
            except UsageError:
                continue
    return None


PREFIX = _installed_prefix()
needs_prefix = pytest.mark.skipif(PREFIX is None or not hip_translate.available(),
                                  reason="no ROCm prefix (KM_HIP=trixie scripts/install.sh, or $KM_HIP_PATH) "
                                         "or torch.utils.hipify")


def _touch(path: Path, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("", encoding="utf-8")
    if executable:
        path.chmod(0o755)


def test_prefix_layouts(tmp_path: Path) -> None:
    """ROCm's own layout, and Debian packages unpacked into DIR/usr (device libraries in clang's resource
    folder: the newest clang's is taken)."""
    rocm = tmp_path / "rocm"
    _touch(rocm / "bin" / "hipcc", executable=True)
    _touch(rocm / "include" / "hip" / "hip_runtime.h")
    _touch(rocm / "amdgcn" / "bitcode" / "ockl.bc")
    p = rocm_prefix.resolve(str(rocm))
    assert p.root == rocm.resolve() and p.hipcc == rocm.resolve() / "bin" / "hipcc"
    assert p.env() == {"HIP_PATH": str(p.root), "ROCM_PATH": str(p.root),
                       "DEVICE_LIB_PATH": str(p.root / "amdgcn" / "bitcode")}

    deb = tmp_path / "deb"
    _touch(deb / "usr" / "bin" / "hipcc", executable=True)
    _touch(deb / "usr" / "include" / "hip" / "hip_runtime.h")
    for n in ("9", "17"):
        _touch(deb / "usr" / "lib" / f"llvm-{n}" / "lib" / "clang" / n / "amdgcn" / "bitcode" / "ockl.bc")
    p = rocm_prefix.resolve(str(deb))
    assert p.root == (deb / "usr").resolve()
    assert p.device_libs == p.root / "lib" / "llvm-17" / "lib" / "clang" / "17" / "amdgcn" / "bitcode"

    _touch(tmp_path / "half" / "bin" / "hipcc")  # not executable, no headers
    for bad in (tmp_path / "half", tmp_path / "nothing"):
        with pytest.raises(UsageError, match="--hip-path"):
            rocm_prefix.resolve(str(bad))


def test_bad_hip_path_is_one_line_exit_2(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_miner("extract", NEWER, "-o", out, "-q", "-j", "1").returncode == 0
    r = run_miner("build", out, "--toolchain", "hip", "--hip-path", str(tmp_path / "none"))
    assert r.returncode == 2 and r.stdout == "" and r.stderr.count("\n") == 1, r.stderr
    assert "not a directory" in r.stderr
    r = run_miner("build", out, "--toolchain", "hip", env={"KM_HIP_PATH": str(tmp_path)})
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no bin/hipcc" in r.stderr, r.stderr
    assert all("build_hip" not in m for m in load_dataset(out))


def test_library_sub_headers_map_to_the_library_header() -> None:
    if not hip_translate.available():
        pytest.skip("torch.utils.hipify is not installed")
    hip = hip_translate.translate((NEWER / "newer_kernels.cu").read_text(encoding="utf-8")
                                  + "#include <cub/warp/warp_reduce.cuh>\n#include <mylib/x.h>\n")
    assert "#include <cooperative_groups/reduce.h>" not in hip
    assert hip.count("#include <hip/hip_cooperative_groups.h>") == 2
    assert "#include <hipcub/hipcub.hpp>" in hip and "#include <mylib/x.h>" in hip  # not a mapped library
    assert "#include <hip/hip_bf16.h>" in hip


def test_library_namespace_errors_are_unmapped_api() -> None:
    err = "units/default/unit.hip:22:50: error: no template named 'plus' in namespace 'cooperative_groups'"
    assert portability.classify(err, "", []) == "unmapped_api"
    assert portability.classify("u.hip:1:1: error: no member named 'f' in namespace 'mine'", "", []) == "other"
    err = "u.hip:83:12: error: use of undeclared identifier '__float2bfloat16_rn'; did you mean 'x'?"
    assert portability.classify(err, "", []) == "unmapped_api"
    assert portability.classify("u.hip:1:1: error: use of undeclared identifier 'my_helper'", "", []) == "other"
    assert portability.classify("u.hip:9:9: error: no matching function for call to '__ldcs'", "", []) == "unmapped_api"
    err = ("/opt/rocm/include/hip/amd_detail/amd_warp_sync_functions.h:274:52: error: static assertion failed due to "
           "requirement 'sizeof(unsigned int) == 8': The mask must be a 64-bit integer.")
    assert portability.classify(err, "", []) == "wave64"  # HIP >= 6.2 with HIP_ENABLE_WARP_SYNC_BUILTINS


def _by_name(out: Path) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in load_dataset(out)}


@needs_prefix
def test_prefix_builds_what_older_hip_cannot(tmp_path: Path) -> None:
    """bf16 and a cooperative-groups sub-header build with the prefix's HIP for gfx90a and gfx942;
    cg::reduce, which HIP lacks, builds in its HIP form (hip_port.py); the versions and the prefix are
    recorded."""
    out = tmp_path / "out"
    assert run_miner("extract", NEWER, "-o", out, "-q", "-j", "1").returncode == 0
    r = run_miner("build", out, "--toolchain", "hip", "--arch", "gfx90a,gfx942", "--hip-path", PREFIX,
                  "-j", "2", "--cache-dir", tmp_path / "cache", timeout=900)
    assert r.returncode == 0, r.stderr
    assert "3/3 units built" in r.stdout, r.stdout + r.stderr
    metas = _by_name(out)
    for name in ("bf16_scale_kernel", "block_copy_kernel"):
        b = metas[name]["instantiations"][0]["build_hip"]
        assert b["status"] == "ok" and b["resources"]["vgprs"] > 0 and b["arch"] == "gfx90a,gfx942", b
        assert b["hip_version"] == metas[name]["build_hip"]["hipcc"] and not b["hip_version"].startswith("5.2")
        assert metas[name]["build_hip"]["rocm_path"] == PREFIX and b["clang"] != "unknown"
    tile = metas["tile_sum_kernel"]["instantiations"][0]["build_hip"]
    assert tile["status"] == "ok" and tile["resources"]["vgprs"] > 0, tile
    assert {p["what"].split(" ->")[0] for p in tile["ported"]} == {"cooperative_groups::reduce",
                                                                    "cooperative_groups::plus"}
    # The environment came from the prefix: KM_HIP_PATH does the same as --hip-path (all cached now).
    r = run_miner("build", out, "--toolchain", "hip", "--arch", "gfx90a,gfx942", "-j", "2",
                  "--cache-dir", tmp_path / "cache", env={"KM_HIP_PATH": PREFIX})
    assert "3 cached" in r.stdout and "0 hipcc calls" in r.stdout, r.stdout + r.stderr
    meta = json.loads((out / metas["bf16_scale_kernel"]["id"] / "metadata.json").read_text(encoding="utf-8"))
    assert meta["build_hip"]["rocm_path"] == PREFIX


@needs_prefix
@pytest.mark.skipif(shutil.which("hipcc") is None, reason="no system hipcc to compare with")
def test_system_hipcc_is_still_the_default(tmp_path: Path) -> None:
    """Without --hip-path / $KM_HIP_PATH the hipcc on PATH builds, with nothing of the prefix."""
    out = tmp_path / "out"
    assert run_miner("extract", NEWER, "-o", out, "-q", "-j", "1").returncode == 0
    env = {"KM_HIP_PATH": ""}
    run_miner("build", out, "--toolchain", "hip", "--kernels", "block_copy_kernel", "--cache-dir", tmp_path / "c",
              env=env, timeout=600)
    m = _by_name(out)["block_copy_kernel"]
    assert m["build_hip"]["rocm_path"] is None and m["build_hip"]["hipcc"] == m["instantiations"][0]["build_hip"][
        "hip_version"]


DUAL = FIXTURES / "hip" / "dual"


def test_dead_hip_branches_are_not_read() -> None:
    """A #if the unit decides for hip-clang (the platform macros, names it defines) drops its dead branch;
    a condition on anything else keeps every branch; lines keep their numbers."""
    from miner.builder.hip_branches import active
    text = (DUAL / "dual_kernels.cu").read_text(encoding="utf-8") + (
        "#define MY_WITH_HIP\n#if !defined(MY_WITH_HIP) && CUDA_VERSION >= 11000\ndead\n#endif\n"
        "#if CUDA_VERSION >= 11000\nkept\n#else\nkept too\n#endif\n")
    out = active(text)
    assert out.count("\n") == text.count("\n")
    assert "__shfl_xor(v, o)" in out and "__shfl_xor_sync(DUAL_FULL_MASK" not in out
    assert "#define DUAL_FULL_MASK" not in out and "dead" not in out
    assert "kept\n" in out and "kept too" in out
    assert "__shfl_xor_sync(0xffffffffu" in out  # the CUDA-only kernel is read as it is


@pytest.mark.skipif(shutil.which("hipcc") is None or not hip_translate.available(),
                    reason="hipcc or torch.utils.hipify is not installed")
def test_hazard_in_a_dead_branch_is_no_finding(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert run_miner("extract", DUAL, "-o", out, "-q", "-j", "1").returncode == 0
    r = run_miner("build", out, "--toolchain", "hip", "-j", "2", "--cache-dir", tmp_path / "cache", timeout=600)
    metas = _by_name(out)
    dual = metas["dual_sum_kernel"]["instantiations"][0]["build_hip"]
    assert dual["status"] == "ok" and dual["portable"] is True and dual["portability"] == [], r.stderr
    only = metas["cuda_only_sum_kernel"]["instantiations"][0]["build_hip"]
    assert [f["kind"] for f in only["portability"]] == ["wave64"] and only["status"] in ("ok", "failed")
    assert "__shfl_xor_sync" in only["portability"][0]["what"]


IMPLIED = FIXTURES / "hip" / "implied"


def test_hip_overload_gap_is_unmapped_api() -> None:
    """`no matching function` whose candidates are HIP's own and reject the HIP type the mapping gave a
    CUDA one: an overload HIP lacks (unmapped_api); the same against the unit's own functions is `other`."""
    err = "units/default/unit.hip:19:14: error: no matching function for call to 'atomicAdd'"
    log = (f"{err}\n/opt/rocm/include/hip/amd_detail/amd_hip_atomic.h:216:5: note: candidate function not "
           "viable: no known conversion from '__hip_bfloat162 *' to 'int *' for 1st argument\n")
    assert portability.classify(err, log, []) == "unmapped_api"
    own = ("u.hip:3:1: error: no matching function for call to 'scale'\nu.hip:1:6: note: candidate function not "
           "viable: no known conversion from '__hip_bfloat162 *' to 'float *' for 1st argument\n")
    assert portability.classify(own.splitlines()[0], own, []) == "other"


@pytest.mark.skipif(hip_implied.nvcc() is None, reason="no nvcc to ask which headers it brings")
def test_headers_nvcc_brings_are_named_in_the_hip_unit(tmp_path: Path) -> None:
    """Asked of nvcc (-M), not listed: a HIP runtime header that an included CUDA header brings with it is
    added after that include, then `#line` keeps the CUDA unit's numbering; a header nvcc lacks adds none."""
    if not hip_translate.available():
        pytest.skip("torch.utils.hipify is not installed")
    implied = hip_implied.Implied(tmp_path / "cache")
    brings = implied.closure("cuda_fp16.h") - implied.closure(None)
    assert "cuda_fp16.h" in brings and implied.closure("no/such_header.h") == frozenset()
    cuda = "// unit\n#include <cuda_runtime.h>\n#include <cuda_fp16.h>\n#include <cuda_fp16.h>\n__half h;\n"
    hip = hip_translate.translate(cuda)
    assert implied.add(cuda, hip, hip_translate.mapping()) == hip  # hip_fp16.h is named already
    cuda = "// unit\n#include <cuda_runtime.h>\n#include <cuda_bf16.h>\n__half h;\n"
    if "cuda_fp16.h" not in implied.closure("cuda_bf16.h"):
        pytest.skip("this nvcc's cuda_bf16.h does not bring cuda_fp16.h")
    out = implied.add(cuda, hip_translate.translate(cuda), hip_translate.mapping()).splitlines()
    assert out[2:5] == ["#include <hip/hip_bf16.h>",
                        "#include <hip/hip_fp16.h>  // kernel-miner: nvcc brings it with <cuda_bf16.h>", "#line 4"]
    assert (tmp_path / "cache" / "hipify" / "implied").is_dir()  # asked once per header and nvcc


@needs_prefix
@pytest.mark.skipif(hip_implied.nvcc() is None, reason="no nvcc to ask which headers it brings")
def test_implied_header_builds_and_api_gaps_are_classed(tmp_path: Path) -> None:
    """bf16 used with only <cooperative_groups.h> included builds as HIP when this nvcc's
    <cooperative_groups.h> brings cuda_bf16.h (CUDA 13's does); atomicAdd on a bf16 pair, which HIP lacks,
    fails as unmapped_api at the CUDA unit's line of the call; __ldcs on float (HIP has it for __half only)
    builds as a plain load (hip_port.py)."""
    out = tmp_path / "out"
    assert run_miner("extract", IMPLIED, "-o", out, "-q", "-j", "1").returncode == 0
    r = run_miner("build", out, "--toolchain", "hip", "--hip-path", PREFIX, "-j", "2", "--cache-dir",
                  tmp_path / "cache", timeout=900)
    metas = _by_name(out)
    brings_bf16 = "cuda_bf16.h" in hip_implied.Implied(tmp_path / "cache").closure("cooperative_groups.h")
    copy = metas["implied_bf16_copy_kernel"]
    b = copy["instantiations"][0]["build_hip"]
    hip_text = (out / copy["id"] / b["unit"]).read_text(encoding="utf-8")
    cuda_text = (out / copy["id"] / copy["instantiations"][0]["unit"]).read_text(encoding="utf-8")
    if "#include <cuda_bf16.h>" in cuda_text:
        # The closure itself now includes the toolkit header of a type the instantiation names
        # (units.closure: k<__nv_bfloat16> brings cuda_bf16.h); hipify maps that line.
        assert "#include <hip/hip_bf16.h>" in hip_text
        assert b["status"] == "ok", r.stderr
    elif brings_bf16:
        assert "#include <hip/hip_bf16.h>  // kernel-miner: nvcc brings it with <cooperative_groups.h>" in hip_text
        assert b["status"] == "ok", r.stderr
    m = metas["implied_bf16_pair_add_kernel"]
    b = m["instantiations"][0]["build_hip"]
    assert b["status"] == "failed" and b["error_class"] == "unmapped_api", b
    cuda_lines = (out / m["id"] / m["instantiations"][0]["unit"]).read_text(encoding="utf-8").splitlines()
    line = next(n for n, text in enumerate(cuda_lines, 1) if "atomicAdd(" in text and "__global__" not in text)
    assert f"unit.hip:{line}:" in b["error"], (line, b["error"])
    b = metas["implied_streaming_scale_kernel"]["instantiations"][0]["build_hip"]
    assert b["status"] == "ok" and [p["what"] for p in b["ported"]] == ["__ldcs: cache-hinted load -> plain load"], b
