"""Precompiled preludes (frontends/prelude.py) for translation units without torch: which standard headers a
unit surely includes, which units may take a prelude, and that a parse through one gives what the plain parse
gives. Real libclang parses of our fixture (tests/fixtures/prelude) compared."""

from __future__ import annotations

from pathlib import Path

import pytest

from miner.units.headers import STD_HEADERS, SYSTEM_HEADERS
from tests.conftest import FIXTURES, load_dataset, run_miner
from tests.test_extract_speed import _summary

PRELUDE = FIXTURES / "prelude"
STANDARD = STD_HEADERS | SYSTEM_HEADERS
TUS = ["fill_ops.cu", "copy_ops.cu", "scan_ops.cu", "ndebug_ops.cu", "alias_ops.cu"]


def _project():
    from miner.source import include_graph
    from miner.source.discover import discover

    files = discover([PRELUDE]).files
    graph = include_graph.build(files, [str((PRELUDE / "include").resolve())])
    return {f.path: f.data for f in files}, graph


def _tu(name: str) -> str:
    return str((PRELUDE / "ops" / name).resolve())


def test_sure_headers_follow_unconditional_includes_in_order() -> None:
    from miner.frontends import prelude

    data, graph = _project()
    headers, macros = prelude.sure_headers(_tu("scan_ops.cu"), data, graph.edges, {}, STANDARD)
    # <map> sits under #ifdef: a prelude must never add a header the unit may not include, and what the
    # conditional include may bring in comes before <algorithm> in the plain parse: the sequence ends there.
    assert headers == ("vector", "cstdio", "cuda_runtime.h")
    assert {b"KM_THREADS", b"PRELUDE_COMMON_CUH"} <= macros
    headers, macros = prelude.sure_headers(_tu("ndebug_ops.cu"), data, graph.edges, {}, STANDARD)
    assert headers == ("vector", "cstdio", "cuda_runtime.h") and b"NDEBUG" in macros


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory):
    from miner.frontends import clang_frontend, prelude
    from miner.frontends.config import ParseConfig

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    data, graph = _project()
    plain = ParseConfig(include_dirs=[str((PRELUDE / "include").resolve())])
    fast = prelude.plan([_tu(t) for t in TUS], plain, data, graph.edges, STANDARD, str(tmp_path_factory.mktemp("pre")),
                        lambda r: False)
    return plain, fast, set(data)


def test_units_take_the_largest_prelude_that_cannot_change_them(planned) -> None:
    from miner.frontends import pch

    _plain, fast, _inputs = planned
    shared = fast.prelude_of[_tu("fill_ops.cu")]
    # Three units start with the same headers: one prelude.
    assert fast.prelude_of[_tu("copy_ops.cu")] == shared == fast.prelude_of[_tu("scan_ops.cu")]
    assert any(f.endswith("/vector") for f in pch._PREFIX_FILES[shared])
    # ndebug_ops defines NDEBUG, a word of assert.h (which the toolkit stand-in includes): the stub alone.
    stub_only = fast.prelude_of[_tu("ndebug_ops.cu")]
    assert stub_only != shared
    assert not any(f.endswith(("/vector", "/assert.h")) for f in pch._PREFIX_FILES[stub_only])


@pytest.mark.parametrize("tu", TUS)
def test_parse_through_the_prelude_equals_the_plain_parse(planned, tu: str) -> None:
    from miner.frontends import clang_frontend
    from miner.units.analysis import analyse

    plain, fast, inputs = planned
    path = _tu(tu)
    assert "-include-pch" in clang_frontend.clang_args(fast, path)
    a = clang_frontend.parse(path, plain, inputs, analyse=analyse)
    b = clang_frontend.parse(path, fast, inputs, analyse=analyse)
    assert a.kernels and a.analysis["launches"] and not a.error
    assert _summary(a) == _summary(b)


def test_added_defines_keep_a_prelude_unless_its_files_name_them(planned) -> None:
    from miner.frontends import pch

    _plain, fast, _inputs = planned
    assert pch.with_defines(fast, ["KM_PRELUDE_WITH_HIP"]).prelude_of == fast.prelude_of
    # _GLIBCXX_ASSERTIONS is read by the C++ library the shared prelude holds, not by the stub.
    # fill_ops falls back to the prelude of the stub alone, whose files do not name it.
    kept = pch.with_defines(fast, ["_GLIBCXX_ASSERTIONS"]).prelude_of
    assert kept[_tu("fill_ops.cu")] == fast.prelude_of[_tu("ndebug_ops.cu")] == kept[_tu("ndebug_ops.cu")]
    assert not pch._prefix_names(kept[_tu("fill_ops.cu")], "_GLIBCXX_ASSERTIONS")


def test_extract_through_preludes_finds_every_kernel_and_launch(tmp_path: Path) -> None:
    """The whole pipeline: the fixture's kernels, launches and instantiations through the preludes."""
    from miner.frontends import clang_frontend

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    proc = run_miner("extract", PRELUDE, "-o", tmp_path / "out", "-j", "2",
                     env={"XDG_CACHE_HOME": str(tmp_path / "c"), "KM_PARSE_CACHE": "off"})
    assert proc.returncode == 0, proc.stderr
    metas = {m["name"]: m for m in load_dataset(tmp_path / "out")}
    assert set(metas) == {"km_fill_kernel", "km_copy_kernel", "km_max_kernel", "km_checked_kernel", "km_pack_kernel"}
    assert [i["template_args"] for i in metas["km_max_kernel"]["instantiations"]] == [{"T": "float", "BLOCK": "128"}]
    # A private member alias as a launch's template argument: the probe through the prelude reads it.
    assert sorted(i["id"] for i in metas["km_pack_kernel"]["instantiations"]) == [
        "float_unsigned_int", "int_unsigned_int"]
    assert all(m["launches"] for m in metas.values())
