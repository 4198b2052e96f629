"""Ahead-of-time Triton builds that start from a guessed signature: the compiler's feedback repairs the
guesses (tests/fixtures/triton_repair, our own kernels), and import-time device queries answer as the
build target. Real extract, real Triton compiles for sm_90 without a GPU."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, load_dataset, run_miner

from miner.dataset import schema
from miner.triton import repair

PKG = FIXTURES / "triton_repair"


def test_suspects_follow_locals_and_helper_calls() -> None:
    src = ("def k(src, idx, out, n, B: tl.constexpr):\n"
           "    i = tl.load(idx + n)\n"
           "    v = tl.load(src + i)\n"
           "    h(out, i)\n")
    k = repair.Kernel.parse(src)
    assert k.suspects(3, 4) == (["src"], ["idx", "n"])  # `i` was loaded through idx
    assert k.progress(4, 4) > k.progress(3, 4) > k.progress(2, 4)
    helper = "def h(p, q):\n    tl.store(p, q)\n"
    assert k.through_call(4, 4, helper, 2, 4) == (["out"], ["idx", "n"])


def test_float_meeting_a_pointer_blames_the_load_not_the_operand() -> None:
    src = "def k(src, idx, n):\n    i = tl.load(idx + n)\n    v = tl.load(src + i)\n"
    s = repair.Search(repair.Kernel.parse(src), {"src": "*fp32", "idx": "*fp32", "n": "i32"}, {},
                      {"src": "usage", "idx": "usage", "n": "launcher"})
    f = repair.Failure("IncompatibleTypeErrorImpl('invalid operands of type pointer<fp32> and "
                       "triton.language.float32')", 3, 4)
    first = s.candidates(f)[0]
    assert first == ("idx", "*i64")
    assert all(p != "n" for p, _v in s.candidates(f))  # a launcher-derived entry is never changed


def test_compared_literals_come_from_every_jit_source() -> None:
    lits = repair.compared_literals(["def a(x, MODE):\n    if MODE == 'relu':\n        y = x\n",
                                     "def b(MODE):\n    if 2 == MODE:\n        pass\n"])
    assert lits == {"MODE": ["relu", 2]}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    src = tmp_path_factory.mktemp("rsrc") / "triton_repair"
    shutil.copytree(PKG, src)
    out = tmp_path_factory.mktemp("rout") / "ds"
    r = run_miner("extract", src, "-o", out, "--language", "triton", "-q")
    assert r.returncode == 0, r.stderr
    cache = tmp_path_factory.mktemp("rcache")
    r = run_miner("build", out, "-j", "2", "--cache-dir", cache, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def _builds(out: Path) -> dict[str, dict]:
    return {m["name"]: m for m in load_dataset(out)}


def test_guessed_types_repaired_by_compiler_feedback(built: Path) -> None:
    by = _builds(built)
    g = by["gather_kernel"]["instantiations"][0]["build"]
    assert g["status"] == "ok"
    # The launcher says `idx` is a tensor (`idx: torch.Tensor`, element type not visible: launcher_pointer);
    # the compiler showed it holds integers.
    assert by["gather_kernel"]["triton"]["compile"]["origins"]["idx"] == "launcher_pointer"
    assert [(c["param"], c["to"]) for c in g["signature_repairs"]] == [("idx", "*i64")]
    assert g["signature"]["idx"] == "*i64" and g["signature"]["src"] == "*fp32"
    lse = by["lse_kernel"]["instantiations"][0]["build"]
    assert lse["status"] == "ok" and lse["signature"]["Lse"] == "*fp32"  # seen only inside the helper
    for m in by.values():
        assert schema.errors(m) == []


def test_constexpr_branch_value_taken_from_the_helpers_comparisons(built: Path) -> None:
    b = _builds(built)["act_kernel"]["instantiations"][0]["build"]
    assert b["status"] == "ok"
    assert b["signature_repairs"][0]["param"] == "MODE" and b["constexprs"]["MODE"] == "relu"
    assert "y is not defined" in b["signature_repairs"][0]["error"]


def test_import_time_device_query_answered_as_the_target(built: Path) -> None:
    b = _builds(built)["gather_kernel"]["instantiations"][0]["build"]
    try:
        import torch

        has_gpu = torch.cuda.is_available()
    except ImportError:
        has_gpu = False
    if has_gpu:
        pytest.skip("a real GPU answers the query")
    assert b["device_queries"] == ["torch.cuda.get_device_capability"]
    ptx = (built / _builds(built)["gather_kernel"]["id"] / b["library"]).read_text()
    assert ".target sm_90" in ptx


def test_unit_that_does_not_import_builds_from_the_kernel_closure(built: Path) -> None:
    b = _builds(built)["scale_kernel"]["instantiations"][0]["build"]
    assert b["status"] == "ok" and b["import"] == "kernel_closure"
    assert "km_fixture_absent_package" in b["unit_import_error"]


def test_kernel_closure_keeps_what_the_kernel_reaches() -> None:
    from miner.triton import kernel_only

    text = ("import triton\nimport triton.language as tl\nimport absent\n\nC: tl.constexpr = 4\nD = 5\n\n"
            "@triton.jit\ndef h(x):\n    return x * C\n\n@triton.jit\ndef k(p):\n    tl.store(p, h(1))\n\n"
            "def launch(x):\n    return absent.f(x, D)\n")
    out = kernel_only.reduce(text, "k")
    assert out is not None
    assert "import absent" not in out and "def launch" not in out and "D = 5" not in out
    assert "C: tl.constexpr = 4" in out and "def h(x)" in out and "@triton.jit\ndef k(p)" in out
