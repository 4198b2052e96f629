"""Triton frontend, closure, units and ahead-of-time build on our own fixture package (tests/fixtures/triton)."""

from __future__ import annotations

import ast
import importlib.util
import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, load_dataset, run_miner

from miner.dataset import schema
from miner.frontends import triton_frontend

PKG = FIXTURES / "triton"
ACT = PKG / "pkg" / "ops" / "act.py"


@pytest.fixture(scope="module")
def mined(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("tsrc") / "triton"
    shutil.copytree(PKG, src)
    out = tmp_path_factory.mktemp("tout") / "ds"
    r = run_miner("extract", src, "-o", out, "--language", "triton", "-q")
    assert r.returncode == 0, r.stderr
    return out


def _by_name(out: Path) -> dict[str, dict]:
    return {m["name"]: m for m in load_dataset(out)}


def test_frontend_finds_every_spelling_and_nothing_else() -> None:
    data = ACT.read_bytes()
    kernels, err = triton_frontend.parse_bytes(data, str(ACT))
    assert err is None
    names = [k.name for k in kernels]
    # @jit (from triton import jit), @tr.autotune + @tr.jit, @tr.heuristics + @tr.jit(...), a nested kernel;
    # not @torch.jit.script, not the decorator inside the TEMPLATE string.
    assert names == ["silu_kernel", "scale_exp_kernel", "half_kernel", "copy_kernel", "fill_kernel"]
    for k in kernels:
        text = data[k.start_offset:k.end_offset].decode()
        assert text.startswith("@") and f"def {k.name}(" in text
        assert text == "\n".join(data.decode().splitlines()[k.start_line - 1:k.end_line]).strip()
    silu, scale, half, _copy, fill = kernels
    assert [p.name for p in silu.params if p.constexpr] == ["BLOCK"]
    assert scale.autotune["key"] == ["n"]
    assert scale.autotune["configs"] == [{"kwargs": {"BLOCK": 128}, "num_warps": 4},
                                         {"kwargs": {"BLOCK": 256}, "num_warps": 8, "num_stages": 2}]
    assert list(half.heuristics) == ["EVEN"] and half.jit_options == {"do_not_specialize": '["n"]'}
    assert fill.nested and fill.qualified_name == "make_fill_kernel.fill_kernel"


def test_aliases_and_string_annotations() -> None:
    src = (b"import triton as T\nfrom triton.language import constexpr as C\nimport numba\n"
           b"@T.jit\ndef a(x, N: 'T.language.constexpr', M: C):\n    pass\n"
           b"@numba.jit\ndef b(x):\n    pass\n")
    kernels, _ = triton_frontend.parse_bytes(src, "m.py")
    assert [k.name for k in kernels] == ["a"]
    assert [p.constexpr for p in kernels[0].params] == [False, True, True]


def test_syntax_error_is_reported_not_raised() -> None:
    kernels, err = triton_frontend.parse_bytes(b"@triton.jit\ndef k(:\n", "bad.py")
    assert kernels == [] and "bad.py:2" in err


def test_metadata_matches_schema_and_text(mined: Path) -> None:
    metas = load_dataset(mined)
    assert len(metas) == 10  # 5 in act.py, 2 helpers in utils.py, 3 in broken.py
    for m in metas:
        assert schema.errors(m) == [], m["id"]
        assert m["language"] == "triton" and m["frontend"] == "python_ast"
        assert (mined / m["id"] / "kernel.py").read_bytes().decode().startswith("@")
    index = [json.loads(x) for x in (mined / "index.jsonl").read_text().splitlines()]
    assert {r["id"] for r in index} == {m["id"] for m in metas}


def test_unit_closes_over_helpers_constants_and_launcher(mined: Path) -> None:
    m = _by_name(mined)["silu_kernel"]
    unit = (mined / m["id"] / m["instantiations"][0]["unit"]).read_text()
    tree = ast.parse(unit)
    defined = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert {"silu_kernel", "_sigmoid", "_exp", "silu", "block_for"} <= defined
    assert "silu_ref" in defined and "half_ref" not in defined and "UNUSED" not in unit  # only what is needed
    assert "LOG2E = tl.constexpr(" in unit and "sig = _sigmoid" in unit
    assert "from .." not in unit and "from ." not in unit
    assert m["unresolved"] == []
    assert m["closure"]["jit_functions"] == ["_exp", "_sigmoid"]
    launch = m["triton"]["launches"][0]
    assert launch["launcher"] == "silu" and launch["grid_kind"] == "name"
    assert [a["param"] for a in launch["args"]] == ["x_ptr", "y_ptr", "n", "BLOCK"]
    comp = m["triton"]["compile"]
    assert comp["signature"] == {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    # The launcher says x is a tensor (annotation; its dtype is not visible) and n is `x.numel()`.
    assert comp["origins"]["x_ptr"] == "launcher_pointer" and comp["origins"]["n"] == "launcher_expr"


def test_launcher_in_another_module(mined: Path) -> None:
    m = _by_name(mined)["copy_kernel"]
    assert [(x["launcher"], x["path"], x["grid_kind"]) for x in m["triton"]["launches"]] == [
        ("copy", "pkg/ops/elsewhere.py", "lambda")]
    unit = (mined / m["id"] / "units/default/unit.py").read_text()
    assert "def copy(" in unit and "def tile_configs(" in unit and "from .act import" not in unit


def test_constexpr_values_and_roles(mined: Path) -> None:
    by = _by_name(mined)
    half = by["half_kernel"]["triton"]["compile"]
    assert half["constexprs"] == {"BLOCK": 256, "EVEN": False}
    assert half["origins"]["BLOCK"] == "launcher" and half["num_warps"] == 4
    scale = by["scale_exp_kernel"]["triton"]["compile"]
    assert scale["constexprs"] == {"BLOCK": 128} and scale["origins"]["BLOCK"] == "autotune"
    assert scale["signature"]["scale"] == "fp32"
    assert by["_sigmoid"]["triton"]["compile"]["role"] == "helper"


def test_unit_imports_standalone(mined: Path, tmp_path: Path) -> None:
    """The unit is one file: copied anywhere, it imports (in a child: unit code is never run here)."""
    pytest.importorskip("triton")
    m = _by_name(mined)["silu_kernel"]
    dst = tmp_path / "u.py"
    shutil.copy(mined / m["id"] / "units/default/unit.py", dst)
    code = (f"import importlib.util as u; s=u.spec_from_file_location('u', {str(dst)!r}); "
            "m=u.module_from_spec(s); s.loader.exec_module(m); print(type(m.silu_kernel).__name__)")
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "JITFunction"


def test_build_without_gpu_records_ptx_and_classified_failures(mined: Path, tmp_path: Path) -> None:
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    r = run_miner("build", mined, "--kernels", "silu_kernel", "--kernels", "global_kernel", "--kernels", "_exp",
                  "--kernels", "list_global_kernel", "-j", "2", "--cache-dir", tmp_path / "cache", timeout=300)
    assert r.returncode == 1, r.stderr  # list_global_kernel reads a list global: Triton refuses it
    assert "2/4 Triton units compiled" in r.stdout, r.stdout
    by = _by_name(mined)
    ok = by["silu_kernel"]["instantiations"][0]["build"]
    assert ok["status"] == "ok" and ok["library"] == "units/default/kernel.ptx"
    ptx = (mined / by["silu_kernel"]["id"] / ok["library"]).read_text()
    assert ".target sm_90" in ptx and ".entry silu_kernel" in ptx
    assert ok["resources"]["shared_bytes"] >= 0 and ok["num_warps"] == 4
    # a plain number global: refused by Triton 3.x, folded in by older releases; built with it as a
    # tl.constexpr of the same value, and the record says so
    ported = by["global_kernel"]["instantiations"][0]["build"]
    assert ported["status"] == "ok" and ported["ports"] == ["global SCALE = tl.constexpr(2.0) (Triton < 3.0 "
                                                            "folded plain globals in)"]
    bad = by["list_global_kernel"]["instantiations"][0]["build"]
    assert bad["status"] == "failed" and bad["error_class"] == "non_constexpr_global" and "TABLE" in bad["error"]
    assert by["_exp"]["instantiations"][0]["build"]["error_class"] == "helper"
    for m in (by["silu_kernel"], by["global_kernel"], by["list_global_kernel"]):
        assert schema.errors(m) == []


def test_reference_pairing_and_written_test(mined: Path) -> None:
    from miner.triton import reference

    assert reference.bases("_layer_norm_fwd") == ["_layer_norm_fwd", "layer_norm"]
    by = _by_name(mined)
    assert by["silu_kernel"]["triton"]["reference"] == {"function": "silu", "reference": "silu_ref",
                                                         "test": "tests/test_reference.py"}
    assert by["copy_kernel"]["triton"]["reference"]["reference"] == "copy_ref"  # beside a launcher elsewhere
    assert "reference" not in by["fill_kernel"]["triton"]  # never launched: nothing to compare
    kdir = mined / by["half_kernel"]["id"]
    test = (kdir / "tests/test_reference.py").read_text()
    ast.parse(test)
    assert "check_against_reference(unit, 'half', 'half_ref')" in test
    assert "def half_ref(" in (kdir / "units/default/unit.py").read_text()


def _gpu() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _gpu(), reason="needs a CUDA GPU")
def test_fixture_units_validate_against_their_references(mined: Path) -> None:
    r = run_miner("validate", mined, "--kernels", "silu_kernel", "--kernels", "half_kernel", "--no-oracles",
                  "--no-sandbox", timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for name in ("silu_kernel", "half_kernel"):
        v = _by_name(mined)[name]["validation"]
        assert v["outcome"] == "passed" and v["pass_call"] and v["pass_exe"], v
