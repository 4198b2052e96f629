"""Generated tests that try to pass without checking the kernel (issue 15), for `relu_kernel(y, x, n)`.

GOOD is an honest test in the format the tests prompt asks for. Each BYPASSES entry rewrites it so it
cannot fail, skips everywhere, or reaches outside the test (the key, the dataset). They are used by the
static-check tests, the fake-server end-to-end tests (tests/test_enrich_bypasses.py) and the GPU check
(scripts/mutation_gpu_check.py), which also replays the runnable ones against the kernel's mutants.
"""

from __future__ import annotations

GOOD = '''\
from pathlib import Path

import pytest

from miner.harness import load_unit

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
KERNEL_DIR = Path(__file__).resolve().parents[1]
#HEADER#


@pytest.mark.parametrize("n", [1, 7, 256, 1000, 1 << 16])
def test_relu(n):
    torch.manual_seed(n)
    unit = load_unit(KERNEL_DIR)
    x = torch.randn(n, device="cuda")
    y = torch.full_like(x, float("nan"))
    expected = torch.relu(x)
    unit.launch((n + 255) // 256, 256, y, x, n)
    torch.cuda.synchronize()
    #BEFORE#
    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)
'''

_ASSERT = "    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)\n"


def _variant(header: str = "", before: str = "", check: str | None = None) -> str:
    text = GOOD.replace("#HEADER#", header).replace("    #BEFORE#\n", "".join(
        f"    {ln}\n" for ln in before.splitlines()))
    if check is not None:
        text = text.replace(_ASSERT, "".join(f"    {ln}\n" for ln in check.splitlines()))
    return text


def good() -> str:
    return _variant()


BYPASSES: dict[str, str] = {
    "shape_only": _variant(check="assert y.shape == expected.shape"),
    "copy_output_into_expected": _variant(before="expected.copy_(y)"),
    "out_kwarg_into_expected": _variant(before="torch.mul(y, 1, out=expected)"),
    "recompute_without_output": _variant(check="actual = torch.relu(x)\n"
                                         "torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5)"),
    "recompute_inline": _variant(check="torch.testing.assert_close(torch.relu(x), expected, rtol=1e-5, atol=1e-5)"),
    "if_true_return": _variant(before="if True:\n    return"),
    "loop_range_0": _variant(check="for _ in range(0):\n"
                             "    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)"),
    "from_pytest_import_skip": _variant(header="from pytest import skip", before="skip('later')"),
    "alias_of_skip": _variant(header="later = pytest.skip", before="later('later')"),
    "importorskip_missing": _variant(header="pytest.importorskip('km_no_such_module')"),
    "skipif_true_on_linux": _variant(header="import sys\npytestmark = pytest.mark.skipif("
                                     "sys.platform.startswith('linux'), reason='flaky')"),
    "skipif_always_true_expression": _variant(header="pytestmark = pytest.mark.skipif("
                                              "str(KERNEL_DIR).startswith('/'), reason='flaky')"),
    "skip_under_true_condition": _variant(before="if KERNEL_DIR.exists():\n    pytest.skip('later')"),
    "except_assertion_tuple": _variant(check="try:\n"
                                       "    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)\n"
                                       "except (AssertionError, RuntimeError):\n    pass"),
    "contextlib_suppress": _variant(header="import contextlib",
                                    check="with contextlib.suppress(AssertionError):\n"
                                    "    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)"),
    "raises_assertion": _variant(check="with pytest.raises(Exception):\n"
                                 "    torch.testing.assert_close(y, expected, rtol=1e-5, atol=1e-5)\n"
                                 "    raise ValueError"),
    "monkeypatch_assert_close": _variant(header="torch.testing.assert_close = lambda *a, **k: None"),
    "shadow_assert_close": _variant(header="def assert_close(*a, **k):\n    pass",
                                    check="assert_close(y, expected, rtol=1e-5, atol=1e-5)"),
    "tolerance_through_variable": _variant(header="TOL = 1e6", check="torch.testing.assert_close("
                                           "y, expected, rtol=TOL, atol=TOL)"),
    "tolerance_through_kwargs": _variant(check="torch.testing.assert_close(y, expected, "
                                         "**{'rtol': 1e6, 'atol': 1e6})"),
    "atol_999": _variant(check="torch.testing.assert_close(y, expected, rtol=1e-5, atol=999)"),
    "from_os_import_system": _variant(header="from os import system\nsystem('true')"),
    "dunder_import": _variant(header="__import__('subprocess').run(['true'])"),
    "read_parent_environ": _variant(header="SECRET = Path('/proc/self/environ').read_bytes()"),
    "write_conftest": _variant(header="(KERNEL_DIR / 'tests' / 'conftest.py').write_text('x = 1\\n')"),
}

# Bypasses that only fool a reader: running them (on a GPU, in a child) touches nothing outside the test.
RUNNABLE = [n for n in BYPASSES if n not in (
    "from_os_import_system", "dunder_import", "read_parent_environ", "write_conftest", "importorskip_missing")]
