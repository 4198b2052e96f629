"""`extract` over our own fixture corpus, checked against the hand-written corpus_expected.json."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from conftest import CORPUS, CORPUS_EXPECTED, ROOT, load_dataset, run_miner

EXPECTED: dict[str, Any] = json.loads(CORPUS_EXPECTED.read_text(encoding="utf-8"))
KERNELS: list[dict[str, Any]] = EXPECTED["kernels"]
SCHEMA = json.loads((ROOT / "metadata" / "kernel.schema.json").read_text(encoding="utf-8"))
SUMMARY = re.compile(r"^(\d+) kernels? from (\d+) files? \((\d+) failed\) -> (.+)$", re.M)


def _key(k: dict[str, Any]) -> tuple[str, str, int, int]:
    return (k["file"], k["name"], k["start_line"], k["end_line"])


def _meta_key(m: dict[str, Any]) -> tuple[str, str, int, int]:
    s = m["source"]
    return (s["path"], m["name"], s["start_line"], s["end_line"])


def _norm_type(text: str) -> str:
    """Whitespace-insensitive form of a type: `const T *x` and `const T* x` compare equal."""
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s*([*&<>,])\s*", r"\1", text)


def _source_range(root: Path, k: dict[str, Any]) -> bytes:
    """Bytes of lines start..end; the definition ends at the closing brace of the last line."""
    lines = (root / k["file"]).read_bytes().splitlines(keepends=True)
    text = b"".join(lines[k["start_line"] - 1 : k["end_line"]])
    assert text.rstrip().endswith(b"}"), "expected data: the range must end at the closing brace"
    return text.rstrip(b"\r\n")


def _extract(tmp: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path, list[dict[str, Any]]]:
    out = tmp / "out"
    proc = run_miner(*args, "--output-dir", out)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 0, proc.stderr
    return proc, out, load_dataset(out)


@pytest.fixture(scope="module", params=["auto", "treesitter"])
def extracted(request: pytest.FixtureRequest, corpus_copy: Path, tmp_path_factory: pytest.TempPathFactory):
    """The whole corpus, once with the default frontend and once with the tree-sitter fallback."""
    frontend = request.param
    proc, out, metas = _extract(tmp_path_factory.mktemp(f"run-{frontend}"), "extract", str(corpus_copy),
                                "--frontend", frontend)
    if frontend == "treesitter":
        assert {m["frontend"] for m in metas} == {"treesitter"}
    return proc, out, metas


@pytest.fixture(scope="module")
def by_key(extracted) -> dict[tuple[str, str, int, int], dict[str, Any]]:
    return {_meta_key(m): m for m in extracted[2]}


def test_exact_kernel_set(extracted) -> None:
    found = sorted(_meta_key(m) for m in extracted[2])
    assert found == sorted(_key(k) for k in KERNELS)


def test_files_without_kernels_yield_nothing(extracted) -> None:
    paths = {m["source"]["path"] for m in extracted[2]}
    assert paths.isdisjoint(EXPECTED["files_without_kernels"])
    assert paths == set(EXPECTED["files_with_kernels"])


def test_summary_line(extracted, corpus_expected) -> None:
    proc, out, _ = extracted
    m = SUMMARY.search(proc.stdout + proc.stderr)
    assert m, f"no summary line in:\n{proc.stdout}\n{proc.stderr}"
    assert int(m.group(1)) == len(KERNELS)
    assert int(m.group(2)) >= len(corpus_expected["files_with_kernels"])
    assert int(m.group(3)) == 0
    assert Path(m.group(4).rstrip("/")).resolve() == out.resolve()


@pytest.mark.parametrize("k", KERNELS, ids=lambda k: f"{k['file']}:{k['name']}:{k['start_line']}")
def test_kernel_matches_expected(k: dict[str, Any], by_key, corpus_copy: Path, extracted) -> None:
    meta = by_key.get(_key(k))
    assert meta is not None, f"kernel not found: {_key(k)}"
    assert meta["qualified_name"] == k["qualified_name"]
    assert meta["is_specialization"] is k["is_specialization"]
    assert [p["name"] for p in meta["params"]] == [p["name"] for p in k["params"]]
    assert [_norm_type(p["type"]) for p in meta["params"]] == [_norm_type(p["type"]) for p in k["params"]]
    for p in meta["params"]:
        t = p["type"]
        assert p["pointer"] is ("*" in t), p
        assert p["restrict"] is ("__restrict__" in t), p
        assert p["const"] is t.lstrip().startswith("const "), p
    got_tp = [
        {**tp, "type": _norm_type(tp["type"]) if tp["type"] else tp["type"]} for tp in meta["template_params"]
    ]
    assert got_tp == k["template_params"]
    assert [(a["name"], re.sub(r"\s+", " ", a["text"])) for a in meta["attributes"]] == [
        (a["name"], a["text"]) for a in k["attributes"]
    ]
    # The kernel text is the source range byte for byte: `template` (or first keyword) to `}`.
    text = (extracted[1] / meta["id"] / "kernel.cu").read_bytes()
    want = _source_range(corpus_copy, k)
    assert text == want
    assert meta["source"]["sha256"] == hashlib.sha256(want).hexdigest()
    assert meta["name"] in meta["signature"]


def test_ids_unique_safe_and_case_insensitive(extracted) -> None:
    ids = [m["id"] for m in extracted[2]]
    assert len(ids) == len(set(ids)) == len(KERNELS)
    assert len({i.lower() for i in ids}) == len(ids)
    assert all(re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", i) for i in ids), ids
    # Repeated names (two normalize_kernel files, a specialization beside its primary) stay apart.
    for name in ("normalize_kernel", "half_scale_kernel"):
        assert len({m["id"] for m in extracted[2] if m["name"] == name}) == 2
    dirs = {p.name for p in extracted[1].iterdir() if p.is_dir()}
    assert set(ids) <= dirs


@pytest.fixture(scope="module")
def default_run(corpus_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """A second run with no options (read-only): one run for the two tests below, not one per test and frontend."""
    return _extract(tmp_path_factory.mktemp("run-default"), "extract", str(corpus_copy))[2]


def test_ids_stable_across_runs(extracted, default_run: list[dict[str, Any]]) -> None:
    assert {_meta_key(m): m["id"] for m in default_run} == {_meta_key(m): m["id"] for m in extracted[2]}


def test_metadata_validates_against_schema(extracted) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for meta in extracted[2]:
        errors = sorted(validator.iter_errors(meta), key=str)
        assert not errors, f"{meta['id']}: {errors[0].message}"
        assert meta["frontend"] in ("clang", "treesitter")
        assert meta["diagnostics"]["count"] >= meta["diagnostics"]["errors"] >= 0


def test_index_has_one_line_per_kernel(extracted) -> None:
    _, out, metas = extracted
    lines = (out / "index.jsonl").read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    assert len(records) == len(metas)
    assert {r["id"]: r for r in records} == {m["id"]: m for m in metas}
    assert not list(out.rglob("*.tmp")), "temporary files left behind"


def test_clang_is_the_primary_frontend(default_run: list[dict[str, Any]]) -> None:
    assert {m["frontend"] for m in default_run} == {"clang"}


def test_valid_corpus_parses_without_errors(corpus_copy: Path, tmp_path: Path) -> None:
    """Every corpus file compiles with nvcc, so libclang errors point at gaps in the parse stubs."""
    _, _, metas = _extract(tmp_path, "extract", str(corpus_copy), "--frontend", "clang")
    bad = {m["source"]["path"]: m["diagnostics"]["messages"] for m in metas if m["diagnostics"]["errors"]}
    assert not bad


def test_input_file_form(corpus_copy: Path, tmp_path: Path) -> None:
    """`kernel-miner --input-file F --output-dir D` with no sub-command (the container entrypoint)."""
    target = corpus_copy / "ops" / "resample_kernel.cuh"
    _, _, metas = _extract(tmp_path, "--input-file", str(target))
    want = sorted((k["name"], k["start_line"], k["end_line"]) for k in KERNELS
                  if k["file"] == "ops/resample_kernel.cuh")
    assert sorted((m["name"], m["source"]["start_line"], m["source"]["end_line"]) for m in metas) == want


def test_provenance_from_git(tmp_path: Path) -> None:
    repo = tmp_path / "acme"
    shutil.copytree(ROOT / "tests" / "fixtures" / "corpus", repo)

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=repo, check=True, capture_output=True, text=True,
        ).stdout.strip()

    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "corpus")
    git("remote", "add", "origin", "https://example.com/acme/corpus.git")
    commit = git("rev-parse", "HEAD")
    # Extract a subdirectory: paths must still be relative to the repo root.
    _, _, metas = _extract(tmp_path, "extract", str(repo / "ops"))
    want = sorted(k["file"] for k in KERNELS if k["file"].startswith("ops/"))
    assert sorted(m["source"]["path"] for m in metas) == want
    for m in metas:
        assert m["source"]["repo"] == "https://example.com/acme/corpus.git"
        assert m["source"]["commit"] == commit
        assert m["source"]["license"] == EXPECTED["license"]


def test_trt_variant_gives_same_kernels(corpus_copy: Path, tmp_path: Path) -> None:
    """`-D KM_WITH_TRT` switches the helper header; the kernels themselves do not move."""
    _, _, metas = _extract(tmp_path, "extract", str(corpus_copy), "-D", "KM_WITH_TRT",
                           "-I", str(corpus_copy / "include"))
    assert sorted(_meta_key(m) for m in metas) == sorted(_key(k) for k in KERNELS)


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_pure_cuda_corpus_compiles_with_nvcc(tmp_path: Path) -> None:
    """The corpus is real CUDA: files without torch or HIP headers compile as they are."""
    files = [f for f in EXPECTED["files_with_kernels"]
             if f.endswith(".cu") and "<ATen/" not in (CORPUS / f).read_text(encoding="utf-8")]
    assert len(files) >= 8

    def compile_one(i_f: tuple[int, str]) -> tuple[str, subprocess.CompletedProcess[str]]:
        i, f = i_f
        cmd = ["nvcc", "-c", "-arch=sm_90", "-o", str(tmp_path / f"{i}.o"), str(CORPUS / f)]
        return f, subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)

    with ThreadPoolExecutor(max_workers=2) as pool:
        failed = {f: p.stderr[-400:] for f, p in pool.map(compile_one, enumerate(files)) if p.returncode}
    assert not failed
