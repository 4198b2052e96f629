"""`extract --build` on tests/fixtures/enum_value_args: class templates with enum-class and 8-bit value parameters
nested in a kernel's type arguments (`Config<float, Func<Mode::Wrap>>`, `Shape<256, 4, 2, -3>`), reached through
explicit class instantiations and an alias in a host method. libclang spells such nested values by their integer
(`Func<1>`, which no compiler converts back to `Mode`) or as character literals (`Shape<256, '\\x04', ...>`); a
compression library of the eleventh set lost 30 instantiations to the first. Real libclang parse, real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "enum_value_args")


def test_nested_enum_values_are_spelled_as_their_enumerators(dataset: dict[str, Any]) -> None:
    meta = only_meta(dataset, "reconstruct")
    configs = {i["template_args"]["C"] for i in meta["instantiations"]}
    assert configs == {"cfg::Config<float, cfg::Func<cfg::Mode::Wrap>>",
                       "cfg::Config<double, cfg::Func<cfg::Mode::Clamp, cfg::Mode::Wrap>>"}, configs
    assert set(build_statuses(meta).values()) == {"ok"}, build_statuses(meta)


def test_eight_bit_values_are_numbers_not_character_literals(dataset: dict[str, Any]) -> None:
    meta = only_meta(dataset, "reconstruct")
    shapes = {i["template_args"]["S"] for i in meta["instantiations"]}
    assert shapes == {"cfg::Shape<256, 4, 2, -3>"}, shapes  # (int8_t -3 is '\xfd' to libclang)
    assert not any("x0" in i["id"] or "'" in i["id"] for i in meta["instantiations"])


def test_a_host_template_enum_parameter_names_its_enumerator(dataset: dict[str, Any]) -> None:
    """`copy<float, cfg::High>` (an unscoped enum) puts `Tuning<L>` together: `Tuning<cfg::Level::High>`, not a cast."""
    meta = only_meta(dataset, "tuned_copy")
    assert {i["template_args"]["U"] for i in meta["instantiations"]} == {"Tuning<cfg::Level::High>"}
    assert set(build_statuses(meta).values()) == {"ok"}


def test_respell_leaves_unknown_templates_and_other_values_alone() -> None:
    from miner.units.launches.value_spelling import Value, respell

    params = {"ns::F": [Value("enum", "ns::E", ((0, "A"), (1, "B"), (2, "C"), (3, "C2")))],
              "P": [None, Value("unsigned char"), Value("signed char")]}
    assert respell("X<ns::F<1>, int>*", params) == "X<ns::F<ns::E::B>, int>*"
    assert respell("ns::F<7>", params) == "ns::F<static_cast<ns::E>(7)>"
    assert respell("q::P<'a', '\\b', '\\xff'>", params) == "q::P<'a', 8, -1>"
    assert respell("Other<1, '\\x01'>", params) == "Other<1, '\\x01'>"


def test_an_inferred_enum_value_is_spelled_in_the_launchers_parameter_types(dataset: dict[str, Any]) -> None:
    """`accumulate<Compute C, T>(T *, param_t<C>)` has no launch: C takes the value 0, which the instantiation
    writes `static_cast<sar::Compute>(0)`; the launcher's parameter types wrote the bare `0`
    (`param_t<0>`: "argument of type int is incompatible with template parameter of type sar::Compute")."""
    meta = only_meta(dataset, "accumulate")
    assert [i["origin"] for i in meta["instantiations"]] == ["inferred"], meta["instantiations"]
    assert set(build_statuses(meta).values()) == {"ok"}, build_statuses(meta)
