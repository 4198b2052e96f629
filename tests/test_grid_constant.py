"""`extract --build` on tests/fixtures/grid_constant: a `const __grid_constant__` kernel parameter (found on a
development repo whose TMA kernels take their descriptors so), judged by the real libclang parse and nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def test_grid_constant_stays_on_the_kernel_and_leaves_the_launcher(tmp_path_factory: pytest.TempPathFactory) -> None:
    # nvcc allows `__grid_constant__` only on a `__global__` function's parameter: the explicit instantiation
    # keeps it (it is part of the kernel's declaration), the unit's C launcher must not carry it.
    dataset = extract_and_build(tmp_path_factory, "grid_constant")
    m = only_meta(dataset, "tile_scale_kernel")
    assert build_statuses(m) == {"128": "ok"}, build_statuses(m)
    unit = (Path(dataset["out"]) / m["id"] / "units" / "128" / "unit.cu").read_text(encoding="utf-8")
    launcher = unit[unit.index('extern "C" int km_launch_'):]
    assert "__grid_constant__" not in launcher.split("{", 1)[0]
    assert "__grid_constant__" in unit[:unit.index('extern "C" int km_launch_')]
