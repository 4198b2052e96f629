"""`extract --build` on tests/fixtures/kernel_tables: kernels and host templates instantiated only through tables of
function pointers that the project's macros write (`{ALL_ROWS nullptr}`, rows through `__VA_ARGS__`), and launched
through a pointer read from such a table (the pattern of a lidar/BEV inference repo of the tenth set; our own code).
Real libclang parse, real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "kernel_tables")


def _args(meta: dict[str, Any]) -> list[list[str]]:
    return [list(i["template_args"].values()) for i in meta["instantiations"]]


def test_a_kernel_table_written_by_an_object_like_macro_gives_every_instantiation(dataset: dict[str, Any]) -> None:
    """`static const fn t[] = {AllScale nullptr};` with `AllScale` an object-like macro of two row macros: the
    references all sit on `AllScale`, whose body was never expanded, so the kernel was `inferred` (`s = 0, m = 0`)."""
    m = only_meta(dataset, "scale_kernel")
    assert sorted(_args(m)) == sorted([[s, md, "float"] for md in ("1", "2") for s in ("0", "1", "2")]), _args(m)
    assert {i["origin"] for i in m["instantiations"]} <= {"reference", "host_template", "launch"}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_launch_of_a_pointer_read_from_a_table_takes_the_tables_kernels(dataset: dict[str, Any]) -> None:
    """`auto fn = scale_table[i]; launch_2d(fn, ...)` (a macro ending in `<<<>>>`) is the launch of every kernel of
    that table, with its configuration; the other file's `static` table of the same name lends it nothing."""
    m = only_meta(dataset, "scale_kernel")
    (launch,) = m["launches"]
    assert launch["launcher"] == "run_scale" and "16" in launch["config"]["block"], launch
    o = only_meta(dataset, "offset_kernel")
    assert sorted(_args(o)) == [["1"], ["2"], ["4"]], _args(o)
    assert [(lc["launcher"], lc["config"]["block"]) for lc in o["launches"]] == [("run_offset", "dim3(32, 1)")]
    assert set(build_statuses(o).values()) == {"ok"}, build_statuses(o)


def test_a_host_template_table_written_through_macros_instantiates_its_launches(dataset: dict[str, Any]) -> None:
    """`{PackRow(Kind::F32) PackRow(Kind::F16) nullptr}` of `pack_impl<Mode, Kind>` pointers: each list the
    invocation writes is an instantiation of the host template (only the first was taken, and then none: the
    launch inside got `m = 128`, `PodOf<128>`, which does not compile); the member type the host's alias names
    is the concrete type."""
    m = only_meta(dataset, "pack_kernel")
    got = _args(m)
    assert len(got) == 4 and {a[0] for a in got} == {"1", "2"}, got
    # `using out_t = typename PodOf<k>::type;` with k bound, read by the compiler (was the dependent text)
    assert {a[1] for a in got} == {"float", "__half"}, got
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "object_macro_launch")


def test_a_launch_written_whole_in_a_parameterless_macro_keeps_its_configuration(sweep: dict[str, Any]) -> None:
    """`#define CALL_SWEEP k<W, S, kGeometric, kFilter><<<grid, block>>>(...)` used in each branch of a method
    template (a multi-view-stereo pattern of the tenth set): the launch's grid was the macro's whole text, its block
    and arguments missing; now they are the launch's own, the block folded to 64."""
    m = only_meta(sweep, "sweep_kernel")
    assert m["launches"], m["launches"]
    for lc in m["launches"]:
        assert (lc["config"]["grid"], lc["config"]["block"]) == ("grid", "block"), lc["config"]
        assert lc["values"].get("block") == 64, lc["values"]
        assert [a["expr"] for a in lc["args"]] == ["cost_", "width_", "height_"], lc["args"]
    got = sorted(_args(m))
    assert got == sorted([w, s, g, f] for w, s in (("3", "1"), ("5", "2"))
                         for g, f in (("true", "true"), ("true", "false"), ("false", "false"))), got
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
