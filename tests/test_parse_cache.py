"""Parse results cached across runs by content and flags: a rerun parses nothing and writes the same dataset;
a changed file is parsed again, with every translation unit that reaches it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from miner.frontends import clang_frontend
from tests.conftest import REPOS_FIXTURE, run_miner, snapshot

pytestmark = pytest.mark.skipif(not clang_frontend.AVAILABLE, reason="needs libclang")


def test_rerun_comes_from_the_cache_and_a_change_is_parsed_again(tmp_path: Path) -> None:
    repo = tmp_path / "beta"
    shutil.copytree(REPOS_FIXTURE / "beta", repo)
    env = {"KM_PARSE_CACHE": str(tmp_path / "cache")}

    def extract(out: str) -> str:
        res = run_miner("extract", repo, "-o", tmp_path / out, "-j", "1", "-v", env=env)
        assert res.returncode == 0, res.stderr
        return res.stderr

    assert "parse cache" not in extract("cold")
    assert "2 of 2 translation unit parses from the parse cache" in extract("warm")
    assert snapshot(tmp_path / "warm") == snapshot(tmp_path / "cold")
    # The double launch goes: saxpy.cu is parsed again, vendored.cu still comes from the cache.
    launcher = repo / "kernels" / "saxpy.cu"
    launcher.write_text(launcher.read_text().replace(
        "  saxpy_unrolled<double, 2><<<(n / 2 + 255) / 256, 256>>>(n, a, x, y);\n", ""))
    assert "1 of 2 translation unit parses from the parse cache" in extract("changed")
    cold, changed = snapshot(tmp_path / "cold"), snapshot(tmp_path / "changed")
    assert sorted(k for k in cold if "/units/" in k and k.endswith("unit.cu") and k.startswith("saxpy")) != \
        sorted(k for k in changed if "/units/" in k and k.endswith("unit.cu") and k.startswith("saxpy"))
    assert {k: v for k, v in changed.items() if not k.startswith(("saxpy", "index"))} == \
        {k: v for k, v in cold.items() if not k.startswith(("saxpy", "index"))}


def test_cache_off(tmp_path: Path) -> None:
    repo = tmp_path / "gamma"
    shutil.copytree(REPOS_FIXTURE / "gamma", repo)
    for out in ("a", "b"):
        res = run_miner("extract", repo, "-o", tmp_path / out, "-v", env={"KM_PARSE_CACHE": "off"})
        assert res.returncode == 0 and "parse cache" not in res.stderr


def test_rerun_into_the_same_folder_reuses_every_parse_and_folder_and_rewrites_nothing(tmp_path: Path) -> None:
    """HIP configuration parses, tree-sitter results and rendered kernel folders come from the cache too:
    the rerun's output is byte-identical to a cold run's, and files whose bytes did not change are left
    as they were (same inode, same mtime: a library built from an unchanged unit.cu stays current)."""
    repo = tmp_path / "native"
    shutil.copytree(REPOS_FIXTURE.parent / "hip" / "native", repo)
    env = {"KM_PARSE_CACHE": str(tmp_path / "cache")}

    def extract(out: str, **more: str) -> str:
        res = run_miner("extract", repo, "-o", tmp_path / out, "-j", "1", "-v", env={**env, **more})
        assert res.returncode == 0, res.stderr
        return res.stderr

    cold_notes = extract("cold")
    assert "parse cache" not in cold_notes and "kernel folders from the cache" not in cold_notes
    cold = snapshot(tmp_path / "cold")
    kernels = sum(1 for k in cold if k.endswith("/metadata.json"))
    assert any('"toolchain": "hip"' in v.decode() and '"of":' in v.decode()
               for k, v in cold.items() if k.endswith("/metadata.json"))  # a HIP-configuration parse happened
    before = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (tmp_path / "cold").rglob("*") if p.is_file()}
    # The incremental path (the whole-run record, which would skip it, off: tests/test_speed_rerun.py tests that).
    notes = extract("cold", KM_RUN_RECORD="off")
    # Two translation units and the one HIP configuration parse of reduce.cu.
    assert "3 of 3 translation unit parses from the parse cache" in notes
    assert f"{kernels} of {kernels} kernel folders from the cache" in notes
    assert snapshot(tmp_path / "cold") == cold
    after = {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in (tmp_path / "cold").rglob("*") if p.is_file()}
    assert after == before
    # A fresh folder filled from the cache holds the same bytes.
    extract("fresh")
    assert snapshot(tmp_path / "fresh") == cold
