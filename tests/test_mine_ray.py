"""`kernel-miner mine --executor ray` on a local Ray cluster (CPU) writes the same dataset as the local executor."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import REPOS_FIXTURE, run_miner, snapshot

pytest.importorskip("ray")


def test_ray_executor_gives_the_local_executors_dataset_byte_for_byte(tmp_path: Path) -> None:
    shutil.copytree(REPOS_FIXTURE, tmp_path / "repos")
    (tmp_path / "repos" / "broken").mkdir()  # no kernels: recorded, not a failure
    (tmp_path / "repos" / "broken" / "x.cu").write_text("int main() { return 0; }\n")
    args = ["mine", tmp_path / "repos", "-j", "1", "-q"]
    local = run_miner(*args, "-o", tmp_path / "local", timeout=600)
    assert local.returncode == 0, local.stderr
    ray = run_miner(*args, "-o", tmp_path / "ray", "--executor", "ray", "--workers", "2", timeout=600)
    assert ray.returncode == 0, ray.stderr
    a, b = snapshot(tmp_path / "local"), snapshot(tmp_path / "ray")
    assert len([k for k in a if k.endswith("/metadata.json")]) == 7
    assert sorted(a) == sorted(b)
    assert [k for k in a if a[k] != b[k]] == []
