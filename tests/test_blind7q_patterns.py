"""`extract --build` on tests/fixtures/blind7q: patterns of header-only GPU libraries found on the seventh blind set
(issue 14, scripts/corpus_repos_blind7.txt), each reproduced by code of our own and judged by the real libclang
parse and the real nvcc."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from miner.source import configured_headers
from tests.conftest import FIXTURES, build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")

BACKEND = FIXTURES / "blind7q" / "configured_backend"


@pytest.fixture(scope="module")
def configured(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind7q/configured_backend")


def _unit(dataset: dict[str, Any], meta: dict[str, Any]) -> str:
    (inst,) = meta["instantiations"]
    folder = next(p for p in Path(dataset["out"]).iterdir() if p.is_dir() and p.name.startswith(meta["name"] + "-"))
    return (folder / inst["unit"]).read_text(encoding="utf-8")


def test_cmake_template_values_are_read_as_a_default_configure_does() -> None:
    """The CMake files are read down to the `configure_file()` that names the template: a cache default, `string(
    REGEX REPLACE|TOLOWER|TOUPPER)`, `project(... VERSION)`, options (one under `if(MSVC)`, which the reading cannot
    decide, keeps its `option()` default)."""
    template = str(BACKEND / "include" / "gridkit" / "settings.h.in")
    values = configured_headers.cmake_variables(template, str(BACKEND))
    assert values["GRIDKIT_BACKEND_DIR"] == "gpu" and values["GRIDKIT_BACKEND_TAG"] == "GPU"
    assert values["gridkit_VERSION"] == "2.4.1" and values["GRIDKIT_WIDE_INDEX"] == "OFF"
    assert configured_headers.template_defines(template, values) == [
        'GRIDKIT_VERSION_TEXT="2.4.1"', "GRIDKIT_BACKEND=GRIDKIT_BACKEND_GPU", "GRIDKIT_BACKEND_DIR=gpu",
        "GRIDKIT_BACKEND_TAG=GPU", "GRIDKIT_WIDE_INDEX=0", "GRIDKIT_CHECKS="]


def test_a_configured_backend_header_is_filled_in_from_its_cmake_template(configured: dict[str, Any]) -> None:
    """`#include <gridkit/settings.h>`, which only `configure_file(settings.h.in ...)` writes: the annotations are
    pasted from the backend it names (`GRIDKIT_GLUE3(GRIDKIT_, GRIDKIT_BACKEND_TAG, _FUNC)`) and the backend's
    header is included through a macro. Without the template's values every `GRIDKIT_FUNC` pasted to
    `GRIDKIT_GRIDKIT_BACKEND_TAG_FUNC` ("this declaration has no storage class or type specifier")."""
    m = only_meta(configured, "fill_cells")
    assert "GRIDKIT_BACKEND_TAG=GPU" in m["parse_context"]["defines"], m["parse_context"]
    unit = _unit(configured, m)
    assert "#define GRIDKIT_BACKEND_TAG GPU" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_macro_named_only_by_a_paste_comes_along(configured: dict[str, Any]) -> None:
    """`GRIDKIT_GPU_FUNC` is written nowhere but in the backend header: `GRIDKIT_FUNC` builds its name by pasting.
    The kept macros are expanded (closure.pasted) and every macro named on the way is kept."""
    unit = _unit(configured, only_meta(configured, "fill_cells"))
    assert "#define GRIDKIT_GPU_FUNC __host__ __device__" in unit


def test_a_condition_on_the_device_pass_through_macros_keeps_its_host_branch(configured: dict[str, Any]) -> None:
    """`#if GRIDKIT_ON_DEVICE` (a paste that reaches `#if defined(__CUDA_ARCH__)`) chooses `GRIDKIT_SIDE`, and a
    member tests `#if GRIDKIT_SIDE == GRIDKIT_SIDE_DEVICE`: the unit keeps the whole chain (the parse saw only the
    device side) and the names of the host branch (`host_side::note(policy::device, ...)`); before, nvcc's host
    pass called the `__device__` function."""
    unit = _unit(configured, only_meta(configured, "fill_cells"))
    assert re.search(r"#if GRIDKIT_ON_DEVICE\s+#define GRIDKIT_SIDE GRIDKIT_SIDE_DEVICE\s+#else\s+"
                     r"#define GRIDKIT_SIDE GRIDKIT_SIDE_HOST", unit), unit[:3000]
    assert "namespace host_side" in unit and "#define GRIDKIT_GPU_ON_DEVICE 0" in unit


def test_a_friend_in_another_namespace_comes_with_its_first_declaration(configured: dict[str, Any]) -> None:
    """`friend class detail::grid_filler;` with the class declared before and defined in an implementation header
    included at the end: the unit declares it before the class that befriends it."""
    unit = _unit(configured, only_meta(configured, "fill_cells"))
    first = unit.find("class grid_filler;")
    assert 0 <= first < unit.find("friend class detail::grid_filler;"), unit


def test_an_overload_beside_an_invalid_one_keeps_its_whole_declaration(configured: dict[str, Any]) -> None:
    """`thrust::device_vector<T> cells_like(const T*)` is invalid to the parse (its thrust stand-in has no
    device_vector), and libclang cuts the extent of the valid `auto cells_like(const C&) -> decltype(...)` written
    after it at its name: the unit said `auto cells_like;`."""
    unit = _unit(configured, only_meta(configured, "fill_cells"))
    assert "cells_like(const C& container) -> decltype(container.count());" in unit
    assert not re.search(r"auto\s+cells_like;", unit)


@pytest.fixture(scope="module")
def pasted_argument(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind7q/pasted_argument")


def test_a_macro_pasted_from_an_invocation_argument_comes_along(pasted_argument: dict[str, Any]) -> None:
    """`Stage_Begin(&s, MIX)` with `#define Stage_Begin(state, KIND) ... STAGE_FLAG_##KIND`: `STAGE_FLAG_MIX` is
    named by no text, only built from the argument; the unit said "identifier STAGE_FLAG_MIX is undefined". A
    function-like macro that pastes a fixed part to a parameter now brings the macros that part makes with the
    words of the kept text (and what they expand to: `STAGE_FLAG(MIX)` -> `STAGE_KIND_MIX`)."""
    m = only_meta(pasted_argument, "mix_blocks")
    unit = _unit(pasted_argument, m)
    assert "#define STAGE_FLAG_MIX" in unit and "#define STAGE_KIND_MIX" in unit
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def vendored_cub(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind7q/vendored_cub")


def test_a_vendored_cub_beside_the_toolkits_thrust_is_a_stated_reason(vendored_cub: dict[str, Any]) -> None:
    """A kernel of an old CUB copy kept in the tree (`third_party_libs/cub/cub.cuh`), whose headers include the
    toolkit's thrust: CCCL 3's thrust brings the toolkit's CUB, and the two declare the same names in `namespace
    cub` (`cub::Debug` twice). The original does not compile with this toolkit either; the failed build says so
    (`toolkit_removed`)."""
    m = only_meta(vendored_cub, "FillKernel")
    assert m["instantiations"]
    for inst in m["instantiations"]:
        b = inst["build"]
        assert b["status"] == "failed", b
        assert "vendored CUB (third_party_libs/cub)" in b["toolkit_removed"], b


def test_thrust_policies_and_pointers_are_known_to_the_parse(configured: dict[str, Any]) -> None:
    """The parse does not read CCCL; its stand-in declares thrust's vocabulary: `std::is_base_of<
    thrust::execution_policy<T>, T>`, `decltype(thrust::device)` are valid there now, so the closure holds no
    unresolved thrust name (a `thrust::device_vector` return type, which the stand-in does not declare, aside)."""
    m = only_meta(configured, "fill_cells")
    bad = [u for u in m["unresolved"] if "thrust" in u.get("reason", "") and "device_vector" not in u.get("reason", "")]
    assert not bad, bad
