"""Provenance of a source tree that is not a git checkout but lies inside one (a release tarball unpacked into
a project): not the outer checkout's commit, and its own license."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, run_miner

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args], cwd=cwd, check=True,
                   capture_output=True)


@pytest.fixture()
def outer(tmp_path: Path) -> Path:
    root = tmp_path / "outer"
    root.mkdir()
    (root / "own.cu").write_text("__global__ void own_kernel(int *p) { *p = 1; }\n")
    (root / ".gitignore").write_text("downloads/\n")
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "init")
    for sub in ("third_party/foo-1.2", "downloads/bar-2.0"):  # untracked, and ignored
        tree = root / sub
        (tree / "src").mkdir(parents=True)
        shutil.copy(FIXTURES / "repos" / ("alpha" if "foo" in sub else "beta") / "LICENSE", tree / "LICENSE")
        name = tree.name.split("-")[0]
        (tree / "src" / "v.cu").write_text(f"__global__ void {name}_kernel(float *p) {{ *p = 2; }}\n")
    return root


def _sources(out: Path) -> dict[str, dict]:
    return {r["name"]: r["source"] for r in map(json.loads, (out / "index.jsonl").read_text().splitlines())}


def test_trees_inside_a_checkout_keep_their_own_license_and_no_commit(outer: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run_miner("extract", outer, "-o", out, "--frontend", "treesitter", "-q")
    assert res.returncode == 0, res.stderr
    src = _sources(out)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=outer, capture_output=True, text=True).stdout.strip()
    assert src["own_kernel"]["commit"] == head and src["own_kernel"]["license"] is None
    assert (src["foo_kernel"]["commit"], src["foo_kernel"]["license"]) == (None, "MIT")
    assert src["foo_kernel"]["path"] == "third_party/foo-1.2/src/v.cu"
    assert (src["bar_kernel"]["commit"], src["bar_kernel"]["license"]) == (None, "Apache-2.0")


def test_the_tree_itself_as_input(outer: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    res = run_miner("extract", outer / "third_party" / "foo-1.2", "-o", out, "--frontend", "treesitter", "-q")
    assert res.returncode == 0, res.stderr
    assert _sources(out)["foo_kernel"] == {**_sources(out)["foo_kernel"], "repo": None, "commit": None,
                                           "license": "MIT", "path": "src/v.cu"}
