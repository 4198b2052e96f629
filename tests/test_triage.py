"""`kernel-miner triage`: one self-contained, reproducible folder per failed kernel."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from test_validate import CASES, km, make_dataset

REPO = Path(__file__).resolve().parents[1]


def test_triage_writes_a_reproducible_folder_per_failure(tmp_path: Path) -> None:
    root = make_dataset(tmp_path / "ds", {k: CASES[k] for k in ("k-pass", "k-fail", "k-segv", "k-skip")})
    km("validate", str(root), "--jobs", "2", "--mode", "spawn")
    out = tmp_path / "debug"
    proc = km("triage", str(root), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "2 failure(s)" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == ["k-fail", "k-segv"]
    seg = out / "k-segv"
    for name in ("repro.sh", "summary.txt", "stdout.txt", "stderr.txt", "result.json", "metadata.json",
                 "tests/test_case.py"):
        assert (seg / name).is_file(), name
    summary = (seg / "summary.txt").read_text()
    assert "outcome:   crashed" in summary and "signal:    SIGSEGV" in summary
    assert "Fatal Python error" in summary  # stderr tail
    assert "oracles:   determinism=not_applicable" in summary
    assert "KM_ORACLES=1" in (seg / "repro.sh").read_text()
    assert os.access(seg / "repro.sh", os.X_OK)
    # The repro reproduces: the failing assertion shows, from the triage folder alone.
    env = dict(os.environ, PYTHONPATH=str(REPO))
    rep = subprocess.run(["bash", str(out / "k-fail" / "repro.sh")], capture_output=True, text=True,
                         env=env, timeout=60)
    assert "lists differ here" in rep.stdout and "exit code: 1" in rep.stdout
    # Rerunning triage replaces the folders, never mixes old and new.
    assert km("triage", str(root), "--out", str(out)).returncode == 0
    assert json.loads((out / "k-fail" / "metadata.json").read_text())["validation"]["outcome"] == "failed"


def test_triage_errors(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    r = km("triage", str(tmp_path / "missing"), "--out", str(tmp_path / "o"))
    assert r.returncode == 1 and r.stderr.startswith("kernel-miner: error:")
    root = make_dataset(tmp_path / "ds", {"k-pass": CASES["k-pass"]})
    r = km("triage", str(root), "--out", str(tmp_path / "f"))
    assert r.returncode == 2 and "not a directory" in r.stderr
    assert sys.executable
