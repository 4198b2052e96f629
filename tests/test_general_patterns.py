"""`extract --build` on tests/fixtures/general: patterns of repositories the unit pipeline was not tuned on
(issue 14), each reproduced by a kernel of our own. Every unit is judged by the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, load_dataset, run_miner

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    src = tmp_path_factory.mktemp("general-src") / "general"
    shutil.copytree(FIXTURES / "general", src)
    out = tmp_path_factory.mktemp("general-out")
    cache = tmp_path_factory.mktemp("general-cache")
    proc = run_miner("extract", src, "-o", out, "--build", "-j", "2", env={"XDG_CACHE_HOME": str(cache)},
                     timeout=600)
    return {"proc": proc, "out": out, "metas": load_dataset(out)}


def _meta(dataset: dict[str, Any], name: str) -> dict[str, Any]:
    found = [m for m in dataset["metas"] if m["name"] == name]
    assert len(found) == 1, [m["source"]["path"] for m in found]
    return found[0]


def _built(meta: dict[str, Any]) -> dict[str, str]:
    return {i["id"]: i["build"]["status"] + (": " + (i["build"].get("error") or "") if i["build"].get("error") else "")
            for i in meta["instantiations"]}


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    return (Path(dataset["out"]) / meta["id"] / "units" / inst / "unit.cu").read_text(encoding="utf-8")


def test_using_namespace_of_a_shimmed_framework_is_dropped_when_no_shim_is_inlined(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "axpb_kernel")
    assert _built(m) == {"default": "ok"}
    assert "using namespace at;" not in _unit(dataset, m, "default")


def test_fast_atomic_add_and_int64_half_arithmetic_build_for_every_dispatched_type(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "weighted_scatter_backward")
    assert _built(m) == {"float": "ok", "double": "ok", "half": "ok"}
    assert "fastAtomicAdd" in m["closure"]["shims"]


def test_tensor_info_by_value_and_no_type_dropped_near_a_host_call_the_shim_declares(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "strided_copy")
    assert _built(m) == {"float": "ok", "double": "ok"}
    assert {"TensorInfo", "IndexToOffset"} <= set(m["closure"]["shims"])


def test_explicit_instantiations_written_through_project_macros(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "tile_sum")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {
        "float_64": "explicit", "float_256": "explicit", "double_64": "explicit", "double_256": "explicit"}
    assert set(_built(m).values()) == {"ok"}
