"""Preludes through `#if` branches whose outcome is certain (frontends/pp_conditions.py, prelude.walk): a unit's
common header includes the standard library behind back-end and architecture conditionals; the walk evaluates
them from what the parse configuration defines, so the prelude holds what follows them, and the HIP
configuration (a define added) gets a prelude of its own sequence. Real libclang parses of our fixture
(tests/fixtures/prelude_cond) compared with the plain parse in both configurations."""

from __future__ import annotations

import pytest

from miner.units.headers import STD_HEADERS, SYSTEM_HEADERS
from tests.conftest import FIXTURES
from tests.test_extract_speed import _summary

COND = FIXTURES / "prelude_cond"
STANDARD = STD_HEADERS | SYSTEM_HEADERS
TUS = ["scale_ops.cu", "sort_ops.cu", "nomap_ops.cu"]
HIP = ["KM_COND_USE_HIP"]


def _project():
    from miner.source import include_graph
    from miner.source.discover import discover

    files = discover([COND]).files
    graph = include_graph.build(files, [str((COND / "include").resolve())])
    return {f.path: f.data for f in files}, graph


def _tu(name: str) -> str:
    return str((COND / "ops" / name).resolve())


def test_conditions_are_certain_only_where_the_preprocessor_must_agree() -> None:
    from miner.frontends.pp_conditions import evaluate

    state = {b"ON": True, b"OFF": False, b"__cplusplus": True}
    known = state.get  # any other name: unknown
    read: set[bytes] = set()
    assert evaluate(b"defined(ON) && !defined OFF", known, read) is True and read == {b"ON", b"OFF"}
    assert evaluate(b"defined(OFF) && VERSION >= 11070", known) is False  # false && unknown
    assert evaluate(b"defined(ON) || __has_include(<x.h>)", known) is True
    assert evaluate(b"!defined(OFF) && VERSION >= 11070", known) is None
    assert evaluate(b"OFF", known) is False and evaluate(b"ON", known) is None  # a defined macro's value: unknown
    assert evaluate(b"__cplusplus", known) is True and evaluate(b"0", known) is False
    assert evaluate(b"defined(ON) ? 0 : 1", known) is None  # ?: binds looser than ||: not read
    assert evaluate(b"defined(ON) /* note */ && defined(OFF) // tail", known) is False
    unknown: set[bytes] = set()
    assert evaluate(b"defined(MAYBE)", known, unknown) is None and not unknown  # an unknown answer decides nothing


def test_walk_follows_branches_whose_outcome_is_certain() -> None:
    from miner.frontends import prelude

    data, graph = _project()
    start = prelude.Start(frozenset({b"__cplusplus", b"__CUDACC__"}), frozenset())
    # Knowing nothing of the configuration, the first conditional include ends the sequence, as before.
    assert prelude.sure_headers(_tu("scale_ops.cu"), data, graph.edges, {}, STANDARD)[0] == ("vector",)
    seq = prelude.walk(_tu("scale_ops.cu"), data, graph.edges, {}, STANDARD, start)
    # __ARM_FEATURE_SVE is undefined, the CUDA declaration branch taken (a project #define of the branch before),
    # the continued `#if !defined(...) && \` line read whole; `KM_COND_LEVEL > 2` is not certain: it ends there.
    assert seq.headers == ("vector", "cuda_fp16.h", "algorithm", "string", "map")
    assert {b"__ARM_FEATURE_SVE", b"KM_COND_USE_HIP", b"KM_COND_DECL_CUDA"} <= seq.read_up_to(2)
    assert b"KM_COND_DECL_CUDA" in seq.defined_up_to(2) and b"KM_COND_DECL_CUDA" not in seq.defined_up_to(1)
    hip = prelude.walk(_tu("scale_ops.cu"), data, graph.edges, {}, STANDARD, start.with_defines(HIP))
    assert hip.headers == ("vector", "hip/hip_fp16.h", "algorithm", "string")
    nomap = prelude.walk(_tu("nomap_ops.cu"), data, graph.edges, {}, STANDARD, start)
    assert nomap.headers == ("vector", "cuda_fp16.h", "algorithm", "string")


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory):
    from miner.frontends import clang_frontend, prelude
    from miner.frontends.config import ParseConfig

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    data, graph = _project()
    plain = ParseConfig(include_dirs=[str((COND / "include").resolve())])
    fast = prelude.plan([_tu(t) for t in TUS], plain, data, graph.edges, STANDARD,
                        str(tmp_path_factory.mktemp("pre")), lambda r: False, lambda r: [HIP])
    return plain, fast, set(data)


def _files(pch_path: str) -> list[str]:
    from miner.frontends import pch

    return list(pch._PREFIX_FILES[pch_path])


def test_preludes_hold_the_headers_behind_certain_branches(planned) -> None:
    from miner.frontends import pch

    _plain, fast, _inputs = planned
    shared = fast.prelude_of[_tu("scale_ops.cu")]
    assert fast.prelude_of[_tu("sort_ops.cu")] == shared
    assert any(f.endswith("/string") for f in _files(shared)) and any(f.endswith("/map") for f in _files(shared))
    # nomap_ops does not include <map>: a prelude holding it would add a header.
    own = fast.prelude_of[_tu("nomap_ops.cu")]
    assert any(f.endswith("/string") for f in _files(own)) and not any(f.endswith("/map") for f in _files(own))
    # The HIP configuration walks again: the HIP half-precision stand-in, no <map>.
    hip = pch.with_defines(fast, HIP, only=_tu("scale_ops.cu")).prelude_of[_tu("scale_ops.cu")]
    assert any(f.endswith("/hip_fp16.h") for f in _files(hip)) and any(f.endswith("/string") for f in _files(hip))
    assert not any(f.endswith("/map") for f in _files(hip)) and hip != fast.prelude_of[_tu("scale_ops.cu")]
    # A define no walk read keeps every choice.
    assert pch.with_defines(fast, ["KM_COND_UNRELATED"]).prelude_of == fast.prelude_of


@pytest.mark.parametrize("tu", TUS)
@pytest.mark.parametrize("defines", [[], HIP], ids=["cuda", "hip"])
def test_parse_through_the_prelude_equals_the_plain_parse(planned, tu: str, defines: list[str]) -> None:
    from miner.frontends import clang_frontend, pch
    from miner.units.analysis import analyse

    plain, fast, inputs = planned
    path = _tu(tu)
    if defines:
        plain, fast = pch.with_defines(plain, defines), pch.with_defines(fast, defines, only=path)
    assert "-include-pch" in clang_frontend.clang_args(fast, path)
    a = clang_frontend.parse(path, plain, inputs, analyse=analyse)
    b = clang_frontend.parse(path, fast, inputs, analyse=analyse)
    assert a.kernels and a.analysis["launches"] and not a.error
    assert _summary(a) == _summary(b)


SHADOW = FIXTURES / "prelude_shadow"


def test_a_project_header_named_like_a_held_one_is_never_held(tmp_path) -> None:
    """`vendor/cuda.h` on the include path is what `#include <cuda.h>` finds, its own include included (walked as
    that project file): a prelude holding `<cuda.h>` would read the project's header ahead of the unit (its macros
    then come from the precompiled prefix, out of the analysis' sight: the closure lost `KM_SHADOW_FP8` and the
    header)."""
    from miner.frontends import clang_frontend, pch, prelude
    from miner.frontends.config import ParseConfig
    from miner.source import include_graph
    from miner.source.discover import discover
    from miner.units.analysis import analyse

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    dirs = [str((SHADOW / "include").resolve()), str((SHADOW / "include" / "vendor").resolve())]
    files = discover([SHADOW]).files
    graph = include_graph.build(files, dirs)
    data = {f.path: f.data for f in files}
    plain = ParseConfig(include_dirs=dirs)
    tus = [str((SHADOW / "ops" / t).resolve()) for t in ("shadow_a.cu", "shadow_b.cu")]
    fast = prelude.plan(tus, plain, data, graph.edges, STANDARD, str(tmp_path), lambda r: False)
    for tu in tus:
        held = pch._PREFIX_FILES[fast.prelude_of[tu]]
        assert any(f.endswith("/vector") for f in held)
        assert not any(f.endswith("cuda.h") for f in held)
        a = clang_frontend.parse(tu, plain, set(data), analyse=analyse)
        b = clang_frontend.parse(tu, fast, set(data), analyse=analyse)
        assert a.kernels and not a.error
        assert _summary(a) == _summary(b)
