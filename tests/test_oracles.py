"""Oracles (miner/validate/oracles.py) on the CPU: recording, replay, determinism, float/double agreement.

The "kernels" here are Python functions behind harness.Unit's launcher seam (`invoke`), reading and
writing CPU tensors through their raw addresses exactly as a CUDA kernel reads device memory, so the
storage copies, pointer offsets, aliasing and dtype conversion are all exercised for real. The same
host units run inside `kernel-miner validate` to check the plugin end to end. GPU replays of real
units run in tests/test_oracles_gpu.py.
"""

from __future__ import annotations

import json
import os
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
