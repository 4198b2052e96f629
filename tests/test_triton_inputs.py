"""Inputs for reference checks solved from source (miner/triton/inputs.py, shapes.py) on our own fixture
package tests/fixtures/triton_shapes; no GPU: the references run on CPU torch with the solved inputs."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

import pytest
from conftest import FIXTURES, load_dataset, run_miner

from miner.triton import inputs

PKG = FIXTURES / "triton_shapes"
OPS = PKG / "spkg" / "ops"


def _spec(path: Path, function: str, reference: str) -> dict:
    spec = inputs.solve(path.read_text(), function, reference)
    assert spec is not None
    return spec


def test_multi_rank_references_get_related_shapes() -> None:
    spec = _spec(OPS / "gated.py", "gated", "gated_ref")
    a = spec["args"]
    # B, T, H, K = q.shape; assert k.shape == q.shape; V = v.shape[-1]; g [B, T, H] through the einsum
    # and the broadcast `s[..., None] * v`.
    assert a["q"]["dims"] == ["B", "T", "H", "K"] and a["q"]["from"] == "code"
    assert a["k"]["shape"] == a["q"]["shape"]
    assert a["v"]["shape"][:3] == a["q"]["shape"][:3] and a["v"]["dims"][-1] == "V"
    assert a["g"]["shape"] == a["q"]["shape"][:3]
    b, t, h, k = a["q"]["shape"]
    assert len({b, t, h, k, a["v"]["shape"][-1]}) == 5  # unrelated sizes differ: a layout mix-up shows
    assert k <= 128  # assert K <= 128
    assert spec["reference"] == spec["function"] == ["q", "k", "v", "g"]


def test_products_divisibility_and_calls_through_autograd_function() -> None:
    spec = _spec(OPS / "chunked.py", "chunk_sum", "chunk_sum_ref")
    x, dt = spec["args"]["x"], spec["args"]["dt"]
    batch, seqlen, nheads, headdim = x["shape"]
    # the launcher behind ChunkSumFn.apply asserts dt's layout; the reference says seqlen == nchunks * chunk_size
    assert dt["shape"][:2] == [batch, nheads]
    assert seqlen == dt["shape"][2] * dt["shape"][3]
    assert headdim % 16 == 0


def test_parameter_comments_are_layouts() -> None:
    spec = _spec(OPS / "chunked.py", "scaled", "scaled_ref")
    assert spec["args"]["x"]["dims"] == ["N", "D"] and spec["args"]["x"]["from"] == "hint"
    assert spec["args"]["w"]["shape"] == spec["args"]["x"]["shape"][-1:]


def test_rank_branches_and_unpassed_optionals() -> None:
    src = '''
def f(state, x, z=None):
    if state.dim() == 3:
        state = state.unsqueeze(1)
    _, nheads, dim, dstate = state.shape
    batch = x.shape[0]
    assert x.shape == (batch, nheads, dim)
    if z is not None:
        assert z.shape == (7, 7)
    return x


def f_ref(state, x, z=None):
    return x
'''
    spec = inputs.solve(src, "f", "f_ref")
    assert spec is not None
    state, x = spec["args"]["state"], spec["args"]["x"]
    assert len(state["shape"]) == 4 and state["shape"][1:3] == x["shape"][1:]
    assert "z" not in spec["args"]


def test_nothing_known_leaves_the_generic_shapes() -> None:
    assert inputs.solve("def f(x):\n    return x\n\ndef f_ref(x):\n    return x * 2\n", "f", "f_ref") is None


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("ssrc") / "triton_shapes"
    shutil.copytree(PKG, src)
    out = tmp_path_factory.mktemp("sout") / "ds"
    r = run_miner("extract", src, "-o", out, "--language", "triton", "-q", "--project", src)
    assert r.returncode == 0, r.stderr
    return out


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_extract_records_inputs_and_references_accept_them(mined: Path) -> None:
    pytest.importorskip("torch")
    from miner.triton import harness

    by = {m["name"]: m for m in load_dataset(mined)}
    for name in ("gated_kernel", "chunk_sum_kernel"):
        meta = by[name]
        ref = meta["triton"]["reference"]
        assert ref["inputs"]["args"], ref
        mod = _load(mined / meta["id"] / "units/default/unit.py", f"km_test_{name}")
        ref_args, fn_args = harness.materialize(ref["inputs"], seed=0, device="cpu")
        out = getattr(mod, ref["reference"])(*ref_args)  # the real reference, real torch, the solved inputs
        assert out.ndim >= 3
        assert all(x is y for x, y in zip(ref_args, fn_args, strict=False))  # one object per shared argument


def test_a_definition_shadowing_an_import_is_renamed(mined: Path) -> None:
    meta = next(m for m in load_dataset(mined) if m["name"] == "gated_kernel")
    text = (mined / meta["id"] / "units/default/unit.py").read_text()
    assert "import torch.nn.functional as F" in text
    assert '_backend_F = TypeVar("F", bound=Callable)' in text
    assert "def register(fn: _backend_F) -> _backend_F:" in text
    assert not [u for u in meta["unresolved"] if u["symbol"] == "F"]
    assert {"symbol": "F", "as": "_backend_F", "module": "spkg/backend.py"} in meta["closure"]["renamed"]
    # and the reference, which uses F.softplus, runs: F is torch.nn.functional in the unit
    pytest.importorskip("torch")
    mod = _load(mined / meta["id"] / "units/default/unit.py", "km_test_rename")
    assert mod.F.__name__ == "torch.nn.functional"


def test_sizes_reach_the_branch_that_launches_the_kernel() -> None:
    src = (OPS / "branch.py").read_text()
    short = inputs.solve(src, "double", "double_ref", "double_short_kernel")
    long = inputs.solve(src, "double", "double_ref", "double_long_kernel")
    assert short is not None and long is not None
    assert short["args"]["x"]["shape"] == [2, 128, 64]  # T <= 256 holds for the default sizes
    assert long["args"]["x"]["shape"] == [2, 512, 64]  # `use_short = T <= 256` must be false: T > 256
    assert inputs.solve(src, "double", "double_ref")["args"]["x"]["shape"] == [2, 128, 64]  # no kernel: no bound
