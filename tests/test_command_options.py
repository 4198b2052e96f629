"""Options several commands share (miner/commands/_common.py): the same spelling, help and errors everywhere."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import run_miner


def _dataset(tmp_path: Path) -> Path:
    ds = tmp_path / "ds"
    (ds / "k-000000000001").mkdir(parents=True)
    (ds / "k-000000000001" / "metadata.json").write_text('{"id": "k-000000000001", "name": "k"}')
    return ds


@pytest.mark.parametrize("command, args, message", [
    ("build", ["--jobs", "0"], "--jobs must be at least 1"),
    ("build", ["--batch-size", "0"], "--batch-size must be at least 1"),
    ("build", ["--timeout", "nan"], "--timeout must be positive"),
    ("validate", ["--jobs", "0"], "--jobs must be at least 1"),
    ("validate", ["--timeout", "nan"], "--timeout must be positive"),
    ("validate", ["--timeout", "-1"], "--timeout must be positive"),
    ("extract", ["--jobs", "0", "-o", "out"], "--jobs must be at least 1"),
])
def test_bad_numbers_are_one_line_and_exit_2(tmp_path: Path, command: str, args: list[str], message: str) -> None:
    res = run_miner(command, _dataset(tmp_path), *args, cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines() == [f"kernel-miner: error: {message}"]


@pytest.mark.parametrize("command", ["build", "validate", "enrich"])
def test_kernels_option_reads_the_same_everywhere(command: str) -> None:
    res = run_miner(command, "--help")
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    assert "--kernels ID|NAME|GLOB" in text
    assert f"{command} only these kernels: ids, kernel names or glob patterns (repeatable, comma-separated" in text


@pytest.mark.parametrize("command", ["build", "extract"])
def test_quiet_and_verbose_exclude_each_other(tmp_path: Path, command: str) -> None:
    output = ["-o", "out"] if command == "extract" else []
    res = run_miner(command, _dataset(tmp_path), "-q", "-v", *output, cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip().splitlines() == ["kernel-miner: error: argument -v/--verbose: not allowed with "
                                               "argument -q/--quiet"]
