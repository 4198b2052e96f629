"""Layers that subclass a torch.nn layer and override forward with a Triton launch are checked against the
parent's forward (miner/triton/parent_ref.py at extract, miner/triton/harness_parent.py in the test).
Our own fixture package tests/fixtures/triton_layers; the kernels run on CPU through Triton's interpreter
(TRITON_INTERPRET=1, in a child process so the flag is set before triton is imported)."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, ROOT, load_dataset, run_miner

PKG = FIXTURES / "triton_layers"


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("lsrc") / "triton_layers"
    shutil.copytree(PKG, src)
    out = tmp_path_factory.mktemp("lout") / "ds"
    r = run_miner("extract", src, "-o", out, "--language", "triton", "-q", "--project", src)
    assert r.returncode == 0, r.stderr
    return out


def test_layers_subclassing_torch_are_paired_with_their_parent(mined: Path) -> None:
    by = {m["name"]: m for m in load_dataset(mined)}
    for name in ("softsign_fwd_kernel", "softsign_bwd_kernel"):  # forward and backward launches alike
        ref = by[name]["triton"]["reference"]
        # Plain(nn.Module) also reaches SoftsignFn but has no torch layer to compare with
        assert ref == {"kind": "torch_parent", "layers": [{"layer": "Softsign", "parent": "torch.nn.Softsign"}],
                       "test": "tests/test_reference.py"}
        unit = (mined / by[name]["id"] / "units/default/unit.py").read_text()
        assert "class Softsign(nn.Softsign):" in unit and "from torch import nn" in unit
        assert "class Plain" not in unit
        test = (mined / by[name]["id"] / "tests/test_reference.py").read_text()
        ast.parse(test)
        assert "harness_parent.check_against_parent(unit, 'Softsign')" in test
    assert by["wrong_tanh_kernel"]["triton"]["reference"]["layers"] == [{"layer": "Tanh", "parent": "torch.nn.Tanh"}]
    # a layer in a module of its own that imports the launcher's autograd Function from the op module
    relu = by["relu_fwd_kernel"]
    assert relu["triton"]["reference"]["layers"] == [{"layer": "ReLU", "parent": "torch.nn.ReLU"}]
    unit = (mined / relu["id"] / "units/default/unit.py").read_text()
    assert "class ReLU(nn.ReLU):" in unit and "class ReluFn(" in unit and "def relu_fwd(" in unit


_CHILD = """
import json, sys
from miner.triton import harness, harness_parent
out = {}
for kdir, layer in json.loads(sys.argv[1]):
    try:
        out[layer + ":" + kdir] = harness_parent.check_against_parent(harness.load_triton_unit(kdir), layer,
                                                                      device="cpu")
    except AssertionError as exc:
        out[layer + ":" + kdir] = "failed: " + str(exc)[:200]
print(json.dumps(out))
"""


def test_the_check_runs_the_kernels_and_catches_a_wrong_one(mined: Path) -> None:
    pytest.importorskip("torch")
    by = {m["name"]: m for m in load_dataset(mined)}
    jobs = [(str(mined / by[n]["id"]), layer) for n, layer in
            (("softsign_fwd_kernel", "Softsign"), ("softsign_bwd_kernel", "Softsign"), ("wrong_tanh_kernel", "Tanh"),
             ("relu_fwd_kernel", "ReLU"))]
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", _CHILD, json.dumps(jobs)], env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    fwd, bwd, wrong, relu = (res[f"{layer}:{kdir}"] for kdir, layer in jobs)
    assert relu["launches"] == 1, relu
    assert fwd["checked"] == "forward" and bwd["checked"] == "backward"
    assert fwd["launches"] == 1 and fwd["parent"].endswith(".Softsign") and fwd["input"] == [4, 16]
    assert bwd["launches"] == 1  # the backward kernel runs in the gradient comparison
    assert isinstance(wrong, str) and wrong.startswith("failed: output 0") and "not close" in wrong
