#!/usr/bin/env python3
"""GPU check of the enrich stage: model-format tests pass `validate`, and the repair loop fixes a
deliberately broken test in one round.

    PYTHONPATH=. python3 scripts/enrich_gpu_check.py [--out DIR]

1. Builds a small dataset (two kernels of our own, each with a unit and launcher) in a temp folder.
2. Writes, for each, a test in exactly the format the tests prompt asks the model for, checks it with
   the static checker, and runs `kernel-miner validate` on the dataset: every kernel must pass.
3. Runs `kernel-miner enrich --stages analysis,tests` against the local fake server (the real
   `openai` client over HTTP), whose first test for each kernel is wrong (a wrong reference, a
   too-small grid); the repair answer is the right test. Each must end `ok` after two attempts.
Writes summary.json into --out (default $OUT or ./enrich_gpu_out) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from fake_llm_server import FakeLLMServer, fence, kernel_brain  # noqa: E402

from miner.enrich.static_check import check_test_source  # noqa: E402

KERNELS = {
    "scale_kernel": ("float* out, const float* x, float alpha, int n",
                     "out, x, alpha, n",
                     "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = alpha * x[i];\n"),
    "relu_kernel": ("float* y, const float* x, int n",
                    "y, x, n",
                    "  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)\n"
                    "    y[i] = x[i] > 0.f ? x[i] : 0.f;\n"),
}

HEADER = '''\
from pathlib import Path

import pytest

from miner.harness import load_unit

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
KERNEL_DIR = Path(__file__).resolve().parents[1]
SIZES = [1, 7, 255, 256, 1000, 1 << 20]
SPECIAL = [0.0, -0.0, 1.0, -1.0, 1e30, -1e30, float("inf"), float("-inf")]


def inputs(n, special):
    g = torch.Generator(device="cuda").manual_seed(n)
    x = torch.randn(n, device="cuda", generator=g)
    if special:
        vals = torch.tensor(SPECIAL, device="cuda")
        x[: min(n, len(SPECIAL))] = vals[: min(n, len(SPECIAL))]
    return x
'''

TESTS = {
    "scale_kernel": HEADER + '''

@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("n", SIZES)
def test_scale_kernel(n, special):
    unit = load_unit(KERNEL_DIR)
    x = inputs(n, special)
    out = torch.full_like(x, float("nan"))
    unit.launch(GRID, 256, out, x, 2.5, n)
    torch.cuda.synchronize()
    expected = REFERENCE
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
''',
    "relu_kernel": HEADER + '''

@pytest.mark.parametrize("special", [False, True])
@pytest.mark.parametrize("n", SIZES)
def test_relu_kernel(n, special):
    unit = load_unit(KERNEL_DIR)
    x = inputs(n, special)
    y = torch.full_like(x, float("nan"))
    unit.launch(GRID, 256, y, x, n)
    torch.cuda.synchronize()
    expected = REFERENCE
    torch.testing.assert_close(y, expected, rtol=0, atol=0)
''',
}
GOOD = {"scale_kernel": {"GRID": "(n + 255) // 256", "REFERENCE": "x * 2.5"},
        "relu_kernel": {"GRID": "min((n + 255) // 256, 1024)", "REFERENCE": "torch.relu(x)"}}
# Deliberately broken: a wrong launch for one kernel, a wrong reference for the other.
BROKEN = {"scale_kernel": {"GRID": "1", "REFERENCE": "x * 2.5"},
          "relu_kernel": {"GRID": "min((n + 255) // 256, 1024)", "REFERENCE": "torch.clamp(x, max=0.0)"}}


def render(name: str, subst: dict[str, str]) -> str:
    text = TESTS[name]
    for k, v in subst.items():
        text = text.replace(k, v)
    return text


def make_dataset(root: Path) -> Path:
    for name, (params, args, body) in KERNELS.items():
        kdir = root / f"{name}-0123456789ab"
        (kdir / "units" / "default").mkdir(parents=True)
        sig = f"__global__ void {name}({params})"
        (kdir / "kernel.cu").write_text(f"{sig}\n{{\n{body}}}\n")
        (kdir / "units" / "default" / "unit.cu").write_text(
            "#include <cuda_runtime.h>\n\n"
            f"{sig}\n{{\n{body}}}\n\n"
            f'extern "C" int km_launch_{name}(unsigned gx, unsigned gy, unsigned gz, unsigned bx, '
            f"unsigned by, unsigned bz, unsigned long smem, void *stream, {params}) {{\n"
            f"  {name}<<<dim3(gx, gy, gz), dim3(bx, by, bz), smem, (cudaStream_t)stream>>>({args});\n"
            "  return (int)cudaGetLastError();\n}\n")
        plist = []
        for part in params.split(","):
            ctype, pname = part.strip().rsplit(" ", 1)
            plist.append((pname, ctype))
        ctypes_ = {"float*": "pointer", "const float*": "pointer", "float": "float32", "int": "int32"}
        meta = {"id": kdir.name, "name": name, "signature": sig,
                "params": [{"name": n, "type": t, "pointer": "*" in t, "const": "const" in t, "restrict": False}
                           for n, t in plist],
                "template_params": [],
                "instantiations": [{"id": "default", "template_args": [], "origin": "explicit",
                                    "unit": "units/default/unit.cu",
                                    "launcher": {"symbol": name, "params": [
                                        {"name": n, "type": t, "ctype": ctypes_[t]} for n, t in plist]}}],
                "launches": [{"grid": "(n + 255) / 256", "block": "256", "smem": "0"}]}
        (kdir / "metadata.json").write_text(json.dumps(meta, indent=2))
    return root


ONE_COMMAND = """
import argparse, sys
from importlib import import_module
from miner.errors import MinerError
mod = import_module("miner.commands." + sys.argv[1])
parser = argparse.ArgumentParser(prog="kernel-miner " + sys.argv[1])
mod.add_arguments(parser)
try:
    sys.exit(mod.run(parser.parse_args(sys.argv[2:])))
except MinerError as exc:
    print(f"kernel-miner: error: {exc}", file=sys.stderr)
    sys.exit(exc.exit_code)
"""


def miner(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ if env is None else env)
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), full.get("PYTHONPATH")]))
    # One command module, not miner.cli: the CLI imports every command, and extract needs libclang,
    # which the GPU machine does not have.
    return subprocess.run([sys.executable, "-c", ONE_COMMAND, *args], env=full, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, check=False)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.environ.get("OUT", "enrich_gpu_out"))
    out = Path(ap.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    summary: dict[str, object] = {}
    ok = True
    with tempfile.TemporaryDirectory(prefix="km-enrich-gpu-") as tmp:
        # ---- 1+2: model-format tests pass validate
        data = make_dataset(Path(tmp) / "validate")
        static = {}
        for name in KERNELS:
            code = render(name, GOOD[name])
            res = check_test_source(code)
            static[name] = {"ok": res.ok, "cases": res.cases, "problems": res.problems}
            (data / f"{name}-0123456789ab" / "tests").mkdir()
            (data / f"{name}-0123456789ab" / "tests" / "test_generated.py").write_text(code)
            # The broken tests are wrong only at run time, so only the GPU run can catch them.
            static[name]["broken_passes_static_check"] = check_test_source(render(name, BROKEN[name])).ok
        t0 = time.time()
        val = miner("validate", str(data), "--timeout", "120")
        v_outcomes = {}
        for kdir in sorted(data.iterdir()):
            if (kdir / "metadata.json").exists():
                v = json.loads((kdir / "metadata.json").read_text()).get("validation") or {}
                v_outcomes[kdir.name] = {k: v.get(k) for k in ("outcome", "reason", "pass_call", "pass_exe")}
        summary["static_check"] = static
        summary["validate"] = {"rc": val.returncode, "seconds": round(time.time() - t0, 1),
                               "kernels": v_outcomes, "stderr_tail": val.stderr[-1500:]}
        ok &= all(v["outcome"] == "passed" for v in v_outcomes.values()) and len(v_outcomes) == 2
        ok &= all(s["ok"] for s in static.values())

        # ---- 3: the repair loop fixes a broken test in one round
        data2 = make_dataset(Path(tmp) / "repair")

        def brain(body: dict) -> str:
            users = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
            for name in KERNELS:
                if f"Write a pytest file that tests the CUDA kernel `{name}`" in users:
                    return "Here is the test:\n" + fence("python", render(name, BROKEN[name]))
                if f"The generated pytest file for the CUDA kernel `{name}` did not pass" in users:
                    reflection = {"reflection": "The reference or the launch grid was wrong; fixed.",
                                  "blame": "test", "confidence": 0.9}
                    return json.dumps(reflection) + "\n" + fence("python", render(name, GOOD[name]))
            return kernel_brain(body)

        with FakeLLMServer(default=brain) as srv:
            env = dict(os.environ, OPENAI_API_KEY="sk-gpu-check-key", OPENAI_BASE_URL=srv.base_url)
            t0 = time.time()
            enr = miner("enrich", str(data2), "--stages", "analysis,tests", "--model", "fake",
                        "--max-attempts", "3", "--concurrency", "2", env=env)
            repair = {"rc": enr.returncode, "seconds": round(time.time() - t0, 1), "requests": srv.count,
                      "stderr_tail": enr.stderr[-2000:], "kernels": {}}
        for kdir in sorted(data2.iterdir()):
            mem_path = kdir / "enrich" / "attempts.json"
            if not mem_path.exists():
                continue
            mem = json.loads(mem_path.read_text())
            repair["kernels"][kdir.name] = {
                "attempts": [{"outcome": a["outcome"], "error_summary": a["error_summary"],
                              "blame_model": a.get("blame_model"), "reflection": a.get("reflection")}
                             for a in mem["attempts"]],
                "final": mem.get("final")}
        summary["repair"] = repair
        ok &= enr.returncode == 0 and len(repair["kernels"]) == 2 and all(
            k["final"]["status"] == "ok" and k["final"]["attempts"] == 2 and k["attempts"][0]["outcome"] == "failed"
            for k in repair["kernels"].values())
    summary["ok"] = bool(ok)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    print(f"{'kernel':28} {'static':8} {'validate':10} {'attempt 1':10} {'attempt 2':10} final")
    for name in KERNELS:
        kid = f"{name}-0123456789ab"
        rk = summary["repair"]["kernels"].get(kid, {})  # type: ignore[union-attr]
        atts = [a["outcome"] for a in rk.get("attempts", [])] + ["-", "-"]
        print(f"{kid:28} {str(static[name]['ok']):8} {str(v_outcomes.get(kid, {}).get('outcome')):10} "
              f"{atts[0]:10} {atts[1]:10} {(rk.get('final') or {}).get('status')}")
    print("OK" if ok else "NOT OK")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
