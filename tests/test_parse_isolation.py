"""A libclang parse that crashes, is killed or hangs costs its own file only (miner/extract/isolated.py).

libclang runs in the calling process: a segfault or abort inside it on an unusual file, or an out-of-memory kill
of a worker, used to hang `extract -j 2` for ever (`multiprocessing.Pool` never answers a dead worker's task)
and to kill `extract -j 1` with no output. The fault is injected where libclang is called: a child process runs
the real CLI with `_parse_root` wrapped to abort, kill itself or sleep on one file; everything else is the real
parse of the bundled examples."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

_INJECT = """
import os, signal, sys, time
import miner.extract.parse as parse
real = parse._parse_root
def faulty(path):
    if path.endswith(os.environ["KM_TEST_FAULT_FILE"]):
        fault = os.environ["KM_TEST_FAULT"]
        if fault == "abort":
            os.abort()
        if fault == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(3600)
    return real(path)
parse._parse_root = faulty
from miner.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _extract(tmp_path: Path, fault: str, jobs: int, extra_env: dict[str, str] | None = None
             ) -> tuple[subprocess.CompletedProcess[str], Path]:
    script = tmp_path / "inject.py"
    script.write_text(_INJECT, encoding="utf-8")
    out = tmp_path / "out"
    env = dict(os.environ, PYTHONPATH=str(ROOT), KM_PARSE_CACHE="off", NO_COLOR="1",
               KM_TEST_FAULT=fault, KM_TEST_FAULT_FILE="saxpy.cu", **(extra_env or {}))
    proc = subprocess.run([sys.executable, str(script), "extract", str(ROOT / "examples"), "-o", str(out),
                           "-j", str(jobs), "-v"], env=env, capture_output=True, text=True, timeout=300,
                          check=False)
    return proc, out


def _frontends(out: Path) -> dict[str, str]:
    return {json.loads(p.read_text(encoding="utf-8"))["name"]: json.loads(p.read_text(encoding="utf-8"))["frontend"]
            for p in out.glob("*/metadata.json")}


@pytest.mark.parametrize(("fault", "jobs", "signal_name"), [("abort", 2, "SIGABRT"), ("abort", 1, "SIGABRT"),
                                                           ("kill", 2, "SIGKILL")])
def test_a_crashing_parse_loses_only_its_file_which_tree_sitter_reads(tmp_path: Path, fault: str, jobs: int,
                                                                      signal_name: str) -> None:
    proc, out = _extract(tmp_path, fault, jobs)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "3 kernels from 7 files" in proc.stdout, proc.stdout
    assert f"saxpy.cu: the parse crashed ({signal_name}); tree-sitter used" in proc.stderr, proc.stderr[-2000:]
    assert _frontends(out) == {"saxpy_kernel": "treesitter", "roi_pool_forward_kernel": "clang",
                               "roi_pool_backward_kernel": "clang"}, _frontends(out)


def test_a_parse_that_hangs_is_stopped_at_the_time_limit(tmp_path: Path) -> None:
    proc, out = _extract(tmp_path, "hang", 2, {"KM_PARSE_TIMEOUT": "5"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "saxpy.cu: the parse took longer than 5 s (KM_PARSE_TIMEOUT); tree-sitter used" in proc.stderr
    assert _frontends(out)["saxpy_kernel"] == "treesitter"


def test_with_frontend_clang_a_crash_is_a_failure_of_that_file(tmp_path: Path) -> None:
    script = tmp_path / "inject.py"
    script.write_text(_INJECT, encoding="utf-8")
    proc2 = subprocess.run([sys.executable, str(script), "extract", str(ROOT / "examples"), "-o",
                            str(tmp_path / "out2"), "--frontend", "clang"],
                           env=dict(os.environ, PYTHONPATH=str(ROOT), KM_PARSE_CACHE="off", NO_COLOR="1",
                                    KM_TEST_FAULT="abort", KM_TEST_FAULT_FILE="saxpy.cu"),
                           capture_output=True, text=True, timeout=300, check=False)
    assert proc2.returncode == 1, proc2.stderr[-2000:]
    assert "saxpy.cu: the parse crashed (SIGABRT)" in proc2.stderr, proc2.stderr[-2000:]
    assert "Traceback" not in proc2.stderr


def test_a_bad_time_limit_is_a_one_line_usage_error(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "miner", "extract", str(ROOT / "examples"), "-o", str(tmp_path / "o")],
                          env=dict(os.environ, PYTHONPATH=str(ROOT), KM_PARSE_TIMEOUT="soon", NO_COLOR="1"),
                          capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == "kernel-miner: error: KM_PARSE_TIMEOUT must be a positive number of seconds, " \
                                  "not 'soon'", proc.stderr
    assert not (tmp_path / "o").exists()
