"""`extract --build` on tests/fixtures/blind16: patterns found on the sixteenth set of repositories (issue 14,
scripts/corpus_repos_blind16.txt, development repos since session 17), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, build_statuses, extract_and_build, load_dataset, only_meta, run_miner

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def _mine_sub(tmp_path_factory: pytest.TempPathFactory, fixture: str, sub: str) -> dict[str, Any]:
    """Mine one folder of a fixture project, the project being the whole fixture (scripts/mine_corpus.py's way)."""
    name = Path(fixture).name
    src = tmp_path_factory.mktemp(f"{name}-src") / name
    shutil.copytree(FIXTURES / fixture, src)
    out = tmp_path_factory.mktemp(f"{name}-out")
    cache = tmp_path_factory.mktemp(f"{name}-cache")
    proc = run_miner("extract", src / sub, "-o", out, "--project", src, "--build", "-j", "2",
                     env={"XDG_CACHE_HOME": str(cache)}, timeout=600)
    return {"proc": proc, "out": out, "metas": load_dataset(out), "src": src}


@pytest.fixture(scope="module")
def prefix_crash(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind16/prefix_crash")


def test_a_unit_libclang_cannot_parse_through_its_prelude_is_parsed_without_it(
        prefix_crash: dict[str, Any]) -> None:
    """Two C++20 units start with `<functional>` and share a precompiled prelude of it; `ramp.cu` goes on to
    include `<iostream>` (through `report.h`), and libclang 18 crashes on it through that prelude ("Error parsing
    translation unit"). The unit fell to tree-sitter: its kernel had no AST, no launch and a guessed unit."""
    m = only_meta(prefix_crash, "ramp_fill")
    assert m["frontend"] == "clang", m["frontend"]
    assert m["parse_context"]["translation_unit"] == "ramp.cu", m["parse_context"]
    assert m["launches"], m.get("launch_missing")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    assert set(build_statuses(only_meta(prefix_crash, "shift_values")).values()) == {"ok"}


@pytest.fixture(scope="module")
def toolkit_named(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _mine_sub(tmp_path_factory, "blind16/toolkit_named", "examples")


def test_a_project_header_spelled_under_a_toolkit_folder_is_the_projects(toolkit_named: dict[str, Any]) -> None:
    """A wrapper library's public header is `<cuda/kit.hpp>` (its `include/` passed by the build, outside the
    mined `examples/`), a name under libcu++'s `cuda/` folder that the toolkit does not have. It was read as the
    toolkit's: never looked up in the project, the parse stopped at it (tree-sitter, no launch), and the unit kept
    the include ("fatal error: cuda/kit.hpp: No such file or directory")."""
    m = only_meta(toolkit_named, "rotate_left")
    assert m["frontend"] == "clang", m["frontend"]
    assert m["launches"], m.get("launch_missing")
    assert "cuda/kit.hpp" not in m["closure"]["includes"], m["closure"]["includes"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
