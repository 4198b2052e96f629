"""Shared fixtures: the repository root, the own-code fixture corpus and a CLI runner."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fixture_groups import mark_shared_fixture_groups

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
CORPUS = FIXTURES / "corpus"
CORPUS_EXPECTED = FIXTURES / "corpus_expected.json"
REPOS_FIXTURE = FIXTURES / "repos"  # three small repos of own code for `mine`, export, report


def run_miner(*args: str | os.PathLike[str], cwd: str | os.PathLike[str] | None = None,
              timeout: float = 120, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """`python -m miner ARGS` in a child process, as a user would run it (no install needed)."""
    env = dict(os.environ, **(env or {}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    env.pop("FORCE_COLOR", None)
    env["NO_COLOR"] = "1"
    return subprocess.run(
        [sys.executable, "-m", "miner", *map(str, args)],
        cwd=cwd or ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False,
    )


def load_dataset(out_dir: Path) -> list[dict[str, Any]]:
    """Every kernel folder's metadata.json under `out_dir`."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(out_dir.glob("*/metadata.json"))]


def extract_and_build(tmp_path_factory: pytest.TempPathFactory, fixture: str, mined: str | None = None,
                      env: dict[str, str] | None = None, built: tuple[str, ...] = ()) -> dict[str, Any]:
    """Copy tests/fixtures/<fixture>, run `extract --build` on it with a private cache; the proc, out dir, metadata.
    With `mined`, only that folder of the copy is mined, the whole copy given as `--project`. With `built` (kernel
    names), everything is extracted as before but only those kernels are compiled (`extract`, then `build
    --kernels`): for a fixture tree whose other kernels the tests of that module never look at; `proc` is then the
    build's, after an extract that must have succeeded."""
    name = Path(fixture).name  # `build_config/cmake_nested`: a fixture in a folder of fixtures
    src = tmp_path_factory.mktemp(f"{name}-src") / name
    shutil.copytree(FIXTURES / fixture, src)
    out = tmp_path_factory.mktemp(f"{name}-out")
    cache = tmp_path_factory.mktemp(f"{name}-cache")
    target = [src / mined, "--project", src] if mined else [src]
    env = {"XDG_CACHE_HOME": str(cache), **(env or {})}
    if built:
        ex = run_miner("extract", *target, "-o", out, "-j", "2", env=env, timeout=600)
        assert ex.returncode == 0, ex.stderr
        proc = run_miner("build", out, "--kernels", ",".join(built), "-j", "2", env=env, timeout=600)
    else:
        proc = run_miner("extract", *target, "-o", out, "--build", "-j", "2", env=env, timeout=600)
    return {"proc": proc, "out": out, "metas": load_dataset(out)}


def only_meta(dataset: dict[str, Any], name: str) -> dict[str, Any]:
    """The one kernel of that name in an extract_and_build dataset (a second one is a test failure)."""
    found = [m for m in dataset["metas"] if m["name"] == name]
    assert len(found) == 1, [m["source"]["path"] for m in found]
    return found[0]


def unit_texts(dataset: dict[str, Any], meta: dict[str, Any]) -> list[str]:
    """The unit.cu text of each of the kernel's instantiations in an extract_and_build dataset."""
    folder = Path(dataset["out"]) / meta["id"]
    return [(folder / inst["unit"]).read_text(encoding="utf-8") for inst in meta["instantiations"]]


def build_statuses(meta: dict[str, Any]) -> dict[str, str]:
    """Instantiation id -> build status, with the error appended where there is one."""
    return {i["id"]: i["build"]["status"] + (": " + (i["build"].get("error") or "") if i["build"].get("error") else "")
            for i in meta["instantiations"]}


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the marks into the test ids
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_shared_fixture_groups(items)


@pytest.fixture(scope="session", autouse=True)
def _children_keep_bytecode() -> Iterator[None]:
    """Python children the tests start (`python -m miner`, scripts, pool workers) write and reuse the miner's
    bytecode (`__pycache__`, git-ignored). With PYTHONDONTWRITEBYTECODE=1 in the environment (as on the 2-core
    machine) every child compiled the ~240 modules it imports again: about a quarter of an `extract --build` of a
    small fixture's CPU time. What the children compute does not change; children that must not write bytecode
    (sandboxed test runs, Triton builds) set the variable themselves."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
        yield


@pytest.fixture(scope="session")
def corpus_expected() -> dict[str, Any]:
    return json.loads(CORPUS_EXPECTED.read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def corpus_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The corpus outside any git checkout, so paths are relative to the corpus itself."""
    dst = tmp_path_factory.mktemp("corpus-src") / "corpus"
    shutil.copytree(CORPUS, dst)
    return dst


@pytest.fixture(scope="session")
def mined_repos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/fixtures/repos (three small repos of own code) mined with units and built with nvcc when it is
    on this machine, by `kernel-miner mine`; read-only for tests (copy it to change it)."""
    base = tmp_path_factory.mktemp("mined")
    shutil.copytree(REPOS_FIXTURE, base / "repos")
    build = ["--build"] if shutil.which("nvcc") else []
    res = run_miner("mine", base / "repos", "-o", base / "ds", "-j", "2", "-q", *build, timeout=600)
    assert res.returncode == 0, res.stderr
    return base / "ds"


def snapshot(ds: Path) -> dict[str, bytes]:
    """Every file of a dataset but the ledger and hidden run bookkeeping (locks, logs), by relative path."""
    out = {}
    for p in sorted(ds.rglob("*")):
        rel = p.relative_to(ds).as_posix()
        if p.is_file() and not rel.startswith((".", "ledger.sqlite")) and "/." not in rel:
            out[rel] = p.read_bytes()
    return out
