"""A unit whose closure names a type a Linux or POSIX header declares (`__be32` of <linux/types.h> in a struct the
kernel writes) keeps that include: the unit compiled with "identifier __be32 is undefined" (a networking library's
device-side queues). tests/fixtures/system_types; real libclang parse, real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "system_types")


def test_a_linux_type_keeps_its_header(dataset: dict[str, Any]) -> None:
    meta = only_meta(dataset, "post_entries")
    assert set(build_statuses(meta).values()) == {"ok"}, build_statuses(meta)
    assert "linux/types.h" in meta["closure"]["includes"], meta["closure"]["includes"]
