"""Oracles (miner/validate/oracles/) on the CPU: recording, replay, determinism, float/double agreement.

The "kernels" here are Python functions behind harness.Unit's launcher seam (`invoke`), reading and
writing CPU tensors through their raw addresses exactly as a CUDA kernel reads device memory, so the
storage copies, pointer offsets, aliasing and dtype conversion are all exercised for real. The same
host units run inside `kernel-miner validate` to check the plugin end to end. GPU replays of real
units run in tests/test_oracles_gpu.py.
"""

from __future__ import annotations

import ctypes
import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from miner import harness  # noqa: E402
from miner.validate import oracles  # noqa: E402

REPO = Path(__file__).resolve().parents[1]

# Shared by these tests and the test files written into datasets below.
HOST_UNIT = textwrap.dedent('''
    import ctypes
    import itertools
    from pathlib import Path

    from miner import harness

    _COUNTER = itertools.count()
    C = {"float32": ctypes.c_float, "float64": ctypes.c_double}


    def scale(prec, bias=0.0, nondet=False):
        """out[i] = a * x[i] + bias over n elements, in precision prec; nondet adds a run counter."""
        def kernel(out, x, a, n):
            src = (C[prec] * n).from_address(x)
            dst = (C[prec] * n).from_address(out)
            extra = next(_COUNTER) if nondet else 0
            for i in range(n):
                dst[i] = a * src[i] + bias + extra
        return kernel


    class HostUnit(harness.Unit):
        """A unit whose launcher is a Python function over raw addresses of CPU tensors."""

        def __init__(self, kdir, inst, kernel, prec, source="", siblings=None):
            params = [harness.Param("out", f"{'double' if prec == 'float64' else 'float'} *", "pointer"),
                      harness.Param("x", f"const {'double' if prec == 'float64' else 'float'} *", "pointer"),
                      harness.Param("a", "double" if prec == "float64" else "float", prec),
                      harness.Param("n", "int", "int32")]
            super().__init__(Path(kdir), inst, f"host_{inst}", params, Path("host"), source, None)
            self.kernel, self.siblings = kernel, siblings or {}

        def convert_arg(self, value, param):
            if param.ctype == "pointer" and hasattr(value, "data_ptr"):
                return ctypes.c_void_p(value.data_ptr())
            return harness._convert(value, param)

        def invoke(self, grid, block, smem, stream, cargs):
            self.kernel(*[c.value for c in cargs])
            return 0

        def sibling(self, inst):
            if inst not in self.siblings:
                raise FileNotFoundError(f"{inst} is not built")
            return self.siblings[inst]()
''')
ns: dict[str, Any] = {}
exec(compile(HOST_UNIT, "host_unit", "exec"), ns)  # noqa: S102 - our own helper text
HostUnit, scale = ns["HostUnit"], ns["scale"]


def meta(kdir: Path, insts: list[tuple[str, Any, str]]) -> dict[str, Any]:
    """metadata.json with float/double style instantiations: (id, template_args, 'float'|'double')."""
    entries = []
    for iid, targs, t in insts:
        entries.append({"id": iid, "template_args": targs, "unit": f"units/{iid}/unit.cu",
                        "launcher": {"symbol": f"host_{iid}", "params": [
                            {"name": "out", "type": f"{t} *", "ctype": "pointer"},
                            {"name": "x", "type": f"const {t} *", "ctype": "pointer"},
                            {"name": "a", "type": t, "ctype": "float64" if t == "double" else "float32"},
                            {"name": "n", "type": "int", "ctype": "int32"}]}})
    m = {"schema_version": 1, "id": kdir.name, "name": "scale", "instantiations": entries}
    kdir.mkdir(parents=True, exist_ok=True)
    for iid, _, _ in insts:  # validate builds units without a library: these are host units, never built
        (kdir / "units" / iid).mkdir(parents=True, exist_ok=True)
        (kdir / "units" / iid / "libunit.so").write_bytes(b"")
    (kdir / "metadata.json").write_text(json.dumps(m))
    return m


FLOAT_DOUBLE = [("float", {"T": "float"}, "float"), ("double", {"T": "double"}, "double")]


def record(unit: Any, *args: Any) -> oracles.Launch:
    rec = oracles.Recorder()
    prev = harness.set_launch_hook(rec)
    try:
        unit.launch(1, 64, *args, stream=0)
    finally:
        harness.set_launch_hook(prev)
    (launch,) = rec.take()
    return launch


def test_replay_restores_the_bytes_and_keeps_views_and_aliases(tmp_path: Path) -> None:
    unit = HostUnit(tmp_path, "float", scale("float32"), "float32")
    base = torch.arange(16, dtype=torch.float32)
    x = base[2:6]  # a view: the kernel sees the storage at a 8-byte offset
    launch = record(unit, x, x, 3.0, 4)  # in place: out and x share the storage
    assert len(launch.buffers) == 1 and launch.buffers[0].names == ["out", "x"]
    assert [a.offset for a in launch.args[:2]] == [8, 8]
    assert base[2:6].tolist() == [6.0, 9.0, 12.0, 15.0]  # the test's own launch ran
    # The copy was taken before the launch: replaying it starts from 2..5, not from the result.
    (after,) = oracles.replay(launch)
    assert after.view(torch.float32).tolist() == [0, 1, 6, 9, 12, 15, *range(6, 16)]
    assert base[2:6].tolist() == [6.0, 9.0, 12.0, 15.0]  # the test's tensors are never touched


def test_determinism_passes_fails_and_skips_for_atomics(tmp_path: Path) -> None:
    x, out = torch.randn(32), torch.empty(32)
    good = record(HostUnit(tmp_path, "float", scale("float32"), "float32"), out, x, 2.0, 32)
    (res,) = oracles.run([good], "t::good", ["determinism"])
    assert res["ok"] is True and res["test"] == "t::good" and res["inst"] == "float"
    bad = record(HostUnit(tmp_path, "float", scale("float32", nondet=True), "float32"), out, x, 2.0, 32)
    (res,) = oracles.run([bad], "t::bad", ["determinism"])
    assert res["ok"] is False
    assert "differ in 32 of 32 elements of out" in res["reason"]
    assert oracles.failure_message(res).startswith("oracle determinism: float launch 1")
    atomic = record(HostUnit(tmp_path, "float", scale("float32", nondet=True), "float32",
                             source="__global__ void k(float* o) { atomicAdd(o, 1.0f); }"), out, x, 2.0, 32)
    (res,) = oracles.run([atomic], None, ["determinism"])
    assert res["ok"] is None and res["skipped"] == "atomics in the unit"


def test_float_and_double_instantiations_agree_or_not(tmp_path: Path) -> None:
    kdir = tmp_path / "scale"
    meta(kdir, FLOAT_DOUBLE)
    x, out = torch.randn(64), torch.full((64,), float("nan"))

    def run_with(double_kernel: Any) -> dict[str, Any]:
        sib = {"double": lambda: HostUnit(kdir, "double", double_kernel, "float64")}
        launch = record(HostUnit(kdir, "float", scale("float32"), "float32", siblings=sib), out, x, 1.5, 64)
        (res,) = [r for r in oracles.run([launch], "t", list(oracles.ORACLES)) if r["oracle"] == "instantiations_agree"]
        return res

    ok = run_with(scale("float64"))
    assert ok["ok"] is True and ok["vs"] == "double" and ok["compared"] == 64 and ok["mismatched"] == 0
    off = run_with(scale("float64", bias=0.01))
    assert off["ok"] is False and off["mismatched"] == 64 and "disagree on 64 of 64" in off["reason"]
    assert abs(off["max_abs_diff"] - 0.01) < 1e-6

    # Recorded on the double instantiation: the float partner gets the values rounded to float.
    sib = {"float": lambda: HostUnit(kdir, "float", scale("float32"), "float32")}
    launch = record(HostUnit(kdir, "double", scale("float64"), "float64", siblings=sib),
                    torch.empty(64, dtype=torch.float64), x.double(), -0.75, 64)
    res = oracles.check_agreement(launch, oracles.replay(launch), "t")
    assert res is not None and res["ok"] is True and res["vs"] == "float"

    # No partner built: reported as skipped, never as a failure.
    launch = record(HostUnit(kdir, "float", scale("float32"), "float32"), out, x, 1.5, 64)
    res = oracles.check_agreement(launch, oracles.replay(launch), "t")
    assert res is not None and res["ok"] is None and "not built" in res["skipped"]


def test_launches_that_cannot_be_replayed_are_skipped(tmp_path: Path) -> None:
    unit = HostUnit(tmp_path, "float", scale("float32"), "float32")
    x = torch.randn(8)
    rec = oracles.Recorder()
    prev = harness.set_launch_hook(rec)
    try:
        unit.launch(1, 64, x.data_ptr(), x, 1.0, 8, stream=0)  # a raw address: size unknown
        for _ in range(5):
            unit.launch(1, 64, torch.empty(8), x, 1.0, 8, stream=0)
    finally:
        harness.set_launch_hook(prev)
    launches = rec.take()
    assert len(launches) == oracles.PER_UNIT  # the first launches only, not a benchmark's loop
    assert "raw address" in (launches[0].skip or "")
    res = oracles.run(launches[:1], "t", ["determinism"])
    assert res[0]["ok"] is None and "raw address" in res[0]["skipped"]
    big = oracles.capture(unit, (1, 1, 1), (64, 1, 1), 0, 0, [torch.empty(1024), x, 1.0, 8], 1, max_bytes=1000)
    assert big.skip and "MiB" in big.skip and not big.buffers


def test_pairs_are_float_for_double_and_nothing_else() -> None:
    def entry(targs: Any, types: list[tuple[str, str]]) -> dict[str, Any]:
        return {"id": str(targs), "template_args": targs,
                "launcher": {"params": [{"name": f"p{i}", "type": t, "ctype": c} for i, (t, c) in enumerate(types)]}}

    lo = entry({"T": "float"}, [("const float *", "pointer"), ("float", "float32"), ("int *", "pointer")])
    hi = entry({"T": "double"}, [("const double*", "pointer"), ("double", "float64"), ("int *", "pointer")])
    assert oracles.is_pair(lo, hi) and not oracles.is_pair(hi, lo)
    half = entry({"T": "c10::Half"}, [("const c10::Half *", "pointer"), ("c10::Half", "half"), ("int *", "pointer")])
    assert not oracles.is_pair(lo, half) and not oracles.is_pair(half, hi)
    assert oracles.is_pair(entry(["float", "256"], [("float *", "pointer")]),
                           entry(["double", "256"], [("double *", "pointer")]))
    assert not oracles.is_pair(entry(["float", "128"], [("float *", "pointer")]),
                               entry(["double", "256"], [("double *", "pointer")]))
    m = {"instantiations": [half, lo, hi]}
    assert oracles.find_partner(m, str({"T": "float"})) == (hi, "low")
    assert oracles.find_partner(m, str({"T": "double"})) == (lo, "high")
    assert oracles.find_partner(m, str({"T": "c10::Half"})) is None


def test_summary_counts_and_keeps_failures_first() -> None:
    entries = [{"oracle": "determinism", "inst": "float", "ok": True, "source": "replay"}] * 30 + [
        {"oracle": "determinism", "inst": "half", "ok": None, "skipped": "atomics in the unit", "source": "replay"},
        {"oracle": "instantiations_agree", "inst": "float", "ok": False, "reason": "x", "source": "replay"}]
    summary, kept = oracles.summarize(entries, True)
    assert summary["determinism"] == {"status": "ok", "passed": 30, "failed": 0, "skipped": 1}
    assert summary["instantiations_agree"]["status"] == "failed"
    assert kept[0]["ok"] is False and len(kept) == 3
    summary, _ = oracles.summarize([{"oracle": "determinism", "ok": None, "skipped": "atomics in the unit"}], True)
    assert summary["determinism"]["status"] == "skipped" and summary["determinism"]["reason"] == "atomics in the unit"
    assert summary["instantiations_agree"]["status"] == "not_applicable"
    assert oracles.summarize([], False)[0]["determinism"]["status"] == "not_run"


# --------------------------------------------------------------------------- through `kernel-miner validate`

TEST_FILE = HOST_UNIT + textwrap.dedent('''

    import torch

    KDIR = Path(__file__).resolve().parents[1]


    def test_scale():
        sib = {"double": lambda: HostUnit(KDIR, "double", scale("float64", bias=BIAS), "float64")}
        unit = HostUnit(KDIR, "float", scale("float32", nondet=NONDET), "float32", siblings=sib)
        x, out = torch.randn(50), torch.empty(50)
        unit.launch(1, 64, out, x, 2.0, 50, stream=0)
        assert torch.allclose(out, 2 * x, atol=1e3)
''')


def km(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    return subprocess.run([sys.executable, "-m", "miner", *args], capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.parametrize("mode", ["fork", "spawn"])
def test_validate_runs_oracles_after_passing_tests(tmp_path: Path, mode: str) -> None:
    root = tmp_path / "ds"
    cases = {"k-good": (0.0, False), "k-nondet": (0.0, True), "k-disagree": (0.5, False)}
    for kid, (bias, nondet) in cases.items():
        kdir = root / kid
        meta(kdir, FLOAT_DOUBLE)
        (kdir / "tests").mkdir()
        test = TEST_FILE.replace("BIAS", str(bias)).replace("NONDET", str(nondet))
        (kdir / "tests" / "test_scale.py").write_text(test)
    proc = km("validate", str(root), "--mode", mode, "--jobs", "2")
    v = {kid: json.loads((root / kid / "metadata.json").read_text())["validation"] for kid in cases}
    assert {k: x["outcome"] for k, x in v.items()} == {"k-good": "passed", "k-nondet": "failed",
                                                      "k-disagree": "failed"}, proc.stdout + proc.stderr
    assert v["k-good"]["oracle_summary"]["determinism"]["status"] == "ok"
    assert v["k-good"]["oracle_summary"]["instantiations_agree"]["status"] == "ok"
    assert v["k-nondet"]["reason"].startswith("AssertionError: oracle determinism: float launch 1")
    assert v["k-nondet"]["test"] == "tests/test_scale.py::test_scale"
    assert v["k-disagree"]["reason"].startswith("AssertionError: oracle instantiations_agree")
    assert v["k-disagree"]["oracles"][0]["ok"] is False and v["k-disagree"]["oracles"][0]["vs"] == "double"

    # --no-oracles: the same tests pass, nothing is replayed, and the change of option reruns them.
    proc = km("validate", str(root), "--mode", mode, "--no-oracles")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    v = {kid: json.loads((root / kid / "metadata.json").read_text())["validation"] for kid in cases}
    assert all(x["outcome"] == "passed" for x in v.values())
    assert all(x["oracle_summary"]["determinism"]["status"] == "not_run" and not x["oracles"] for x in v.values())
    assert v["k-good"]["command"].count("KM_ORACLES=0") == 1


# --------------------------------------------------------------------------- reduced precision vs float

RED_DTYPES = {"half": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
RED_TYPES = {"half": "c10::Half", "bfloat16": "__nv_bfloat16", "float32": "float"}


class ReducedUnit(harness.Unit):
    """out[i] = f(a * x[idx[i]]) in the unit's precision: T *out, const T *x, const int *idx, T a, int n."""

    def __init__(self, kdir: Path, inst: str, prec: str, f: Any = None, siblings: dict[str, Any] | None = None):
        t = RED_TYPES[prec]
        params = [harness.Param("out", f"{t} *", "pointer"), harness.Param("x", f"const {t} *", "pointer"),
                  harness.Param("idx", "const int *", "pointer"), harness.Param("a", t, prec),
                  harness.Param("n", "int", "int32")]
        super().__init__(kdir, inst, f"host_{inst}", params, Path("host"), "", None)
        self.prec, self.f, self.siblings = prec, f or (lambda v: v), siblings or {}

    def convert_arg(self, value: Any, param: harness.Param) -> Any:
        if param.ctype == "pointer" and hasattr(value, "data_ptr"):
            return ctypes.c_void_p(value.data_ptr())
        return harness._convert(value, param)

    def invoke(self, grid: Any, block: Any, smem: int, stream: int, cargs: Any) -> int:
        out, x, idx, a, n = [c.value for c in cargs]
        dt = RED_DTYPES[self.prec]
        if self.prec == "half":
            a = struct.unpack("<e", struct.pack("<H", a))[0]
        elif self.prec == "bfloat16":
            a = struct.unpack("<f", struct.pack("<I", a << 16))[0]
        size = dt.itemsize
        xs = torch.frombuffer(bytearray((ctypes.c_char * (n * size)).from_address(x)), dtype=dt)
        ids = torch.frombuffer(bytearray((ctypes.c_char * (n * 4)).from_address(idx)), dtype=torch.int32)
        r = self.f(torch.tensor(a, dtype=dt) * xs[ids.long()]).to(dt).contiguous()
        ctypes.memmove(out, r.data_ptr(), n * size)
        return 0

    def sibling(self, inst: str) -> Any:
        if inst not in self.siblings:
            raise FileNotFoundError(f"{inst} is not built")
        return self.siblings[inst]()


def red_meta(insts: list[tuple[str, str]]) -> dict[str, Any]:
    entries = []
    for iid, prec in insts:
        t = RED_TYPES[prec]
        entries.append({"id": iid, "template_args": [t], "launcher": {"params": [
            {"name": "out", "type": f"{t} *", "ctype": "pointer"},
            {"name": "x", "type": f"const {t} *", "ctype": "pointer"},
            {"name": "idx", "type": "const int *", "ctype": "pointer"},
            {"name": "a", "type": t, "ctype": prec}, {"name": "n", "type": "int", "ctype": "int32"}]}})
    return {"instantiations": entries}


def test_reduced_pairs_convert_only_the_template_type() -> None:
    m = red_meta([("float", "float32"), ("half", "half"), ("bf16", "bfloat16")])
    f, h, b = m["instantiations"]
    assert oracles.reduced_kind(h, f) == "half" and oracles.reduced_kind(b, f) == "bfloat16"
    assert oracles.reduced_kind(f, h) is None and oracles.reduced_kind(h, b) is None
    assert [(p["id"], k, r) for p, k, r in oracles.find_reduced_partners(m, "float")] == [
        ("half", "half", "high"), ("bf16", "bfloat16", "high")]
    assert [(p["id"], k, r) for p, k, r in oracles.find_reduced_partners(m, "half")] == [("float", "half", "low")]
    # An index parameter that changes type, or a float parameter that stays float, is no pair / not converted.
    bad = json.loads(json.dumps(h))
    bad["launcher"]["params"][2]["type"] = "const c10::Half *"
    assert oracles.reduced_kind(bad, f) is None
    acc = json.loads(json.dumps(h))
    acc["launcher"]["params"].append({"name": "acc", "type": "float *", "ctype": "pointer"})
    f2 = json.loads(json.dumps(f))
    f2["launcher"]["params"].append({"name": "acc", "type": "float *", "ctype": "pointer"})
    assert oracles.reduced_kind(acc, f2) == "half"
    # Names: __half, at::Half, half, nv_bfloat16; a word that merely contains "half" is not one.
    for name in ("__half", "at::Half", "half"):
        assert oracles.reduced._as_float(f"const {name} *", "half") == "const float *"
    assert oracles.reduced._as_float("halfway_t", "half") == "halfway_t"
    assert oracles.reduced._as_float("nv_bfloat16*", "bfloat16") == "float*"


def test_compare_reduced_error_model_by_type() -> None:
    hi = torch.tensor([1.0, 100.0, 1000.0, 5.0], dtype=torch.float64)
    every = torch.ones(4, dtype=torch.bool)
    none = torch.zeros(4, dtype=torch.float64)
    u = oracles.UNIT_ROUNDOFF["half"]
    # Without sensitivity, a few roundings of the result are explained (rel_ulps u |float|), more is not.
    assert oracles.compare_reduced(hi * (1 + 8 * u), hi, every, "half", none)[0] == 0
    n, d, nf = oracles.compare_reduced(hi * 1.03, hi, every, "half", none)
    assert n == 2 and nf == 0 and abs(d - 30.0) < 1e-6  # 100 and 1000; 1 and 5 stay under abs_scale u max
    assert oracles.compare_reduced(hi * 1.03, hi, every, "bfloat16", none)[0] == 0  # 2^-8 rounding: explained
    # Where the float kernel itself moves that much under a one-ulp perturbation, the error is explained.
    assert oracles.compare_reduced(hi * 1.03, hi, every, "half", hi * 0.03 / 8)[0] == 0
    # Overflow: inf where float is finite counts, as not finite; matching infinities/NaNs do not.
    lo = torch.tensor([float("inf"), float("inf"), float("nan"), 5.0], dtype=torch.float64)
    ref = torch.tensor([70000.0, float("inf"), float("nan"), 5.0], dtype=torch.float64)
    assert oracles.compare_reduced(lo, ref, every, "half", none) == (0, 0.0, 1)
    # Elements outside the changed mask are not compared.
    assert oracles.compare_reduced(lo, ref, torch.tensor([False, True, True, True]), "half", none) == (0, 0.0, 0)
    # ULPs of the reduced type at the float value's magnitude: half has 11 significant bits.
    assert oracles.ulps(torch.tensor([2.0 ** -10, 1.0]), torch.tensor([1.0, 1024.0]), "half").tolist() == [1.0, 1.0]


def test_half_and_bf16_agree_with_float_or_not(tmp_path: Path) -> None:
    kdir = tmp_path / "gather"
    kdir.mkdir()
    (kdir / "metadata.json").write_text(json.dumps(red_meta([("float", "float32"), ("half", "half"),
                                                             ("bf16", "bfloat16")])))
    x = torch.randn(256) * 8
    idx = torch.randperm(256, dtype=torch.int32)  # converted to half it would index garbage
    out = torch.zeros(256)

    def on_float(half_f: Any = None) -> list[dict[str, Any]]:
        sib = {"half": lambda: ReducedUnit(kdir, "half", "half", half_f),
               "bf16": lambda: ReducedUnit(kdir, "bf16", "bfloat16")}
        launch = record(ReducedUnit(kdir, "float", "float32", siblings=sib), out, x, idx, 1.7, 256)
        return [r for r in oracles.run([launch], "t") if r["oracle"] in ("half_vs_float", "bf16_vs_float")]

    good = on_float()
    assert [(r["oracle"], r["ok"], r["vs"]) for r in good] == [("half_vs_float", True, "half"),
                                                              ("bf16_vs_float", True, "bf16")]
    assert good[0]["compared"] == 256 and good[0]["model"]["u"] == 2.0 ** -11 and good[1]["model"]["u"] == 2.0 ** -8
    assert set(good[0]["error"]) == {"max_abs", "max_ulp", "p50_abs", "p50_ulp", "p99_abs", "p99_ulp"}
    # The reduced path overflows (an intermediate x 1e4 in half): caught, with the overflow counted.
    bad = on_float(lambda v: (v * 1e4) / 1e4)
    assert bad[0]["ok"] is False and bad[0]["nonfinite"] > 0 and bad[1]["ok"] is True
    assert "half (half) and float (float) disagree" in bad[0]["reason"] and "overflow" in bad[0]["reason"]
    assert oracles.failure_message(bad[0]).startswith("oracle half_vs_float: float launch 1")

    # Recorded on the half instantiation: the float partner runs on the same values, converted exactly.
    sib = {"float": lambda: ReducedUnit(kdir, "float", "float32")}
    hx = x.half()
    launch = record(ReducedUnit(kdir, "half", "half", siblings=sib), torch.zeros(256, dtype=torch.float16),
                    hx, idx, 1.7, 256)
    (res,) = [r for r in oracles.run([launch], "t") if r["oracle"] == "half_vs_float"]
    assert res["ok"] is True and res["vs"] == "float" and res["compared"] == 256

    # Inputs beyond the half range: both sides run on the same infinities, so they still agree.
    sib = {"half": lambda: ReducedUnit(kdir, "half", "half")}
    launch = record(ReducedUnit(kdir, "float", "float32", siblings=sib), torch.zeros(256), x * 1e5, idx, 1.0, 256)
    res = oracles.check_reduced(launch, oracles.replay(launch), red_meta([("half", "half")])["instantiations"][0],
                                "half", "high")
    assert res["ok"] is True and res["rounded_to_inf"] > 100

    # --no-oracles style selection: only the named oracles run.
    launch = record(ReducedUnit(kdir, "float", "float32", siblings=sib), torch.zeros(256), x, idx, 1.0, 256)
    assert [r["oracle"] for r in oracles.run([launch], "t", ["determinism"])] == ["determinism"]
    summary, _ = oracles.summarize(oracles.run([launch], "t"), True)
    assert summary["half_vs_float"]["status"] == "ok" and summary["bf16_vs_float"]["status"] == "skipped"


class ExprUnit(ReducedUnit):
    """ReducedUnit's signature, with the whole body `body(x, idx, a, n)` computed in the unit's dtype."""

    def __init__(self, kdir: Path, inst: str, prec: str, body: Any, siblings: dict[str, Any] | None = None):
        super().__init__(kdir, inst, prec, None, siblings)
        self.body = body

    def invoke(self, grid: Any, block: Any, smem: int, stream: int, cargs: Any) -> int:
        out, x, idx, a, n = [c.value for c in cargs]
        dt = RED_DTYPES[self.prec]
        if self.prec == "half":
            a = struct.unpack("<e", struct.pack("<H", a))[0]
        elif self.prec == "bfloat16":
            a = struct.unpack("<f", struct.pack("<I", a << 16))[0]
        xs = torch.frombuffer(bytearray((ctypes.c_char * (n * dt.itemsize)).from_address(x)), dtype=dt)
        ids = torch.frombuffer(bytearray((ctypes.c_char * (n * 4)).from_address(idx)), dtype=torch.int32)
        r = self.body(xs, ids.long(), torch.tensor(a, dtype=dt), n).to(dt).contiguous()
        ctypes.memmove(out, r.data_ptr(), r.numel() * dt.itemsize)
        return 0


def interpolate(shift: float = 0.0) -> Any:
    """out[i] = x sampled at c = a * idx[i] + shift, linear interpolation, every step in the unit's dtype
    (as MMCV's bilinear_interpolate<T>: a coordinate of 50 held in half is off by up to 0.016)."""
    def body(x: Any, idx: Any, a: Any, n: int) -> Any:
        c = a * idx.to(x.dtype) + shift
        lo = c.floor().clamp(0, n - 2)
        w = c - lo
        i0 = lo.long()
        return x[i0] * (1 - w) + x[i0 + 1] * w
    return body


def accumulate(terms: int = 32) -> Any:
    """out[i] = sum over k < terms of a * x[(idx[i] + k) % n], accumulated in the unit's dtype."""
    def body(x: Any, idx: Any, a: Any, n: int) -> Any:
        acc = torch.zeros(n, dtype=x.dtype)
        for k in range(terms):
            acc = acc + a * x[(idx + k) % n]
        return acc
    return body


def _fixed_rule_fails(entry: dict[str, Any], launch: oracles.Launch, half_body: Any, kdir: Path) -> bool:
    """What the replaced rule (rtol 1e-2, atol 1e-3 x max, 1 % of elements) would have said."""
    _, x, idx, a_ref, n_ref = launch.args
    a, n = a_ref.value, n_ref.value
    xs = launch.buffers[x.buffer].snapshot.view(torch.float32)
    ids = launch.buffers[idx.buffer].snapshot.view(torch.int32).long()
    hi = ExprUnit(kdir, "float", "float32", half_body).body(xs.half().float(), ids, torch.tensor(
        oracles.round_scalar(a, "half")), n).double()
    lo = half_body(xs.half(), ids, torch.tensor(a, dtype=torch.float16), n).double()
    bad = ~torch.isclose(lo, hi, rtol=1e-2, atol=1e-3 * float(hi.abs().max()))
    return int(bad.sum()) > 0.01 * n


def test_error_model_passes_half_interpolation_and_accumulation_and_fails_a_real_bug(tmp_path: Path) -> None:
    kdir = tmp_path / "interp"
    kdir.mkdir()
    (kdir / "metadata.json").write_text(json.dumps(red_meta([("float", "float32"), ("half", "half"),
                                                             ("bf16", "bfloat16")])))
    n = 512
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(n, generator=gen) * 4
    idx = torch.randint(0, n // 10, (n,), generator=gen, dtype=torch.int32)

    def check(body: Any, half_body: Any, a: float) -> tuple[list[dict[str, Any]], oracles.Launch]:
        sib = {"half": lambda: ExprUnit(kdir, "half", "half", half_body),
               "bf16": lambda: ExprUnit(kdir, "bf16", "bfloat16", body)}
        launch = record(ExprUnit(kdir, "float", "float32", body, sib), torch.zeros(n), x, idx, a, n)
        res = [r for r in oracles.run([launch], "t") if r["oracle"] in ("half_vs_float", "bf16_vs_float")]
        return res, launch

    # Interpolation at coordinates up to ~56 held in half: far beyond the old fixed tolerance, all
    # explained by rounding; the measured error is recorded.
    res, launch = check(interpolate(), interpolate(), 1.0 / 0.9)
    assert [(r["oracle"], r["ok"]) for r in res] == [("half_vs_float", True), ("bf16_vs_float", True)], res
    assert res[0]["error"]["max_abs"] > 0.01 and res[0]["error"]["p99_ulp"] > 4
    assert _fixed_rule_fails(res[0], launch, interpolate(), kdir)
    # Accumulation of 32 terms in half (and in bfloat16).
    res, _ = check(accumulate(), accumulate(), 0.3)
    assert [(r["oracle"], r["ok"]) for r in res] == [("half_vs_float", True), ("bf16_vs_float", True)], res
    assert res[0]["error"]["max_ulp"] > 1
    # A real bug in the half path (samples a quarter cell off): beyond what rounding explains.
    res, _ = check(interpolate(), interpolate(shift=0.25), 1.0 / 0.9)
    assert res[0]["ok"] is False and res[0]["nonfinite"] == 0 and res[0]["beyond_model"] > 50
    assert "beyond what half rounding explains" in res[0]["reason"] and res[1]["ok"] is True
    # A sum that drops its last term in half: caught too.
    res, _ = check(accumulate(32), accumulate(31), 0.3)
    assert res[0]["ok"] is False
