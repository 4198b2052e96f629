"""`extract --build` on tests/fixtures/class_params: kernel templates whose type parameters type objects the kernel
names members of (`dst.At(y, x)`, `table.find(k)`). Where nothing instantiates one, a class the project passes
another kernel that declares those members (units.class_args) is inferred in place of the scalar default; where no
class fits, the unit's failure on the scalar is stated. Real libclang, real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from miner.units import instantiations
from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "class_params")


def test_classes_the_project_passes_fill_the_class_parameters_of_an_uninstantiated_kernel(
        dataset: dict[str, Any]) -> None:
    """`scale_view<Bits, Dst, Src>` is launched nowhere; `copy_view` is launched with `Pitched<float>` (which has
    `At`) and `Uniform` (which has `Get`): those fill `Dst` and `Src`, so the unit builds a real instantiation."""
    m = only_meta(dataset, "scale_view")
    [inst] = m["instantiations"]
    assert inst["origin"] == "inferred"
    assert inst["template_args"] == {"Bits": "5", "Dst": "Pitched<float>", "Src": "Uniform"}, inst["template_args"]
    assert set(inst["inferred_classes"]) == {"Dst", "Src"}
    assert "copy_view" in inst["inferred_classes"]["Dst"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    assert m["args_missing"]["reason"] == "not_instantiated"


def test_a_member_a_base_class_declares_counts(dataset: dict[str, Any]) -> None:
    """`check_table` reads `table.slots` and `table.count` (declared by `SlotStore`, the base of `SlotTable`) and
    calls `table.find`: `SlotTable<>`, which `fill_table` is launched with, fits through its base."""
    m = only_meta(dataset, "check_table")
    [inst] = m["instantiations"]
    assert (inst["origin"], inst["template_args"]) == ("inferred", {"Table": "SlotTable<>"})
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_an_object_the_kernel_calls_needs_a_call_operator(dataset: dict[str, Any]) -> None:
    """`fold_rows` calls `agg.identity()` and `agg(acc, x)`: `MaxAggNoCall`, launched more often with an `Agg`,
    has no call operator and does not fit; `SumAgg` does."""
    m = only_meta(dataset, "fold_rows")
    [inst] = m["instantiations"]
    assert (inst["origin"], inst["template_args"]) == ("inferred", {"Agg": "SumAgg"}), inst
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_no_fitting_class_keeps_the_default_and_states_the_failure(dataset: dict[str, Any]) -> None:
    """No class of the project has `drain`: nothing is invented; the float unit's failure is stated, and the
    metadata does not pretend the float is an argument."""
    m = only_meta(dataset, "drain_queue")
    [inst] = m["instantiations"]
    assert inst["template_args"] == {"Queue": "float"} and "inferred_classes" not in inst
    assert inst["build"]["status"] == "failed"
    assert "stands in for the class parameter" in inst["build"].get("toolkit_removed", ""), inst["build"]


def test_a_scalar_named_as_a_scope_states_the_failure(dataset: dict[str, Any]) -> None:
    """`Cfg::kScale` with `Cfg = float`: nvcc's "name followed by '::' must be a class or namespace name", with the
    caret on the parameter, is the stand-in's failure too."""
    m = only_meta(dataset, "scale_by_config")
    [inst] = m["instantiations"]
    assert inst["template_args"] == {"Cfg": "float"} and inst["build"]["status"] == "failed"
    assert "stands in for the class parameter" in inst["build"].get("toolkit_removed", ""), inst["build"]


def test_launched_kernels_keep_their_own_arguments(dataset: dict[str, Any]) -> None:
    m = only_meta(dataset, "copy_view")
    assert {i["origin"] for i in m["instantiations"]} == {"call_site"}
    assert all("inferred_classes" not in i for i in m["instantiations"])


def test_member_uses_reads_objects_and_pointers_of_a_type_parameter() -> None:
    meta = {"name": "k", "params": [{"name": "dst", "type": "Dst"}, {"name": "src", "type": "const Src &"},
                                    {"name": "g", "type": "Grid *"}, {"name": "n", "type": "int"}],
            "template_params": [{"kind": "type", "name": n} for n in ("Dst", "Src", "Grid", "T")]}
    text = ("template <class Dst, class Src, class Grid, class T> __global__ void k(Dst dst, const Src &src, "
            "Grid *g, int n) { dst.REval(1, 2) = src.Eval(0, n) + g->val; T t = n; }")
    assert instantiations.member_uses(meta, text) == {"Dst": {"REval"}, "Src": {"Eval"}, "Grid": {"val"}}
    assert instantiations.class_types(meta, text) == {"Dst", "Src", "Grid"}
