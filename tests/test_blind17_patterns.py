"""`extract --build` on tests/fixtures/blind17: patterns found on the seventeenth set of repositories (issue 14,
scripts/corpus_repos_blind17.txt, development repos since session 18), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def _insts(m: dict[str, Any]) -> list[tuple[dict[str, str], str]]:
    return [(i["template_args"], i["origin"]) for i in m["instantiations"]]


@pytest.fixture(scope="module")
def self_table(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind17/self_table")


def test_a_class_template_passing_itself_to_its_kernel_gives_the_class_instantiation(
        self_table: dict[str, Any]) -> None:
    """`count_kernel<<<...>>>(first, last, hits, *this)` in a member template of `table<Key, Value, Slots>`:
    libclang leaves `*this` a dependent type, so `Table` was deduced from nothing and the kernel got a guessed
    `float` for it ("expression must have class type")."""
    m = only_meta(self_table, "count_kernel")
    assert _insts(m) == [({"InputIt": "unsigned int *", "Table": "shelf::table<unsigned int, double>"},
                          "host_template")], _insts(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_an_out_of_line_member_template_takes_its_callers_instantiations(self_table: dict[str, Any]) -> None:
    """`t.copy(keys, keys_end, copied)` names the member template's in-class declaration (libclang gives it no
    definition); its launch sits in the out-of-line definition, keyed there: the call's `<unsigned int *,
    unsigned int *>` never reached it and the kernel was instantiated with guessed `float`s."""
    m = only_meta(self_table, "copy_kernel")
    assert _insts(m) == [({"InputIt": "unsigned int *", "OutputIt": "unsigned int *"}, "host_template")], _insts(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    both = only_meta(self_table, "lookup_kernel")  # (both: out of line, and `*this`)
    assert _insts(both) == [({"InputIt": "unsigned int *", "OutputIt": "double *",
                              "Table": "shelf::table<unsigned int, double>"}, "host_template")], _insts(both)
    assert set(build_statuses(both).values()) == {"ok"}, build_statuses(both)


@pytest.fixture(scope="module")
def factory_made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind17/factory_made")


def test_a_class_template_a_factory_constructs_instantiates_its_virtual_methods(
        factory_made: dict[str, Any]) -> None:
    """`std::make_unique<engine_impl<std::int16_t, std::int16_t>>(...)` is the only place naming the class's
    instances (no variable, no explicit instantiation), and `run` is reached through the base class's virtual
    call: the kernel it launches took guessed `<float, int>` instead of the factory's two instances."""
    m = only_meta(factory_made, "fill_scores")
    assert sorted(tuple(a.values()) for a, _ in _insts(m)) == [("int", "int"), ("short", "short")], _insts(m)
    assert {o for _, o in _insts(m)} == {"host_template"}, _insts(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def thrust_vectors(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind17/thrust_vectors")


def test_locals_taken_from_thrust_containers_are_typed_in_the_parse(thrust_vectors: dict[str, Any]) -> None:
    """`auto in_ptr = d_in.data().get();` with `d_in` a `thrust::device_vector<float>`: the parse's CCCL stand-in
    declared no containers, the local was dependent, the member template's call `s.apply(in_ptr, ...)` resolved
    to nothing, and its kernel took guessed `float`s (and an unsubstituted `Factor`)."""
    m = only_meta(thrust_vectors, "scale_kernel")
    assert _insts(m) == [({"InputIt": "float *", "OutputIt": "double *", "Factor": "float"}, "host_template")], \
        _insts(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def macro_made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind17/macro_made")


def test_a_kernel_whose_template_head_a_macro_writes_is_instantiated_with_the_parameter_type(
        macro_made: dict[str, Any]) -> None:
    """`PAIRWISE_KERNEL(pair_sum, combine_sum)` writes `template <typename E, int STEPS> __global__ void ...`:
    libclang gives `STEPS` the invocation's extent, whose text became the parameter's type, and the unit's
    explicit instantiation cast `4` to it (`static_cast<template <typename E, ...> ...>(4)`: "template" is not
    allowed)."""
    for name in ("pair_sum", "pair_max"):
        m = only_meta(macro_made, name)
        assert [(t["name"], t["type"]) for t in m["template_params"]] == [("E", None), ("STEPS", "int")], \
            m["template_params"]
        assert sorted(_insts(m), key=str) == [({"E": "float", "STEPS": "4"}, "host_template"),
                                              ({"E": "float2", "STEPS": "4"}, "host_template")], _insts(m)
        assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_macro_invocation_spelling_several_template_arguments_is_spread(macro_made: dict[str, Any]) -> None:
    """`template <WIDTHS_OF(T)> cudaError_t fold(...)` (`typename T, typename T2, typename T4`) instantiated as
    `template cudaError_t fold<WIDTH_ARGS(float)>(...)`: the one argument `WIDTH_ARGS(float)` did not match the
    three parameters, the host template stayed without instances and its kernel took guessed `float`s ("no
    suitable constructor exists to convert from "const float" to "float4"")."""
    m = only_meta(macro_made, "fold_pairs")
    assert _insts(m) == [({"TIn": "float4", "TOut": "float2"}, "host_template")], _insts(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_explicit_instantiation_arguments_written_by_macros() -> None:
    """The argument reader on text alone: a function-like or object-like macro's list is spread (a class
    member's instantiation too); a macro of one argument stays as written, for the unit's preprocessor."""
    from miner.units import macro_text
    from miner.units.instantiations import explicit_in

    text = ("#define TRIO(t) t, t##2, t##4\n#define ONE(t) t##4\n#define WIDTH 64\n#define PAIR short, long\n"
            "template void f<TRIO(float), WIDTH, PAIR>(int);\n"
            "template void g<ONE(double)>(int);\n"
            "template void Box<TRIO(int)>::run(int);\n")
    found = explicit_in(text, macro_text.definitions(text), members=True)
    assert found["f"] == [["float", "float2", "float4", "WIDTH", "short", "long"]], found
    assert found["g"] == [["ONE(double)"]], found
    assert found["Box"] == [["int", "int2", "int4"]], found


@pytest.fixture(scope="module")
def fp_saturate(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind17/fp_saturate")


def test_a_saturate_flag_on_a_floating_point_wmma_accumulator_is_stated(fp_saturate: dict[str, Any]) -> None:
    """`mma_sync(sums[0], left, right, sums[0], false)` with a `float` accumulator: CUDA 9's <mma.h> had the
    overload, this toolkit's has it for integer accumulators only, so the source cannot build here; the failure
    is stated rather than left as a bare "no instance of overloaded function"."""
    m = only_meta(fp_saturate, "tile_product_saturated")
    [build] = [i["build"] for i in m["instantiations"]]
    assert build["status"] == "failed" and "saturate argument" in (build.get("toolkit_removed") or ""), build
    ok = only_meta(fp_saturate, "tile_product")  # the four-argument call builds, and states nothing
    assert set(build_statuses(ok).values()) == {"ok"}, build_statuses(ok)


def test_a_saturate_flag_on_an_integer_accumulator_is_not_stated() -> None:
    """The integer accumulators keep their `satf` overloads: a failing call there has another cause."""
    from miner.builder.diagnostics import float_saturate_call

    text = ("fragment<accumulator, 16, 16, 16, int> acc; fragment<accumulator, 16, 16, 16, float> facc;\n"
            "mma_sync(acc, a, b, acc, true);\n")
    assert float_saturate_call("mma_sync", text) is None
    assert float_saturate_call("mma_sync", text + "mma_sync(facc, x, y, facc, f(1, 2));\n")
    assert float_saturate_call("load_matrix_sync", text + "mma_sync(facc, x, y, facc, false);\n") is None
