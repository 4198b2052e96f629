"""TritonBench / GEAK records in and out (round trips), and the check that rejects tests whose output does
not depend on the kernel (TritonBench's flaw)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, load_dataset, run_miner

from miner.dataset import schema
from miner.triton.test_check import check_test_source

RECORDS = FIXTURES / "triton_records"
FLAWED = (RECORDS / "tests_flawed.py").read_text()


@pytest.fixture(scope="module")
def imported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("imp") / "ds"
    r = run_miner("import", RECORDS / "train_crawl.json", "-o", out)
    # record 2 does not parse: reported, the others are mined
    assert r.returncode == 1 and "train_crawl.json#2" in r.stderr and r.stderr.count("kernel-miner: error:") == 1
    assert "2 kernels from 4 records" in r.stdout
    return out


def test_import_crawl_list(imported: Path) -> None:
    by = {m["name"]: m for m in load_dataset(imported)}
    assert set(by) == {"relu_kernel", "row_sum_kernel"}
    relu = by["relu_kernel"]
    assert schema.errors(relu) == []
    assert relu["source"]["path"] == "train_crawl.json#0"
    assert relu["source"]["repo"] == "https://example.invalid/own/kernels" and relu["source"]["license"] == "Apache-2.0"
    assert relu["triton"]["launches"][0]["launcher"] == "relu"
    assert by["row_sum_kernel"]["triton"]["autotune"]["configs"] == [{"kwargs": {"BLOCK_M": 32}, "num_warps": 2}]


def _kernel_texts(ds: Path) -> dict[str, str]:
    return {m["name"]: (ds / m["id"] / "kernel.py").read_text() for m in load_dataset(ds)}


def test_tritonbench_round_trip(imported: Path, tmp_path: Path) -> None:
    r = run_miner("export", imported, "--format", "tritonbench", "--out", tmp_path / "tb")
    assert r.returncode == 0, r.stderr
    records = json.loads((tmp_path / "tb" / "tritonbench.json").read_text())
    assert len(records) == 2
    for rec in records:
        assert schema.errors(rec, "tritonbench") == []
    relu = next(x for x in records if x["kernel_name"] == "relu_kernel")
    assert relu["kernel_wrapper"].startswith("def relu(x):")
    back = tmp_path / "back"
    r = run_miner("import", tmp_path / "tb" / "tritonbench.json", "-o", back)
    assert r.returncode == 0, r.stderr
    assert _kernel_texts(back) == _kernel_texts(imported)  # exact kernel text survives the trip
    assert {m["source"]["repo"] for m in load_dataset(back)} == {"https://example.invalid/own/kernels"}


def test_geak_round_trip(imported: Path, tmp_path: Path) -> None:
    r = run_miner("export", imported, "--format", "geak", "--out", tmp_path / "g")
    assert r.returncode == 0, r.stderr
    lines = [json.loads(x) for x in (tmp_path / "g" / "geak.jsonl").read_text().splitlines()]
    for rec in lines:
        assert schema.errors(rec, "geak") == []
        assert rec["pass_call"] is False and rec["pass_exe"] is False and rec["ms"] is None  # never built or run
    assert {x["target_kernel_name"] for x in lines} == {"relu_kernel", "row_sum_kernel"}
    back = tmp_path / "back"
    assert run_miner("import", tmp_path / "g" / "geak.jsonl", "-o", back).returncode == 0
    assert _kernel_texts(back) == _kernel_texts(imported)


def test_flawed_test_is_rejected_and_not_exported(imported: Path, tmp_path: Path) -> None:
    relu = next(m for m in load_dataset(imported) if m["name"] == "relu_kernel")
    tests = imported / relu["id"] / "tests"
    tests.mkdir(exist_ok=True)
    (tests / "test_gold.py").write_text(FLAWED)
    r = run_miner("export", imported, "--format", "tritonbench", "--out", tmp_path / "tb")
    assert r.returncode == 0, r.stderr
    rec = next(x for x in json.loads((tmp_path / "tb" / "tritonbench.json").read_text())
               if x["kernel_name"] == "relu_kernel")
    assert rec["unitest_code"] is None and "does not depend on the kernel" in rec["test_rejected"]


@pytest.mark.parametrize(("code", "ok"), [
    (FLAWED, False),
    (FLAWED + "print(result_gold)\n", True),  # the same results, printed: the output now shows the kernel
    ("import torch\ndef test_a():\n    x = torch.ones(4)\n    y = relu(x)\n    assert torch.equal(y, x)\n", True),
    ("import torch\ndef test_a():\n    x = torch.ones(4)\n    print(x)\n    assert x.sum() == 4\n", False),
    ("import torch\ndef test_a():\n    y = torch.empty(4)\n    relu_kernel[(1,)](torch.ones(4), y, 4, BLOCK=4)\n"
     "    torch.testing.assert_close(y, torch.ones(4))\n", True),  # a buffer the launch wrote
    ("import torch\ndef test_a():\n    x = torch.ones(4)\n    relu(x)\n    print('done')\n", False),
])
def test_output_must_depend_on_kernel(code: str, ok: bool) -> None:
    res = check_test_source(code, {"relu_kernel", "relu"})
    assert res.ok is ok, res.message()


FLAWED_ANSWER = '''```python
import torch
from pathlib import Path
from miner.triton import harness

KDIR = Path(__file__).resolve().parents[1]


def test_silu():
    unit = harness.load_triton_unit(KDIR)
    results = {}
    for n in (1, 7, 1024, 4097, 65536):
        results[n] = unit.function("silu")(torch.randn(n, device="cuda"))
    return results
```
'''
GOOD_ANSWER = '''{"reflection": "Nothing asserted on the kernel's output; compare with torch now.", "blame": "test",
 "confidence": 0.9}

```python
from pathlib import Path

import pytest

from miner.triton import harness

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
KDIR = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("n", [1, 7, 1024, 4097, 65536])
def test_silu(n):
    unit = harness.load_triton_unit(KDIR)
    x = torch.randn(n, device="cuda", generator=torch.Generator(device="cuda").manual_seed(0))
    y = unit.function("silu")(x)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, x * torch.sigmoid(x), rtol=1e-5, atol=1e-5)
```
'''


def test_enrich_uses_triton_prompts_and_rejects_a_test_that_asserts_nothing(tmp_path: Path) -> None:
    """The real enrich command against the local fake OpenAI server: Triton templates are used, and the
    first candidate (TritonBench-style: collects results, asserts nothing) is rejected before it runs."""
    from fake_llm_server import FakeLLMServer, Rule, fence

    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "triton", src)
    ds = tmp_path / "ds"
    assert run_miner("extract", src, "-o", ds, "--language", "triton", "-q").returncode == 0
    params = [("x_ptr", "float*"), ("y_ptr", "float*"), ("n", "int"), ("BLOCK", "int")]
    from fake_llm_server import analysis_answer, describe_answer

    rules = [Rule(r"^Analyse the Triton kernel", [fence("json", json.dumps(analysis_answer("silu_kernel", params)))]),
             Rule(r"^Write the complete documentation of the Triton kernel",
                  [json.dumps(describe_answer("silu_kernel", params))]),
             Rule(r"did not pass", [GOOD_ANSWER]),
             Rule(r"^Write a pytest file that tests the Triton kernel", [FLAWED_ANSWER])]
    with FakeLLMServer(rules) as srv:
        env = {"OPENAI_API_KEY": "sk-test-triton-0000", "OPENAI_BASE_URL": srv.base_url}
        cfg = tmp_path / "km.toml"
        cfg.write_text(f'[enrich]\nbase_url = "{srv.base_url}"\nretries = 1\nretry_initial = 0.01\n')
        r = run_miner("enrich", ds, "--kernels", "silu_kernel", "--config", cfg, "--model", "fake", env=env,
                      timeout=300)
        prompts = [m["content"] for q in srv.requests for m in q["body"]["messages"] if m["role"] == "user"]
    assert r.returncode in (0, 1), r.stderr
    assert any("Analyse the Triton kernel `silu_kernel`" in p for p in prompts)
    assert any("from miner.triton import harness" in p for p in prompts)  # the Triton harness API
    m = next(x for x in load_dataset(ds) if x["name"] == "silu_kernel")
    attempts = json.loads((ds / m["id"] / "enrich" / "attempts.json").read_text())["attempts"]
    assert attempts[0]["outcome"] == "rejected" and "does not depend on the kernel" in attempts[0]["error"]
    assert attempts[1]["outcome"] in ("skipped", "passed")  # no GPU here: statically sound, not run
    assert "assert_close" in (ds / m["id"] / "tests" / "test_generated.py").read_text()
