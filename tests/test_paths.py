"""The README's commands work wherever they are typed: relative and absolute dataset paths, paths
with spaces, a dataset moved after extraction (the bug: a relative DIR was joined twice, "Directory
'<abs>/mm/<kid>/mm/<kid>' not found", and validate recorded `error` for a passing test).

CPU only: the examples' own tests skip without a GPU; a test of our own that needs none is added.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT, run_miner

from miner import sandbox

PASSING = "def test_runs_here():\n    assert 2 + 2 == 4\n"
FAILING = "def test_fails_here():\n    assert [1] == [2], 'planted failure'\n"
NO_SANDBOX = [] if sandbox.unavailable() is None else ["--no-sandbox"]


def outcomes(root: Path) -> dict[str, str]:
    return {p.parent.name: json.loads(p.read_text())["validation"]["outcome"] for p in root.glob("*/metadata.json")}


def test_readme_commands_from_another_directory_with_spaces_and_a_moved_dataset(tmp_path: Path) -> None:
    work = tmp_path / "my work dir"
    work.mkdir()
    shutil.copytree(ROOT / "examples", work / "examples")
    build = ["--build"] if shutil.which("nvcc") else []
    # The README's lines, as written, typed in `work`.
    ext = run_miner("extract", "examples", "-o", "extracted/", *build, cwd=work, timeout=600)
    assert ext.returncode == 0, ext.stderr
    kernels = sorted(p.parent for p in (work / "extracted").glob("*/metadata.json"))
    assert len(kernels) >= 3
    good, bad = kernels[0], kernels[1]
    (good / "tests").mkdir(exist_ok=True)
    (good / "tests" / "test_cpu.py").write_text(PASSING)
    (bad / "tests").mkdir(exist_ok=True)
    (bad / "tests" / "test_cpu.py").write_text(FAILING)
    val = run_miner("validate", "extracted/", *NO_SANDBOX, cwd=work, timeout=600)
    got = outcomes(work / "extracted")
    assert got[bad.name] == "failed", (got, val.stdout, val.stderr)
    assert got[good.name] in ("passed", "skipped"), val.stdout  # skipped: its example test needs a GPU
    assert not any("not found" in line for line in val.stdout.splitlines()), val.stdout
    reason = json.loads((bad / "metadata.json").read_text())["validation"]["reason"]
    assert "planted failure" in reason
    tri = run_miner("triage", "extracted/", "--out", "debug/", cwd=work)
    assert tri.returncode == 0 and (work / "debug" / bad.name / "repro.sh").is_file(), tri.stderr
    # The repro script reproduces the failure from any working directory.
    env = dict(os.environ, PYTHONPATH=str(ROOT), KM_NO_SANDBOX="0" if not NO_SANDBOX else "1")
    shell = f"ln -s {shutil.which('python3')} {tmp_path}/python; PATH={tmp_path}:$PATH bash 'debug/{bad.name}/repro.sh'"
    rep = subprocess.run(["bash", "-c", shell], cwd=work, capture_output=True, text=True, env=env, timeout=300)
    assert "planted failure" in rep.stdout and "exit code: 1" in rep.stdout, rep.stdout + rep.stderr

    # Moved after extraction, under a name with spaces; validated by absolute path from elsewhere and by a
    # relative one from its parent.
    moved = tmp_path / "moved here" / "data set"
    moved.parent.mkdir()
    shutil.move(str(work / "extracted"), moved)
    for cwd, arg in ((ROOT, str(moved)), (moved.parent, "data set")):
        again = run_miner("validate", arg, "--force", *NO_SANDBOX, cwd=cwd, timeout=600)
        got = outcomes(moved)
        assert got[bad.name] == "failed" and got[good.name] in ("passed", "skipped"), again.stdout + again.stderr
        assert "not found" not in again.stdout
    if build:
        rebuilt = run_miner("build", "data set", cwd=moved.parent, timeout=600)
        assert rebuilt.returncode == 0, rebuilt.stderr


def test_enrich_with_a_relative_dataset_path_containing_spaces(tmp_path: Path) -> None:
    """enrich DIR typed from the dataset's parent, with a space in the name, then moved and enriched again."""
    from fake_llm_server import FakeLLMServer, kernel_brain
    from test_enrich_e2e import KEY, assert_complete, make_dataset, write_config

    data = make_dataset(tmp_path / "my data" / "ds one", ["scale_kernel"])
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(PYTHONPATH=str(ROOT), OPENAI_API_KEY=KEY)
    with FakeLLMServer([], default=kernel_brain) as srv:
        cfg = write_config(tmp_path / "km.toml", srv.base_url, model="fake-model")
        first = subprocess.run([sys.executable, "-m", "miner", "enrich", "ds one", "--config", str(cfg)],
                               cwd=data.parent, env=env, capture_output=True, text=True, timeout=300)
        assert first.returncode == 0, first.stderr
        assert_complete(data)
        moved = tmp_path / "elsewhere" / "ds two"
        moved.parent.mkdir()
        shutil.move(str(data), moved)
        again = subprocess.run([sys.executable, "-m", "miner", "enrich", str(moved), "--config", str(cfg), "--force"],
                               cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert again.returncode == 0, again.stderr
        assert_complete(moved)
