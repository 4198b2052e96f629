"""Every bad input to `extract`: one clean stderr line, a defined exit code, nothing half-written."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from conftest import load_dataset, run_miner

GOOD = """\
__global__ void good_kernel(float* x, const int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] = 2.f * x[i];
}
"""


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        path.write_text(data, encoding="utf-8")
    else:
        path.write_bytes(data)
    return path


def _error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("kernel-miner: error:")]


def _assert_clean(out: Path) -> None:
    """No temp files, and every kernel folder and index line is complete."""
    if not out.exists():
        return
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")], "temporary files left behind"
    folders = [p for p in out.iterdir() if p.is_dir()]
    for f in folders:
        assert (f / "kernel.cu").is_file() and (f / "metadata.json").is_file(), f
        json.loads((f / "metadata.json").read_text(encoding="utf-8"))
    index = out / "index.jsonl"
    ids = [json.loads(x)["id"] for x in index.read_text(encoding="utf-8").splitlines()] if index.exists() else []
    assert sorted(ids) == sorted(f.name for f in folders)


def _usage_error(proc, mention: str, code: int = 2) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernel-miner: error:"), proc.stderr
    assert mention in lines[0]


def _partial_failure(proc, out: Path, bad_name: str) -> None:
    """Exit 1: the bad input has exactly one error line naming it, the good kernel is extracted."""
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    mentions = [line for line in proc.stderr.splitlines() if bad_name in line]
    assert len(mentions) == 1, proc.stderr
    assert mentions[0].startswith("kernel-miner: error:"), mentions[0]
    assert [m["name"] for m in load_dataset(out)] == ["good_kernel"]
    _assert_clean(out)


def test_missing_path(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_miner("extract", tmp_path / "does-not-exist", "--output-dir", out)
    _usage_error(proc, "does-not-exist")
    assert not out.exists() or not any(out.iterdir())


def test_missing_input_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_miner("--input-file", tmp_path / "nope.cuh", "--output-dir", out)
    _usage_error(proc, "nope.cuh")


def test_directory_without_cuda(tmp_path: Path) -> None:
    """Nothing to do has its own exit code (3): neither a silent success nor a failed input."""
    src = tmp_path / "src"
    _write(src / "README.md", "# notes\n")
    _write(src / "tool.py", "print('hi')\n")
    _write(src / "host.cpp", "int add(int a, int b) { return a + b; }\n")
    _write(src / "api.h", "#pragma once\nint add(int a, int b);\n")
    out = tmp_path / "out"
    proc = run_miner("extract", src, "--output-dir", out)
    _usage_error(proc, "__global__", code=3)
    _assert_clean(out)
    assert not load_dataset(out)


# (A Latin-1 source is no bad input: compilers read bytes, so it is mined; tests/test_dev3_patterns.py.)
BAD_FILES = {
    "binary": ("blob.cu", b"\x7fELF\x02\x01\x01\x00\x00\x00__global__\x00\xff\xfe" * 8),
    "empty": ("empty.cu", b""),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_beside_good_one(case: str, tmp_path: Path) -> None:
    name, data = BAD_FILES[case]
    good = _write(tmp_path / "good.cu", GOOD)
    bad = _write(tmp_path / name, data)
    out = tmp_path / "out"
    proc = run_miner("extract", good, bad, "--output-dir", out)
    _partial_failure(proc, out, name)


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_bad_file_alone(case: str, tmp_path: Path) -> None:
    """The only input fails: exit 1 (an input problem, not a usage one) and an empty dataset."""
    name, data = BAD_FILES[case]
    bad = _write(tmp_path / name, data)
    out = tmp_path / "out"
    proc = run_miner("--input-file", bad, "--output-dir", out)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    errors = _error_lines(proc.stderr)
    assert len(errors) == 1 and name in errors[0], proc.stderr
    assert not load_dataset(out)
    _assert_clean(out)


def test_syntax_errors_give_partial_results(tmp_path: Path) -> None:
    src = _write(tmp_path / "broken.cu", GOOD + """
__global__ void broken_kernel(float* x, int n) {
  x[threadIdx.x] = ;
  int = 3 +;
}

__global__ void unterminated_kernel(float* x, int n) {
  if (n > 0) {
    x[0] = 1.f;
""")
    out = tmp_path / "out"
    proc = run_miner("extract", src, "--output-dir", out)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode in (0, 1), proc.stderr
    metas = {m["name"]: m for m in load_dataset(out)}
    assert "good_kernel" in metas, proc.stderr
    good = metas["good_kernel"]
    assert (good["source"]["start_line"], good["source"]["end_line"]) == (1, 4)
    assert (out / good["id"] / "kernel.cu").read_text(encoding="utf-8").rstrip("\n") == GOOD.rstrip("\n")
    diags = [m["diagnostics"] for m in metas.values()]
    assert any(d["errors"] >= 1 and d["messages"] for d in diags), diags
    _assert_clean(out)


def test_symlink_loop(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src / "good.cu", GOOD)
    (src / "again").symlink_to(src, target_is_directory=True)
    (src / "a.cu").symlink_to(src / "b.cu")
    (src / "b.cu").symlink_to(src / "a.cu")
    out = tmp_path / "out"
    proc = run_miner("extract", src, "--output-dir", out, timeout=60)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    errors = _error_lines(proc.stderr)
    assert errors and all("loop" in e for e in errors), proc.stderr
    assert any("a.cu" in e for e in errors) and any("b.cu" in e for e in errors), proc.stderr
    assert [m["name"] for m in load_dataset(out)] == ["good_kernel"]
    _assert_clean(out)


def test_unreadable_file(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _write(src / "good.cu", GOOD)
    secret = _write(src / "secret.cu", GOOD.replace("good", "secret"))
    secret.chmod(0)
    try:
        if os.access(secret, os.R_OK):
            pytest.skip("running as a user who can read mode-000 files (root)")
        out = tmp_path / "out"
        proc = run_miner("extract", src, "--output-dir", out)
        _partial_failure(proc, out, "secret.cu")
    finally:
        secret.chmod(0o644)


def test_output_path_is_a_file(tmp_path: Path) -> None:
    good = _write(tmp_path / "good.cu", GOOD)
    out = _write(tmp_path / "out", "keep me\n")
    proc = run_miner("extract", good, "--output-dir", out)
    _usage_error(proc, "out")
    assert out.read_text() == "keep me\n"


def test_awkward_kernel_names(tmp_path: Path) -> None:
    """A 300-character name and names differing only in case get safe, distinct folders."""
    long_name = "k" + "_very_long_kernel_name" * 13 + "_end"
    assert len(long_name) > 255
    body = "(float* x) {\n  x[threadIdx.x] = 0.f;\n}\n"
    src = _write(tmp_path / "names.cu", "".join(
        f"__global__ void {n}{body}\n" for n in (long_name, "Scale_kernel", "scale_kernel", "SCALE_KERNEL")
    ))
    out = tmp_path / "out"
    proc = run_miner("extract", src, "--output-dir", out)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    metas = load_dataset(out)
    assert sorted(m["name"] for m in metas) == sorted([long_name, "Scale_kernel", "scale_kernel", "SCALE_KERNEL"])
    ids = [m["id"] for m in metas]
    assert len({i.lower() for i in ids}) == len(ids) == 4
    for m in metas:
        assert len(m["id"]) <= 100 and re.fullmatch(r"[A-Za-z0-9_.-]+", m["id"]), m["id"]
        assert m["name"] in (out / m["id"] / "kernel.cu").read_text(encoding="utf-8")
    _assert_clean(out)
