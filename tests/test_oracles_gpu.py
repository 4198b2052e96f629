"""Oracles on real units and a real GPU: tests/fixtures/oracles through `kernel-miner validate`.

Each fixture's own test passes (it is deliberately weak); only the oracles can tell what is wrong:
- nondet-timer: output depends on %globaltimer, no atomics -> the determinism oracle fails it;
- prec-mismatch: (x + 1e8) - 1e8 loses x in float, not in double -> instantiations_agree fails it;
- atomic-sum: float atomicAdd -> determinism is not checked (atomics), float/double agree -> passed;
- half-meansq: row mean of squares accumulated in float for T = float, __half, __nv_bfloat16 (an int
  row-index buffer beside them, never converted) -> half_vs_float and bf16_vs_float ok -> passed;
- half-overflow: the same accumulated in T: the half sum of squares overflows -> half_vs_float fails
  it, though its test only checks the float path;
- half-interp, half-accum: bilinear sampling with coordinates and weights in T, a window sum
  accumulated in T -> ordinary reduced-precision error, explained by the error model -> passed.
saxpy-good (fault fixtures) passes with both oracles ok. Skipped without nvcc or a CUDA GPU.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "tests" / "fixtures"

torch = pytest.importorskip("torch")
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed"),
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA GPU"),
]


def validation(root: Path, kid: str) -> dict:
    return json.loads((root / kid / "metadata.json").read_text())["validation"]


def test_oracles_catch_what_weak_tests_miss(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    shutil.copytree(FIXTURES / "oracles", root, ignore=shutil.ignore_patterns("expected.json", "validation", "*.so"))
    shutil.copytree(FIXTURES / "faults" / "saxpy-good", root / "saxpy-good",
                    ignore=shutil.ignore_patterns("validation", "*.so"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    proc = subprocess.run([sys.executable, "-m", "miner", "validate", str(root), "--timeout", "120"],
                          capture_output=True, text=True, env=env, timeout=600)
    expected = json.loads((FIXTURES / "oracles" / "expected.json").read_text()) | {"saxpy-good": "passed"}
    got = {kid: validation(root, kid)["outcome"] for kid in expected}
    assert got == expected, proc.stdout + proc.stderr
    v = validation(root, "nondet-timer")
    assert v["reason"].startswith("AssertionError: oracle determinism") and v["oracle_summary"]["determinism"]["failed"]
    v = validation(root, "prec-mismatch")
    assert v["reason"].startswith("AssertionError: oracle instantiations_agree")
    assert v["oracles"][0]["vs"] == "double" and v["oracles"][0]["max_abs_diff"] > 0.1
    v = validation(root, "atomic-sum")["oracle_summary"]
    assert v["determinism"]["status"] == "skipped" and v["determinism"]["reason"] == "atomics in the unit"
    assert v["instantiations_agree"]["status"] == "ok"
    v = validation(root, "half-meansq")["oracle_summary"]
    assert v["half_vs_float"]["status"] == "ok" and v["bf16_vs_float"]["status"] == "ok", v
    v = validation(root, "half-overflow")
    assert v["reason"].startswith("AssertionError: oracle half_vs_float"), v["reason"]
    assert v["oracles"][0]["vs"] == "half" and v["oracles"][0]["nonfinite"] > 0
    assert v["oracle_summary"]["bf16_vs_float"]["status"] == "not_applicable"
    v = validation(root, "saxpy-good")["oracle_summary"]
    assert v["determinism"]["status"] == "ok" and v["instantiations_agree"]["status"] == "ok"
    # --no-oracles: the weak tests alone pass.
    proc = subprocess.run([sys.executable, "-m", "miner", "validate", str(root), "--no-oracles",
                           "--kernels", "nondet-timer,prec-mismatch,half-overflow"], capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert validation(root, "prec-mismatch")["oracle_summary"]["instantiations_agree"]["status"] == "not_run"
    assert validation(root, "half-overflow")["oracle_summary"]["half_vs_float"]["status"] == "not_run"
