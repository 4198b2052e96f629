"""`extract --build` on tests/fixtures/weak: template kernels whose real arguments the miner used to miss
(tag dispatch through a generic lambda held in a variable), and template kernels the sources never instantiate,
which carry a stated reason (`args_missing`) instead of passing as the miner's miss. Real libclang, real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "weak")


def _meta(dataset: dict[str, Any], name: str, templated: bool = True) -> dict[str, Any]:
    found = [m for m in dataset["metas"] if m["name"] == name and bool(m["template_params"]) == templated]
    assert len(found) == 1, [m["source"]["path"] for m in found]
    return found[0]


def _origins(meta: dict[str, Any]) -> dict[str, str]:
    return {i["id"]: i["origin"] for i in meta["instantiations"]}


def test_generic_lambda_called_with_integral_constant_tags(dataset: dict[str, Any]) -> None:
    """`auto launch = [&](auto tag) { constexpr int R = decltype(tag)::value; k<T, R><<<...>>>(); }` called as
    `launch(std::integral_constant<int, N>{})` in a switch: one instantiation per tag, T from the host template's
    explicit instantiations."""
    m = _meta(dataset, "rows_kernel")
    assert _origins(m) == {f"{t}_{r}": "host_template" for t in ("float", "half") for r in (1, 2, 4)}, _origins(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    assert "args_missing" not in m


def test_bool_tags_read_through_member_value(dataset: dict[str, Any]) -> None:
    """`flag(std::true_type{})` / `flag(std::false_type{})` with the kernel argument written `on.value`."""
    m = _meta(dataset, "flag_kernel")
    assert _origins(m) == {f"{t}_{b}": "host_template" for t in ("float", "half") for b in ("true", "false")}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_dead_template_kernels_state_why_their_arguments_are_defaults(dataset: dict[str, Any]) -> None:
    m = _meta(dataset, "unused_scale")
    assert _origins(m) == {"float": "inferred"}
    assert m["launch_missing"]["reason"] == "not_referenced"
    assert m["args_missing"]["reason"] == "not_instantiated", m.get("args_missing")
    # A template overload named only at a launch the AST resolved to the non-template kernel of that name.
    twin = _meta(dataset, "twin_copy")
    assert twin["launch_missing"]["reason"] == "other_definition", twin["launch_missing"]
    assert twin["args_missing"]["reason"] == "not_instantiated"
    plain = _meta(dataset, "twin_copy", templated=False)
    assert plain["launches"] and "args_missing" not in plain


def test_launcher_template_nothing_calls(dataset: dict[str, Any]) -> None:
    """Launched only in `fill_async<T>`, which nothing calls or instantiates: a stated reason; the launch is kept."""
    m = _meta(dataset, "fill_value")
    assert m["launches"] and _origins(m) == {"float": "inferred"}
    assert m["args_missing"]["reason"] == "launcher_not_instantiated", m.get("args_missing")
    assert "fill_async" in m["args_missing"]["detail"]


def test_launcher_named_only_by_a_template_nothing_names_is_not_instantiated(dataset: dict[str, Any]) -> None:
    """`relay<T>` calls `fill_relay<T>` but nothing calls `relay`: the launcher is named, but only inside a function
    template nothing names, which instantiates nothing (session 16; before, no reason was claimed here)."""
    m = _meta(dataset, "relay_kernel")
    assert _origins(m) == {"float": "inferred"}
    assert m["args_missing"]["reason"] == "launcher_not_instantiated", m.get("args_missing")


def test_function_pointer_template_argument_in_a_project_dispatch(dataset: dict[str, Any]) -> None:
    """`apply_op_kernel<scalar_t, square_op<scalar_t>>` (a `scalar_t (*OP)(const scalar_t&)` parameter, closed by
    `>>`) in each case of a project's dtype switch: libclang spells no declaration argument, so that position is
    read as written with the case's `scalar_t` put in; the device function comes with the closure."""
    m = _meta(dataset, "apply_op_kernel")
    assert _origins(m) == {"float_square_op_float": "call_site", "double_square_op_double": "call_site"}, _origins(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    assert "square_op" in m["closure"]["functions"]


def test_launch_macro_redefined_after_undef(dataset: dict[str, Any]) -> None:
    """`#define _(VEC) k<InT, OutT, VEC><<<...>>>` in a host template, `#undef _`, then `#define _(A, B)
    apply_cast<A, B>(...)` at its callers: each invocation expands with the definition in force there."""
    m = _meta(dataset, "cast_vec_kernel")
    assert {tuple(i["args"]) for i in m["instantiations"]} == {
        (a, b, v) for a, b in (("float", "unsigned char"), ("unsigned char", "float")) for v in ("1", "4")}
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_dependent_launch_reaches_only_the_overloads_it_can_call(dataset: dict[str, Any]) -> None:
    """`step_kernel<T, 2><<<...>>>(x, n)` in a host template: of the two template overloads, the one taking one
    template argument and three parameters cannot be called; it gets no launch, and is dead code."""
    metas = [m for m in dataset["metas"] if m["name"] == "step_kernel"]
    by_params = {len(m["template_params"]): m for m in metas}
    assert _origins(by_params[2]) == {"float_2": "host_template"}, _origins(by_params[2])
    dead = by_params[1]
    assert not dead["launches"] and dead["launch_missing"]["reason"] == "other_definition", dead["launch_missing"]
    assert dead["args_missing"]["reason"] == "not_instantiated"


def test_variadic_kernel_takes_the_pack_and_functor_of_each_caller(dataset: dict[str, Any]) -> None:
    """`apply_chunks_kernel<<<...>>>(chunk, c, op, args...)` in `apply_chunks<int depth, T, ArgTypes...>`, called
    as `apply_chunks<2>(..., AxpyOp<elem_t>(), a, b)` in a dtype switch of one .cu and `apply_chunks<1>(...,
    ScaleOp<float>(), s)` in another: the pack is deduced through the host template (its elements read from the
    specialization's parameter types), `Chunks<depth>` keeps the host's parameter, the pack parameter becomes one
    parameter per element, and each functor class comes from the closure of the translation unit defining it."""
    m = _meta(dataset, "apply_chunks_kernel")
    assert {tuple(i["args"]) for i in m["instantiations"]} == {
        ("Chunks<2>", "AxpyOp<float>", "float, float"), ("Chunks<2>", "AxpyOp<double>", "float, float"),
        ("Chunks<1>", "ScaleOp<float>", "float")}
    assert {i["origin"] for i in m["instantiations"]} == {"host_template"}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    scale = next(i for i in m["instantiations"] if "ScaleOp" in i["args"][1])
    assert [p["name"] for p in scale["launcher"]["params"]] == ["chunk", "chunks", "op", "args_0"]
    unit = (Path(dataset["out"]) / m["id"] / "units" / scale["id"] / "unit.cu").read_text(encoding="utf-8")
    axpy = next(i for i in m["instantiations"] if i["args"][1] == "AxpyOp<float>")
    unit_axpy = (Path(dataset["out"]) / m["id"] / "units" / axpy["id"] / "unit.cu").read_text(encoding="utf-8")
    assert "struct ScaleOp" in unit and "struct ScaleOp" not in unit_axpy


def test_written_leading_arguments_and_a_deduced_functor(dataset: dict[str, Any]) -> None:
    """`fill_kernel<T, RNG, PER_THREAD><<<...>>>(n, rng, out, transform)`: the three written arguments stay and
    the fourth, not deducible from the others, comes from `transform` (the callers' `__device__` lambda)."""
    m = _meta(dataset, "fill_kernel")
    assert [(i["args"][:3], i["origin"]) for i in m["instantiations"]] == [(["float", "lcg", "4"], "host_template")]
    assert m["instantiations"][0]["args"][3].startswith("km_lambda_rand_fill_")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_name_written_only_where_the_kernel_cannot_be_seen_is_no_use(dataset: dict[str, Any]) -> None:
    """`squeeze(s)` in a file whose includes never reach the kernel's file calls a host function of that name:
    the kernel is named nowhere that could launch it."""
    m = _meta(dataset, "squeeze")
    assert m["launch_missing"]["reason"] == "not_referenced", m["launch_missing"]
    assert m["args_missing"]["reason"] == "not_instantiated"


def test_overload_named_only_in_a_launch_macro_of_the_other(dataset: dict[str, Any]) -> None:
    """`#define LAUNCH_MACRO_STEP(N) macro_step_kernel<T, N><<<...>>>(x, n)`: the one-parameter overload is named
    only in that body, and every invocation of the macro is a launch of the other overload."""
    metas = {len(m["template_params"]): m for m in dataset["metas"] if m["name"] == "macro_step_kernel"}
    assert {i["id"] for i in metas[2]["instantiations"]} == {"float_1", "float_2"}
    dead = metas[1]
    assert not dead["launches"] and dead["launch_missing"]["reason"] == "other_definition", dead["launch_missing"]
    assert dead["args_missing"]["reason"] == "not_instantiated"


def test_a_kernel_launched_only_under_if_0_states_it(dataset: dict[str, Any]) -> None:
    """`retired_sort_step<4, Flip><<<...>>>` only inside `#if 0`: no launch the compiler ever sees, so the kernel
    says `disabled_code` (was `unresolved`, counted as the miner's miss) and its defaults are `not_instantiated`;
    the `#else` branch's launch is live."""
    m = _meta(dataset, "retired_sort_step")
    assert not m["launches"] and m["launch_missing"]["reason"] == "disabled_code", m["launch_missing"]
    assert "disabled_launch.cu:19" in m["launch_missing"]["mentions"][0], m["launch_missing"]
    assert m["args_missing"]["reason"] == "not_instantiated", m.get("args_missing")
    live = _meta(dataset, "live_clear", templated=False)
    assert [lc["launcher"] for lc in live["launches"]] == ["live_sort"], live["launches"]
