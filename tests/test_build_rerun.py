"""The whole-run record of `extract --build` (miner/extract/build_record.py, issue 10 item 1): an unchanged rerun
into the same folder checks the dataset and returns without a compiler call or a write; a changed kernel rebuilds
that kernel's unit alone (the build cache serves the others), a changed --arch rebuilds, a changed or added
output takes the stages, and a run killed with SIGKILL never leaves a record that a later run takes for its own.
Real extract and nvcc runs on copies of tests/fixtures/repos/beta; no timed assertions."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from miner.frontends import clang_frontend
from tests.conftest import REPOS_FIXTURE, ROOT, run_miner, snapshot

pytestmark = [pytest.mark.skipif(not clang_frontend.AVAILABLE, reason="needs libclang"),
              pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")]
UNCHANGED = "unchanged since the last run into this folder"
VOLATILE = ("seconds", "cached", "batch_size")  # how a result was obtained, not what it is


class Runs:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.tree = tmp / "beta"
        shutil.copytree(REPOS_FIXTURE / "beta", self.tree)
        self.env = {"XDG_CACHE_HOME": str(tmp / "xdg")}  # the parse cache, the run records, the build cache

    def args(self, out: str, *more: str) -> list[str]:
        return ["extract", str(self.tree), "-o", str(self.tmp / out), "--build", "-j", "2", *more]

    def run(self, out: str, *more: str, rc: int = 0, **env: str) -> str:
        res = run_miner(*self.args(out, *more), env={**self.env, **env}, timeout=600)
        assert res.returncode == rc, res.stderr
        return res.stdout + res.stderr

    @property
    def build_cache(self) -> Path:
        return self.tmp / "xdg" / "kernel-miner" / "build"

    def records(self) -> list[dict[str, Any]]:
        runs = self.tmp / "xdg" / "kernel-miner" / "parse" / "runs"
        return [json.loads(p.read_text()) for p in sorted(runs.glob("*.json"))]


def _files(folder: Path) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def _builds(out: Path) -> dict[str, list[dict[str, Any]]]:
    """Kernel name -> each instantiation's `build` block."""
    return {json.loads(p.read_text())["name"]: [i["build"] for i in json.loads(p.read_text())["instantiations"]]
            for p in sorted(out.glob("*/metadata.json"))}


def _normal(out: Path) -> dict[str, Any]:
    """The dataset without how each result was obtained (time, cache, batch) and with libraries by presence:
    what a cold run and a rerun must agree on."""
    norm: dict[str, Any] = {}
    for rel, data in snapshot(out).items():
        if rel.endswith(".so"):
            norm[rel] = "library"
        elif rel.endswith("metadata.json"):
            meta = json.loads(data)
            for inst in meta.get("instantiations") or []:
                for k in VOLATILE:
                    (inst.get("build") or {}).pop(k, None)
            norm[rel] = meta
        elif rel != "index.jsonl":  # the metadata again, one line each
            norm[rel] = data
    return norm


def test_unchanged_rerun_compiles_nothing_and_writes_nothing(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    first = runs.run("out")
    assert UNCHANGED not in first and "0 cached" in first
    assert all(not b["cached"] for bs in _builds(tmp_path / "out").values() for b in bs)
    cold, before = snapshot(tmp_path / "out"), _files(tmp_path / "out")
    cache_before = _files(runs.build_cache)
    (record,) = [r for r in runs.records() if "build" in r]
    assert [b["name"] for b in record["build"]] == ["cuda"] and record["build"][0]["ok"] == 4
    assert any(rel.endswith("libunit.so") for rel in record["outputs"])
    for _ in range(2):  # the second rerun trusts the stats the first one refreshed
        again = runs.run("out")
        assert UNCHANGED in again and "0 nvcc calls" in again and "4/4 units built" in again
        assert snapshot(tmp_path / "out") == cold  # `cached: false` of the cold run kept: nothing rewritten
        assert _files(tmp_path / "out") == before
        assert _files(runs.build_cache) == cache_before  # no lookup wrote anything, no compile stored anything
    # A plain extract into the folder is another record: it takes the stages and drops the build blocks.
    assert UNCHANGED not in runs.run("out", "--arch", "sm_90,compute_90")  # the default spelled: another key


def test_a_changed_kernel_rebuilds_only_its_unit(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    runs.run("out")
    src = runs.tree / "kernels" / "vendored.cu"
    src.write_text(src.read_text().replace("data[i] += 1.0f;", "data[i] += 2.0f;"))
    out = runs.run("out")
    assert UNCHANGED not in out and "3 cached" in out and "1 nvcc calls" in out
    builds = _builds(tmp_path / "out")
    assert [b["cached"] for b in builds["add_one"]] == [False]
    assert [b["cached"] for b in builds["block_sum"] + builds["saxpy_unrolled"]] == [True, True, True]
    assert all(b["status"] == "ok" for bs in builds.values() for b in bs)
    assert "2.0f" in next((tmp_path / "out").glob("add_one-*/units/*/unit.cu")).read_text()
    # The same dataset as a cold run of the changed tree, but for how each result was obtained.
    ref = runs.run("ref", XDG_CACHE_HOME=str(tmp_path / "xdg-ref"))
    assert "0 cached" in ref and _normal(tmp_path / "out") == _normal(tmp_path / "ref")
    assert UNCHANGED in runs.run("out")


def test_a_changed_flag_rebuilds_every_unit(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    runs.run("out")
    out = runs.run("out", "--arch", "sm_80")
    assert UNCHANGED not in out and "0 cached" in out
    builds = _builds(tmp_path / "out")
    assert all(b["arch"] == "sm_80" and not b["cached"] and b["status"] == "ok" for bs in builds.values() for b in bs)
    assert UNCHANGED in runs.run("out", "--arch", "sm_80")
    # Back to the default: its record does not hold (the folder holds sm_80's results); the cache serves every unit.
    back = runs.run("out")
    assert UNCHANGED not in back and "4 cached" in back and "0 nvcc calls" in back
    assert all(b["arch"] == "sm_90,compute_90" for bs in _builds(tmp_path / "out").values() for b in bs)
    assert UNCHANGED in runs.run("out")


def test_a_changed_or_added_output_takes_the_stages(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    runs.run("out")
    cold = _normal(tmp_path / "out")
    lib = next((tmp_path / "out").glob("add_one-*/units/*/libunit.so"))
    lib.unlink()  # a library deleted: placed again from the cache
    out = runs.run("out")
    assert UNCHANGED not in out and "0 nvcc calls" in out and lib.is_file()
    assert _normal(tmp_path / "out") == cold
    stray = lib.parent / "build.log"
    stray.write_text("left over\n")  # a file the build removes for a unit that built: the folder is checked whole
    assert UNCHANGED not in runs.run("out") and not stray.exists()
    meta = next((tmp_path / "out").glob("block_sum-*/metadata.json"))
    meta.write_text(meta.read_text().replace('"status": "ok"', '"status": "failed"', 1))
    assert UNCHANGED not in runs.run("out")
    assert _normal(tmp_path / "out") == cold
    assert UNCHANGED in runs.run("out")


def test_a_build_failure_is_recorded_and_replayed_with_its_exit_status(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    src = runs.tree / "kernels" / "vendored.cu"  # a kernel that no compiler takes: rc 1, the same on a rerun
    src.write_text(src.read_text().replace("data[i] += 1.0f;", "data[i] += km_no_such(i);"))
    first = runs.run("out", rc=1)
    assert "km_no_such" in first and UNCHANGED not in first
    again = runs.run("out", rc=1)
    assert UNCHANGED in again and "km_no_such" in again and "1 failed" in again


def _kill_during_build(runs: Runs, out: str) -> None:
    """Start `extract --build` and SIGKILL its process group once a compile is under way."""
    env = dict(os.environ, **runs.env, PYTHONPATH=str(ROOT), NO_COLOR="1")
    proc = subprocess.Popen([sys.executable, "-m", "miner", *runs.args(out)], cwd=ROOT, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    tmp = runs.build_cache / "tmp"
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if tmp.is_dir() and any(tmp.iterdir()):  # a compile's scratch folder: the build stage is running
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before its build stage was seen"
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def test_a_run_killed_mid_build_never_leaves_a_record_to_replay(tmp_path: Path) -> None:
    runs = Runs(tmp_path)
    runs.run("out")
    cold = _normal(tmp_path / "out")
    src = runs.tree / "kernels" / "vendored.cu"
    text = src.read_text()
    src.write_text(text.replace("data[i] += 1.0f;", "data[i] += 2.0f;"))
    _kill_during_build(runs, "out")  # the changed unit written, its build under way
    src.write_text(text)  # the tree of the cold run's record again: its outputs no longer hold the recorded bytes
    st = src.stat()
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    out = runs.run("out")
    assert UNCHANGED not in out
    assert _normal(tmp_path / "out") == cold
    assert UNCHANGED in runs.run("out")
    # Killed while the cold run's build of a fresh folder is under way (fresh caches; the nvcc the killed run
    # started, in a session of its own, may still be writing in the old cache's scratch folder): the next run
    # finishes the job.
    runs.env = {"XDG_CACHE_HOME": str(tmp_path / "xdg2")}
    _kill_during_build(runs, "out2")
    assert UNCHANGED not in runs.run("out2")
    assert _normal(tmp_path / "out2") == cold
    assert UNCHANGED in runs.run("out2")


def test_bench_script_prints_cold_and_reruns_with_their_share(tmp_path: Path) -> None:
    tree = tmp_path / "beta"
    shutil.copytree(REPOS_FIXTURE / "beta", tree)
    res = subprocess.run([sys.executable, str(ROOT / "scripts" / "bench_extract.py"), str(tree), "--build",
                          "--jobs", "2", "--repeat", "1"], cwd=ROOT, capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, PYTHONPATH=str(ROOT), NO_COLOR="1"), check=False)
    assert res.returncode == 0, res.stderr
    rows = {line.split("  ")[0]: line for line in res.stdout.splitlines()}
    assert {"cold (fresh caches, fresh folder)", "rerun into the same folder",
            "rerun into a fresh folder, warm caches"} <= set(rows)
    assert rows["cold (fresh caches, fresh folder)"].rstrip().endswith("100.0%")
    assert "build said (cold): 4/4 units built (0 failed, 0 timed out, 0 skipped, 0 cached)" in res.stdout
    assert f"build said (same folder): 4/4 units built (0 failed, 0 timed out, 0 skipped; {UNCHANGED}" in res.stdout
    assert "build said (fresh folder): 4/4 units built (0 failed, 0 timed out, 0 skipped, 4 cached)" in res.stdout
