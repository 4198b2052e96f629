"""metadata/kernel.schema.json against what the real pipeline writes, and the shared metadata updates.

One module-scoped run over the fixture corpus: extract (every kernel), build (a few kernels, real nvcc),
validate without a GPU (outcomes `skipped`), enrich against tests/fake_llm_server.py (one kernel's
analysis scripted to fail), validate again (the generated tests now exist). Every metadata.json and
every index.jsonl line must then match the schema, and index.jsonl must equal the metadata files.
"""

from __future__ import annotations

import copy
import json
import multiprocessing
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import load_dataset, run_miner
from fake_llm_server import FakeLLMServer, Rule, kernel_brain

from miner import dataset
from miner.dataset import schema

ROOT = Path(__file__).resolve().parents[1]
BUILT = ["fill_kernel", "resample_forward_kernel", "apply_affine_kernel", "row_mean_kernel"]
ENRICHED = ["fill_kernel", "resample_forward_kernel", "apply_affine_kernel"]
needs_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def schema_errors(meta: dict[str, Any]) -> list[str]:
    return schema.errors(meta, "kernel")


def by_name(metas: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(m for m in metas if m["name"] == name)


@pytest.fixture(scope="module")
def pipeline(corpus_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("schema-pipeline")
    out = tmp / "ds"
    steps: dict[str, subprocess.CompletedProcess[str]] = {}
    steps["extract"] = run_miner("extract", corpus_copy, "-o", out, "-q", timeout=300)
    assert steps["extract"].returncode in (0, 1), steps["extract"].stderr
    steps["build"] = run_miner("build", out, "--kernels", ",".join(BUILT), "--arch", "sm_90", "-j", "2",
                               "--cache-dir", tmp / "cache", "-q", timeout=600)
    assert "Traceback" not in steps["build"].stderr
    steps["validate"] = run_miner("validate", out, "--kernels", ",".join(BUILT), "-q", timeout=300)
    assert "Traceback" not in steps["validate"].stderr
    after_validate = load_dataset(out)
    rules = [Rule(r"Analyse the CUDA kernel `apply_affine_kernel`", ["no JSON here", "still none"])]
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    with FakeLLMServer(rules, default=kernel_brain) as srv:
        env.update(PYTHONPATH=str(ROOT), OPENAI_API_KEY="sk-schema-test")
        steps["enrich"] = subprocess.run(
            [sys.executable, "-m", "miner", "enrich", str(out), "--base-url", srv.base_url, "--model", "fake-model",
             "--kernels", ",".join(ENRICHED), "--concurrency", "2"],
            env=env, capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
    assert steps["enrich"].returncode == 1, steps["enrich"].stderr[-2000:]  # apply_affine's analysis failed
    assert "Traceback" not in steps["enrich"].stderr
    after_enrich = load_dataset(out)
    steps["revalidate"] = run_miner("validate", out, "--kernels", ",".join(BUILT), "-q", timeout=300)
    assert "Traceback" not in steps["revalidate"].stderr
    return {"out": out, "steps": steps, "after_validate": after_validate, "after_enrich": after_enrich,
            "final": load_dataset(out)}


@needs_nvcc
def test_every_stage_output_matches_the_schema(pipeline: dict[str, Any]) -> None:
    for stage in ("after_validate", "after_enrich", "final"):
        metas = pipeline[stage]
        assert len(metas) >= 20
        for meta in metas:
            assert not schema_errors(meta), (stage, meta["id"], schema_errors(meta))


@needs_nvcc
def test_the_pipeline_wrote_every_block(pipeline: dict[str, Any]) -> None:
    metas = pipeline["final"]
    for meta in metas:
        for block in ("launches", "closure", "unresolved", "instantiations"):
            assert block in meta, (meta["id"], block)
    for name in BUILT:
        meta = by_name(metas, name)
        b = meta["build"]
        assert b["units"] == len(meta["instantiations"]) == b["ok"] + b["failed"] + b["timeout"] + b["skipped"]
        assert all("build" in inst for inst in meta["instantiations"])
        assert meta["validation"]["outcome"] in ("skipped", "build_failed"), meta["validation"]
    assert by_name(metas, "fill_kernel")["launches"][0]["kind"] == "cudaLaunchKernel"
    assert {i["origin"] for i in by_name(metas, "resample_forward_kernel")["instantiations"]} == {"dispatch"}
    assert "build" not in by_name(metas, "relu_kernel") and "validation" not in by_name(metas, "relu_kernel")
    stages = {name: {s: v["status"] for s, v in by_name(metas, name)["enrichment"]["stages"].items()}
              for name in ENRICHED}
    assert stages["fill_kernel"] == stages["resample_forward_kernel"] == {
        "analysis": "ok", "tests": "unverified", "describe": "ok"}
    assert stages["apply_affine_kernel"] == {"analysis": "failed", "tests": "blocked", "describe": "blocked"}
    # The generated tests ran under validate without a GPU: skipped, not passed.
    # What matters is that nothing ran: how many skips pytest reports for a module-level skip differs
    # between pytest releases (one per test, or one for the module), so the count is not asserted.
    v = by_name(metas, "fill_kernel")["validation"]
    assert v["outcome"] == "skipped" and v["pass_exe"] is False, v
    assert v["tests"]["skipped"] >= 1 and v["tests"].get("passed", 0) == 0 and v["tests"].get("failed", 0) == 0, v


@needs_nvcc
def test_enrich_files_the_metadata_points_to_match_their_schemas(pipeline: dict[str, Any]) -> None:
    analysis = schema.validator("analysis")
    description = schema.validator("analysis", "description")
    out = pipeline["out"]
    for meta in pipeline["final"]:
        enrichment = meta.get("enrichment")
        if not enrichment:
            continue
        kdir = out / meta["id"]
        assert json.loads((kdir / enrichment["record"]).read_text())["kernel"] == meta["id"]
        for stage in enrichment["stages"].values():
            for rel in stage.get("files", []):
                path = kdir / rel
                assert path.is_file(), path
                if rel == "enrich/analysis.json":
                    analysis.validate(json.loads(path.read_text())["analysis"])
                elif rel == "enrich/description.json":
                    description.validate(json.loads(path.read_text())["structured"])


@needs_nvcc
def test_index_holds_exactly_the_metadata(pipeline: dict[str, Any]) -> None:
    out = pipeline["out"]
    lines = [json.loads(line) for line in (out / "index.jsonl").read_text(encoding="utf-8").splitlines()]
    assert {r["id"]: r for r in lines} == {m["id"]: m for m in pipeline["final"]}
    assert len(lines) == len(pipeline["final"])
    for line in lines:
        assert not schema_errors(line)


@needs_nvcc
def test_index_after_enrich_alone(pipeline: dict[str, Any], tmp_path: Path) -> None:
    """enrich on its own (no validate after it) leaves index.jsonl carrying the `enrichment` blocks."""
    ds = tmp_path / "ds"
    shutil.copytree(pipeline["out"], ds)
    for meta in load_dataset(ds):
        kdir = ds / meta["id"]
        meta.pop("enrichment", None)
        (kdir / "metadata.json").write_text(json.dumps(meta))
    dataset.rewrite_index(ds)
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    env.update(PYTHONPATH=str(ROOT), OPENAI_API_KEY="sk-schema-test")
    with FakeLLMServer(default=kernel_brain) as srv:
        proc = subprocess.run(
            [sys.executable, "-m", "miner", "enrich", str(ds), "--base-url", srv.base_url, "--model", "fake-model",
             "--kernels", "fill_kernel", "--stages", "analysis", "--force"],
            env=env, capture_output=True, text=True, timeout=300, cwd=ROOT, check=False)
        assert srv.count == 0  # answered from the copied cache
    assert proc.returncode == 0, proc.stderr
    index = {r["id"]: r for r in dataset.read_index(ds)}
    assert index == {m["id"]: m for m in load_dataset(ds)}
    fill = next(r for r in index.values() if r["name"] == "fill_kernel")
    assert fill["enrichment"]["stages"]["analysis"]["status"] == "ok"


# ------------------------------------------------------------------------------------------ negative cases

MUTATIONS: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    ("unknown build status", lambda m: m["instantiations"][0]["build"].update(status="broken"), "status"),
    ("ok build without library", lambda m: m["instantiations"][0]["build"].update(library=None), "library"),
    ("failed build without log",
     lambda m: (m["instantiations"][0]["build"].update(status="failed", library=None, error="x"),
                m["instantiations"][0]["build"].pop("log", None)), "log"),
    ("summary without pass_call", lambda m: m["build"].pop("pass_call"), "pass_call"),
    ("negative unit count", lambda m: m["build"].update(units=-1), "units"),
    ("unknown ctype", lambda m: m["instantiations"][0]["launcher"]["params"][0].update(ctype="float128"), "ctype"),
    ("unknown origin", lambda m: m["instantiations"][0].update(origin="guessed"), "origin"),
    ("absolute unit path", lambda m: m["instantiations"][0].update(unit="/tmp/unit.cu"), "unit"),
    ("closure without includes", lambda m: m["closure"].pop("includes"), "includes"),
    ("unresolved without reason", lambda m: m["unresolved"].append({"symbol": "x", "where": "a.cu:1"}), "reason"),
    ("launch line zero", lambda m: m["launches"][0].update(line=0), "line"),
    ("unknown validation outcome", lambda m: m["validation"].update(outcome="mostly_fine"), "outcome"),
    ("pass_exe without passing", lambda m: m["validation"].update(pass_exe=True), "passed"),
    ("validation without reason", lambda m: m["validation"].pop("reason"), "reason"),
    ("unknown oracle status",
     lambda m: m["validation"].setdefault("oracle_summary", {}).update(determinism={"status": "meh"}), "status"),
    ("unknown enrich status", lambda m: m["enrichment"]["stages"]["tests"].update(status="done"), "status"),
    ("failed stage without error", lambda m: m["enrichment"]["stages"]["tests"].update(status="failed", error=None),
     "error"),
    ("unknown blame", lambda m: m["enrichment"]["stages"]["tests"].update(blame="cosmic rays"), "blame"),
]


@needs_nvcc
@pytest.mark.parametrize("mutate, where", [(m, w) for _, m, w in MUTATIONS], ids=[i for i, _, _ in MUTATIONS])
def test_schema_rejects_wrong_blocks(pipeline: dict[str, Any], mutate: Callable[[dict[str, Any]], None],
                                     where: str) -> None:
    meta = copy.deepcopy(by_name(pipeline["final"], "fill_kernel"))
    assert not schema_errors(meta)
    mutate(meta)
    errors = schema_errors(meta)
    assert errors and any(where in e for e in errors), errors


@needs_nvcc
def test_later_stages_may_add_fields(pipeline: dict[str, Any]) -> None:
    meta = copy.deepcopy(by_name(pipeline["final"], "fill_kernel"))
    meta["perf"] = {"ms": 1.0}
    meta["validation"]["oracles"] = {"determinism": {"status": "ok"}}
    meta["validation"]["new_field"] = 1
    meta["instantiations"][0]["build"]["ptx"] = "units/default/unit.ptx"
    meta["enrichment"]["stages"]["tests"]["reviewer"] = "someone"
    meta["launches"][0]["note"] = "added later"
    meta["unresolved"].append({"symbol": "helper", "reason": "use of undeclared identifier 'helper'",
                               "where": "a.cu:3"})
    assert not schema_errors(meta)


# ------------------------------------------------------------------------------------- metadata updates

def _kernel(root: Path, kid: str, **extra: Any) -> None:
    (root / kid).mkdir(parents=True)
    (root / kid / "metadata.json").write_text(json.dumps({"id": kid, **extra}))


def test_update_many_merges_writes_each_file_and_the_index_once(tmp_path: Path) -> None:
    for kid in ("a-1", "b-2", "c-3"):
        _kernel(tmp_path, kid, n=0)
    dataset.rewrite_index(tmp_path)
    before = (tmp_path / "index.jsonl").stat().st_mtime_ns
    metas = dataset.update_many(tmp_path, {"a-1": {"build": {"ok": 1}}, "c-3": {"n": 3}})
    assert metas["a-1"] == {"id": "a-1", "n": 0, "build": {"ok": 1}}
    assert dataset.load_metadata(tmp_path / "c-3") == {"id": "c-3", "n": 3}
    assert [r["id"] for r in dataset.read_index(tmp_path)] == ["a-1", "b-2", "c-3"]
    assert dataset.read_index(tmp_path)[2]["n"] == 3
    assert (tmp_path / "index.jsonl").stat().st_mtime_ns >= before
    # index=False leaves the index alone until rewrite_index.
    dataset.update_many(tmp_path, {"b-2": {"validation": {"outcome": "skipped"}}}, index=False)
    assert "validation" not in dataset.read_index(tmp_path)[1]
    dataset.rewrite_index(tmp_path)
    assert dataset.read_index(tmp_path)[1]["validation"] == {"outcome": "skipped"}
    assert not list(tmp_path.rglob("*.tmp"))


def test_rewrite_index_keeps_order_adds_new_and_drops_gone(tmp_path: Path) -> None:
    for kid in ("z-1", "a-2"):
        _kernel(tmp_path, kid)
    dataset.write_index(tmp_path, [{"id": "z-1"}, {"id": "gone-3"}, {"id": "a-2"}])
    _kernel(tmp_path, "m-4")
    (tmp_path / "broken-5").mkdir()
    (tmp_path / "broken-5" / "metadata.json").write_text("{not json")
    dataset.rewrite_index(tmp_path)
    assert [r["id"] for r in dataset.read_index(tmp_path)] == ["z-1", "a-2", "m-4"]
    # Compact lines, one per kernel.
    assert (tmp_path / "index.jsonl").read_text().splitlines()[0] == '{"id":"z-1"}'


def test_update_many_without_an_index_writes_a_whole_one(tmp_path: Path) -> None:
    for kid in ("a-1", "b-2"):
        _kernel(tmp_path, kid)
    dataset.update_metadata(tmp_path, "b-2", {"x": 1})
    assert [r["id"] for r in dataset.read_index(tmp_path)] == ["a-1", "b-2"]


def test_update_many_refuses_metadata_that_is_not_an_object(tmp_path: Path) -> None:
    (tmp_path / "k-1").mkdir()
    (tmp_path / "k-1" / "metadata.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a JSON object"):
        dataset.update_many(tmp_path, {"k-1": {"x": 1}})


def _bump(root: str, key: str, times: int) -> None:
    for i in range(times):
        dataset.update_many(Path(root), {"k-1": {key: i}})


def test_concurrent_updates_from_processes_lose_nothing(tmp_path: Path) -> None:
    """build, validate and enrich can run at once on one folder: the lock keeps every block."""
    _kernel(tmp_path, "k-1")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_bump, args=(str(tmp_path), f"stage{j}", 40)) for j in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    meta = dataset.load_metadata(tmp_path / "k-1")
    assert meta == {"id": "k-1", "stage0": 39, "stage1": 39, "stage2": 39}
    assert dataset.read_index(tmp_path) == [meta]


def test_select_by_id_name_part_metadata_name_and_glob(tmp_path: Path) -> None:
    _kernel(tmp_path, "relu_kernel-aaaaaaaaaaaa", name="relu_kernel")
    _kernel(tmp_path, "ns_scale-bbbbbbbbbbbb", name="scale")  # folder name from the qualified name
    _kernel(tmp_path, "add_kernel-cccccccccccc", name="add_kernel")
    dirs = dataset.kernel_dirs(tmp_path)
    names = lambda ds: [d.name.split("-")[0] for d in ds]  # noqa: E731
    assert names(dataset.select(dirs, [])) == ["add_kernel", "ns_scale", "relu_kernel"]
    assert names(dataset.select(dirs, ["relu_kernel-aaaaaaaaaaaa"])) == ["relu_kernel"]
    assert names(dataset.select(dirs, ["relu_kernel"])) == ["relu_kernel"]
    assert names(dataset.select(dirs, ["scale"])) == ["ns_scale"]
    assert names(dataset.select(dirs, ["*_kernel"])) == ["add_kernel", "relu_kernel"]
    assert dataset.select(dirs, ["nothing*"]) == []


def test_enrich_selects_kernels_like_build_and_validate(tmp_path: Path) -> None:
    from miner.errors import NothingToDo

    def select_kernels(root: Path, wanted: tuple[str, ...]) -> list[Path]:
        return dataset.select_kernels(root, wanted, required=True)  # what enrich calls

    _kernel(tmp_path, "relu_kernel-aaaaaaaaaaaa", name="relu_kernel")
    _kernel(tmp_path, "add_kernel-cccccccccccc", name="add_kernel")
    assert [d.name for d in select_kernels(tmp_path, ("re*",))] == ["relu_kernel-aaaaaaaaaaaa"]
    assert len(select_kernels(tmp_path, ())) == 2
    with pytest.raises(NothingToDo, match="matched no kernel"):
        select_kernels(tmp_path, ("mul_kernel",))


def test_index_refresher_waits_between_rewrites(tmp_path: Path) -> None:
    _kernel(tmp_path, "a-1")
    refresher = dataset.IndexRefresher(tmp_path, every_s=3600)
    refresher.maybe()
    assert not (tmp_path / "index.jsonl").exists()
    refresher.now()
    assert dataset.read_index(tmp_path) == [{"id": "a-1"}]
    _kernel(tmp_path, "b-2")
    refresher.maybe()
    assert len(dataset.read_index(tmp_path)) == 1
    dataset.IndexRefresher(tmp_path, every_s=0).maybe()
    assert len(dataset.read_index(tmp_path)) == 2
