"""CUDA device API that the hipify mapping leaves and HIP has in another form (hip_port.py): rewritten in
the HIP unit line for line, reported as `ported`, and built by the real hipcc; what has no safe HIP form
(a computed lane mask, loop bounds from warpSize) stays a wave64 failure."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from miner.builder import hip_port
from miner.dataset import schema
from tests.conftest import FIXTURES, load_dataset, run_miner
from tests.test_hip_prefix import PREFIX, needs_prefix

PORTED = FIXTURES / "hip" / "ported"

UNIT = """// km:includes-begin
#include <hip/hip_runtime.h>
// km:includes-end
// km:body-begin

#define ALL_LANES 0xffffffff
namespace cg = cooperative_groups;
__device__ float f(float v, const float* p, float* q, unsigned m) {
  v += __shfl_xor_sync(ALL_LANES, v,
                       1);
  v += __shfl_down_sync(m, v, 1);
  v += __ldcs(p + (int)__shfl_sync(0xffffffff, v, 0));
  __syncwarp(ALL_LANES);
  __stcg(q, v);
  v += cg::reduce(tile, v, cg::plus<float>()) + ::cooperative_groups::reduce(tile, v, cg::less<float>{});
#if !defined(__HIP_PLATFORM_AMD__)
  __syncwarp();
#endif
  return v;
}
// km:body-end
"""


def test_rewrites_keep_lines_and_leave_what_has_no_safe_form() -> None:
    out, ported = hip_port.port(UNIT, UNIT)
    lines = out.split("\n")
    assert len(lines) == len(UNIT.split("\n"))  # the helpers took the blank line after km:body-begin
    assert lines[4].startswith("__device__ inline void km_hip_syncwarp()") and "km_hip_cg_reduce" in lines[4]
    assert lines[8:10] == ["  v += __shfl_xor(v, 1, 32)", ";"]  # a call over two lines: its newline follows it
    assert lines[10] == "  v += __shfl_down(v, 1, 32);"              # a computed mask: which lanes take part
    assert lines[11] == "  v += km_hip_load(p + (int)__shfl(v, 0, 32));"
    assert lines[12] == "  km_hip_syncwarp();" and lines[13] == "  km_hip_store(q, v);"
    assert lines[14] == ("  v += km_hip_cg_reduce(tile, v, km_hip_cg_plus<float>()) + "
                         "km_hip_cg_reduce(tile, v, km_hip_cg_less<float>{});")
    assert lines[16] == "  __syncwarp();"                             # a branch hip-clang does not compile
    def line_of(what: str) -> int:
        return next(p.line for p in ported if p.what.startswith(what))

    assert line_of("__shfl_xor_sync(full mask, ...)") == 9 and line_of("__syncwarp") == 13
    assert line_of("__stcg: ") == 14 and line_of("cooperative_groups::reduce") == 15
    assert line_of("__shfl_down_sync(mask m, ...)") == 11
    assert line_of("cooperative_groups::less") == 15 and len(ported) == 9

    # No blank line to take: the helpers are inserted and `#line` restores the numbering.
    dense = UNIT.replace("// km:body-begin\n\n", "// km:body-begin\n")
    out, _ = hip_port.port(dense, dense)
    assert out.split("\n")[5] == "#line 5" and out.split("\n")[6] == "#define ALL_LANES 0xffffffff"

    # A unit whose code uses warpSize keeps its shuffles (32-lane segments would not match its loop bounds).
    wide = UNIT.replace("unsigned m) {", "unsigned m) { int w = warpSize;")
    assert "__shfl_xor_sync(ALL_LANES" in hip_port.port(wide, wide)[0]
    # A name the unit defines is the unit's own.
    own = UNIT.replace("namespace cg", "__device__ float __ldcs(const float* p) { return *p; }\nnamespace cg")
    assert "__ldcs(p + " in hip_port.port(own, own)[0]
    plain = "__global__ void k(float* y) { y[0] = 1.f; }\n"
    assert hip_port.port(plain, plain) == (plain, [])


def _by_name(out: Path) -> dict[str, dict[str, Any]]:
    return {m["name"]: m for m in load_dataset(out)}


@needs_prefix
def test_ported_units_build_with_hipcc(tmp_path: Path) -> None:
    out, cache = tmp_path / "out", tmp_path / "cache"
    assert run_miner("extract", PORTED, "-o", out, "-q", "-j", "1").returncode == 0
    r = run_miner("build", out, "--toolchain", "hip", "--hip-path", PREFIX, "-j", "2", "--cache-dir", cache,
                  timeout=900)
    assert r.returncode == 1, r.stdout + r.stderr  # two units fail on purpose
    metas = _by_name(out)
    for m in metas.values():
        assert schema.errors(m) == [], schema.errors(m)

    def build(name: str) -> dict[str, Any]:
        return metas[name]["instantiations"][0]["build_hip"]

    row = build("ported_row_max_kernel")
    assert row["status"] == "ok", row
    # It builds, but its shuffles assume 32 lanes: never plain ok.
    assert row["portable"] is False and {f["kind"] for f in row["portability"]} == {"wave64"}
    ported = " | ".join(p["what"] for p in row["ported"])
    for what in ("__shfl_xor_sync(full mask, ...) -> __shfl_xor(..., width 32)", "__shfl_sync(full mask",
                 "__syncwarp", "__ldcs: cache-hinted load", "__stcs: cache-hinted store"):
        assert what in ported, ported
    hip_text = (out / metas["ported_row_max_kernel"]["id"] / row["unit"]).read_text(encoding="utf-8")
    assert "__shfl_xor(v, o, 32)" in hip_text and "_sync(" not in hip_text.split("// km:body-begin")[1]
    # Same line numbers as unit.cu: the ported record names the CUDA unit's line of the call.
    cuda_lines = (out / metas["ported_row_max_kernel"]["id"] / metas["ported_row_max_kernel"]["instantiations"][0]
                  ["unit"]).read_text(encoding="utf-8").splitlines()
    syncwarp = next(p for p in row["ported"] if p["what"].startswith("__syncwarp"))
    assert "__syncwarp()" in cuda_lines[syncwarp["line"] - 1]

    tile = build("ported_tile_stats_kernel")
    assert tile["status"] == "ok" and tile["portable"] is True and tile["resources"]["vgprs"] > 0, tile
    assert any(p["what"].startswith("cooperative_groups::reduce") for p in tile["ported"])
    assert any(p["what"].startswith("cooperative_groups::greater") for p in tile["ported"])

    # A struct reduced over a tile: HIP's tile shfl_xor takes arithmetic types only; the helper shuffles words.
    pair = build("ported_tile_range_kernel")
    assert pair["status"] == "ok" and pair["portable"] is True, pair

    own = build("own_ldcs_kernel")
    assert own["status"] == "ok" and own["ported"] == [], own

    # Lane masks as values (__ballot_sync: 32 bits on CUDA, 64 on HIP) and warpSize-based lanes stay wave64.
    for name in ("masked_sum_kernel", "warpsize_sum_kernel"):
        b = build(name)
        assert b["status"] == "failed" and b["error_class"] == "wave64", b
    assert "__ballot_sync" in build("masked_sum_kernel")["error"]
    assert build("warpsize_sum_kernel")["ported"] == []

    bf16 = build("ported_bf16_round_kernel")
    assert {p["what"] for p in bf16["ported"]} == {"__trap -> __builtin_trap",
                                                     "__float2bfloat16_rn -> __float2bfloat16"}
    assert bf16["status"] == "ok", bf16

    r = run_miner("build", out, "--toolchain", "hip", "--hip-path", PREFIX, "-j", "2", "--cache-dir", cache)
    assert "0 hipcc calls" in r.stdout, r.stdout + r.stderr
