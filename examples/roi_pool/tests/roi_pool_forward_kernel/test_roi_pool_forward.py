"""Tests of roi_pool_forward_kernel<T> (examples/roi_pool/roi_pool_kernel.cuh): max pooling of boxes.

Kept beside the source; `kernel-miner validate` copies this folder into the mined kernel's tests/.
The reference below restates the kernel's contract in plain torch: a box (batch, x1, y1, x2, y2)
is scaled and truncated to integers, split into pooled_h x pooled_w bins with floor/ceil edges in T,
each bin takes the max over its cells (0 and argmax -1 when empty) and argmax is the flat h * W + w
of the first maximum in row-major order.
"""

from pathlib import Path

import pytest

from miner import harness

harness.require_gpu()
import torch  # noqa: E402

KDIR = Path(__file__).resolve().parents[1]
DTYPES = {"float": torch.float32, "double": torch.float64, "half": torch.float16}


def reference(inp, rois, scale, ph_n, pw_n, dtype):
    """(output, argmax) computed on the CPU, bin edges in `dtype` as the kernel computes them."""
    inp, rois = inp.cpu().double(), rois.cpu().double()
    n_rois, (_, channels, height, width) = rois.shape[0], inp.shape
    out = torch.zeros(n_rois, channels, ph_n, pw_n, dtype=torch.float64)
    arg = torch.full((n_rois, channels, ph_n, pw_n), -1, dtype=torch.int32)
    t = lambda v: torch.tensor(v, dtype=dtype)  # noqa: E731
    for r in range(n_rois):
        b = int(rois[r, 0])
        x1, y1, x2, y2 = (int(float(t(float(v)) * t(scale))) for v in rois[r, 1:])
        bin_h = t(max(y2 - y1 + 1, 1)) / t(ph_n)
        bin_w = t(max(x2 - x1 + 1, 1)) / t(pw_n)
        for ph in range(ph_n):
            hs = min(max(int(torch.floor(t(ph) * bin_h)) + y1, 0), height)
            he = min(max(int(torch.ceil(t(ph + 1) * bin_h)) + y1, 0), height)
            for pw in range(pw_n):
                ws = min(max(int(torch.floor(t(pw) * bin_w)) + x1, 0), width)
                we = min(max(int(torch.ceil(t(pw + 1) * bin_w)) + x1, 0), width)
                if he <= hs or we <= ws:
                    continue
                cells = inp[b, :, hs:he, ws:we].reshape(channels, -1)
                best, idx = cells.max(dim=1)  # first maximum, like the kernel's strict '>'
                out[r, :, ph, pw] = best
                arg[r, :, ph, pw] = (hs + idx // (we - ws)) * width + ws + idx % (we - ws)
    return out, arg


def random_rois(n, batch, height, width, scale, multiple=1):
    """Boxes with integer corners (exact in every T), some partly outside the image; the box
    sizes in pooled units are multiples of `multiple` when asked (exact bin edges in half)."""
    g = torch.Generator().manual_seed(n)
    rois = torch.zeros(n, 5, dtype=torch.float64)
    for i in range(n):
        x1 = int(torch.randint(-2, int(width / scale), (1,), generator=g))
        y1 = int(torch.randint(-2, int(height / scale), (1,), generator=g))
        w = multiple * int(torch.randint(1, 6, (1,), generator=g)) / scale
        h = multiple * int(torch.randint(1, 6, (1,), generator=g)) / scale
        rois[i] = torch.tensor([i % batch, x1, y1, x1 + w - 1 / scale, y1 + h - 1 / scale])
    return rois


def run(unit, inp, rois, scale, ph, pw):
    n_rois, channels, height, width = rois.shape[0], *inp.shape[1:]
    total = n_rois * channels * ph * pw
    out = torch.full((n_rois, channels, ph, pw), float("nan"), device="cuda", dtype=inp.dtype)
    arg = torch.full_like(out, -7, dtype=torch.int32)
    blocks = min((total + 255) // 256, 1024)  # the repo's blocks_for(); the kernel loops over the rest
    unit.launch(blocks, 256, total, inp, rois, out, arg, scale, channels, height, width, ph, pw)
    torch.cuda.synchronize()
    return out, arg


@pytest.mark.parametrize("inst", ["float", "double"])
def test_matches_reference(inst):
    dtype = DTYPES[inst]
    unit = harness.load_unit(KDIR, inst)
    inp = torch.randn(2, 3, 24, 20, device="cuda", dtype=dtype)
    rois = random_rois(16, 2, 24, 20, 0.5).to("cuda", dtype)
    out, arg = run(unit, inp, rois, 0.5, 4, 4)
    ref_out, ref_arg = reference(inp, rois, 0.5, 4, 4, dtype)
    torch.testing.assert_close(out.cpu().double(), ref_out, rtol=0, atol=0)
    assert torch.equal(arg.cpu(), ref_arg)


@pytest.mark.no_oracles("instantiations_agree")
def test_seven_by_seven_bins():
    # 7x7 bins: edges such as 7 * (29 / 7) round differently in float and double, so the double
    # instantiation legitimately pools a different row for some boxes; only float is checked here.
    unit = harness.load_unit(KDIR, "float")
    inp = torch.randn(1, 8, 40, 40, device="cuda")
    rois = random_rois(32, 1, 40, 40, 1.0).to("cuda", torch.float32)
    out, arg = run(unit, inp, rois, 1.0, 7, 7)
    ref_out, ref_arg = reference(inp, rois, 1.0, 7, 7, torch.float32)
    torch.testing.assert_close(out.cpu().double(), ref_out, rtol=0, atol=0)
    assert torch.equal(arg.cpu(), ref_arg)


def test_half_picks_the_same_cells():
    unit = harness.load_unit(KDIR, "half")
    inp = torch.randn(2, 4, 16, 16, device="cuda", dtype=torch.float16)
    rois = random_rois(8, 2, 16, 16, 1.0, multiple=4).to("cuda", torch.float16)
    out, arg = run(unit, inp, rois, 1.0, 4, 4)
    ref_out, ref_arg = reference(inp, rois, 1.0, 4, 4, torch.float16)
    torch.testing.assert_close(out.cpu().double(), ref_out, rtol=0, atol=0)  # a max is exact
    assert torch.equal(arg.cpu(), ref_arg)


def test_empty_boxes_give_zero_and_no_argmax():
    unit = harness.load_unit(KDIR, "float")
    inp = torch.randn(1, 2, 8, 8, device="cuda")
    rois = torch.tensor([[0, 20, 20, 30, 30]], dtype=torch.float32, device="cuda")  # outside the image
    out, arg = run(unit, inp, rois, 1.0, 2, 2)
    assert torch.equal(out.cpu(), torch.zeros(1, 2, 2, 2)) and bool((arg == -1).all())


def test_many_rois_grid_stride_loop():
    # More outputs than 1024 blocks x 256 threads: the grid-stride loop must cover them all.
    unit = harness.load_unit(KDIR, "float")
    inp = torch.randn(1, 64, 16, 16, device="cuda")
    rois = random_rois(1100, 1, 16, 16, 1.0).to("cuda", torch.float32)
    out, arg = run(unit, inp, rois, 1.0, 2, 2)
    assert out.numel() > 1024 * 256 and not bool(out.isnan().any()) and not bool((arg == -7).any())
