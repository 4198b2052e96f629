"""Vendored header libraries (units.closure.vendored) on tests/fixtures/vendored: a library under a
third-party folder or in a git submodule is kept as an `#include` (with the project's configuring #define)
and carried into the dataset; one that includes the project's headers is inlined. Judged by the real nvcc."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, load_dataset, run_miner

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    src = tmp_path_factory.mktemp("vendored-src") / "vendored"
    shutil.copytree(FIXTURES / "vendored", src)
    out = tmp_path_factory.mktemp("vendored-out")
    cache = tmp_path_factory.mktemp("vendored-cache")
    proc = run_miner("extract", src, "-o", out, "--build", "-j", "2", env={"XDG_CACHE_HOME": str(cache)},
                     timeout=600)
    return {"proc": proc, "src": src, "out": out, "cache": cache,
            "metas": {m["name"]: m for m in load_dataset(out)}}


def _unit(dataset: dict[str, Any], name: str, inst: str) -> str:
    return (Path(dataset["out"]) / dataset["metas"][name]["id"] / "units" / inst / "unit.cu").read_text()


def test_every_unit_builds(dataset: dict[str, Any]) -> None:
    assert dataset["proc"].returncode == 0, dataset["proc"].stderr
    assert sorted(dataset["metas"]) == ["leaky", "pair_sums", "scale_lengths"]
    for m in dataset["metas"].values():
        assert {i["id"]: i["build"]["status"] for i in m["instantiations"]} == dict.fromkeys(
            [i["id"] for i in m["instantiations"]], "ok"), m["name"]


def test_library_under_third_party_is_included_after_the_projects_configuring_defines(dataset: dict[str, Any]) -> None:
    m = dataset["metas"]["scale_lengths"]
    (v,) = m["closure"]["vendored"]
    assert (v["library"], v["headers"], sorted(v["defines"]), v["source"]) == (
        "tv", ["tv/tv.hpp", "tv/exp/extra.hpp"], ["TV_ENABLE_EXPERIMENTAL", "TV_FORCE_CUDA"], "third_party/tv")
    # Each #define where the project wrote it (the experimental one only before the header that needs it),
    # after the toolkit and standard headers the project included before the library (<cuda.h>'s CUDA_VERSION).
    assert v["prelude"] == ["#include <cuda.h>", "#include <cstdio>", "#define TV_FORCE_CUDA", "#include <tv/tv.hpp>",
                            "#define TV_ENABLE_EXPERIMENTAL", "#include <tv/exp/extra.hpp>"]
    copy = (Path(dataset["out"]) / m["id"] / v["include_dir"]).resolve()
    assert (copy / "tv" / "detail" / "type_vec3.inl").is_file()
    text = _unit(dataset, "scale_lengths", "default")
    includes = text[text.index("// km:includes-begin"):text.index("// km:includes-end")]
    assert "\n".join(v["prelude"]) in includes
    body = text[text.index("// km:body-begin"):]
    # Nothing of the library is inlined; the project's own helper is.
    assert "struct vec<3, T>" not in body and "TV_FUNC" not in body and "#define" not in body
    assert "clamp01(T v)" in body
    assert m["closure"]["functions"] == ["clamp01"]


def test_library_in_a_git_submodule_is_included_and_its_using_directive_kept(dataset: dict[str, Any]) -> None:
    m = dataset["metas"]["pair_sums"]
    assert [(v["library"], v["headers"], v["source"]) for v in m["closure"]["vendored"]] == [
        ("mv", ["mv/mv.hpp"], "libs/mv")]
    text = _unit(dataset, "pair_sums", "double")
    assert "#include <mv/mv.hpp>" in text and "using namespace mv;" in text and "struct pair2" not in text


def test_third_party_header_that_includes_the_projects_headers_is_inlined(dataset: dict[str, Any]) -> None:
    m = dataset["metas"]["leaky"]
    # (tv may be included: a dependent `T(0.01) * x` names every operator* the TU declares, tv's too.)
    assert "leaky" not in [v["library"] for v in m["closure"].get("vendored", [])]
    assert sorted(m["closure"]["functions"]) == ["clamp01", "leaky_relu"]


def test_verify_compiles_units_with_the_carried_library_and_finds_them_identical(dataset: dict[str, Any],
                                                                                  tmp_path: Path) -> None:
    proc = run_miner("verify", dataset["out"], "-j", "2", "--cache-dir", tmp_path / "vcache", timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "4/4 built instantiations verified: 4 identical" in proc.stdout, proc.stdout


def test_a_second_dataset_served_from_the_extract_cache_carries_the_libraries(dataset: dict[str, Any],
                                                                               tmp_path: Path) -> None:
    """Kernel folders taken from the extract cache into a new output folder: the vendored libraries their units
    include are copied there too (they were only copied when a kernel was written afresh)."""
    out = tmp_path / "again"
    proc = run_miner("extract", dataset["src"], "-o", out, "--build", "-j", "2",
                     env={"XDG_CACHE_HOME": str(dataset["cache"])}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name.split("-")[0] for p in (out / "vendor").iterdir()) == sorted(
        p.name.split("-")[0] for p in (Path(dataset["out"]) / "vendor").iterdir())
    for meta in load_dataset(out):
        assert {i["build"]["status"] for i in meta["instantiations"]} == {"ok"}, meta["name"]


def test_dataset_builds_without_the_checkout(dataset: dict[str, Any], tmp_path: Path) -> None:
    """The dataset carries the libraries: moved elsewhere with the sources gone, every unit still builds."""
    moved = tmp_path / "moved"
    shutil.copytree(dataset["out"], moved)
    shutil.rmtree(dataset["src"])
    proc = run_miner("build", moved, "-j", "2", "--cache-dir", tmp_path / "cache", timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert re.search(r"4/4 units built \(0 failed.*0 cached\)", proc.stdout), proc.stdout
    meta = json.loads(next(moved.glob("scale_lengths-*/metadata.json")).read_text())
    assert meta["instantiations"][0]["build"]["status"] == "ok"


def test_a_kernel_inside_a_third_party_folder_inlines_its_own_part_only(tmp_path: Path) -> None:
    """`3rdparty/hashkit/fill.cuh` holds the kernel, `3rdparty/tinymap.h` is a header-only library beside it:
    the kernel's part is inlined (it is what was mined), the library stays `#include <tinymap.h>` of a copy."""
    out = tmp_path / "out"
    proc = run_miner("extract", FIXTURES / "vendored_parts" / "src", "-o", out, "--build", "-j", "2",
                     env={"XDG_CACHE_HOME": str(tmp_path / "cache")}, timeout=600)
    assert proc.returncode == 0, proc.stderr
    (m,) = load_dataset(out)
    assert m["name"] == "fill_table"
    assert [i["build"]["status"] for i in m["instantiations"]] == ["ok"]
    (v,) = m["closure"]["vendored"]
    assert (v["headers"], v["prelude"]) == (["tinymap.h"], ["#include <tinymap.h>"])
    text = (out / m["id"] / "units" / m["instantiations"][0]["id"] / "unit.cu").read_text()
    body = text[text.index("// km:body-begin"):]
    assert "struct Map" not in body and "swappable" not in body  # the library is not inlined
    assert "slot_of(int i)" in body  # the kernel's own part is
    assert (out / m["id"] / v["include_dir"] / "tinymap.h").resolve().is_file()
