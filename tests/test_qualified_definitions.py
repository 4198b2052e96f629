"""`extract --build` on tests/fixtures/qualified_definitions: a kernel and a device function declared in their
namespace in a header and defined out of line with the qualifier in an implementation file (`__global__ void
codec::scale(...) {...}`). The unit had the definitions alone ("name followed by '::' must be a class or namespace
name"; a compression library of the eleventh set). Real libclang parse, real nvcc, warnings read from its output."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "qualified_definitions")


def test_the_declarations_come_before_the_qualified_definitions(dataset: dict[str, Any]) -> None:
    meta = only_meta(dataset, "scale")
    assert set(build_statuses(meta).values()) == {"ok"}, build_statuses(meta)
    (text,) = unit_texts(dataset, meta)
    body = text.split("km:body-begin", 1)[1]
    assert body.index("__device__ T twice(T v);") < body.index("__device__ T codec::detail::twice(T v) {")
    assert body.index("__global__ void scale(T* data, int n, T factor);") < body.index("void codec::scale(")


def test_the_qualified_kernel_is_not_put_inside_its_own_namespace(dataset: dict[str, Any]) -> None:
    """nvcc takes `namespace codec { void codec::scale() {} }` with "nonstandard qualified name" (#1285-D)."""
    meta = only_meta(dataset, "scale")
    unit = Path(dataset["out"]) / meta["id"] / meta["instantiations"][0]["unit"]
    run = subprocess.run(["nvcc", "-c", "-arch=sm_90", str(unit), "-o", "/dev/null"], capture_output=True, text=True,
                         timeout=300, cwd=unit.parent)
    assert run.returncode == 0 and "1285" not in run.stdout + run.stderr, run.stdout + run.stderr
