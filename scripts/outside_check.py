#!/usr/bin/env python3
"""Outside check: validate kernels mined from karpathy/llm.c against llm.c's own PyTorch code.

The tests below are written the way an outsider would, from the README's "Harness API" section
alone: `harness.require_gpu()`, `harness.load_unit(KDIR)`, `unit.launch(grid, block, *args)`,
`harness.benchmark(...)`. The references are llm.c's own modules, imported from the checkout:
`NewGELU` from train_gpt2.py and `LayerNorm.forward` from doc/layernorm/layernorm.py.

    PYTHONPATH=. python3 scripts/outside_check.py prepare [--corpus /work/corpora/llm.c]
    PYTHONPATH=. python3 scripts/outside_check.py run [--out DIR]

`prepare` (needs the extract frontends and nvcc, no GPU): mines llm.c's dev/cuda with
`kernel-miner extract`, builds the four kernels with `kernel-miner build`, writes one test file into
each kernel folder and copies the two reference files (and llm.c's LICENSE) next to the dataset.
Everything goes to the git-ignored .corpora/ folder (never committed: third-party code), which is
what travels to a GPU machine. `run` (needs a GPU): `kernel-miner validate` on those kernels, then
prints one line per kernel and writes outside_check.json into --out (default $OUT or .).
`all` does both. Nothing of llm.c is kept in this repository.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HERE = REPO / ".corpora"
DATASET = HERE / "llmc-ds"
REFS = HERE / "llm.c"  # the reference modules, as in the checkout: train_gpt2.py, doc/layernorm/layernorm.py
REF_FILES = ("train_gpt2.py", "doc/layernorm/layernorm.py", "LICENSE")

COMMON = '''\
import contextlib
import importlib.util
import os
import tempfile
from pathlib import Path

import pytest

from miner import harness

harness.require_gpu()
import torch  # noqa: E402

KDIR = Path(__file__).resolve().parents[1]
LLMC = Path(os.environ.get("KM_LLMC", KDIR.parents[1] / "llm.c"))  # the llm.c checkout (or its copy)


def llmc_module(rel):
    """A module of the llm.c checkout, imported from its file (in a scratch folder: layernorm.py
    runs its own check on import and writes ln.bin into the current directory)."""
    spec = importlib.util.spec_from_file_location("llmc_" + Path(rel).stem, LLMC / rel)
    mod = importlib.util.module_from_spec(spec)
    with tempfile.TemporaryDirectory() as scratch, contextlib.chdir(scratch):
        spec.loader.exec_module(mod)
    return mod
'''

GELU_TEST = COMMON + '''

# dev/cuda/gelu_forward.cu defines ENABLE_BF16, so floatX is __nv_bfloat16 in this kernel.
PER_THREAD = {PER_THREAD}  # elements per thread: 1 for kernel1, x128::size = 8 for kernel2


def launch(unit, out, x, block=128):
    n = x.numel()
    unit.launch((n + block * PER_THREAD - 1) // (block * PER_THREAD), block, out, x, n)


def test_the_unit_is_bf16():
    assert "typedef __nv_bfloat16 floatX" in harness.load_unit(KDIR).source


@pytest.mark.parametrize("n", [8, 4096, 3 * 1024 * 768])
def test_matches_llmc_newgelu(n):
    gelu = llmc_module("train_gpt2.py").NewGELU()
    unit = harness.load_unit(KDIR)
    x = (3 * torch.randn(n, device="cuda")).to(torch.bfloat16)
    out = torch.full_like(x, float("nan"))
    launch(unit, out, x)
    torch.cuda.synchronize()
    expected = gelu(x.float()).to(torch.bfloat16)  # llm.c computes in float, stores bf16
    torch.testing.assert_close(out, expected, rtol=1.6e-2, atol=1e-2)
    assert (out.float() - expected.float()).abs().max().item() <= 0.0625  # at most an ulp or so


def test_speed_against_llmc_newgelu():
    gelu = llmc_module("train_gpt2.py").NewGELU()
    unit = harness.load_unit(KDIR)
    n = 8 * 1024 * 768

    def make():
        x = torch.randn(n, device="cuda").to(torch.bfloat16)
        return torch.empty_like(x), x

    res = harness.benchmark(lambda out, x: launch(unit, out, x),
                            lambda out, x: out.copy_(gelu(x.float())), make, outputs=[0], reps=20)
    assert res.kernel_ms > 0
'''

LAYERNORM_TEST = COMMON + '''

THREADS_PER_ROW = {THREADS_PER_ROW}  # kernel1: a thread per row; kernel3: a warp per row


def launch(unit, out, mean, rstd, x, w, b, block=256):
    rows, c = x.numel() // x.shape[-1], x.shape[-1]
    grid = (rows * THREADS_PER_ROW + block - 1) // block
    unit.launch(grid, block, out, mean, rstd, x, w, b, rows, c)


@pytest.mark.parametrize("shape", [(1, 1, 32), (2, 7, 100), (4, 64, 768)])
def test_matches_llmc_layernorm(shape):
    ln = llmc_module("doc/layernorm/layernorm.py").LayerNorm
    unit = harness.load_unit(KDIR)
    x = torch.randn(*shape, device="cuda")
    w, b = torch.randn(shape[-1], device="cuda"), torch.randn(shape[-1], device="cuda")
    out = torch.full_like(x, float("nan"))
    mean = torch.full(shape[:2], float("nan"), device="cuda")
    rstd = torch.full_like(mean, float("nan"))
    launch(unit, out, mean, rstd, x, w, b)
    torch.cuda.synchronize()
    ref_out, (_, _, ref_mean, ref_rstd) = ln.forward(x, w, b)
    torch.testing.assert_close(out, ref_out, rtol=1e-4, atol=1e-4)
    torch.testing.assert_close(mean, ref_mean.squeeze(-1), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(rstd, ref_rstd.squeeze(-1), rtol=1e-4, atol=1e-4)


def test_speed_against_llmc_layernorm():
    ln = llmc_module("doc/layernorm/layernorm.py").LayerNorm
    unit = harness.load_unit(KDIR)
    shape = (8, 1024, 768)

    def make():
        x = torch.randn(*shape, device="cuda")
        return (torch.empty_like(x), torch.empty(shape[:2], device="cuda"), torch.empty(shape[:2], device="cuda"),
                x, torch.randn(shape[-1], device="cuda"), torch.randn(shape[-1], device="cuda"))

    res = harness.benchmark(lambda *a: launch(unit, *a), lambda out, m, r, x, w, b: out.copy_(ln.forward(x, w, b)[0]),
                            make, outputs=[0, 1, 2], reps=20)
    assert res.kernel_ms > 0
'''

KERNELS = {  # kernel name -> (file it is defined in, test file name, test text)
    "gelu_forward_kernel1": ("dev/cuda/gelu_forward.cu", "test_llmc_gelu.py", GELU_TEST.replace("{PER_THREAD}", "1")),
    "gelu_forward_kernel2": ("dev/cuda/gelu_forward.cu", "test_llmc_gelu.py", GELU_TEST.replace("{PER_THREAD}", "8")),
    "layernorm_forward_kernel1": ("dev/cuda/layernorm_forward.cu", "test_llmc_layernorm.py",
                                  LAYERNORM_TEST.replace("{THREADS_PER_ROW}", "1")),
    "layernorm_forward_kernel3": ("dev/cuda/layernorm_forward.cu", "test_llmc_layernorm.py",
                                  LAYERNORM_TEST.replace("{THREADS_PER_ROW}", "32")),
}


def km(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    e = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p))
    e.update(env or {})
    cmd = [sys.executable, "-m", "miner", *args]
    print("$ kernel-miner " + " ".join(args), flush=True)
    return subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=1800)


def kernel_dirs() -> dict[str, Path]:
    """Kernel name -> folder, for the kernels above (by name and defining file: llm.c repeats names)."""
    out = {}
    for meta_path in sorted(DATASET.glob("*/metadata.json")):
        meta = json.loads(meta_path.read_text())
        want = KERNELS.get(meta.get("name"))
        if want and (meta.get("source") or {}).get("path") == want[0]:
            out[meta["name"]] = meta_path.parent
    return out


def prepare(corpus: Path) -> None:
    if not (corpus / "dev" / "cuda").is_dir():
        raise SystemExit(f"outside_check: {corpus} is not an llm.c checkout (no dev/cuda)")
    shutil.rmtree(DATASET, ignore_errors=True)
    HERE.mkdir(exist_ok=True)
    proc = km("extract", str(corpus / "dev" / "cuda"), "-o", str(DATASET), "-q")
    if proc.returncode not in (0, 1):
        raise SystemExit(f"extract failed: {proc.stderr.strip()}")
    print(proc.stdout.strip())
    proc = km("build", str(DATASET), "--kernels", ",".join(KERNELS), "-q")
    print(proc.stdout.strip(), proc.stderr.strip())
    dirs = kernel_dirs()
    missing = sorted(set(KERNELS) - set(dirs))
    if missing:
        raise SystemExit(f"outside_check: not mined: {', '.join(missing)}")
    for name, kdir in dirs.items():
        (kdir / "tests").mkdir(exist_ok=True)
        (kdir / "tests" / KERNELS[name][1]).write_text(KERNELS[name][2])
    shutil.rmtree(REFS, ignore_errors=True)
    for rel in REF_FILES:
        (REFS / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(corpus / rel, REFS / rel)
    print(f"prepared {len(dirs)} kernels in {DATASET} and llm.c's reference modules in {REFS}")


def run(out: Path, refs: Path) -> int:
    dirs = kernel_dirs()
    if not dirs:
        raise SystemExit(f"outside_check: no prepared dataset in {DATASET}; run `prepare` first")
    proc = km("validate", str(DATASET), "--kernels", ",".join(k.name for k in dirs.values()), "--force",
              "--timeout", "300", env={"KM_LLMC": str(refs)})
    print(proc.stdout.strip())
    if proc.stderr.strip():
        print(proc.stderr.strip())
    rows = {}
    for name, kdir in sorted(dirs.items()):
        v = json.loads((kdir / "metadata.json").read_text()).get("validation") or {}
        rows[name] = {k: v.get(k) for k in ("outcome", "reason", "tests", "pass_call", "pass_exe", "pass_perf",
                                            "speedup", "oracle_summary", "bench", "timing")}
        rows[name]["kernel_id"] = kdir.name
        rows[name]["source"] = (json.loads((kdir / "metadata.json").read_text()).get("source") or {})
        print(f"{name:28} {str(v.get('outcome')):10} tests={v.get('tests')} speedup_vs_llmc_torch="
              f"{v.get('speedup') and round(v['speedup'], 2)} oracles="
              f"{ {k: s.get('status') for k, s in (v.get('oracle_summary') or {}).items() if isinstance(s, dict)} }")
    out.mkdir(parents=True, exist_ok=True)
    (out / "outside_check.json").write_text(json.dumps(rows, indent=1, default=str))
    return 0 if all(r["outcome"] == "passed" for r in rows.values()) else 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=("prepare", "run", "all"), nargs="?", default="all")
    ap.add_argument("--corpus", type=Path, default=Path(os.environ.get("KM_LLMC_CORPUS", "/work/corpora/llm.c")))
    ap.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    args = ap.parse_args()
    if args.step in ("prepare", "all"):
        prepare(args.corpus)
    if args.step in ("run", "all"):
        return run(args.out, REFS if REFS.is_dir() else args.corpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
