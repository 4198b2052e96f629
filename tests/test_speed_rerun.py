"""The whole-run record (miner/extract/run_record.py, issue 10 item 1): an unchanged rerun into the same folder
checks its outputs and returns; any change of an input, an option or an output takes the stages again, and
the dataset is then the one a cold run writes. Real extract runs on copies of small fixtures, no mocks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from miner.extract import run_inputs
from miner.frontends import clang_frontend
from tests.conftest import FIXTURES, REPOS_FIXTURE, run_miner, snapshot

pytestmark = pytest.mark.skipif(not clang_frontend.AVAILABLE, reason="needs libclang")
UNCHANGED = "unchanged since the last run into this folder"


class Runs:
    def __init__(self, tmp: Path, tree: Path) -> None:
        self.tmp, self.tree = tmp, tree
        self.env = {"KM_PARSE_CACHE": str(tmp / "cache")}

    def extract(self, out: str, *more: str, **env: str) -> str:
        res = run_miner("extract", self.tree, "-o", self.tmp / out, "-j", "1", "-v", *more,
                        env={**self.env, **env})
        assert res.returncode == 0, res.stderr
        return res.stderr

    def cold(self, out: str, *more: str) -> dict[str, bytes]:
        """A cold run's dataset: no cache, a fresh folder."""
        shutil.rmtree(self.tmp / out, ignore_errors=True)
        assert UNCHANGED not in self.extract(out, *more, KM_PARSE_CACHE="off")
        return snapshot(self.tmp / out)

    def records(self) -> list[dict]:
        return [json.loads(p.read_text()) for p in sorted((self.tmp / "cache" / "runs").glob("*.json"))]


def _beta(tmp_path: Path) -> Runs:
    tree = tmp_path / "beta"
    shutil.copytree(REPOS_FIXTURE / "beta", tree)
    return Runs(tmp_path, tree)


def _files(folder: Path) -> dict[Path, tuple[int, int]]:
    return {p: (p.stat().st_ino, p.stat().st_mtime_ns) for p in folder.rglob("*") if p.is_file()}


def test_unchanged_rerun_returns_the_same_dataset_and_writes_nothing(tmp_path: Path) -> None:
    runs = _beta(tmp_path)
    first = runs.extract("out")
    assert UNCHANGED not in first
    cold = snapshot(tmp_path / "out")
    assert cold == runs.cold("reference")
    before = _files(tmp_path / "out")
    for _ in range(2):  # the second rerun trusts the stats the first one refreshed
        notes = runs.extract("out")
        assert UNCHANGED in notes and "parse cache" not in notes
        assert snapshot(tmp_path / "out") == cold
        assert _files(tmp_path / "out") == before
    # The report is the run's: the same kernels listed, the same summary line.
    assert [x for x in notes.splitlines() if "[clang]" in x] == [x for x in first.splitlines() if "[clang]" in x]
    # -j changes no byte: the same record serves it.
    assert UNCHANGED in runs.extract("out", "-j", "2")


def test_a_changed_input_is_extracted_again(tmp_path: Path) -> None:
    runs = _beta(tmp_path)
    runs.extract("out")
    src = runs.tree / "kernels" / "saxpy.cu"
    src.write_text(src.read_text().replace(
        "  saxpy_unrolled<double, 2><<<(n / 2 + 255) / 256, 256>>>(n, a, x, y);\n", ""))
    notes = runs.extract("out")
    assert UNCHANGED not in notes and "1 of 2 translation unit parses from the parse cache" in notes
    out, ref = snapshot(tmp_path / "out"), runs.cold("reference")
    # The cold run's dataset, and the gone instantiation's unit left where it was (extract deletes nothing).
    assert {k: v for k, v in out.items() if k in ref} == ref
    assert {k.split("/", 1)[1] for k in out.keys() - ref.keys()} == {"units/double_2/unit.cu",
                                                                     "units/double_2/host_wrapper.cu"}
    assert UNCHANGED in runs.extract("out")


def test_an_edit_that_keeps_size_and_mtime_is_seen(tmp_path: Path) -> None:
    """The stats are only a shortcut to the content hash: ctime (which no one sets back) catches an edit whose
    size and mtime are the old ones."""
    runs = _beta(tmp_path)
    runs.extract("out")
    runs.extract("out")  # stats trusted from here on
    src = runs.tree / "kernels" / "vendored.cu"
    st = src.stat()
    text = src.read_text()
    src.write_text(text.replace("+= 1.0f;   // vendored", "+= 2.0f;   // vendored"))
    os.utime(src, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert src.stat().st_size == st.st_size and src.stat().st_mtime_ns == st.st_mtime_ns
    assert UNCHANGED not in runs.extract("out")
    assert b"+= 2.0f" in next(v for k, v in snapshot(tmp_path / "out").items() if k.startswith("add_one")
                              and k.endswith("kernel.cu"))


def test_a_new_file_and_a_file_outside_the_sources_are_seen(tmp_path: Path) -> None:
    runs = _beta(tmp_path)
    runs.extract("out")
    (runs.tree / "kernels" / "more.cu").write_text("__global__ void more_kernel(float *x) { x[0] = 1.0f; }\n")
    assert UNCHANGED not in runs.extract("out")
    assert any(k.startswith("more_kernel-") for k in snapshot(tmp_path / "out"))
    assert UNCHANGED in runs.extract("out")
    # The license provenance reads: every kernel's metadata says the new one.
    (runs.tree / "LICENSE").write_text("Permission is hereby granted, free of charge, to any person\n")
    assert UNCHANGED not in runs.extract("out")
    metas = [json.loads(v) for k, v in snapshot(tmp_path / "out").items() if k.endswith("metadata.json")]
    assert {m["source"]["license"] for m in metas} == {"MIT"}
    assert snapshot(tmp_path / "out") == runs.cold("reference")


@pytest.mark.parametrize("damage", ["delete", "edit", "delete_index", "other_run"])
def test_a_damaged_output_is_written_again(tmp_path: Path, damage: str) -> None:
    runs = _beta(tmp_path)
    runs.extract("out")
    cold = snapshot(tmp_path / "out")
    unit = next(p for p in sorted((tmp_path / "out").rglob("unit.cu")))
    meta = unit.parents[2] / "metadata.json"
    if damage == "delete":
        unit.unlink()
    elif damage == "edit":
        meta.write_text(meta.read_text().replace('"name"', '"nome"', 1))
    elif damage == "delete_index":
        (tmp_path / "out" / "index.jsonl").unlink()
    else:  # another tree extracted into the folder: its index lines are not this run's
        other = Runs(tmp_path, tmp_path / "gamma")
        shutil.copytree(REPOS_FIXTURE / "gamma", other.tree)
        other.extract("out")
        # What the same three runs give without the record (this run's index lines move to the end).
        for run in (runs, other, runs):
            run.extract("norecord", KM_RUN_RECORD="off")
        cold = snapshot(tmp_path / "norecord")
    assert UNCHANGED not in runs.extract("out")
    assert snapshot(tmp_path / "out") == cold
    assert UNCHANGED in runs.extract("out")


def test_options_and_git_state_are_part_of_the_key(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.skip("needs git")
    runs = _beta(tmp_path)
    git = ["git", "-C", str(runs.tree), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    runs.extract("out")
    assert UNCHANGED in runs.extract("out")
    assert UNCHANGED not in runs.extract("out", "-D", "SCALE=2")  # another option set: its own record
    assert UNCHANGED in runs.extract("out", "-D", "SCALE=2")
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "two"], check=True)  # no file changes
    assert UNCHANGED not in runs.extract("out")
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    metas = [json.loads(v) for k, v in snapshot(tmp_path / "out").items() if k.endswith("metadata.json")]
    assert {m["source"]["commit"] for m in metas} == {head}


def test_switches_turn_it_off(tmp_path: Path) -> None:
    runs = _beta(tmp_path)
    runs.extract("out")
    assert UNCHANGED not in runs.extract("out", KM_RUN_RECORD="off")
    assert UNCHANGED not in runs.extract("out", KM_PARSE_CACHE="off")
    assert UNCHANGED in runs.extract("out")


@pytest.mark.parametrize("fixture", ["vendored", "triton/pkg"])
def test_the_record_names_every_file_extract_writes(tmp_path: Path, fixture: str) -> None:
    """What the record checks (run_record.written, the vendor/ copies, the index) is every file the run wrote:
    nothing it leaves unchecked could be lost or edited unseen."""
    runs = Runs(tmp_path, tmp_path / "tree")
    shutil.copytree(FIXTURES / fixture, runs.tree)
    runs.extract("out")
    (record,) = runs.records()
    files = {k for k in snapshot(tmp_path / "out")}
    vendored = {k for k in files if k.startswith("vendor/")}
    assert files - vendored == set(record["outputs"])
    assert {"/".join(k.split("/")[:2]) for k in vendored} == set(record["dirs"])
    assert (fixture == "vendored") == bool(vendored)
    assert UNCHANGED in runs.extract("out")
    shutil.rmtree(tmp_path / "out" / next(iter(sorted(record["dirs"] or ["x"]))), ignore_errors=True)
    if record["dirs"]:
        assert UNCHANGED not in runs.extract("out")
        assert snapshot(tmp_path / "out").keys() == files


def test_a_run_with_failures_is_not_recorded(tmp_path: Path) -> None:
    runs = _beta(tmp_path)
    empty = tmp_path / "empty.cu"
    empty.write_text("")
    for _ in range(2):
        res = run_miner("extract", runs.tree, empty, "-o", tmp_path / "out", "-v", env=runs.env)
        assert res.returncode == 1 and "file is empty" in res.stderr and UNCHANGED not in res.stderr
    assert runs.records() == []


def test_project_root_is_the_context_ones(tmp_path: Path) -> None:
    from miner.source import context

    for p in (REPOS_FIXTURE / "beta", REPOS_FIXTURE / "beta" / "kernels" / "saxpy.cu", tmp_path):
        assert run_inputs.project_root(str(p)) == context.project_root(str(p))
