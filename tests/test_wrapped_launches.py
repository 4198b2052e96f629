"""`extract --build` on launches the parse reads only through a wrapper (issue 14, the twenty-second and twenty-third
sets, scripts/corpus_repos_blind22.txt and blind23.txt): a device context's launch method called from generic lambdas
a variant visitor calls and from a member template of a template parameter's context (tests/fixtures/blind22/
generic_lambda_helper), and a runtime's launch macro defined only under a build flag the parse lacks (tests/fixtures/
blind23/inactive_launch_macro). Each reproduced by code of our own, judged by the real libclang parse and nvcc."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FIXTURES, build_statuses, extract_and_build

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def generic_lambda(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind22/generic_lambda_helper")


def _named(dataset: dict[str, Any], name: str) -> list[dict[str, Any]]:
    return [m for m in dataset["metas"] if m["name"] == name and not m.get("variant")]


def test_an_overloaded_kernel_passed_to_a_launch_method_in_a_generic_lambda_is_each_overloads_launch(
        generic_lambda: dict[str, Any]) -> None:
    """`on(next)([&](auto &p) { ctx.launch({(p.count + 63) / 64, 64}, settle, p, 3); })`: `settle` has one overload
    per alternative of the variant; the call depends on `p`, so clang resolves none. Each overload whose parameters
    take the call's two arguments is launched there (not `unresolved`), with the braced configuration's grid and
    block (not `({...}).grid`)."""
    metas = _named(generic_lambda, "settle")
    assert len(metas) == 2, [m["name"] for m in generic_lambda["metas"]]
    for m in metas:
        assert m.get("launch_missing") is None, m.get("launch_missing")
        [launch] = m["launches"]
        assert (launch["launcher"], launch["config"]["grid"], launch["config"]["block"]) == \
            ("step", "(unsigned)(p.count + 63) / 64", "64"), launch


@_nvcc
def test_an_overloaded_kernel_template_in_a_generic_lambda_takes_the_arguments_the_typed_arguments_deduce(
        generic_lambda: dict[str, Any]) -> None:
    """`ctx.launch({1, 32}, census, p, counter)` with `template <typename Counter> census(particles<phase::solid>,
    Counter)` and its fluid overload: `Counter` is deduced from `counter` (a `tally`, typed by the parse), not from the
    lambda's `auto &p`; each overload is launched with `<tally>`, builds, and states no missing arguments."""
    metas = _named(generic_lambda, "census")
    assert len(metas) == 2, [m["name"] for m in generic_lambda["metas"]]
    for m in metas:
        [launch] = m["launches"]
        assert (launch["config"]["grid"], launch["config"]["block"]) == ("1", "32"), launch
        assert build_statuses(m) == {"tally": "ok"}, m["instantiations"]
        assert m.get("args_missing") is None, m.get("args_missing")


@_nvcc
def test_a_launch_method_called_on_a_template_parameters_object_is_the_launch(generic_lambda: dict[str, Any]) -> None:
    """`template <typename Context> void reset(Context &ctx) { ctx.launch({(count + 255) / 256, 256}, wipe, *this); }`:
    the member call on a dependent object has no name in the AST and no class; the project's one launch method of that
    name is the helper. `wipe<Field>` is launched there, its argument deduced from `*this`, and the unit builds."""
    [m] = _named(generic_lambda, "wipe")
    assert m.get("launch_missing") is None, m.get("launch_missing")
    [launch] = m["launches"]
    assert (launch["launcher"], launch["config"]["grid"], launch["config"]["block"]) == \
        ("reset", "(unsigned)(count + 255) / 256", "256"), launch
    assert build_statuses(m) == {"field_buffer": "ok"}, m["instantiations"]


def test_a_template_kernel_deduced_from_a_generic_lambdas_auto_parameter_states_why_its_arguments_are_defaults(
        generic_lambda: dict[str, Any]) -> None:
    """`advance<P>` is deduced from `p`, the generic lambda's `auto &p`: the launch is recorded with its braced
    configuration (shared memory 64 read from the third element), and the inferred arguments say why (the lambda's
    instantiations, one per alternative, are not in the parse)."""
    [m] = _named(generic_lambda, "advance")
    [launch] = m["launches"]
    assert (launch["config"]["block"], launch["config"]["shared_mem"]) == ("128", "64"), launch
    assert (m.get("args_missing") or {}).get("reason") == "generic_lambda", m.get("args_missing")


@pytest.fixture(scope="module")
def launch_macro(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind23/inactive_launch_macro")


@_nvcc
def test_the_launch_macro_fixture_compiles_only_with_its_build_flag(tmp_path: Path) -> None:
    """The pattern as the project has it: nvcc compiles ops.cu with the build script's `-DRT_ENABLE_GPU=1`, and
    without it stops on the undeclared macro (what the parse sees)."""
    src = FIXTURES / "blind23" / "inactive_launch_macro" / "ops.cu"
    runs = [subprocess.run(["nvcc", *flags, "-c", str(src), "-o", str(tmp_path / "ops.o")], capture_output=True,
                           text=True, check=False) for flags in (["-DRT_ENABLE_GPU=1"], [])]
    assert runs[0].returncode == 0, runs[0].stderr
    assert runs[1].returncode != 0 and "rt_launch_device" in runs[1].stderr, runs[1].stderr


@_nvcc
def test_a_launch_through_a_macro_the_parse_does_not_define_is_read_from_the_macros_text(
        launch_macro: dict[str, Any]) -> None:
    """`rt_launch_device(RT_CURRENT_CONTEXT, scale_kernel, n, (x, a, n))`, a macro whose body declares `num_blocks =
    (dim + num_threads - 1) / num_threads` and launches `kernel<<<num_blocks, 128, 0, stream>>>args`, defined only
    under `RT_ENABLE_GPU` (the build script's flag): the parse reads a call of an undeclared name. The launch is read
    from the macro's expansion (kind: the macro), grid a formula over the kernel's own argument `n`, and the record
    says which definition it took and that its branch was inactive."""
    for name, count in (("scale_kernel", "n"), ("offset_kernel", "count")):
        [m] = _named(launch_macro, name)
        assert m.get("launch_missing") is None, m.get("launch_missing")
        [launch] = m["launches"]
        assert launch["kind"] == "rt_launch_device", launch
        assert launch["config"]["grid"] == f"(({count} + (128) - 1) / (128))", launch
        assert launch["config"]["block"] == "128", launch
        assert "inactive" in launch["config"]["macro"], launch
        assert [a["expr"] for a in launch["args"]][-1] == count, launch
        assert set(build_statuses(m).values()) == {"ok"}, m["instantiations"]
