"""A unit failing on a name a later toolkit's library added states why (miner/builder/toolkit_additions.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from miner.builder.toolkit_additions import added_after_toolkit, cccl_version
from tests.conftest import extract_and_build, only_meta
from tests.test_build import needs_nvcc


@pytest.fixture(scope="module")
def later_toolkit_name(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "weak3/later_toolkit_name")


@needs_nvcc
def test_a_name_added_by_a_later_cccl_is_a_stated_reason(later_toolkit_name: dict[str, Any]) -> None:
    """`cuda::fast_mod_div<uint32_t>` (CCCL 3.1, CUDA 13.1) with CUDA 13.0's CCCL 3.0: "namespace cuda has no member
    fast_mod_div", which no closure can supply. The build record says so (`toolkit_removed`, the field every such
    reason uses), instead of an unexplained failure."""
    if (cccl_version(_toolkit_dirs()) or (0, 0, 0)) >= (3, 1, 0):
        pytest.skip("this toolkit's CCCL has cuda::fast_mod_div")
    m = only_meta(later_toolkit_name, "scatter_rows")
    (inst,) = m["instantiations"]
    b = inst["build"]
    assert b["status"] == "failed" and b["missing_symbol"] == "cuda::fast_mod_div", b
    assert "added in CCCL 3.1.0 (CUDA 13.1)" in (b.get("toolkit_removed") or ""), b


def test_the_toolkits_cccl_version_decides(tmp_path: Path) -> None:
    """A toolkit whose CCCL has the name (3.1 or later) gets no such reason: the failure is something else."""
    old, new = tmp_path / "old", tmp_path / "new"
    for d, v in ((old, 3000001), (new, 3001000)):
        (d / "cuda/std/__cccl").mkdir(parents=True)
        (d / "cuda/std/__cccl/version.h").write_text(f"#pragma once\n#define CCCL_VERSION {v}\n")
    assert cccl_version([str(tmp_path), str(old)]) == (3, 0, 1)
    assert "this toolkit's CCCL is 3.0.1" in (added_after_toolkit("cuda::fast_mod_div", lambda: [str(old)]) or "")
    assert added_after_toolkit("cuda::fast_mod_div", lambda: [str(new)]) is None
    assert added_after_toolkit("cuda::std::plus", lambda: [str(old)]) is None


def _toolkit_dirs() -> tuple[str, ...]:
    from miner.units.headers import toolkit_dirs
    return toolkit_dirs()
