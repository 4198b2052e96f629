"""The reporter that owns the terminal, the options resolved in one place, extract's stage list (real runs)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from miner.commands import extract as extract_command
from miner.commands import options
from miner.errors import UsageError
from miner.reporter import Level, Reporter
from tests.conftest import run_miner

FIXTURE = Path(__file__).parent / "fixtures" / "commands" / "scale.cu"


def _streams(level: Level) -> tuple[Reporter, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Reporter(level, out, err), out, err


@pytest.mark.parametrize("level, stdout, stderr", [
    (Level.QUIET, ["result"], ["kernel-miner: error: e", "kernel-miner: note: n"]),
    (Level.NORMAL, ["info", "passed       k1  why", "result"],
     ["kernel-miner: error: e", "kernel-miner: note: n", "message"]),
    (Level.VERBOSE, ["info", "passed       k1  why", "result", "detail"],
     ["kernel-miner: error: e", "kernel-miner: note: n", "message", "kernel-miner: note: dn"]),
])
def test_each_level_shows_its_lines(level: Level, stdout: list[str], stderr: list[str]) -> None:
    rep, out, err = _streams(level)
    rep.info("info")
    rep.item("passed", "k1", "why")
    rep.result("result")
    rep.detail("detail")
    rep.error("e")
    rep.note("n")
    rep.message("message")
    rep.detail_note("dn")
    assert out.getvalue().splitlines() == stdout
    assert err.getvalue().splitlines() == stderr


def test_capped_lists_ten_then_counts_unless_verbose() -> None:
    lines = [f"f{i}" for i in range(12)]
    rep, _, err = _streams(Level.NORMAL)
    rep.capped(lines, "build failed")
    got = err.getvalue().splitlines()
    assert got[0] == "kernel-miner: build failed: f0" and len(got) == 11
    assert got[-1] == "kernel-miner: ... and 2 more (-v lists all)"
    rep, _, err = _streams(Level.VERBOSE)
    rep.capped(lines, "build failed")
    assert len(err.getvalue().splitlines()) == 12


def test_progress_off_a_terminal_is_a_no_op() -> None:
    rep, out, err = _streams(Level.NORMAL)
    with rep.progress("parsing") as start:
        tick = start(3)
        tick()
    assert out.getvalue() == err.getvalue() == ""


def test_validate_reports_each_kernel_through_the_reporter(tmp_path: Path) -> None:
    from miner.validate.pipeline import Options, validate_dataset

    kdir = tmp_path / "ds" / "k-one"
    (kdir / "tests").mkdir(parents=True)
    (kdir / "metadata.json").write_text(json.dumps({"schema_version": 1, "id": "k-one", "name": "k",
                                                    "instantiations": []}))
    (kdir / "tests" / "test_k.py").write_text("def test_ok():\n    assert True\n")
    rep, out, _ = _streams(Level.NORMAL)
    summary = validate_dataset(tmp_path / "ds", Options(jobs=1, mode="spawn", sandbox=False, oracles=False,
                                                        tests_from=[]), rep)
    assert summary["results"]["k-one"]["outcome"] == "passed"
    assert out.getvalue().splitlines() == ["passed       k-one  1 test(s) passed"]


def test_build_options_resolve_without_argparse(tmp_path: Path) -> None:
    run = options.build_run(tmp_path, toolchain="cuda,hip", arch="sm_80,gfx942", jobs=3, kernels=["a,b"])
    assert [(name, o.arch, o.jobs) for name, o in run.chains] == [("cuda", "sm_80", 3), ("hip", "gfx942", 3)]
    assert run.selectors == ["a", "b"]
    with pytest.raises(UsageError, match="not a dataset directory"):
        options.build_run(tmp_path / "missing")
    with pytest.raises(UsageError, match="--batch-size must be at least 1"):
        options.build_run(tmp_path, batch_size=0)


def test_extract_stages_are_a_named_list_with_gates() -> None:
    assert [s.name for s in extract_command.STAGES] == ["extract", "build"]


def test_extract_build_resolves_builds_options_after_extracting(tmp_path: Path) -> None:
    # The extract stage runs (real libclang parse), then the build stage's gate opens and its options are
    # resolved by the keyword resolver: a bad --arch reads exactly as `kernel-miner build --arch` says it.
    res = run_miner("extract", FIXTURE, "-o", tmp_path / "ds", "--build", "--arch", "sm_bogus", "-j", "1",
                    cwd=tmp_path)
    assert res.returncode == 2, res.stderr
    assert res.stdout.splitlines() == [f"1 kernels from 1 files (0 failed) -> {tmp_path / 'ds'}/"]
    built = run_miner("build", tmp_path / "ds", "--arch", "sm_bogus", cwd=tmp_path)
    assert built.returncode == 2
    assert res.stderr.splitlines() == built.stderr.splitlines() == [
        "kernel-miner: error: --arch: 'sm_bogus' is not sm_NN or compute_NN (e.g. sm_90, sm_90a, compute_90)"]
    units = list((tmp_path / "ds").glob("scale_by-*/units/*/unit.cu"))
    assert len(units) == 1


def test_extract_quiet_prints_nothing_verbose_lists_kernels(tmp_path: Path) -> None:
    quiet = run_miner("extract", FIXTURE, "-o", tmp_path / "q", "-q", "-j", "1", "--no-units", cwd=tmp_path)
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    loud = run_miner("extract", FIXTURE, "-o", tmp_path / "v", "-v", "-j", "1", "--no-units", cwd=tmp_path)
    lines = loud.stdout.splitlines()
    assert loud.returncode == 0 and len(lines) == 2
    assert lines[0].startswith("scale_by-") and lines[0].endswith("scale.cu:2-5  [clang]")


def test_extract_stage_gates_follow_the_options(tmp_path: Path) -> None:
    from miner.extract.options import ExtractOptions
    from miner.extract.stages import STAGES, CudaRun

    def opened(**kw: object) -> list[str]:
        run = CudaRun(ExtractOptions(paths=[str(FIXTURE)], out_dir=str(tmp_path), **kw), tmp_path,
                      lambda n: (lambda: None))
        return [s.name for s in STAGES if s.gate(run)]

    assert opened(frontend="treesitter", units=False) == ["discover", "configure", "parse", "write"]
    assert "project context" in opened(frontend="treesitter", units=True)


def test_extract_ends_after_discover_when_no_input_has_a_kernel(tmp_path: Path) -> None:
    from miner.extract.options import ExtractOptions
    from miner.extract.stages import run_stages

    src = tmp_path / "host_only.cu"
    src.write_text("int twice(int x) { return 2 * x; }\n")
    report = run_stages(ExtractOptions(paths=[str(src)], out_dir=str(tmp_path / "out")), tmp_path / "out",
                        lambda n: (lambda: None))
    assert report.files == 1 and report.kernels == [] and report.failures == []
    assert not (tmp_path / "out").exists()  # the write stage never ran
