"""`kernel-miner export`: Parquet/JSONL shards that `datasets.load_dataset` reads, the dataset card, dedupe and
the license filter, on a dataset `kernel-miner mine` made from own fixture repos."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from miner.dataset import schema
from miner.scale import dedupe
from tests.conftest import run_miner

datasets = pytest.importorskip("datasets")
pytest.importorskip("pyarrow")
pytest.importorskip("datasketch")


@pytest.fixture()
def ds(mined_repos: Path, tmp_path: Path) -> Path:
    shutil.copytree(mined_repos, tmp_path / "ds")
    return tmp_path / "ds"


def test_parquet_export_loads_with_datasets(ds: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    res = run_miner("export", ds, "--format", "parquet", "--out", out)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"7 kernels -> {out}/ (1 parquet files, README.md)"
    files = sorted(str(p) for p in (out / "data").glob("*.parquet"))
    d = datasets.load_dataset("parquet", data_files=files, split="train")
    assert d.num_rows == 7
    rows = {r["name"] + ":" + r["path"]: r for r in d}
    scale = rows["scale_kernel:src/scale.cu"]
    assert scale["code"].startswith("template <typename T>\n__global__ void scale_kernel(")
    assert scale["license"] == "MIT" and scale["is_template"] is True
    assert [u["id"] for u in scale["units"]] == ["float"]
    assert scale["units"][0]["origin"] == "call_site" and "km_launch_" in scale["units"][0]["code"]
    saxpy = rows["saxpy_unrolled:kernels/saxpy.cuh"]
    assert sorted(json.loads(u["template_args"])["UNROLL"] for u in saxpy["units"]) == ["2", "4"]
    assert rows["relu_inplace:relu.cu"]["license"] is None
    if shutil.which("nvcc"):
        assert all(r["build_ok"] is True for r in d) and {u["build"] for r in d for u in r["units"]} == {"ok"}
    meta = json.loads(scale["metadata"])
    assert meta["id"] == scale["id"] and meta["source"]["sha256"] == scale["sha256"]
    assert [schema.errors(json.loads(r["metadata"])) for r in d] == [[]] * 7
    # Duplicates across repos: add_one vendored verbatim, block_sum copied with a scale factor.
    vendored = rows["add_one:kernels/vendored.cu"]
    assert vendored["duplicate_of"] == rows["add_one:src/scale.cu"]["id"] and vendored["duplicate_kind"] == "exact"
    near = rows["block_sum:kernels/vendored.cu"]
    assert near["duplicate_of"] == rows["block_sum:src/reduce.cu"]["id"] and near["duplicate_kind"] == "near"
    assert sum(r["duplicate_of"] is None for r in d) == 5
    card = (out / "README.md").read_text()
    assert card.startswith("---\nlicense: other\n") and "path: data/train-*.parquet" in card
    assert "| licenses | MIT | 3 |" in card and "| licenses | unknown | 1 |" in card
    assert "| `units` | list<struct> |" in card and "| duplicate | exact | 1 |" in card
    assert "| alpha | 3 |" in card and "kernel-miner mine " in card


def test_jsonl_export_with_license_filter_and_duplicates_dropped(ds: Path, tmp_path: Path) -> None:
    out = tmp_path / "jsonl"
    res = run_miner("export", ds, "--format", "jsonl", "--out", out, "--license-allow", "MIT,Apache-2.0",
                    "--drop-duplicates")
    assert res.returncode == 0, res.stderr
    assert "4 kernels (1 not in --license-allow, 2 duplicates left out)" in res.stdout
    d = datasets.load_dataset("json", data_files=str(out / "data" / "*.jsonl"), split="train")
    assert sorted(d["name"]) == ["add_one", "block_sum", "saxpy_unrolled", "scale_kernel"]
    assert set(d["license"]) == {"MIT", "Apache-2.0"}
    assert "This export admits only: MIT, Apache-2.0 (1 kernels left out)." in (out / "README.md").read_text()
    # A second export replaces the first one whole.
    res = run_miner("export", ds, "--format", "jsonl", "--out", out)
    assert res.returncode == 0 and len(list((out / "data").iterdir())) == 1
    assert len((out / "data" / "train-00000-of-00001.jsonl").read_text().splitlines()) == 7


def test_export_of_a_folder_that_is_not_a_dataset(tmp_path: Path) -> None:
    res = run_miner("export", tmp_path, "--out", tmp_path / "x")
    assert res.returncode == 2
    why = "not a dataset folder (no index.jsonl, no kernel folders)"
    assert res.stderr.strip() == f"kernel-miner: error: {tmp_path}: {why}"


def test_normalize_keeps_strings_and_drops_comments() -> None:
    text = 'a = "// not a comment"; // comment\n/* block\n */ b  =  1;'
    assert dedupe.normalize(text) == 'a = "// not a comment"; b = 1;'


def test_clusters_exact_near_and_distinct() -> None:
    other = "__global__ void relu(float* x, int n) { int i = threadIdx.x; if (i < n && x[i] < 0) x[i] = 0; }"
    body = ("__global__ void k(float* x, float* y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; "
            "if (i < n) { float v = x[i]; v = v * v + 2.0f * v; y[i] = v - 1.0f; } "
            "for (int s = 0; s < 4; ++s) { y[i] += x[(i + s) % n]; } }")
    items = [dedupe.Item("a", body), dedupe.Item("b", "// copy\n" + body.replace(" ", "  ")),
             dedupe.Item("c", body.replace("y[i] = v - 1.0f;", "y[i] = v - 3.0f;")), dedupe.Item("d", other)]
    got = dedupe.clusters(items)
    assert got["a"]["duplicate_of"] is None and got["a"]["cluster_size"] == 3
    assert (got["b"]["duplicate_of"], got["b"]["kind"]) == ("a", "exact")
    assert (got["c"]["duplicate_of"], got["c"]["kind"]) == ("a", "near") and got["c"]["similarity"] >= 0.8
    assert got["d"] == {**got["d"], "cluster": "d", "duplicate_of": None, "cluster_size": 1}
