"""`extract --build` on tests/fixtures/dev2: patterns found on the second development set (issue 14,
scripts/corpus_repos_dev2.txt), each reproduced by a kernel of our own and judged by the real libclang
parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "dev2")


def _unit(dataset: dict[str, Any], meta: dict[str, Any], inst: str) -> str:
    return (Path(dataset["out"]) / meta["id"] / "units" / inst / "unit.cu").read_text(encoding="utf-8")


def test_pointer_argument_for_a_const_qualified_type_parameter(dataset: dict[str, Any]) -> None:
    # `const S scale` with S = `float *` is `float * const`: the explicit instantiation must say so.
    m = only_meta(dataset, "scale_rows_const_kernel")
    assert build_statuses(m) == {"float_float_false": "ok", "float_float_true": "ok"}, build_statuses(m)
    unit = _unit(dataset, m, "float_float_true")
    assert "float * const, int);" in unit and "const float *, int);" not in unit


def test_define_in_an_nvcc_flag_list_held_by_a_variable(dataset: dict[str, Any]) -> None:
    # `"nvcc": NVCC_FLAGS` with `NVCC_FLAGS += ["-DFIX_WIDE_LANES"]`: the double specialization exists.
    m = only_meta(dataset, "lane_fill_kernel")
    assert build_statuses(m) == {"float": "ok", "double": "ok"}, build_statuses(m)
    assert "-DFIX_WIDE_LANES" in m["build_flags"]["nvcc"]
    # an f-string is read whole, never as its literal part (`f"-D_GLIBCXX_USE_CXX11_ABI={ABI}"` was `-D..._ABI=`):
    # with `ABI = 1` a module constant, its value is known (py_eval.Evaluator.scalar)
    assert [f for f in m["build_flags"]["nvcc"] if "GLIBCXX" in f] == ["-D_GLIBCXX_USE_CXX11_ABI=1"], m["build_flags"]


def test_function_pointer_template_argument_through_a_launch_macro(dataset: dict[str, Any]) -> None:
    # `k<float, fix::ACT<float>>` in a macro: `>>` closes both lists, the activation comes into the unit.
    m = only_meta(dataset, "act_rows_kernel")
    assert {i["id"]: i["origin"] for i in m["instantiations"]} == {
        "float_fix_relu_act_float": "call_site", "float_fix_square_act_float": "call_site"}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    unit = _unit(dataset, m, "float_fix_relu_act_float")
    assert "relu_act(const T& x)" in unit and "act_rows_kernel<float, fix::relu_act<float>>(" in unit


def test_deduced_arguments_stop_at_defaulted_parameters_and_launcher_drops_top_level_const(
        dataset: dict[str, Any]) -> None:
    # `view_scale_kernel<<<...>>>(in, out, s)` in a host template: the argument type `View<float, 1, true,
    # long, RawPtr>` against the parameter `View<T, 1, Inner>` binds Inner to `true`, not to `true, long, RawPtr`.
    m = only_meta(dataset, "view_scale_kernel")
    assert {i["id"]: i["args"] for i in m["instantiations"]} == {
        "float_true": ["float", "true"], "double_false": ["double", "false"]}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    # The kernel's `const View<...>` parameter: the launcher takes it without `const` (the class has only
    # `View(View&)`), the explicit instantiation keeps the kernel's type.
    unit = _unit(dataset, m, "float_true")
    assert "  View<float, 1, true> km_in," in unit
    assert "view_scale_kernel<float, true>(const View<float, 1, true>," in unit
