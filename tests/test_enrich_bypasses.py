"""Generated tests that try to pass without checking anything (issue 15) are refused, and the mutants
that judge the rest by behaviour are made from the unit's real text.

The bypasses (tests/llm_bypasses.py) go through the static check directly and through a real
`kernel-miner enrich` run whose model is the local fake server (real HTTP, the `openai` client).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fake_llm_server import FakeLLMServer, Rule, fence, kernel_brain
from llm_bypasses import BYPASSES, GOOD, good

from miner.enrich.mutants import make_mutants
from miner.enrich.mutation import judge_test, prepare_mutants
from miner.enrich.static_check import check_test_source

ROOT = Path(__file__).resolve().parents[1]
KEY = "sk-test-bypass-0123456789abcdef"
RELU = ("__global__ void {name}(float* y, const float* x, int n)",
        "{{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;\n}}\n")


def relu_dataset(root: Path, names: list[str]) -> Path:
    """Kernel folders as extract + render write them (metadata.json, kernel.cu, units/default/unit.cu)."""
    for name in names:
        sig, body = RELU[0].format(name=name), RELU[1].format()
        kdir = root / f"{name}-{hashlib.sha256(name.encode()).hexdigest()[:12]}"
        (kdir / "units" / "default").mkdir(parents=True)
        (kdir / "kernel.cu").write_text(sig + "\n" + body)
        (kdir / "units" / "default" / "unit.cu").write_text(
            "#include <cuda_runtime.h>\n" + sig + "\n" + body
            + f'extern "C" int km_launch_{name}(unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,'
            " unsigned bz, unsigned long smem, void* stream, float* y, const float* x, int n) {\n"
            f"  {name}<<<dim3(gx, gy, gz), dim3(bx, by, bz), smem, (cudaStream_t)stream>>>(y, x, n);\n"
            "  return (int)cudaGetLastError();\n}\n")
        params = [{"name": "y", "type": "float*", "pointer": True, "const": False, "restrict": False},
                  {"name": "x", "type": "const float*", "pointer": True, "const": True, "restrict": False},
                  {"name": "n", "type": "int", "pointer": False, "const": False, "restrict": False}]
        meta = {"id": kdir.name, "name": name, "signature": sig, "params": params, "template_params": [],
                "instantiations": [{"id": "default", "template_args": [], "origin": "none",
                                    "unit": "units/default/unit.cu",
                                    "launcher": {"symbol": name, "params": [
                                        {"name": "y", "type": "float*", "ctype": "pointer"},
                                        {"name": "x", "type": "const float*", "ctype": "pointer"},
                                        {"name": "n", "type": "int", "ctype": "int32"}]}}],
                "launches": [{"grid": "(n + 255) / 256", "block": "256", "smem": "0"}]}
        (kdir / "metadata.json").write_text(json.dumps(meta, indent=2))
    return root


# ---------------------------------------------------------------------------------------- static check

def test_the_honest_test_and_machine_dependent_skips_are_accepted() -> None:
    assert check_test_source(good(), 5, [0]).ok, check_test_source(good(), 5, [0]).message()
    guarded = GOOD.replace("#HEADER#", "").replace(
        "    #BEFORE#\n", "").replace("    torch.manual_seed(n)\n", "    if not torch.cuda.is_available():\n"
                                     "        pytest.skip('no GPU')\n    torch.manual_seed(n)\n")
    assert check_test_source(guarded, 5, [0]).ok, check_test_source(guarded, 5, [0]).message()
    required = good().replace('torch = pytest.importorskip("torch")',
                              'from miner import harness\nharness.require_gpu()\nimport torch')
    assert check_test_source(required, 5, [0]).ok, check_test_source(required, 5, [0]).message()
    tolerances = good().replace("rtol=1e-5, atol=1e-5", "**TOLS[torch.float32]").replace(
        "KERNEL_DIR = ", "TOLS = {torch.float32: dict(rtol=1e-5, atol=1e-5)}\nKERNEL_DIR = ")
    assert not check_test_source(tolerances, 5, [0]).ok  # ** hides the numbers: refused, not guessed


@pytest.mark.parametrize("name", sorted(BYPASSES))
def test_every_bypass_is_rejected(name: str) -> None:
    result = check_test_source(BYPASSES[name], 5, [0])
    assert not result.ok, f"{name} passed the static check"
    assert result.problems


def test_inputs_are_not_outputs_when_the_signature_says_so() -> None:
    # `x` is `const float*`: a comparison that reads only x after the launch reads no output.
    inline = BYPASSES["recompute_inline"]
    assert not check_test_source(inline, 5, [0]).ok
    assert check_test_source(inline, 5, None).ok  # without the roles, every launch argument may be written


# ---------------------------------------------------------------------------------------- mutants

SAXPY = """#include <cuda_runtime.h>
template <typename T>
__global__ void axpy(int n, T a, const T* __restrict__ x, T* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  T* out = y + 0;
  if (i < n) out[i] = a * x[i] + y[i];
}
template <typename T>
__global__ void scatter_add(int n, const int* idx, const T* v, T* acc) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    atomicAdd(&acc[idx[i]], v[i] * 2);
}
template __global__ void axpy<float>(int, float, const float*, float*);
"""


def test_mutants_change_only_the_kernel_body_and_say_what_changed() -> None:
    mutants = {m.name: m for m in make_mutants(SAXPY, "axpy")}
    assert list(mutants) == ["no_write", "poison", "drop_term.1", "drop_term.2", "off_by_one.1", "off_by_one.2"]
    assert "out[i] = -(a * x[i] + y[i]);" in mutants["poison"].source  # the store through a local alias
    assert "out[i] = (a * x[i]);" in mutants["drop_term.1"].source
    assert "`a * x[i] + y[i]` -> `(a * x[i])`" in mutants["drop_term.1"].description
    assert "x[(i) + 1]" in mutants["off_by_one.1"].source
    for m in mutants.values():
        # The other kernel and the explicit instantiation are untouched.
        assert "atomicAdd(&acc[idx[i]], v[i] * 2);" in m.source and "template __global__ void axpy<float>" in m.source
    assert "blockIdx.x * blockDim.x + threadIdx.x" in mutants["drop_term.2"].source  # index arithmetic kept
    scatter = {m.name: m for m in make_mutants(SAXPY, "scatter_add")}
    assert "atomicAdd(&acc[idx[i]], -(v[i] * 2));" in scatter["poison"].source
    assert "atomicAdd(&acc[idx[i]], (v[i]));" in scatter["drop_term.1"].source
    assert make_mutants(SAXPY, "no_such_kernel") == []


def test_prepared_mutants_are_kernel_folders_without_tests_or_records(tmp_path: Path) -> None:
    data = relu_dataset(tmp_path / "ds", ["relu_a"])
    kdir = next(data.iterdir())
    (kdir / "tests").mkdir()
    (kdir / "tests" / "test_generated.py").write_text("x = 1\n")
    (kdir / "units" / "default" / "libunit.so").write_bytes(b"\x7fELF")
    prepared = prepare_mutants(kdir, tmp_path / "mutants")
    # relu reads x[i] twice (condition and value): two off-by-one sites; no arithmetic term to drop.
    assert set(prepared) == {"no_write", "poison", "off_by_one.1", "off_by_one.2"}
    made = {m.name: m for m in make_mutants((kdir / "units" / "default" / "unit.cu").read_text(), "relu_a")}
    for name, (mutant, folder) in prepared.items():
        meta = json.loads((folder / "metadata.json").read_text())
        assert meta["id"] == folder.name and folder.name.endswith(kdir.name.rsplit("-", 1)[1])
        assert (folder / "units" / "default" / "unit.cu").read_text() == made[name].source
        assert mutant.description == made[name].description
        assert not (folder / "tests").exists() and not (folder / "units" / "default" / "libunit.so").exists()


@pytest.mark.slow  # one nvcc batch for four mutants (~10 s on an idle core)
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
def test_mutants_build_with_the_build_stage_and_a_test_that_passes_them_is_weak(tmp_path: Path) -> None:
    data = relu_dataset(tmp_path / "ds", ["relu_b"])
    kdir = next(data.iterdir())
    test = kdir / "tests" / "test_generated.py"
    test.parent.mkdir()
    test.write_text("def test_nothing():\n    pass\n")
    ran: list[str] = []

    def fake_run(folder: Path, path: Path, timeout: float) -> tuple[str, str]:
        ran.append(folder.name)
        assert path.read_text() == test.read_text() and path.parent.parent == folder
        return ("failed", "") if folder.name.startswith("no_write") else ("passed", "")

    report = judge_test(kdir, test, 60, fake_run)
    assert [m.build for m in report.mutants] == ["ok"] * 4 and len(ran) == 4
    record = report.record()
    assert record["status"] == "survived" and record["score"] == pytest.approx(1 / 4)
    assert record["survivors"] == ["poison", "off_by_one.1", "off_by_one.2"]
    assert "negated" in report.feedback() and "x[(i) + 1]" in report.feedback()


# ---------------------------------------------------------------------------------------- end to end

def _tree_hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and "enrich" not in p.relative_to(root).parts
            and p.name not in ("metadata.json", "index.jsonl", "enrich_run.json") and not p.name.startswith(".")
            and ".cache" not in p.relative_to(root).parts}


def test_every_bypass_answered_by_a_model_is_rejected_end_to_end(tmp_path: Path) -> None:
    names = {f"relu_{i:02d}": bypass for i, bypass in enumerate(sorted(BYPASSES))}
    data = relu_dataset(tmp_path / "ds", list(names))
    before = _tree_hashes(data)
    rules = [Rule(rf"Write a pytest file that tests the CUDA kernel `{name}`", ["```python\n" + BYPASSES[b] + "```\n"])
             for name, b in names.items()]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(PYTHONPATH=str(ROOT), OPENAI_API_KEY=KEY)
    with FakeLLMServer(rules, default=kernel_brain) as srv:
        proc = subprocess.run([sys.executable, "-m", "miner", "enrich", str(data), "--base-url", srv.base_url,
                               "--model", "m", "--stages", "analysis,tests", "--max-attempts", "1",
                               "--concurrency", "4"], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    for kdir in sorted(data.iterdir()):
        if not (kdir / "metadata.json").exists():
            continue
        name = kdir.name.rsplit("-", 1)[0]
        tests = json.loads((kdir / "enrich" / "record.json").read_text())["stages"]["tests"]
        assert (tests["status"], tests["outcome"], tests["blame"]) == ("failed", "rejected", "test"), names[name]
        assert not (kdir / "tests" / "test_generated.py").exists(), names[name]
        assert (kdir / "enrich" / "test_generated.failed.py").read_text() == BYPASSES[names[name]]
        md = json.loads((kdir / "metadata.json").read_text())["enrichment"]["stages"]["tests"]
        assert md["mutation"]["status"] == "not_run"
    assert _tree_hashes(data) == before  # nothing of the dataset changed, no test ran
    assert fence  # the fake server's helpers are the ones the other enrich tests use
