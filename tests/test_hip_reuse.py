"""A HIP-configuration parse that preprocesses a translation unit as the mined parse did takes that parse's
analysis instead of running it again (tests/fixtures/hip_reuse): `same.cu` reaches a guard that both builds
resolve alike, `differs.cu` one that changes a macro, `named.cu` one whose name is used outside an `#if`
line. The output must be the one the analysis of every HIP parse gives, file for file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.conftest import FIXTURES

REUSE = FIXTURES / "hip_reuse"


def _extract(src: Path, out: Path, monkeypatch: pytest.MonkeyPatch, reuse: bool) -> tuple[list[str], int]:
    from miner.extract import ExtractOptions, extract, stages
    from miner.extract.parse import CachedParse

    monkeypatch.setenv("KM_PARSE_CACHE", "off")
    if not reuse:
        monkeypatch.setattr(CachedParse, "_same_as", lambda self, tu, variant: None)
    seen: list[CachedParse] = []
    original = stages._cached_parse

    def spy(*args, **kwargs) -> CachedParse:
        made = original(*args, **kwargs)
        seen.append(made)
        return made

    monkeypatch.setattr(stages, "_cached_parse", spy)
    report = extract(ExtractOptions(paths=[str(src)], out_dir=str(out), jobs=1))
    monkeypatch.undo()
    assert not report.failures
    return sorted(m["name"] for m in report.kernels), sum(p.reused for p in seen)


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_hip_parse_reuses_the_analysis_only_where_it_preprocesses_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from miner.frontends import clang_frontend

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    src = tmp_path / "hip_reuse"
    shutil.copytree(REUSE, src)
    names, reused = _extract(src, tmp_path / "reuse", monkeypatch, reuse=True)
    plain_names, plain_reused = _extract(src, tmp_path / "plain", monkeypatch, reuse=False)
    # Only same.cu: differs.cu takes the other branch, named.cu names the guard in a #define.
    assert (reused, plain_reused) == (1, 0)
    # The HIP variant of `lanes` (WARP is 64 there) and no variant of the others, either way.
    assert names == plain_names == ["fill", "lanes", "lanes", "scale"]
    assert _files(tmp_path / "reuse") == _files(tmp_path / "plain")


def test_digest_tells_a_taken_branch_from_an_untaken_one() -> None:
    """The frontend's own test: the digest of a parse with the guard defined equals the plain parse's where
    the branches taken are the same, and the analysis is skipped only then."""
    from miner.frontends import clang_frontend, pch
    from miner.frontends.config import ParseConfig

    if not clang_frontend.AVAILABLE:
        pytest.skip("libclang not installed")
    inputs = {str(p.resolve()) for p in REUSE.iterdir()}
    plain = ParseConfig()
    calls: list[str] = []

    def analyse(live):  # counts the analyses run; the result is what the frontend needs of one
        calls.append(live.tu.spelling)

        class Found:
            error = None

            def to_dict(self) -> dict:
                return {"tu": live.tu.spelling}
        return Found()

    for name, reusable in (("same.cu", True), ("differs.cu", False), ("named.cu", False)):
        path = str((REUSE / name).resolve())
        base = clang_frontend.parse(path, plain, inputs, analyse=analyse)
        assert base.preprocessed and base.analysis == {"tu": path}
        hip = clang_frontend.parse(path, pch.with_defines(plain, ["USE_ROCM"]), inputs, analyse=analyse,
                                   same_as=(base.preprocessed, ("USE_ROCM",)))
        assert hip.reused is reusable, name
        assert (hip.analysis is None) is reusable
        assert [k.name for k in hip.kernels] == [k.name for k in base.kernels]
    assert len(calls) == 3 + 2  # the reused parse ran no analysis
