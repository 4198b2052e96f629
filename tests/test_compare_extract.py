"""scripts/compare_extract.py: two extract outputs compared file by file, JSON without its timing keys."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "compare_extract.py"
SAXPY = ROOT / "examples" / "saxpy"


def _compare(a: Path, b: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(a), str(b)], capture_output=True, text=True)


def _extract(out: Path) -> None:
    subprocess.run([sys.executable, "-m", "miner", "extract", str(SAXPY), "-o", str(out), "-j", "1", "-q"],
                   check=True, cwd=ROOT)


def test_two_runs_of_one_tree_agree_and_a_changed_field_is_reported(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    _extract(a)
    _extract(b)
    same = _compare(a, b)
    assert same.returncode == 0, same.stdout
    assert same.stdout.startswith("identical:")
    meta = next(b.glob("*/metadata.json"))
    data = json.loads(meta.read_text())
    # A timing key (a measured duration, not output) may differ: dropped before the comparison.
    data["seconds"] = 12.5
    meta.write_text(json.dumps(data, indent=2))
    assert _compare(a, b).returncode == 0
    # Any other field may not.
    data["name"] = data["name"] + "_changed"
    meta.write_text(json.dumps(data, indent=2))
    diff = _compare(a, b)
    assert diff.returncode == 1
    assert f"differs: {meta.relative_to(b)} (/name:" in diff.stdout
    # A file only one side has, and a non-JSON file's bytes.
    (b / "extra.txt").write_text("x")
    kernel = next(b.glob("*/kernel.cu"))
    kernel.write_text(kernel.read_text() + "\n")
    lines = _compare(a, b).stdout
    assert "only in branch: extra.txt" in lines
    assert f"differs: {kernel.relative_to(b)}" in lines


def test_a_missing_folder_is_a_one_line_error(tmp_path: Path) -> None:
    res = _compare(tmp_path / "none", tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip().count("\n") == 0 and "not a folder" in res.stderr
