"""Tests of roi_pool_backward_kernel<T> (examples/roi_pool/roi_pool_kernel.cuh).

Kept beside the source; `kernel-miner validate` copies this folder into the mined kernel's tests/.
Each pooled gradient is added (atomicAdd) to the input cell its argmax names, in the plane of
(roi index, channel); argmax -1 adds nothing. The reference is torch's scatter_add_, which is
also the speed reference. The kernel uses atomics, so the determinism oracle does not apply; the
float/double agreement oracle still does.
"""

from pathlib import Path

import pytest

from miner import harness

harness.require_gpu()
import torch  # noqa: E402

KDIR = Path(__file__).resolve().parents[1]
DTYPES = {"float": torch.float32, "double": torch.float64}


def make_inputs(n_rois, channels, height, width, ph, pw, dtype, collide=False):
    grad_out = torch.randn(n_rois, channels, ph, pw, device="cuda", dtype=dtype)
    hi = 4 if collide else height * width  # few distinct cells: many atomic adds to the same address
    argmax = torch.randint(-1, hi, (n_rois, channels, ph, pw), device="cuda", dtype=torch.int32)
    return grad_out, argmax


def reference(grad_out, argmax, height, width):
    n_rois, channels = grad_out.shape[:2]
    go = grad_out.reshape(n_rois * channels, -1)
    idx = argmax.reshape(n_rois * channels, -1).long()
    gi = torch.zeros(n_rois * channels, height * width, device=go.device, dtype=go.dtype)
    gi.scatter_add_(1, idx.clamp(min=0), torch.where(idx >= 0, go, torch.zeros_like(go)))
    return gi.view(n_rois, channels, height, width)


def launch(unit, grad_out, argmax, grad_in):
    n_rois, channels, ph, pw = grad_out.shape
    total = grad_out.numel()
    unit.launch(min((total + 255) // 256, 1024), 256, total, grad_out, argmax, grad_in, channels,
                grad_in.shape[2], grad_in.shape[3], ph, pw)


@pytest.mark.parametrize("inst", ["float", "double"])
@pytest.mark.parametrize("collide", [False, True])
def test_matches_scatter_add(inst, collide):
    unit = harness.load_unit(KDIR, inst)
    dtype = DTYPES[inst]
    grad_out, argmax = make_inputs(6, 5, 12, 10, 3, 3, dtype, collide)
    grad_in = torch.zeros(6, 5, 12, 10, device="cuda", dtype=dtype)
    launch(unit, grad_out, argmax, grad_in)
    torch.cuda.synchronize()
    torch.testing.assert_close(grad_in, reference(grad_out, argmax, 12, 10))


def test_accumulates_into_existing_gradient():
    unit = harness.load_unit(KDIR, "float")
    grad_out, argmax = make_inputs(3, 2, 8, 8, 2, 2, torch.float32)
    grad_in = torch.randn(3, 2, 8, 8, device="cuda")
    expected = grad_in + reference(grad_out, argmax, 8, 8)
    launch(unit, grad_out, argmax, grad_in)
    torch.cuda.synchronize()
    torch.testing.assert_close(grad_in, expected)


def test_speed_against_scatter_add():
    unit = harness.load_unit(KDIR, "float")
    shape = (256, 64, 7, 7)
    height = width = 32

    def make():
        grad_out, argmax = make_inputs(*shape[:2], height, width, *shape[2:], torch.float32)
        return torch.zeros(shape[0], shape[1], height, width, device="cuda"), grad_out, argmax

    def ref(grad_in, grad_out, argmax):
        grad_in.add_(reference(grad_out, argmax, height, width))

    res = harness.benchmark(lambda gi, go, am: launch(unit, go, am, gi), ref, make, outputs=[0], reps=20)
    assert res.kernel_ms > 0 and res.deterministic is None  # atomics: no bit-exact determinism check
