#!/usr/bin/env python3
"""Mine MMCV's roi_align kernels (float, double, half) and give them tests of our own, for the GPU.

    PYTHONPATH=. python3 scripts/prepare_mmcv_half.py /work/corpora/mmcv OUT_DIR [--arch sm_90]

Extracts mmcv/ops/csrc/common/cuda/roi_align_cuda_kernel.cuh with the checkout as project context
(so the launching .cu gives the AT_DISPATCH_FLOATING_TYPES_AND_HALF instantiations), builds every
unit, and writes tests/test_precisions.py into the forward and backward kernel folders: each
launches the float and the half instantiation on the same realistic inputs (64 RoIs x 16 channels,
7 x 7 bins, sampling ratio 2, spatial scale 1/16, aligned) and only checks that the result is
finite. Whether half agrees with float is then the half_vs_float oracle's call (scripts/gpu_validate.py
takes OUT_DIR as an extra dataset and prints the measured error). Run where libclang and nvcc are.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

COMMON = '''from pathlib import Path

from miner import harness

harness.require_gpu()
import torch  # noqa: E402

KDIR = Path(__file__).resolve().parents[1]
N, C, H, W, R, PH, PW, SCALE = 2, 16, 64, 64, 64, 7, 7, 0.0625


def rois():
    g = torch.Generator(device="cuda").manual_seed(0)
    xy = torch.rand(R, 2, device="cuda", generator=g) * 48
    wh = torch.rand(R, 2, device="cuda", generator=g) * 14 + 2
    batch = torch.randint(0, N, (R, 1), device="cuda", generator=g).float()
    return torch.cat([batch, xy / SCALE, (xy + wh) / SCALE], dim=1)  # image coordinates


def grid(n):
    return (n + 511) // 512
'''
FORWARD = COMMON + '''

def test_forward_in_float_and_half():
    feat = torch.randn(N, C, H, W, device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
    nthreads = R * C * PH * PW
    for inst, dt in (("float", torch.float32), ("half", torch.float16)):
        unit = harness.load_unit(KDIR, inst)
        out = torch.zeros(R, C, PH, PW, device="cuda", dtype=dt)
        arg_y, arg_x = torch.zeros_like(out), torch.zeros_like(out)
        unit.launch(grid(nthreads), 512, nthreads, feat.to(dt), rois().to(dt), out, arg_y, arg_x, PH, PW, SCALE, 2,
                    1, True, C, H, W, sync=True)
        assert bool(out.float().isfinite().all()) and bool(out.float().abs().sum() > 0)
'''
BACKWARD = COMMON + '''

def test_backward_in_float_and_half():
    grad_out = torch.randn(R, C, PH, PW, device="cuda", generator=torch.Generator(device="cuda").manual_seed(2))
    nthreads = R * C * PH * PW
    for inst, dt in (("float", torch.float32), ("half", torch.float16)):
        unit = harness.load_unit(KDIR, inst)
        arg_y = torch.zeros(R, C, PH, PW, device="cuda", dtype=dt)
        grad_in = torch.zeros(N, C, H, W, device="cuda", dtype=dt)
        unit.launch(grid(nthreads), 512, nthreads, grad_out.to(dt), rois().to(dt), arg_y, arg_y, grad_in, PH, PW,
                    SCALE, 2, 1, True, C, H, W, sync=True)
        assert bool(grad_in.float().isfinite().all()) and bool(grad_in.float().abs().sum() > 0)
'''


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mmcv", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--arch", default="sm_90")
    args = ap.parse_args()
    src = args.mmcv / "mmcv" / "ops" / "csrc" / "common" / "cuda" / "roi_align_cuda_kernel.cuh"
    run = lambda *a: subprocess.run([sys.executable, "-m", "miner", *map(str, a)], cwd=REPO, check=True)  # noqa: E731
    run("--input-file", src, "--project", args.mmcv, "--output-dir", args.out, "-q")
    run("build", args.out, "--arch", args.arch, "-q")
    written = 0
    for meta_path in sorted(args.out.glob("*/metadata.json")):
        meta = json.loads(meta_path.read_text())
        text = {"roi_align_forward_cuda_kernel": FORWARD, "roi_align_backward_cuda_kernel": BACKWARD}.get(meta["name"])
        insts = {i["id"] for i in meta.get("instantiations") or []}
        if text and {"float", "half"} <= insts:
            (meta_path.parent / "tests").mkdir(exist_ok=True)
            (meta_path.parent / "tests" / "test_precisions.py").write_text(text)
            written += 1
    print(f"{written} kernels with tests -> {args.out}")
    return 0 if written == 2 else 1


if __name__ == "__main__":
    sys.exit(main())
