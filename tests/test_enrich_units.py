"""Unit tests of the enrichment pieces that need no server: JSON extraction, the static test checker,
the deterministic instruct rules, the cache key, the budget and the child-process test runner."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from miner.enrich.budget import Budget, BudgetExhausted
from miner.enrich.cache import ResponseCache, request_key
from miner.enrich.docstring import complete_docstring, instruct_prompt
from miner.enrich.json_extract import ExtractError, extract_code, extract_json
from miner.enrich.redact import Redactor
from miner.enrich.repair import blame_heuristic, parse_repair_answer
from miner.enrich.run_tests import run_generated_test
from miner.enrich.static_check import check_test_source

# ------------------------------------------------------------------------------ JSON extraction


def test_extract_json_from_fence_prose_and_braces_in_strings() -> None:
    text = 'Sure! Here it is:\n```json\n{"a": "x { not a brace", "b": [1, {"c": 2}]}\n```\nHope it helps.'
    assert extract_json(text) == {"a": "x { not a brace", "b": [1, {"c": 2}]}
    assert extract_json('The result is {"k": "v"} as requested.') == {"k": "v"}
    # A stray brace in prose before the object is skipped.
    assert extract_json('Using {braces} loosely, then {"ok": true}') == {"ok": True}


@pytest.mark.parametrize("text, why", [
    ('{"core_function": "adds", "params": [{"name": "x"', "truncated"),
    ("```json\n{'single': 'quotes'}\n```", "invalid JSON"),
    ("no json here at all", "no JSON object"),
    ("", "empty"),
])
def test_extract_json_failures_say_why(text: str, why: str) -> None:
    with pytest.raises(ExtractError, match=why):
        extract_json(text)


def test_extract_code_picks_python_block_and_rejects_unclosed_fence() -> None:
    text = "Plan:\n```json\n{}\n```\nCode:\n```python\nimport os\nprint(1)\n```\nDone."
    assert extract_code(text) == "import os\nprint(1)\n"
    with pytest.raises(ExtractError, match="not closed"):
        extract_code("```python\nimport os\ndef f(:\n")


def test_parse_repair_answer_reflection_and_code() -> None:
    answer = ('{"reflection": "wrong grid", "blame": "Test", "confidence": 0.8}\n'
              '```python\nx = {"a": 1}\n```')
    reflection, code = parse_repair_answer(answer)
    assert reflection["blame"] == "test" and reflection["reflection"] == "wrong grid"
    assert code == 'x = {"a": 1}\n'


def test_blame_heuristic() -> None:
    assert blame_heuristic("error", "E   ImportError: cannot import name 'x'") == "test"
    assert blame_heuristic("build_failed", "nvcc: error") == "kernel"
    assert blame_heuristic("failed", "AssertionError: Tensor-likes are not close") == "unknown"


# ------------------------------------------------------------------------------ static checker

GOOD = textwrap.dedent('''\
    from pathlib import Path

    import pytest

    from miner.harness import load_unit

    torch = pytest.importorskip("torch")
    pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
    KERNEL_DIR = Path(__file__).resolve().parents[1]
    SIZES = [1, 255, 256, 1000, 1 << 20]


    def reference(x, alpha):
        return x * alpha


    @pytest.mark.parametrize("n", SIZES)
    def test_scale(n):
        unit = load_unit(KERNEL_DIR, "float")
        x = torch.randn(n, device="cuda")
        out = torch.full_like(x, float("nan"))
        unit.launch((n + 255) // 256, 256, out, x, 2.0, n)
        torch.cuda.synchronize()
        expected = reference(x, 2.0)
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
    ''')

ASSERT = "torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)"
LAUNCH = "unit.launch((n + 255) // 256, 256, out, x, 2.0, n)"
GPU_MARK = 'pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")'
# An in-place kernel (x *= alpha) checked against a copy of x taken before the launch.
INPLACE = GOOD.replace('    out = torch.full_like(x, float("nan"))\n', "").replace(
    LAUNCH, "x0 = x.clone()\n    unit.launch((n + 255) // 256, 256, x, 2.0, n)").replace(
    "expected = reference(x, 2.0)", "expected = reference(x0, 2.0)").replace(
    ASSERT, "torch.testing.assert_close(x, expected)")
_head, _body = GOOD.split('@pytest.mark.parametrize("n", SIZES)\ndef test_scale(n):\n')
CLASS_BASED = (_head + 'class TestScale:\n    @pytest.mark.parametrize("n", SIZES)\n    def test_scale(self, n):\n'
               + textwrap.indent(_body, "    "))


def test_static_check_accepts_a_good_test() -> None:
    result = check_test_source(GOOD)
    assert result.ok, result.problems
    assert result.cases == 5


@pytest.mark.parametrize("source", [
    GOOD.replace(ASSERT, "assert torch.allclose(out, expected, rtol=1e-5, atol=1e-5)"),
    GOOD.replace(ASSERT, "assert (out - expected).abs().max() <= 1e-5"),
    GOOD.replace("from miner.harness import load_unit", "from miner import harness").replace(
        "load_unit(KERNEL_DIR", "harness.load_unit(KERNEL_DIR"),
    # A snapshot taken before the launch is an honest reference for an in-place kernel.
    GOOD.replace("    expected = reference(x, 2.0)\n", "").replace(
        LAUNCH, "expected = reference(x.clone(), 2.0)\n    " + LAUNCH),
    # The error held in a variable, bounded from above.
    GOOD.replace(ASSERT, "err = (out - expected).abs().max().item()\n    assert err < 1e-5"),
    GOOD.replace(ASSERT, "max_err = torch.max(torch.abs(out - expected))\n    assert 1e-5 >= max_err"),
    # An in-place kernel checked against a copy taken before the launch.
    INPLACE,
    # Skips that depend on the machine are fine: no GPU here.
    GOOD.replace("KERNEL_DIR =", "if not torch.cuda.is_available():\n"
                 "    pytest.skip('no GPU', allow_module_level=True)\nKERNEL_DIR ="),
    GOOD.replace("def reference(x, alpha):", "@pytest.fixture(autouse=True)\ndef _gpu():\n"
                 "    if not torch.cuda.is_available():\n        pytest.skip('no GPU')\n\n\ndef reference(x, alpha):"),
    GOOD.replace(ASSERT, "np.testing.assert_allclose(out.cpu().numpy(), expected.cpu().numpy(), 1e-5, 1e-6)"),
    # A helper calling a two-argument function (the checker used to crash on these).
    GOOD.replace("    return x * alpha", "    return torch.mul(x, alpha)"),
    CLASS_BASED,
], ids=["allclose", "abs-diff", "module-import", "snapshot-before-launch", "error-variable", "error-variable-reversed",
        "in-place-snapshot", "module-skip-without-gpu", "fixture-skip-without-gpu", "numpy-positional-tolerances",
        "helper-with-call", "class-based"])
def test_static_check_accepts_variants(source: str) -> None:
    result = check_test_source(source)
    assert result.ok, result.problems


@pytest.mark.parametrize("source, why", [
    (GOOD.replace("expected = reference(x, 2.0)", "expected = out.clone()"), "kernel's own output"),
    (GOOD.replace("expected = reference(x, 2.0)",
                  "expected = torch.empty_like(x)\n    unit.launch(1, 256, expected, x, 2.0, n)"),
     "kernel's own output"),
    (GOOD.replace(ASSERT, "print(out, expected)"), "no assertion"),
    (GOOD.replace(ASSERT, "torch.allclose(out, expected)"), "no assertion"),
    (GOOD.replace(ASSERT, "assert True"), "asserts a constant"),
    (GOOD.replace(ASSERT, "assert out.sum() == out.sum()"), "itself"),
    (GOOD.replace(LAUNCH, "out = x * 2.0"), "never launches"),
    (GOOD.replace("[1, 255, 256, 1000, 1 << 20]", "[1, 255]"), "at least 5"),
    (GOOD.replace("    " + ASSERT, f"    try:\n        {ASSERT}\n    except Exception:\n        pass"),
     "swallow"),
    (GOOD.replace('@pytest.mark.parametrize("n", SIZES)',
                  '@pytest.mark.skip\n@pytest.mark.parametrize("n", SIZES)'), "marked skip"),
    (GOOD.replace("def reference(x, alpha):", "def reference(x, alpha)"), "syntax error"),
    (GOOD.replace("from miner.harness import load_unit", "import subprocess\nfrom miner.harness import load_unit"),
     "imports subprocess"),
    # Tautologies.
    (GOOD.replace(ASSERT, "assert torch.allclose(out, out)"), "itself"),
    (GOOD.replace(ASSERT, "assert out == out"), "itself"),
    (GOOD.replace(ASSERT, "assert torch.allclose(out, expected) or True"), "always true"),
    (GOOD.replace(ASSERT, "assert (torch.allclose(out, expected), 'message')"), "non-empty tuple"),
    (GOOD.replace(ASSERT, "assert torch.allclose(out, expected) or not torch.allclose(out, expected)"),
     "c or not c"),
    (GOOD.replace(ASSERT, "assert (out - expected).abs().max() >= 0"), "never negative"),
    (GOOD.replace(ASSERT, "torch.testing.assert_close(out, expected, rtol=0, atol=float('inf'))"), "atol="),
    (GOOD.replace(ASSERT, "assert torch.allclose(out, expected, rtol=10.0)"), "rtol="),
    (GOOD.replace(ASSERT, "err = (out - expected).abs().max().item()\n    assert err >= 0"), "no assertion"),
    # References computed from the kernel's output.
    (GOOD.replace("expected = reference(x, 2.0)", "expected = out * 1.0"), "computed from the kernel's own output"),
    (GOOD.replace("expected = reference(x, 2.0)", "expected = reference(out, 1.0)"),
     "computed from the kernel's own output"),
    (INPLACE.replace("expected = reference(x0, 2.0)", "expected = reference(x, 2.0)"),
     "computed from the kernel's own output"),
    (INPLACE.replace("x0 = x.clone()", "x0 = x.view(-1)"), "computed from the kernel's own output"),
    # Assertions that never run.
    (GOOD.replace("    unit = load_unit", "    return\n    unit = load_unit"), "never launches"),
    (GOOD.replace("    " + ASSERT, "    if False:\n        " + ASSERT), "no assertion"),
    (GOOD.replace("    " + ASSERT, "    for _ in []:\n        " + ASSERT), "no assertion"),
    # Skipping every test whatever the machine.
    (GOOD.replace("KERNEL_DIR =", "pytest.skip('later', allow_module_level=True)\nKERNEL_DIR ="), "whole module"),
    (GOOD.replace(GPU_MARK, 'pytestmark = pytest.mark.skip(reason="later")'), "pytestmark marks every test skip"),
    (GOOD.replace(GPU_MARK, 'pytestmark = [pytest.mark.skipif(True, reason="later")]'), "marks every test skipif"),
    (GOOD.replace(GPU_MARK, "pytestmark = pytest.mark.xfail"), "marks every test xfail"),
    (GOOD.replace('@pytest.mark.parametrize("n", SIZES)',
                  '@pytest.mark.skipif(1, reason="x")\n@pytest.mark.parametrize("n", SIZES)'), "marked skipif"),
    (GOOD.replace('@pytest.mark.parametrize("n", SIZES)',
                  '@unittest.skip("x")\n@pytest.mark.parametrize("n", SIZES)'), "marked skip"),
    (GOOD.replace("def reference(x, alpha):", "@pytest.fixture(autouse=True)\ndef _later():\n"
                  "    pytest.skip('later')\n\n\ndef reference(x, alpha):"), "fixture _later always skips"),
    (GOOD.replace("    unit = load_unit", "    raise pytest.skip.Exception('x')\n    unit = load_unit"),
     "raises pytest.skip.Exception"),
    (GOOD.replace("[1, 255, 256, 1000, 1 << 20]", "[]"), "no case that runs"),
    (GOOD.replace("[1, 255, 256, 1000, 1 << 20]", "[pytest.param(1, marks=pytest.mark.skip), "
                  "pytest.param(2, marks=[pytest.mark.skip])]"), "no case that runs"),
    (CLASS_BASED.replace("class TestScale:", "@pytest.mark.skip\nclass TestScale:"), "class TestScale: marked skip"),
], ids=["clone-of-output", "kernel-as-reference", "print-only", "allclose-not-asserted", "assert-true",
        "self-compare", "no-launch", "too-few-cases", "try-except", "skip-mark", "syntax", "subprocess",
        "allclose-self", "eq-self", "or-true", "tuple", "c-or-not-c", "lower-bound", "infinite-atol", "huge-rtol",
        "error-variable-lower-bound", "arithmetic-on-output", "helper-on-output", "in-place-reference-after-launch",
        "in-place-alias-not-copy", "return-first", "if-false", "empty-loop", "module-skip", "pytestmark-skip",
        "pytestmark-skipif-true", "pytestmark-xfail", "skipif-constant", "unittest-skip", "autouse-fixture-skip",
        "raise-skip", "empty-parametrize", "all-params-skipped", "class-skip"])
def test_static_check_rejects_tests_that_cannot_fail(source: str, why: str) -> None:
    result = check_test_source(source)
    assert not result.ok
    assert why in result.message(), result.message()


# A torch-extension kernel (tests/fixtures/corpus/ops/row_stats.cu): it writes `mean`, a tensor accessor
# passed by value, not a pointer.
ROW_MEAN_PARAMS = [
    {"name": "input", "type": "const at::PackedTensorAccessor64<scalar_t, 2, at::RestrictPtrTraits>",
     "pointer": False, "const": True},
    {"name": "mean", "type": "at::PackedTensorAccessor64<scalar_t, 1, at::RestrictPtrTraits>",
     "pointer": False, "const": False},
]
ROW_MEAN = GOOD.replace("x * alpha", "x.mean(dim=1)").replace("reference(x, 2.0)", "reference(x, 0)").replace(
    'x = torch.randn(n, device="cuda")', 'x = torch.randn(n, 3, device="cuda")').replace(
    'out = torch.full_like(x, float("nan"))', 'out = torch.full((n,), float("nan"), device="cuda")').replace(
    LAUNCH, "unit.launch((n + 255) // 256, 256, x, out)")


def test_tensor_accessor_outputs_are_what_the_prompt_names_and_the_check_expects() -> None:
    from miner.enrich.prompt_context import outputs
    from miner.enrich.records import KernelInput
    from miner.enrich.stages.tests import writable_positions

    kin = KernelInput("row_mean_kernel-0", Path("."), {"params": ROW_MEAN_PARAMS}, "", "units/float/unit.cu")
    assert outputs(kin.metadata) == ["mean"]
    assert writable_positions(kin) == [1]
    # The honest test, reading `mean` (position 1), passes the check; one asserting on the input does not.
    assert check_test_source(ROW_MEAN, writable=writable_positions(kin)).ok
    wrong = check_test_source(ROW_MEAN.replace(ASSERT, "torch.testing.assert_close(x.mean(dim=1), expected)"),
                              writable=writable_positions(kin))
    assert not wrong.ok and "depends on the kernel's output" in wrong.message()


# ------------------------------------------------------------------------------ descriptions

DESC = {
    "summary": "Scales a vector by a constant.",
    "details": "Each thread multiplies one element; threads past n do nothing.",
    "parameters": [
        {"name": "out", "dtype": "float", "shape": "[n]", "role": "output", "description": "the result"},
        {"name": "x", "dtype": "float", "shape": "[n]", "role": "input", "description": "the input"},
        {"name": "n", "dtype": "int", "shape": "scalar", "role": "size", "description": "element count"},
    ],
    "returns": "Out holds x times the constant",
    "launch": {"grid": "ceil(n / 256)", "block": "256", "dynamic_shared_memory": "0", "notes": ""},
    "example": "unit.launch(4, 256, out, x, 1000)",
}
SIG = "__global__ void scale(float* out, const float* x, int n)"


def test_instruct_is_derived_by_rules_and_agrees_with_complete() -> None:
    complete = complete_docstring(DESC, SIG)
    instruct = instruct_prompt(DESC, SIG)
    assert complete.startswith("/**\n * Scales a vector by a constant.") and complete.rstrip().endswith(SIG)
    assert instruct.startswith("Write a CUDA kernel that scales a vector by a constant.\n")
    # Every fact of the complete description appears verbatim in the instruct one.
    for p in DESC["parameters"]:
        line = f"{p['name']} ({p['role']}; {p['dtype']}; shape {p['shape']})"
        assert line in complete and line in instruct
    assert "grid ceil(n / 256), block 256" in complete and "grid ceil(n / 256), block 256" in instruct
    assert instruct == instruct_prompt(dict(DESC), SIG)  # deterministic


# ------------------------------------------------------------------------------ cache, budget, redaction


def test_cache_key_covers_model_messages_and_params(tmp_path: Path) -> None:
    msgs = [{"role": "user", "content": "hi"}]
    k = request_key("m", msgs, {"temperature": 0})
    assert k != request_key("m2", msgs, {"temperature": 0})
    assert k != request_key("m", msgs, {"temperature": 1})
    assert k != request_key("m", [{"role": "user", "content": "hi!"}], {"temperature": 0})
    cache = ResponseCache(tmp_path)
    assert cache.get(k) is None
    cache.put(k, {"content": "answer"})
    assert cache.get(k) == {"content": "answer"}
    (tmp_path / k[:2] / f"{k}.json").write_text("{broken")
    assert cache.get(k) is None


def test_budget_refuses_past_its_limits() -> None:
    b = Budget(max_requests=2)
    b.reserve()
    b.reserve()
    with pytest.raises(BudgetExhausted):
        b.reserve()
    t = Budget(max_tokens=100)
    t.reserve()
    t.charge(150)
    with pytest.raises(BudgetExhausted, match="token"):
        t.reserve()


def test_redactor_masks_key_and_its_echoed_prefix() -> None:
    r = Redactor("sk-test-0123456789abcdef")
    assert r.text("key sk-test-0123456789abcdef bad") == "key *** bad"
    assert "sk-test-" not in r.text("Incorrect API key provided: sk-test-****cdef")
    assert r.obj({"a": ["sk-test-0123456789abcdef"]}) == {"a": ["***"]}


# ------------------------------------------------------------------------------ child-process runner


@pytest.mark.parametrize("body, outcome", [
    ("def test_ok():\n    assert 1 + 1 == 2\n", "passed"),
    ("def test_bad():\n    assert 1 + 1 == 3\n", "failed"),
    ("import pytest\n\ndef test_s():\n    pytest.skip('no GPU')\n", "skipped"),
    ("from miner.harness import no_such_name\n\ndef test_x():\n    pass\n", "error"),
    ("import os, signal\n\ndef test_segv():\n    os.kill(os.getpid(), signal.SIGSEGV)\n", "crashed"),
    ("import time\n\ndef test_hang():\n    time.sleep(60)\n", "timeout"),
])
def test_generated_test_runs_in_a_child_with_one_outcome(tmp_path: Path, body: str, outcome: str) -> None:
    # Through validate's test-process API: its child, plugin and classifier (miner/validate/process.py).
    kdir = tmp_path / "k"
    (kdir / "tests").mkdir(parents=True)
    test = kdir / "tests" / "test_generated.py"
    test.write_text(body)
    got, message = run_generated_test(kdir, test, timeout=1.5 if outcome == "timeout" else 30)
    assert got == outcome, message
    if outcome == "crashed":
        assert "SIGSEGV" in message
