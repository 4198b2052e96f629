"""Tests of saxpy_kernel (examples/saxpy/saxpy.cu): y = a * x + y, in place.

Kept beside the source; `kernel-miner validate` copies this folder into the mined kernel's tests/
(docs/harness.md, "Tests kept beside the source"), where it runs like any harness test.
"""

import importlib.util
from pathlib import Path

import pytest

from miner import harness

harness.require_gpu()
import torch  # noqa: E402

KDIR = Path(__file__).resolve().parents[1]  # the kernel folder: metadata.json, units/


def saxpy(unit, a, x, y):
    n = x.numel()
    unit.launch((n + 255) // 256, 256, n, a, x, y)  # the kernel's own order: n, a, x, y


@pytest.mark.parametrize("n", [1, 255, 256, 1000, (1 << 20) + 3])
def test_matches_torch(n):
    unit = harness.load_unit(KDIR)  # the only instantiation ("default")
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    expected = 2.5 * x + y
    saxpy(unit, 2.5, x, y)
    torch.cuda.synchronize()
    torch.testing.assert_close(y, expected)


def test_leaves_the_tail_alone():
    unit = harness.load_unit(KDIR)
    x = torch.randn(1000, device="cuda")
    y = torch.randn(1024, device="cuda")
    before = y.clone()
    unit.launch(4, 256, 1000, -1.0, x, y)  # 1024 threads for 1000 elements
    torch.cuda.synchronize()
    torch.testing.assert_close(y[:1000], before[:1000] - x)
    assert torch.equal(y[1000:], before[1000:])


def test_generated_wrapper_uses_the_recorded_launch():
    path = KDIR / "units" / "default" / "kernel_wrapper.py"
    spec = importlib.util.spec_from_file_location("saxpy_wrapper", path)
    kw = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kw)
    n = 5000
    x, y = torch.randn(n, device="cuda"), torch.randn(n, device="cuda")
    assert kw.config({"n": n, "a": 0.5, "x": x, "y": y})[:2] == ((n + 255) // 256, 256)
    expected = 0.5 * x + y
    kw.launch(n, 0.5, x, y, sync=True)
    torch.testing.assert_close(y, expected)


def test_speed_against_torch():
    unit = harness.load_unit(KDIR)
    n = 1 << 24

    def make():
        return torch.randn(n, device="cuda"), torch.randn(n, device="cuda")

    res = harness.benchmark(lambda x, y: saxpy(unit, 2.0, x, y),
                            lambda x, y: y.add_(x, alpha=2.0),
                            make, outputs=[1], reps=20)
    assert res.kernel_ms > 0 and res.ref_ms > 0
