"""`extract --build` on tests/fixtures/blind10q: patterns found on the tenth set of repositories (issue 14,
scripts/corpus_repos_blind10.txt, development repos since session 13), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind10q")


def test_a_same_named_header_is_the_one_beside_its_includer(dataset: dict[str, Any]) -> None:
    """Two projects of one tree each include their own `"types.h"` (found by no -I the miner knows): the first
    one found became a shared include dir and answered the other project's include too, whose kernel then
    lacked its `Det` and `kDetFloats` ("identifier Det is undefined"). Each translation unit now gets the
    header nearest to it."""
    for name, needs in (("scale_boxes", "kBoxFloats"), ("decode_dets", "kDetFloats")):
        m = only_meta(dataset, name)
        (unit,) = unit_texts(dataset, m)
        assert needs in unit.split("// the kernel")[0], unit
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
        own = m["source"]["path"].split("/")[1]
        assert m["parse_context"]["include_dirs"][0].endswith(f"{own}/include"), m["parse_context"]


def test_an_include_in_a_skipped_branch_stays_out_of_the_unit(dataset: dict[str, Any]) -> None:
    """`#ifdef NEW_TOOLKIT <cub/...> #else <thrust/system/cuda/detail/cub/...> #endif`: the closure kept the
    includes of both branches, and the old toolkit's header, which this toolkit lacks, stopped the unit."""
    m = only_meta(dataset, "clamp_scores")
    (unit,) = unit_texts(dataset, m)
    assert "#include <cub/device/device_radix_sort.cuh>" in unit
    assert "thrust/system/cuda/detail" not in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_header_the_toolkit_removed_is_kept_only_where_the_unit_names_its_library(dataset: dict[str, Any]) -> None:
    """`<cub/iterator/counting_input_iterator.cuh>` (removed in CCCL 3.0) included for the host code: a kernel that
    names nothing of CUB builds without it; one that uses `cub::CountingInputIterator` keeps it and fails with the
    reason stated, not as a miner failure."""
    plain = only_meta(dataset, "halve_ranks")
    (unit,) = unit_texts(dataset, plain)
    assert "counting_input_iterator" not in unit
    assert set(build_statuses(plain).values()) == {"ok"}, build_statuses(plain)
    user = only_meta(dataset, "iota_ranks")
    (unit,) = unit_texts(dataset, user)
    assert "#include <cub/iterator/counting_input_iterator.cuh>" in unit
    (inst,) = user["instantiations"]
    assert inst["build"]["status"] == "failed"
    assert "was removed in CCCL 3.0" in inst["build"].get("toolkit_removed", ""), inst["build"]


def test_a_name_only_an_uninstalled_library_declares_fails_with_a_stated_reason(dataset: dict[str, Any]) -> None:
    """The kernel's file includes `<acme_vision/acme_core.hpp>` (a third-party library neither the project, the
    toolkit nor the system has) and uses its `ACME_TWO_PI`: no tool can build that unit, and its build record says
    why instead of leaving an unexplained "identifier is undefined"."""
    m = only_meta(dataset, "rotate_points")
    (inst,) = m["instantiations"]
    assert inst["build"]["status"] == "failed"
    why = inst["build"].get("toolkit_removed", "")
    assert why.startswith("ACME_TWO_PI is declared in no file") and "<acme_vision/acme_core.hpp>" in why, inst["build"]


def test_a_table_of_host_template_instances_written_by_object_macros_gives_the_launch_its_arguments(
        dataset: dict[str, Any]) -> None:
    """`static const pack_fn pack_table[] = { PackAll nullptr };` where `PackAll` and `PackOrders` are object-like
    macros over `PackPrecisions(...)`: the written arguments of each `pack_impl<Precision::Byte, Order::Planar>`
    were not read (only function-like macros were expanded), so the kernel's `typename StorageOf<P>::type` took
    `P = 128` ("argument of type int is incompatible with template parameter of type Precision")."""
    m = only_meta(dataset, "pack_pixels")
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}, m["instantiations"]
    assert len(m["instantiations"]) == 4, [i["args"] for i in m["instantiations"]]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_generator_state_named_only_in_the_arguments_brings_its_header(dataset: dict[str, Any]) -> None:
    """`Grid<curandState>::Mirror` launches `mirror_rows<curandStateXORWOW>`; the kernel's own header names nothing
    of cuRAND, so the unit lacked `<curand_kernel.h>` ("identifier curandStateXORWOW is undefined")."""
    m = only_meta(dataset, "mirror_rows")
    (inst,) = [i for i in m["instantiations"] if "curand" in i["args"][0]]
    unit = (dataset["out"] / m["id"] / inst["unit"]).read_text(encoding="utf-8")
    assert "#include <curand_kernel.h>" in unit
    assert inst["build"]["status"] == "ok", inst["build"]


def test_a_device_side_device_synchronize_fails_with_a_stated_reason(dataset: dict[str, Any]) -> None:
    """A parent kernel that waits for its child grid with `cudaDeviceSynchronize()` in device code: CUDA 12 removed
    that call, so no unit (and not the original) compiles with this toolkit; the build record says so."""
    m = only_meta(dataset, "parent_fill")
    (inst,) = m["instantiations"]
    assert inst["build"]["status"] == "failed"
    assert "was removed in CUDA 12.0" in inst["build"].get("toolkit_removed", ""), inst["build"]


def test_an_operator_only_an_uninstalled_header_declares_fails_with_a_stated_reason(dataset: dict[str, Any]) -> None:
    """`v[i] * s` on `float2`, whose operator comes from an SDK helper header nobody here has (the parse reports no
    missing name: operators of such a header are no identifiers): the build's "no operator * matches these
    operands" is stated as that header's absence."""
    m = only_meta(dataset, "scale_pairs")
    (inst,) = m["instantiations"]
    assert inst["build"]["status"] == "failed"
    assert "<acme_sdk_vector_ops.h>" in inst["build"].get("toolkit_removed", ""), inst["build"]
