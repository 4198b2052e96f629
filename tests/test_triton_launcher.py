"""Compile signatures read from the launcher's own expressions, tensor descriptors, whole autotune configs,
pointers repaired together, device functions and removed Triton APIs (tests/fixtures/triton_launcher, our
own kernels). Real extract, real Triton compiles for sm_90 without a GPU."""

from __future__ import annotations

import ast
import importlib.util
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, load_dataset, run_miner

from miner.dataset import schema
from miner.triton import launcher_types

PKG = FIXTURES / "triton_launcher"


def _env(src: str) -> dict:
    return launcher_types.environment(ast.parse(src).body[0])  # type: ignore[arg-type]


def test_values_of_launcher_expressions() -> None:
    env = _env("def f(x, n: int, eps: float):\n"
               "    y = torch.empty(n, dtype=torch.bfloat16, device=x.device)\n"
               "    z = torch.zeros_like(y)\n"
               "    w = x.to(torch.int64)\n"
               "    M, N = x.shape\n"
               "    B = 128\n"
               "    C = 1\n"
               "    C = 2\n")
    v = launcher_types.value_of
    assert env["y"] == ("tensor", "bf16") and env["z"] == ("tensor", "bf16") and env["w"] == ("tensor", "i64")
    assert env["x"] == ("tensor", None)  # the launcher reads `x.shape` / `x.device`
    assert env["M"][0] == env["N"][0] == "int" and env["B"] == ("int", 128)
    assert env["C"] == ("int", None)  # two values reach it: the kind stays, the value does not
    for expr, want in [("x.stride(0)", "int"), ("y.numel()", "int"), ("x.shape[1]", "int"), ("eps", "float"),
                       ("1e-6", "float"), ("None", "none"), ("triton.cdiv(n, B)", "int"), ("y[0]", "tensor")]:
        got = v(ast.parse(expr, mode="eval").body, env)
        assert got is not None and got[0] == want, expr


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    src = tmp_path_factory.mktemp("lsrc") / "triton_launcher"
    shutil.copytree(PKG, src)
    out = tmp_path_factory.mktemp("lout") / "ds"
    r = run_miner("extract", src, "-o", out, "--language", "triton", "-q")
    assert r.returncode == 0, r.stderr
    r = run_miner("build", out, "-j", "2", "--cache-dir", tmp_path_factory.mktemp("lcache"), timeout=600)
    assert r.returncode != 0  # old_api_kernel cannot build
    return out


def _by_name(out: Path) -> dict[str, dict]:
    return {m["name"]: m for m in load_dataset(out)}


def test_launcher_expressions_type_the_signature(built: Path) -> None:
    m = _by_name(built)["offset_kernel"]
    c = m["triton"]["compile"]
    # `shift` reaches a pointer operand in the kernel, but the launcher passes `x.numel() // 2`.
    assert c["signature"] == {"src": "*fp16", "dst": "*fp16", "shift": "i32", "factor": "fp32",
                              "bias": "constexpr", "BLOCK": "constexpr"}
    assert c["constexprs"] == {"bias": None, "BLOCK": 128}
    assert set(c["origins"].values()) == {"launcher_expr"}
    b = m["instantiations"][0]["build"]
    assert b["status"] == "ok" and not b.get("signature_repairs")
    assert schema.errors(m) == []


def test_tuple_argument_from_stride(built: Path) -> None:
    m = _by_name(built)["strided_copy"]
    c = m["triton"]["compile"]
    assert c["signature"]["strides"] == "(i32, i32)" and c["origins"]["strides"] == "launcher_expr"
    assert m["instantiations"][0]["build"]["status"] == "ok"


def test_descriptor_block_shape_from_the_pre_hook(built: Path) -> None:
    m = _by_name(built)["copy_tiles"]
    c = m["triton"]["compile"]
    assert c["signature"]["a_desc"] == c["signature"]["o_desc"] == "tensordesc<bf16[32, 16]>"
    assert c["origins"]["a_desc"] == "launcher_expr"
    assert m["instantiations"][0]["build"]["status"] == "ok"


def test_whole_autotune_config_tried_as_one_change(built: Path) -> None:
    b = _by_name(built)["paired_blocks"]["instantiations"][0]["build"]
    assert b["status"] == "ok"
    assert [r["param"] for r in b["signature_repairs"]] == ["autotune config 1"]
    assert b["constexprs"] == {"BM": 32, "BN": 64}


def test_pointers_feeding_one_offset_repaired_together(built: Path) -> None:
    b = _by_name(built)["segment_copy"]["instantiations"][0]["build"]
    assert b["status"] == "ok"
    assert {(r["param"], r["to"]) for r in b["signature_repairs"]} == {("starts", "*i32"), ("chunks", "*i32")}


def test_device_function_is_a_helper_and_removed_api_is_its_own_class(built: Path) -> None:
    by = _by_name(built)
    assert by["_store_row"]["triton"]["compile"]["role"] == "helper"
    assert by["_store_row"]["instantiations"][0]["build"]["status"] == "skipped"
    assert by["zero_rows"]["instantiations"][0]["build"]["status"] == "ok"
    old = by["old_api_kernel"]["instantiations"][0]["build"]
    assert old["status"] == "failed" and old["error_class"] == "removed_triton_api"
    assert "_experimental_descriptor_load" in old["error"]
    assert "ports" not in old  # a call that changed shape, not a rename: not ported
    # a keyword an older `tl.dot` took: refused inside triton.language itself, so an older API too
    dot = by["old_dot_kernel"]["instantiations"][0]["build"]
    assert dot["status"] == "failed" and dot["error_class"] == "removed_triton_api", dot
    assert "trans_b" in dot["error"]
    # the same TypeError from the project's own helper is the code's error, whatever the kernel line echoes
    wrong = by["wrong_keyword_kernel"]["instantiations"][0]["build"]
    assert wrong["status"] == "failed" and wrong["error_class"] == "compile_error", wrong
    for m in by.values():
        assert schema.errors(m) == []


def test_faithful_ports_for_older_triton_are_applied_and_recorded(built: Path) -> None:
    by = _by_name(built)
    renamed = by["renamed_api_kernel"]["instantiations"][0]["build"]
    assert renamed["status"] == "ok"
    assert renamed["ports"] == ["tl._experimental_make_tensor_descriptor -> tl.make_tensor_descriptor (renamed)"]
    glob = by["plain_global_kernel"]["instantiations"][0]["build"]
    assert glob["status"] == "ok" and glob["ports"][0].startswith("global SCALE_EPS = tl.constexpr(1e-06)")
    # the kernel text is the project's, unchanged
    assert "_experimental_make_tensor_descriptor" in (built / by["renamed_api_kernel"]["id"] / "kernel.py").read_text()


def test_a_printed_parameter_is_a_string_constexpr(built: Path) -> None:
    m = _by_name(built)["print_prefixed"]
    comp = m["triton"]["compile"]
    assert comp["signature"]["tag"] == "constexpr" and comp["constexprs"]["tag"] == "" and \
        comp["origins"]["tag"] == "usage"
    assert m["instantiations"][0]["build"]["status"] == "ok"


def test_failure_classes_name_the_cause_not_the_word() -> None:
    from miner.triton import build

    # a dtype called as a constructor is code the installed Triton refuses, not a guessed type
    assert build.classify("compile", "CompilationError: TypeError(\"'dtype' object is not callable\")",
                          "failed") == "compile_error"
    assert build.classify("compile", "ValueError: Unsupported ptr type <i64> in `tl.load`", "failed") == \
        "signature_type"
    assert build.classify("compile", "CompilationError: AttributeError(\"module 'triton.language' has no "
                          "attribute '_experimental_descriptor_load'\")", "failed") == "removed_triton_api"


def test_half_precision_kernel_gets_its_pointers_changed_together(built: Path) -> None:
    b = _by_name(built)["half_mix_kernel"]["instantiations"][0]["build"]
    assert b["status"] == "ok", b.get("error")
    assert b["signature"]["a_ptr"] == b["signature"]["b_ptr"] == "*bf16"
    # one change of every guessed fp32 pointer (the output too: no single change would touch it)
    assert {(r["param"], r["to"]) for r in b["signature_repairs"]} >= {("a_ptr", "*bf16"), ("b_ptr", "*bf16"),
                                                                       ("out_ptr", "*bf16")}
