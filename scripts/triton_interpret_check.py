#!/usr/bin/env python3
"""Run the torch.nn-parent reference checks of Triton units on CPU, through Triton's interpreter; print a table.

    PYTHONPATH=. python3 scripts/triton_interpret_check.py DATASET [DATASET ...] [--timeout 120]

A pre-check for a GPU run, not a substitute: `TRITON_INTERPRET=1` runs each kernel in numpy on CPU
tensors, so kernels the interpreter cannot run (some tensor descriptors, CUDA-only units that allocate on
the device at import) fail here and may pass on a GPU. The interpreter has no benchmarker: autotune takes
its first config. Each kernel runs in its own child process (a stuck kernel costs only its own timeout).
Only kernels whose metadata has `triton.reference.kind == "torch_parent"` are checked
(miner/triton/parent_ref.py); function references need a GPU (scripts/triton_gpu_validate.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = """
import json, sys
from triton.runtime import autotuner
# no benchmarker under the interpreter: every config "takes" the same time, the first one wins
autotuner.Autotuner.do_bench = property(lambda self: (lambda fn, quantiles=None: (fn(), [1.0, 1.0, 1.0])[1]))
from miner.triton import harness, harness_parent
kdir, layers = sys.argv[1], json.loads(sys.argv[2])
out = {}
try:
    unit = harness.load_triton_unit(kdir)
except Exception as exc:
    print(json.dumps({"load": f"{type(exc).__name__}: {str(exc)[:150]}"}))
    sys.exit(0)
for layer in layers:
    try:
        r = harness_parent.check_against_parent(unit, layer, device="cpu")
        out[layer] = "passed (" + r["checked"] + ", input " + str(r["input"]) + ")"
    except BaseException as exc:
        out[layer] = f"failed: {type(exc).__name__}: {str(exc)[:150]}".replace(chr(10), " ")
print(json.dumps(out))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="+")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per kernel")
    args = ap.parse_args()
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(REPO))
    rows, summary = [], []
    for ds in args.datasets:
        n = passed = 0
        for meta_path in sorted(Path(ds).glob("*/metadata.json")):
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            ref = (meta.get("triton") or {}).get("reference") or {}
            if ref.get("kind") != "torch_parent":
                continue
            n += 1
            layers = [x["layer"] for x in ref["layers"]]
            try:
                r = subprocess.run([sys.executable, "-c", _CHILD, str(meta_path.parent), json.dumps(layers)],
                                   env=env, capture_output=True, text=True, timeout=args.timeout, check=False)
                lines = r.stdout.strip().splitlines()
                res = json.loads(lines[-1]) if lines else {"crash": r.stderr.strip()[-150:]}
            except subprocess.TimeoutExpired:
                res = {"timeout": f"no result in {args.timeout:.0f} s"}
            ok = bool(res) and all(str(v).startswith("passed") for v in res.values()) and set(res) == set(layers)
            passed += ok
            rows.append(f"{Path(ds).name}/{meta['name']}: {'passed' if ok else 'not passed'}: "
                        + "; ".join(f"{k} {v}" for k, v in res.items()))
        summary.append(f"{ds}: {passed}/{n} kernels passed on every layer")
    print("\n".join(summary + rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
