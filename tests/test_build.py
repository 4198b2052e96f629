"""`kernel-miner build`: real nvcc over small units of our own, batched, cached, with failures attributed."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_miner

NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.access("/usr/local/cuda/bin/nvcc", os.X_OK) else None)
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")

HEAD = """// test unit
// km:includes-begin
#include <cuda_runtime.h>
#include <float.h>
// km:includes-end
// km:body-begin
"""

LAUNCH = """extern "C" int {sym}(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                      unsigned long smem, void* stream, {params}) {{
  {call}<<<dim3(gx, gy, gz), dim3(bx, by, bz), smem, (cudaStream_t)stream>>>({args});
  return (int)cudaGetLastError();
}}
"""

# A templated kernel with a macro, a helper and a static shared tile whose size shows up in ptxas -v:
# 256 elements, so 1024 bytes for float and 2048 for double: each batch member gets its own numbers.
SCALE_BODY = """#define TILE 256
#define GRID_LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
template <typename T>
__device__ T twice(T v) { return v + v; }
template <typename T>
__global__ void scale_tile(int n, const T* in, T* out) {
  __shared__ T tile[TILE];
  GRID_LOOP(i, n) {
    tile[threadIdx.x % TILE] = twice(in[i]);
    __syncthreads();
    out[i] = tile[(threadIdx.x + 1) % TILE] < (T)FLT_MAX ? tile[(threadIdx.x + 1) % TILE] : (T)0;
  }
}
template __global__ void scale_tile<ELEM>(int, const ELEM*, ELEM*);
"""

# The unit overloads a CUDA built-in for its own type and launches through a global qualifier:
# inside a batch namespace both would break without the builder's care. It also redefines a toolkit
# macro that a later unit of the same batch uses with its usual meaning.
OVERLOAD_BODY = """#define PAIR_W 2
#undef FLT_MAX
#define FLT_MAX 1.0e30f
struct Pair { float a, b; };
__device__ inline Pair atomicAdd(Pair* p, Pair v) {
  return Pair{atomicAdd(&p->a, v.a), atomicAdd(&p->b, v.b)};
}
__global__ void pair_sum(int n, const Pair* in, Pair* acc, float* total) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { atomicAdd(acc, in[i]); atomicAdd(total, in[i].a * PAIR_W); }
}
"""

MISSING_BODY = """__global__ void uses_missing(int n, float* x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = km_missing_helper(x[i]);
}
"""

NO_NAMESPACE_BODY = """__global__ void uses_ns(int n, float* x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = absent_ns::scale * x[i];
}
"""

# Uses FLT_MAX without including <float.h>: it must fail on its own even though its neighbours
# include that header (a batch that lent it the header would report a unit that does not compile).
NEEDS_FLOAT_H = """// km:includes-begin
#include <cuda_runtime.h>
// km:includes-end
// km:body-begin
__global__ void clamp_max(int n, float* x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = fminf(x[i], FLT_MAX);
}
""" + LAUNCH.format(sym="km_launch_test_clamp_max", params="int n, float* x", call="clamp_max", args="n, x") + \
    "// km:body-end\n// km:macros\n"

PLAIN_UNIT = """#include <cuda_runtime.h>
// no km: markers: the builder must compile this one on its own
__global__ void plain_add(int n, const float* a, float* b) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] += a[i];
}
""" + LAUNCH.format(sym="km_launch_test_plain_add", params="int n, const float* a, float* b", call="plain_add",
                    args="n, a, b")


def unit_text(body: str, sym: str, params: str, call: str, args: str, macros: str = "") -> str:
    return (HEAD + body + LAUNCH.format(sym=sym, params=params, call=call, args=args)
            + f"// km:body-end\n// km:macros {macros}\n")


def write_kernel(ds: Path, kid: str, name: str, units: dict[str, str]) -> None:
    insts = []
    for inst, text in units.items():
        (ds / kid / "units" / inst).mkdir(parents=True, exist_ok=True)
        (ds / kid / "units" / inst / "unit.cu").write_text(text, encoding="utf-8")
        sym = next(line.split("(")[0].split()[-1] for line in text.splitlines() if line.startswith('extern "C"'))
        insts.append({"id": inst, "unit": f"units/{inst}/unit.cu", "launcher": {"symbol": sym}})
    meta = {"id": kid, "name": name, "instantiations": insts}
    (ds / kid / "metadata.json").write_text(json.dumps(meta), encoding="utf-8")
    with open(ds / "index.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps(meta) + "\n")


def make_dataset(ds: Path) -> None:
    scale = {t: unit_text(SCALE_BODY.replace("ELEM", t), f"km_launch_test_scale_{t}", f"int n, const {t}* in, {t}* out",
                          f"::scale_tile<{t}>", "n, in, out", "TILE GRID_LOOP") for t in ("float", "double")}
    write_kernel(ds, "scale_tile-000000000001", "scale_tile", scale)
    write_kernel(ds, "pair_sum-000000000002", "pair_sum", {"default": unit_text(
        OVERLOAD_BODY, "km_launch_test_pair_sum", "int n, const Pair* in, Pair* acc, float* total", "::pair_sum",
        "n, in, acc, total", "PAIR_W FLT_MAX")})
    write_kernel(ds, "uses_missing-000000000003", "uses_missing", {"default": unit_text(
        MISSING_BODY, "km_launch_test_uses_missing", "int n, float* x", "uses_missing", "n, x")})
    write_kernel(ds, "uses_ns-000000000004", "uses_ns", {"default": unit_text(
        NO_NAMESPACE_BODY, "km_launch_test_uses_ns", "int n, float* x", "uses_ns", "n, x")})
    write_kernel(ds, "plain_add-000000000005", "plain_add", {"default": PLAIN_UNIT})
    write_kernel(ds, "clamp_max-000000000006", "clamp_max", {"default": NEEDS_FLOAT_H})


def counting_nvcc(tmp: Path, real: str) -> tuple[Path, Path]:
    """An nvcc on a path of our own that logs each compile (not --version) and runs the real one."""
    log = tmp / "nvcc-calls.log"
    script = tmp / "nvcc-counting"
    script.write_text(f'#!/bin/sh\ncase "$*" in *--version*) ;; *) echo call >> "{log}";; esac\n'
                      f'exec "{real}" "$@"\n', encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script, log


def builds(ds: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for p in sorted(ds.glob("*/metadata.json")):
        meta = json.loads(p.read_text(encoding="utf-8"))
        for inst in meta["instantiations"]:
            out[f"{meta['name']}/{inst['id']}"] = inst["build"]
        out[meta["name"]] = meta["build"]
    return out


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One cold build and one warm rebuild of the same dataset, shared by the tests below."""
    assert NVCC
    tmp = tmp_path_factory.mktemp("build")
    ds, cache = tmp / "ds", tmp / "cache"
    make_dataset(ds)
    nvcc, log = counting_nvcc(tmp, NVCC)
    common = ["--arch", "sm_90", "--cache-dir", cache, "--nvcc", nvcc, "-j", "1"]
    t0 = time.monotonic()
    cold = run_miner("build", ds, *common, timeout=300)
    cold_s = time.monotonic() - t0
    cold_calls = log.read_text().count("call") if log.exists() else 0
    cold_builds = builds(ds)
    t0 = time.monotonic()
    warm = run_miner("build", ds, *common, timeout=300)
    warm_s = time.monotonic() - t0
    warm_calls = log.read_text().count("call") - cold_calls
    return dict(ds=ds, cold=cold, warm=warm, cold_s=cold_s, warm_s=warm_s, cold_calls=cold_calls,
                warm_calls=warm_calls, cold_builds=cold_builds, warm_builds=builds(ds), nvcc=nvcc, cache=cache)


@needs_nvcc
def test_good_units_compile_into_loadable_libraries(built: dict[str, Any]) -> None:
    b, ds = built["cold_builds"], built["ds"]
    for key, sym in (("scale_tile/float", "km_launch_test_scale_float"),
                     ("scale_tile/double", "km_launch_test_scale_double"),
                     ("pair_sum/default", "km_launch_test_pair_sum"),
                     ("plain_add/default", "km_launch_test_plain_add")):
        rec = b[key]
        assert rec["status"] == "ok", (key, rec)
        assert rec["symbol"] == sym and rec["arch"] == "sm_90" and rec["error"] is None
        kid = next(p.parent.name for p in ds.glob(f"{key.split('/')[0]}-*/metadata.json"))
        lib = ds / kid / rec["library"]
        assert lib.is_file()
        assert hasattr(ctypes.CDLL(str(lib)), sym)  # dlopen needs no GPU; the launcher is exported
    assert b["scale_tile"]["pass_call"] is True and b["scale_tile"]["ok"] == 2


@needs_nvcc
def test_batch_with_bad_units_keeps_good_ones_and_attributes_errors(built: dict[str, Any]) -> None:
    b = built["cold_builds"]
    assert built["cold"].returncode == 1, built["cold"].stderr
    # The good marker units went through one shared batch (overload and ::qualified launch included).
    assert b["scale_tile/float"]["batch_size"] == b["pair_sum/default"]["batch_size"] == 3
    miss = b["uses_missing/default"]
    assert miss["status"] == "failed" and miss["library"] is None
    assert miss["missing_symbol"] == "km_missing_helper"
    assert miss["error"].startswith("units/default/unit.cu(") and '"km_missing_helper" is undefined' in miss["error"]
    ns = b["uses_ns/default"]
    assert ns["status"] == "failed" and ns["missing_symbol"] == "absent_ns"
    log = built["ds"] / "uses_ns-000000000004" / ns["log"]
    assert "absent_ns" in log.read_text()
    assert b["uses_missing"]["pass_call"] is False and b["uses_missing"]["failed"] == 1
    assert "uses_missing-000000000003/units/default/unit.cu" in built["cold"].stderr
    # 1 failing batch; uses_missing's first error (an undefined name) is plainly its own, uses_ns's is not
    # of that kind and it is compiled alone; the rest again; the marker-less unit and clamp_max alone.
    assert built["cold_calls"] == 5
    assert miss["batch_size"] == 5 and ns["batch_size"] == 1
    own_log = (built["ds"] / "uses_missing-000000000003" / miss["log"]).read_text()
    assert "km_missing_helper" in own_log and "absent_ns" not in own_log and "-00000000000" not in own_log
    # A kernel whose unit fails says why in `unresolved` too (the build's first error, its missing name).
    meta = json.loads((built["ds"] / "uses_missing-000000000003" / "metadata.json").read_text())
    entries = [u for u in meta["unresolved"] if u["reason"].startswith("build: ")]
    assert entries == [{"symbol": "km_missing_helper", "reason": "build: " + miss["error"].splitlines()[0],
                        "where": "units/default/unit.cu"}]


@needs_nvcc
def test_a_unit_is_never_lent_headers_by_its_batch_neighbours(built: dict[str, Any]) -> None:
    rec = built["cold_builds"]["clamp_max/default"]
    assert rec["status"] == "failed" and rec["missing_symbol"] == "FLT_MAX"


@needs_nvcc
def test_resources_are_attributed_per_unit_inside_a_batch(built: dict[str, Any]) -> None:
    b = built["cold_builds"]
    f, d = b["scale_tile/float"]["resources"], b["scale_tile/double"]["resources"]
    assert f["shared_bytes"] == 1024 and d["shared_bytes"] == 2048
    assert "scale_tile<float>" in f["kernel"] and "scale_tile<double>" in d["kernel"] and "km_b" not in f["kernel"]
    for r in (f, d, b["plain_add/default"]["resources"]):
        assert r["registers"] > 0 and r["spill_stores"] == 0 and r["arch"] == "sm_90"


@needs_nvcc
def test_unchanged_rerun_is_served_from_cache(built: dict[str, Any]) -> None:
    assert built["warm_calls"] == 0
    assert built["warm"].returncode == 1
    assert "7 cached" in built["warm"].stdout
    warm = built["warm_builds"]
    for key, rec in built["cold_builds"].items():
        if "/" in key:
            assert warm[key]["cached"] is True and rec["cached"] is False
            assert {k: v for k, v in warm[key].items() if k != "cached"} == \
                   {k: v for k, v in rec.items() if k != "cached"}
    assert built["warm_s"] < built["cold_s"] / 3


@needs_nvcc
def test_kernels_filter_and_changed_unit_rebuilds_only_that_unit(built: dict[str, Any]) -> None:
    ds = built["ds"]
    unit = ds / "plain_add-000000000005" / "units" / "default" / "unit.cu"
    unit.write_text(unit.read_text().replace("b[i] += a[i]", "b[i] -= a[i]"), encoding="utf-8")
    log = built["nvcc"].parent / "nvcc-calls.log"
    before = log.read_text().count("call")
    res = run_miner("build", ds, "--arch", "sm_90", "--cache-dir", built["cache"], "--nvcc", built["nvcc"],
                    "--kernels", "plain_add,scale_*", timeout=300)
    assert res.returncode == 0, res.stderr
    assert "3/3 units built" in res.stdout and "2 cached" in res.stdout
    assert log.read_text().count("call") - before == 1


def fake_nvcc(tmp: Path, body: str) -> Path:
    script = tmp / "nvcc-fake"
    script.write_text("#!/bin/sh\n"
                      'case "$*" in *--version*) echo "Cuda compilation tools, release 99.0, V99.0.1"; exit 0;; esac\n'
                      + body, encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def test_timeout_kills_the_whole_compiler_process_group(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    write_kernel(ds, "plain_add-000000000005", "plain_add", {"default": PLAIN_UNIT})
    pidfile = tmp_path / "child.pid"
    # The fake compiler forks a long-lived child, as nvcc does with cicc/ptxas.
    nvcc = fake_nvcc(tmp_path, f'sleep 60 & echo $! > "{pidfile}"\nwait\n')
    t0 = time.monotonic()
    res = run_miner("build", ds, "--nvcc", nvcc, "--timeout", "1", "--cache-dir", tmp_path / "cache")
    assert time.monotonic() - t0 < 30
    assert res.returncode == 1
    rec = builds(ds)["plain_add/default"]
    assert rec["status"] == "timeout" and "timed out after 1 s" in rec["error"] and rec["library"] is None
    status = Path(f"/proc/{int(pidfile.read_text())}/status")
    for _ in range(50):  # killed means gone or a zombie waiting for its reaper
        if not status.exists() or "\nState:\tZ" in status.read_text():
            break
        time.sleep(0.1)
    else:
        pytest.fail("the compiler's child process survived the timeout")


def test_no_nvcc_is_one_clear_line(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    write_kernel(ds, "plain_add-000000000005", "plain_add", {"default": PLAIN_UNIT})
    res = run_miner("build", ds, "--nvcc", tmp_path / "no-such-nvcc")
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == [f"kernel-miner: error: nvcc not found or not executable: "
                                               f"{tmp_path / 'no-such-nvcc'}"]
    assert "build" not in json.loads((ds / "plain_add-000000000005" / "metadata.json").read_text())


@pytest.mark.parametrize("args, code, message", [
    (["--arch", "sm90"], 2, "--arch: 'sm90' is not sm_NN or compute_NN"),
    (["--jobs", "0"], 2, "--jobs must be at least 1"),
    (["--kernels", "nothing_matches"], 3, "no kernels match --kernels"),
])
def test_bad_arguments(tmp_path: Path, args: list[str], code: int, message: str) -> None:
    ds = tmp_path / "ds"
    write_kernel(ds, "plain_add-000000000005", "plain_add", {"default": PLAIN_UNIT})
    res = run_miner("build", ds, "--nvcc", fake_nvcc(tmp_path, "exit 1\n"), *args)
    assert res.returncode == code
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernel-miner: error: ") and message in lines[0]


def test_missing_dataset_and_dataset_without_units(tmp_path: Path) -> None:
    res = run_miner("build", tmp_path / "absent")
    assert res.returncode == 2 and res.stderr.startswith("kernel-miner: error: ") and "not a dataset" in res.stderr
    ds = tmp_path / "ds"
    (ds / "k-000000000001").mkdir(parents=True)
    (ds / "k-000000000001" / "metadata.json").write_text(json.dumps({"id": "k-000000000001", "name": "k"}))
    res = run_miner("build", ds, "--nvcc", fake_nvcc(tmp_path, "exit 1\n"))
    assert res.returncode == 3 and "no units to build" in res.stderr and len(res.stderr.splitlines()) == 1


def test_unusable_cache_dir_is_one_clear_line(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    write_kernel(ds, "plain_add-000000000005", "plain_add", {"default": PLAIN_UNIT})
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    res = run_miner("build", ds, "--nvcc", fake_nvcc(tmp_path, "exit 1\n"), "--cache-dir", blocker / "cache")
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernel-miner: error: build: ") and "Traceback" not in res.stderr


@needs_nvcc
def test_resources_of_several_archs_stay_apart(tmp_path: Path) -> None:
    import subprocess

    from miner.builder import parse_resources, pick_resources

    src = tmp_path / "k.cu"
    src.write_text(PLAIN_UNIT, encoding="utf-8")
    log = subprocess.run([NVCC, "-c", "-gencode", "arch=compute_80,code=sm_80", "-gencode",
                          "arch=compute_90,code=sm_90", "-Xptxas", "-v", str(src), "-o", str(tmp_path / "k.o")],
                         capture_output=True, text=True, check=True).stderr
    entries = parse_resources(log)
    assert sorted(r["arch"] for r in entries.values()) == ["sm_80", "sm_90"]
    assert all(r["registers"] > 0 and r["kernel"] == "_Z9plain_addiPKfPf" for r in entries.values())
    picked = pick_resources(entries, "plain_add")
    assert picked is not None and picked["arch"] == "sm_80"
    assert picked["kernel"] == "plain_add(int, float const*, float*)"


@needs_nvcc
def test_bench_script_prints_cold_warm_and_torch_figures(tmp_path: Path) -> None:
    import subprocess
    import sys

    from tests.conftest import ROOT

    ds = tmp_path / "ds"
    write_kernel(ds, "plain_add-000000000005", "plain_add", {"default": PLAIN_UNIT})
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_build.py"), str(ds), "--arch", "sm_90"],
                         capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["units"])
    assert "warm/cold" in lines[header].split() and lines[header + 1].split()[-1].endswith("%")
    assert lines[header + 1].split()[:2] == ["1", "1"]
    assert "one unit as a torch extension (shared notes figure, not measured): 128 s" in res.stdout


def test_batch_that_times_out_falls_back_to_units_alone(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    for k in ("a", "b"):
        write_kernel(ds, f"k{k}-00000000000{k == 'a' and 1 or 2}", f"k{k}", {"default": unit_text(
            MISSING_BODY.replace("uses_missing", f"k{k}"), f"km_launch_test_k{k}", "int n, float* x", f"k{k}", "n, x")})
    # Batches hang; a unit alone "compiles" (the fake writes the -o file), so only the fallback can finish.
    nvcc = fake_nvcc(tmp_path, 'case "$*" in *batch.cu*) sleep 60;; esac\n'
                               'while [ $# -gt 1 ]; do [ "$1" = "-o" ] && : > "$2"; shift; done\nexit 0\n')
    t0 = time.monotonic()
    res = run_miner("build", ds, "--nvcc", nvcc, "--timeout", "2", "-j", "1", "--cache-dir", tmp_path / "cache")
    assert time.monotonic() - t0 < 30
    assert res.returncode == 0, res.stderr
    b = builds(ds)
    assert b["ka/default"]["status"] == b["kb/default"]["status"] == "ok"
    assert b["ka/default"]["batch_size"] == b["kb/default"]["batch_size"] == 1


def test_kernels_selects_by_metadata_name_like_validate_and_enrich(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    # Kernel ids keep 48 characters of the name: a longer name is only whole in metadata.json.
    long_name = "plain_add_" + "x" * 50
    write_kernel(ds, long_name[:48] + "-000000000007", long_name, {"default": PLAIN_UNIT})
    write_kernel(ds, "plain_add-000000000005", "plain_add", {"default": PLAIN_UNIT})
    # A compiler that "builds" whatever it is given: this test is about which kernels are built.
    nvcc = fake_nvcc(tmp_path, 'while [ $# -gt 1 ]; do [ "$1" = "-o" ] && : > "$2"; shift; done\nexit 0\n')
    for selector in (long_name, "*_" + "x" * 50):  # the whole name, and a glob only the whole name matches
        res = run_miner("build", ds, "--nvcc", nvcc, "--kernels", selector, "--cache-dir", tmp_path / "cache")
        assert res.returncode == 0, res.stderr
        assert "1/1 units built" in res.stdout
        metas = {p.parent.name: json.loads(p.read_text()) for p in ds.glob("*/metadata.json")}
        assert metas[long_name[:48] + "-000000000007"]["build"]["ok"] == 1
        assert "build" not in metas["plain_add-000000000005"]
