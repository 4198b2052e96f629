"""Parsing separated from analysis: the clang frontend runs an analysis it is given on the live TU and hands
back plain data; `units.records` reads it back typed (real libclang parses of our own fixture)."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

from miner.frontends import clang_frontend
from miner.frontends.config import ParseConfig
from miner.units.records import ClosureRecord, Launch, PieceText, TUAnalysis

FIXTURE = Path(__file__).parent / "fixtures" / "records" / "scale.cu"

pytestmark = pytest.mark.skipif(not clang_frontend.AVAILABLE, reason="libclang not installed")


def _parse(analyse) -> clang_frontend.ParseResult:
    path = str(FIXTURE.resolve())
    return clang_frontend.parse(path, ParseConfig(), {path}, analyse=analyse)


def test_units_analysis_comes_back_as_plain_data_and_reads_back_typed() -> None:
    from miner.units.analysis import analyse

    res = _parse(analyse)
    assert res.error is None and res.unit_error is None
    # Plain data: what crosses the worker's process boundary and sits in the parse cache.
    assert pickle.loads(pickle.dumps(res.analysis)) == res.analysis
    found = TUAnalysis.from_dict(res.analysis)
    assert found.to_dict() == res.analysis
    (kernel,) = res.kernels
    key = (kernel.path, kernel.start_offset)
    closure = found.closures[key]
    assert isinstance(closure, ClosureRecord) and all(isinstance(p, PieceText) for p in closure.pieces)
    assert {(p.kind, p.name) for p in closure.pieces} >= {("FUNCTION_DECL", "twice"), ("MACRO", "KM_REC_SCALE")}
    (launch,) = [lc for lc in found.launches if lc.kind == "<<<>>>"]
    assert isinstance(launch, Launch) and launch.kernel == key and launch.template_args == ["float"]
    assert launch.config["block"] == "KM_REC_BLOCK" and launch.declared is None
    assert found.explicit == {"scale_kernel": [["double"]]}
    # A launch of a function this TU only declares names the declaration, not a kernel.
    (decl,) = found.declared_launches
    assert decl.kernel is None and decl.declared is not None
    assert (decl.declared.name, decl.declared.params) == ("elsewhere_kernel", ["const float *", "int"])


def test_the_frontend_runs_any_analysis_on_the_live_tu() -> None:
    """The analysis is the caller's: the frontend gives it live cursors, parallel to the kernels."""
    seen: list[tuple[str, str, int]] = []

    class Found:
        error = None

        def to_dict(self) -> dict:
            return {"seen": seen}

    def analyse(live: clang_frontend.LiveTU) -> Found:
        for k, c in zip(live.kernels, live.cursors, strict=True):
            seen.append((k.name, c.spelling, len(list(c.get_children()))))
        assert list(live.declared.values())[0].name == "elsewhere_kernel"
        return Found()

    res = _parse(analyse)
    assert res.analysis == {"seen": seen} and [s[:2] for s in seen] == [("scale_kernel", "scale_kernel")]
    assert seen[0][2] > 0  # the cursor's children: the TU was still alive


def test_a_failing_analysis_is_a_unit_error_not_a_failed_parse() -> None:
    def analyse(live: clang_frontend.LiveTU):
        raise RuntimeError("boom")

    res = _parse(analyse)
    assert res.error is None and [k.name for k in res.kernels] == ["scale_kernel"]
    assert res.analysis is None and res.unit_error == "RuntimeError: boom"
    assert _parse(None).analysis is None


def test_frontends_import_nothing_from_units() -> None:
    """The folder-level cycle is gone: parse (frontends/) comes before close/render (units/)."""
    folder = Path(clang_frontend.__file__).parent
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [f"{node.module}.{a.name}" for a in node.names] if isinstance(node, ast.ImportFrom)
                     else [])
            assert not [n for n in names if n.startswith("miner.units")], path.name
