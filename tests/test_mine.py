"""`kernel-miner mine`: many repos into one dataset; the ledger; kill -9 and resume lose and duplicate nothing."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from miner.cli import main
from miner.scale import commit
from miner.scale.ledger import Ledger
from miner.scale.worker import run_job
from tests.conftest import REPOS_FIXTURE, snapshot

ROOT = Path(__file__).resolve().parents[1]
FAST = ["--frontend", "treesitter", "--no-units", "-j", "1", "-q"]


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    shutil.copytree(REPOS_FIXTURE, tmp_path / "repos")
    (tmp_path / "list.txt").write_text("# fixture repos\nrepos/alpha\nrepos/beta\nrepos/gamma\n", encoding="utf-8")
    return tmp_path


def _rows(ds: Path, sql: str) -> list[tuple]:
    db = sqlite3.connect(ds / "ledger.sqlite")
    try:
        return list(db.execute(sql))
    finally:
        db.close()


def test_mine_records_every_repo_and_skips_finished_work(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with open(corpus / "list.txt", "a", encoding="utf-8") as fh:
        fh.write("repos/not-there\n")
    ds = corpus / "ds"
    assert main(["mine", str(corpus / "list.txt"), "-o", str(ds), "--frontend", "treesitter", "--no-units",
                 "-j", "1"]) == 1  # one bad repo: recorded, the others mined
    out, err = capsys.readouterr()
    assert "4 repos: 3 done, 1 failed" in out and "7 kernels (7 new; 1 exact and 1 near duplicates)" in out
    assert "not-there: extract: not a directory" in err and "Traceback" not in err
    rows = _rows(ds, "SELECT repo, stage, state, attempts FROM stages")
    stages = {(Path(r).name, s): (st, n) for r, s, st, n in rows}
    assert stages == {("alpha", "extract"): ("done", 1), ("beta", "extract"): ("done", 1),
                      ("gamma", "extract"): ("done", 1), ("not-there", "extract"): ("failed", 1)}
    files = {(Path(r).name, p): n for r, p, n in _rows(ds, "SELECT repo, path, kernels FROM files")}
    assert files == {("alpha", "src/reduce.cu"): 1, ("alpha", "src/scale.cu"): 2, ("beta", "kernels/saxpy.cuh"): 1,
                     ("beta", "kernels/vendored.cu"): 2, ("gamma", "relu.cu"): 1}
    index = [json.loads(x) for x in (ds / "index.jsonl").read_text().splitlines()]
    ids = [r["id"] for r in index]
    assert len(ids) == len(set(ids)) == 7
    assert sorted(ids) == sorted(r[0] for r in _rows(ds, "SELECT id FROM kernels"))
    assert {r["source"]["license"] for r in index} == {"MIT", "Apache-2.0", None}
    # LIST order, then path and line: alpha's kernels first.
    assert [r["name"] for r in index][:3] == ["block_sum", "scale_kernel", "add_one"]
    before = snapshot(ds)
    assert main(["mine", str(corpus / "list.txt"), "-o", str(ds), *FAST]) == 1
    assert snapshot(ds) == before
    assert _rows(ds, "SELECT attempts FROM stages WHERE stage='extract' AND repo LIKE '%alpha'") == [(1,)]
    # --retry-failed tries the failed repo again; it is there now.
    shutil.copytree(corpus / "repos" / "gamma", corpus / "repos" / "not-there")
    (corpus / "repos" / "not-there" / "relu.cu").write_text("__global__ void other(int *p) { *p = 1; }\n")
    assert main(["mine", str(corpus / "list.txt"), "-o", str(ds), *FAST]) == 1
    assert main(["mine", str(corpus / "list.txt"), "-o", str(ds), *FAST, "--retry-failed"]) == 0
    assert _rows(ds, "SELECT state, attempts FROM stages WHERE repo LIKE '%not-there'") == [("done", 2)]
    assert len((ds / "index.jsonl").read_text().splitlines()) == 8


def test_mine_folder_of_checkouts_and_license_allow(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = corpus / "ds"
    assert main(["mine", str(corpus / "repos"), "-o", str(ds), *FAST, "--license-allow", "MIT,Apache-2.0"]) == 0
    out = capsys.readouterr().out
    assert out == ""  # -q
    states = dict((Path(r).name, (st, e)) for r, st, e in _rows(ds, "SELECT repo, state, error FROM stages"))
    assert states["gamma"][0] == "skipped" and "license unknown is not in --license-allow" in states["gamma"][1]
    assert {Path(r).name for (r,) in _rows(ds, "SELECT DISTINCT repo FROM kernels")} == {"alpha", "beta"}
    # Allowing repos without a license file later mines the one that was skipped.
    assert main(["mine", str(corpus / "repos"), "-o", str(ds), *FAST, "--license-allow", "MIT,Apache-2.0,unknown"]) == 0
    assert {Path(r).name for (r,) in _rows(ds, "SELECT DISTINCT repo FROM kernels")} == {"alpha", "beta", "gamma"}


def test_repo_time_budget_kills_the_stage(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ds = corpus / "ds"
    # 10 ms is less than a child interpreter needs to start: the budget ends every repo's stage.
    assert main(["mine", str(corpus / "list.txt"), "-o", str(ds), *FAST, "--repo-timeout", "0.01"]) == 1
    err = capsys.readouterr().err
    assert err.count("time budget exceeded") == 3
    assert _rows(ds, "SELECT DISTINCT state FROM stages") == [("failed",)]
    assert not list(ds.glob("*/metadata.json"))
    assert main(["mine", str(corpus / "list.txt"), "-o", str(ds), *FAST, "--retry-failed"]) == 0
    assert len(list(ds.glob("*/metadata.json"))) == 7


def _mine_cmd(corpus: Path, ds: Path, extra: list[str]) -> list[str]:
    return [sys.executable, "-m", "miner", "mine", str(corpus / "list.txt"), "-o", str(ds), *extra]


def test_kill_minus_9_at_random_points_loses_and_duplicates_nothing(corpus: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    ref = tmp_path / "ref"
    t0 = time.monotonic()
    subprocess.run(_mine_cmd(corpus, ref, FAST), env=env, check=True, cwd=ROOT)
    full = time.monotonic() - t0
    expected = snapshot(ref)
    assert len([k for k in expected if k.endswith("/metadata.json")]) == 7
    seed = random.randrange(1 << 30)
    rng = random.Random(seed)
    kills = 0
    window = full
    # Longer and harder: scripts/stress_mine.py (real corpora, many rounds).
    for round_ in range(6):  # a round kills a run again and again until one gets to the end
        ds = tmp_path / f"ds{round_}"
        round_kills = 0
        for _ in range(6):
            proc = subprocess.Popen(_mine_cmd(corpus, ds, FAST), env=env, cwd=ROOT)
            # A resumed run skips finished work and ends sooner: the window shrinks with each kill, or a late
            # first kill leaves too little for a second (seen once the extract got faster).
            time.sleep(rng.uniform(0.1, 0.9) * window / (1 + round_kills))
            if proc.poll() is not None:
                break
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            round_kills += 1
        subprocess.run(_mine_cmd(corpus, ds, FAST), env=env, check=True, cwd=ROOT)
        got = snapshot(ds)
        assert sorted(got) == sorted(expected), f"seed {seed}"
        assert got == expected, f"seed {seed}"
        lines = (ds / "index.jsonl").read_text().splitlines()
        assert len(lines) == len({json.loads(x)["id"] for x in lines}) == 7
        assert _rows(ds, "SELECT COUNT(*) FROM kernels") == [(7,)]
        assert _rows(ds, "SELECT COUNT(*) FROM stages WHERE state != 'done'") == [(0,)]
        assert not (ds / commit.STAGING).exists() or not any((ds / commit.STAGING).iterdir())
        kills += round_kills
        if kills >= 2:
            break
        # The reference run is one sample of a loaded machine's timing: on a fresh machine under load (CI) the
        # runs here ended before the first kill (seed 225495509). A round with too few kills starts over in a new
        # dataset with half the window, so the test kills runs at whatever speed the machine has today.
        window /= 2
    assert kills >= 2, f"seed {seed}: the runs ended before they could be killed"


def test_commit_cut_short_is_finished_by_the_next_run(corpus: Path, tmp_path: Path) -> None:
    """The window a random kill rarely hits: kernel folders half moved from staging, ledger `committing`."""
    ref = tmp_path / "ref"
    assert main(["mine", str(corpus / "list.txt"), "-o", str(ref), *FAST]) == 0
    ds = tmp_path / "ds"
    assert main(["mine", str(corpus / "list.txt"), "-o", str(ds), *FAST]) == 0
    beta = str((corpus / "repos" / "beta").resolve())
    ledger = Ledger(ds)
    attempt = ledger.begin_stage(beta, "extract")
    staging = ds / commit.STAGING / f"beta.extract.{attempt}"
    job = {"stage": "extract", "repo": beta, "path": beta, "ds": str(ds), "staging": str(staging),
           "result": str(staging) + ".result.json", "log": str(ds / ".logs" / "beta.log"), "timeout": 120,
           "jobs": 1, "units": False, "frontend": "treesitter", "kernels": []}
    res = run_job(job)
    assert res["status"] == "ok" and len(res["kernels"]) == 3
    ledger.end_stage(beta, "extract", "committing", 1.0, None, {"staging": staging.name})
    # Killed after one folder moved and one old folder removed.
    first = res["kernels"][0]["id"]
    shutil.rmtree(ds / first)
    os.rename(staging / first, ds / first)
    shutil.rmtree(ds / res["kernels"][1]["id"])
    ledger.close()
    assert main(["mine", str(corpus / "list.txt"), "-o", str(ds), *FAST]) == 0
    assert snapshot(ds) == snapshot(ref)
    assert _rows(ds, f"SELECT state, attempts FROM stages WHERE repo='{beta}'") == [("done", 2)]
    assert not any((ds / commit.STAGING).iterdir())


def test_second_run_on_the_same_dataset_is_refused(corpus: Path) -> None:
    ds = corpus / "ds"
    ds.mkdir()
    import fcntl

    with open(ds / ".mine.lock", "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        r = subprocess.run(_mine_cmd(corpus, ds, FAST), env=dict(os.environ, PYTHONPATH=str(ROOT)),
                           capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    assert r.stderr.strip().endswith("another `kernel-miner mine` run is writing this dataset")
