"""Preludes that hold a project header whole (frontends/prelude.py `Hold`) and the plain parse's view of a parse
through one (frontends/prefix_view.py). Real libclang parses of our fixture (tests/fixtures/prefix_project): the
parse through the prelude must list the same top level in the same order, report the same diagnostics (the
header's error belongs to the prelude's build) and the same inclusions (the unit's parse alone enters two files)
as the plain parse, and hand the pipeline the same kernels and analysis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from miner.units.headers import STD_HEADERS, SYSTEM_HEADERS
from tests.conftest import FIXTURES, load_dataset
from tests.test_extract_speed import _summary

PROJECT = FIXTURES / "prefix_project"
STANDARD = STD_HEADERS | SYSTEM_HEADERS
TUS = ["scale.cu", "shift.cu", "fill.cu"]


def _tu(name: str) -> str:
    return str((PROJECT / "ops" / name).resolve())


@pytest.fixture(autouse=True, scope="module")
def _project_preludes_on():
    """Project preludes are off unless asked for (`KM_PROJECT_PRELUDES=on`)."""
    mp = pytest.MonkeyPatch()
    mp.setenv("KM_PROJECT_PRELUDES", "on")
    yield
    mp.undo()


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory):
    from miner.frontends import clang_frontend, prelude
    from miner.frontends.config import ParseConfig
    from miner.source import include_graph
    from miner.source.discover import discover

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    files = discover([PROJECT]).files
    graph = include_graph.build(files, [])
    data = {f.path: f.data for f in files}
    plain = ParseConfig(include_dirs=[])
    fast = prelude.plan([_tu(t) for t in TUS], plain, data, graph.edges, STANDARD,
                        str(tmp_path_factory.mktemp("pre")), lambda r: False)
    return plain, fast, set(data)


def _views(tu: Any) -> dict[str, list]:
    """What the walks read of a translation unit besides the cursors' own answers."""
    return {
        "top": [(c.kind.name, c.spelling, c.location.file.name if c.location.file else None, c.extent.start.offset,
                 c.extent.end.offset) for c in tu.cursor.get_children()],
        "diagnostics": [(d.severity, d.location.file.name if d.location.file else None, d.location.offset,
                         d.location.line, d.location.column, d.spelling) for d in tu.diagnostics],
        "includes": [(i.source.name if i.source else None, i.include.name, i.location.offset, i.location.line,
                      i.depth) for i in tu.get_includes()],
    }


def _parse(path: str, config, inputs) -> tuple[Any, dict[str, list]]:
    from miner.frontends import clang_frontend
    from miner.units.analysis import analyse

    seen: dict[str, list] = {}

    def with_views(live):
        seen.update(_views(live.tu))
        return analyse(live)

    return clang_frontend.parse(path, config, inputs, analyse=with_views), seen


def test_units_that_share_a_project_header_take_a_prelude_holding_it(planned) -> None:
    from miner.frontends import clang_frontend, pch

    _plain, fast, _inputs = planned
    shared = fast.prelude_of[_tu("scale.cu")]
    # scale.cu and shift.cu read <algorithm>, then their own header's `#include "common.cuh"`: one prelude holds
    # <algorithm> and common.cuh whole (its conditional <map> include ends a standard-header prelude).
    assert fast.prelude_of[_tu("shift.cu")] == shared
    assert pch.view_of(clang_frontend.clang_args(fast, _tu("scale.cu"))) is not None
    assert any(f.endswith("/prefix_project/ops/common.cuh") for f in pch._PREFIX_FILES[shared])
    # fill.cu reads common.cuh before <cstdio>: no other unit starts so, it keeps a prelude of the stub alone.
    assert pch.view_of(clang_frontend.clang_args(fast, _tu("fill.cu"))) is None


@pytest.mark.parametrize("tu", ["scale.cu", "shift.cu"])
def test_parse_through_a_project_prelude_is_the_plain_parse(planned, tu: str) -> None:
    plain, fast, inputs = planned
    path = _tu(tu)
    a, va = _parse(path, plain, inputs)
    b, vb = _parse(path, fast, inputs)
    assert a.kernels and a.analysis["launches"] and not a.error
    # (a) the header's diagnostic, which the prelude's build raised, is the unit's too
    assert any("km_undeclared_scale" in d[-1] for d in va["diagnostics"])
    assert vb["diagnostics"] == va["diagnostics"]
    # (b) the top level in the plain parse's order: the unit's own directives before the header's contents
    assert vb["top"] == va["top"]
    # (c) every inclusion, the held header's re-parented to the unit's own directive
    assert len(va["includes"]) > 20 and vb["includes"] == va["includes"]
    assert _summary(a) == _summary(b)


def test_extract_through_a_project_prelude_equals_the_plain_extract(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole pipeline, with the project prelude and with every prelude off: the same dataset, byte for byte."""
    from miner.cli import main
    from miner.frontends import clang_frontend, pch, prelude

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    monkeypatch.setenv("KM_PARSE_CACHE", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    # (counted in a file: the parses run in forked worker processes, extract.isolated)
    viewed = tmp_path / "viewed.txt"
    view_of = pch.view_of

    def counted(args: list[str]):
        got = view_of(args)
        if got is not None:
            with open(viewed, "a", encoding="utf-8") as fh:
                fh.write(got.prefix_file + "\n")
        return got

    monkeypatch.setattr(pch, "view_of", counted)
    main(["extract", str(PROJECT), "-o", str(tmp_path / "fast"), "-j", "1", "-q"])
    assert viewed.is_file() and viewed.read_text(encoding="utf-8").strip()  # (parsed through the project prelude)
    monkeypatch.setattr(prelude, "plan", lambda roots, config, *a, **k: config)
    main(["extract", str(PROJECT), "-o", str(tmp_path / "plain"), "-j", "1", "-q"])
    fast, plain = tmp_path / "fast", tmp_path / "plain"
    metas = {m["name"]: m for m in load_dataset(fast)}
    assert {"scale_kernel", "missing_kernel", "shift_kernel", "fill_kernel"} <= set(metas)
    files = sorted(p.relative_to(fast) for p in fast.rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(plain) for p in plain.rglob("*") if p.is_file())
    for rel in files:
        assert (fast / rel).read_bytes() == (plain / rel).read_bytes(), rel


def test_project_preludes_are_off_unless_asked_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Off by default: a standard-header prelude hides the standard library's declarations from the walks, so a
    switch to the exact project prelude changes some closures' standard includes (docs/scale.md)."""
    from miner.frontends import clang_frontend, pch, prelude
    from miner.frontends.config import ParseConfig
    from miner.source import include_graph
    from miner.source.discover import discover

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    monkeypatch.setenv("KM_PROJECT_PRELUDES", "off")
    files = discover([PROJECT]).files
    graph = include_graph.build(files, [])
    fast = prelude.plan([_tu(t) for t in TUS], ParseConfig(include_dirs=[]), {f.path: f.data for f in files},
                        graph.edges, STANDARD, str(tmp_path), lambda r: False)
    assert all(pch.view_of(clang_frontend.clang_args(fast, _tu(t))) is None for t in TUS)
