"""instantiations.plan: origins, their precedence, argument folding, defaults and the per-kernel limit."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from miner.units import instantiations
from miner.units.instantiations import eval_int, plan
from miner.units.records import Launch
from tests.conftest import FIXTURES, ROOT


def tp(name: str, kind: str = "type", type_: str | None = None, default: str | None = None) -> dict[str, Any]:
    return {"kind": kind, "name": name, "type": type_, "default": default}


def meta(*params: dict[str, Any], spec: bool = False) -> dict[str, Any]:
    return {"template_params": list(params), "is_specialization": spec}


def launch(kind: str = "<<<>>>", **kw: Any) -> Launch:
    return Launch(kernel=("k.cu", 0), launcher="k", path="k.cu", line=1, kind=kind, **kw)


def ids(insts: list[dict[str, Any]]) -> dict[str, str]:
    return {"_".join(i["args"]): i["origin"] for i in insts}


@pytest.mark.parametrize(("text", "value"), [
    ("24 * 32", 768), ("!!0", 0), ("!!11", 1), ("(48 == 48) ? 0 : 48", 0), ("256u", 256), ("0x10", 16),
    ("7 / 2", 3), ("-7 / 2", -3), ("1 << 4", 16), ("true && false", 0), ("(8 > 8)", 0), ("!(3 > 2)", 0),
])
def test_eval_int_folds_constant_expressions(text: str, value: int) -> None:
    assert eval_int(text) == value


@pytest.mark.parametrize("text", ["N * 2", "sizeof(float)", "T", "1 / 0", "__import__('os')", ""])
def test_eval_int_refuses_anything_else(text: str) -> None:
    assert eval_int(text) is None


def test_reference_wins_over_inferred_and_replaces_it() -> None:
    m = meta(tp("T"), tp("N", "value", "int"))
    got = plan(m, [launch("reference", host_template_args=[["float", "4"]], host_defaulted=True),
                   launch(host_template_args=[["float", "128"]], host_defaulted=True)], [])
    assert ids(got) == {"float_4": "reference"}


def test_nothing_found_gives_one_inferred_default() -> None:
    m = meta(tp("T"), tp("index_t"), tp("N", "value", "int"), tp("B", "value", "bool"))
    assert ids(plan(m, [], [])) == {"float_int_128_false": "inferred"}


def test_own_default_arguments_fill_missing_parameters() -> None:
    m = meta(tp("T"), tp("N", "value", "int", "64"), tp("M", "value", "int", "N * 2"))
    assert ids(plan(m, [launch(template_args=["double"])], [])) == {"double_64_128": "call_site"}
    assert ids(plan(m, [], [])) == {"float_64_128": "inferred"}


def test_strongest_origin_kept_for_the_same_arguments() -> None:
    m = meta(tp("N", "value", "int"), tp("SQ", "value", "bool"))
    got = plan(m, [launch(template_args=["128", "false"]), launch(template_args=["256", "1"], in_lambda=True),
                   launch("reference", template_args=["256", "true"])], [["128", "false"]])
    assert ids(got) == {"128_false": "explicit", "256_true": "dispatch"}


def test_value_arguments_are_folded_per_parameter_type() -> None:
    m = meta(tp("T"), tp("W", "value", "int"), tp("X", "value", "bool"), tp("U", "value", "unsigned int"))
    got = plan(m, [launch("reference", host_template_args=[["float", "24 * 32", "!!11", "(1u << 3)"]])], [])
    assert ids(got) == {"float_768_true_8": "reference"}


def test_argument_lists_that_do_not_fit_are_ignored() -> None:
    m = meta(tp("T"), tp("N", "value", "int"))
    got = plan(m, [launch(template_args=["float", "4", "extra"]), launch(template_args=["float"])], [])
    assert ids(got) == {"float_128": "inferred"}


def test_specializations_and_plain_kernels() -> None:
    assert plan(meta(spec=True), [], [])[0]["origin"] == "specialization"
    assert plan(meta(), [launch(template_args=["float"])], [])[0]["origin"] == "none"


def test_limit_keeps_every_type_and_varied_values() -> None:
    m = meta(tp("T"), tp("A", "value", "int"), tp("B", "value", "int"))
    rows = [[t, str(a), str(b)] for a in (1, 2, 3, 4) for b in (8, 16, 32) for t in ("float", "double", "c10::Half")]
    omitted: list[dict[str, Any]] = []
    got = plan(m, [launch("reference", host_template_args=rows)], [], limit=9, omitted=omitted)
    assert len(got) == 9 and len(omitted) == len(rows) - 9
    assert {i["args"][0] for i in got} == {"float", "double", "c10::Half"}
    per_type = [i for i in got if i["args"][0] == "float"]
    # Three float picks, no two with the same A or the same B.
    assert len({i["args"][1] for i in per_type}) == 3 and len({i["args"][2] for i in per_type}) == 3
    assert {tuple(i["args"]) for i in got}.isdisjoint({tuple(i["args"]) for i in omitted})


def test_default_limit_is_documented() -> None:
    assert str(instantiations.MAX_INSTANTIATIONS) in (instantiations.__doc__ or "") or \
        "MAX_INSTANTIATIONS" in (instantiations.__doc__ or "")


def test_explicit_instantiation_lines() -> None:
    text = "template __global__ void k<float, 64>(const float*, int);\ntemplate void ns::k<double, 1>(int);\n"
    assert instantiations.explicit_in(text) == {"k": [["float", "64"], ["double", "1"]]}


def test_eval_int_ignores_integer_casts() -> None:
    assert eval_int("int(64) / 4") == 16
    assert eval_int("(unsigned)3 * 2") == 6
    assert eval_int("std::size_t(8)") == 8
    assert eval_int("float(2)") is None


def test_dispatch_arguments_are_dispatch_instantiations() -> None:
    meta = {"template_params": [{"name": "T", "kind": "type"}, {"name": "N", "kind": "value", "type": "int"}],
            "is_specialization": False}
    launches = [launch(dispatch_args=[["float", "64"], ["float", "32"]])]
    got = {tuple(i["args"]): i["origin"] for i in plan(meta, launches, [])}
    assert got == {("float", "64"): "dispatch", ("float", "32"): "dispatch"}


def test_a_type_parameter_spelling_in_and_t_is_no_index() -> None:
    """`InT` (an input type) holds the letters of `int` but is no index: it defaults to float like `OutT`."""
    m = meta(tp("InT"), tp("OutT"), tp("IntT"))
    assert [i["args"] for i in plan(m, [], [])] == [["float", "float", "int"]]


def test_arguments_left_in_a_templates_own_scope_give_way_to_concrete_ones() -> None:
    m = meta(tp("T"), tp("I"), tp("M"))
    omitted: list[dict[str, Any]] = []
    got = plan(m, [launch(template_args=["float", "unsigned int", "map<int>"]),
                   launch(template_args=["float", "typename base_type::index_type", "map<int>"]),
                   launch(template_args=["double", "unsigned int", "<dependent type>"]),
                   launch(template_args=["double", "typename holder<float>::index_type", "map<int>"])], [],
               omitted=omitted)
    assert ids(got) == {"float_unsigned int_map<int>": "call_site",
                        "double_typename holder<float>::index_type_map<int>": "call_site"}
    assert sorted((o["args"][1], o["why"]) for o in omitted) == [
        ("typename base_type::index_type", "unresolved"), ("unsigned int", "unresolved")]
    # alone, they are still what there is
    assert ids(plan(m, [launch(template_args=["float", "typename base_type::index_type", "map<int>"])], [])) == {
        "float_typename base_type::index_type_map<int>": "call_site"}


def test_a_type_parameter_read_as_a_subscript_defaults_to_int() -> None:
    m = dict(meta(tp("Dtype"), tp("Itype")), params=[
        {"name": "feat", "type": "const Dtype *"}, {"name": "rows", "type": "const Itype *__restrict__"}])
    text = "{ out[i] = feat[rows[i / c] * c + i % c]; }"
    assert ids(plan(m, [], [], kernel_text=text)) == {"float_int": "inferred"}
    assert ids(plan(m, [], [], kernel_text="{ out[i] = feat[i] + rows[i]; }")) == {"float_float": "inferred"}


def test_a_type_parameter_read_into_a_local_that_subscripts_defaults_to_int() -> None:
    m = dict(meta(tp("T")), params=[{"name": "in", "type": "T *"}, {"name": "bins", "type": "uint32_t *"}])
    text = "{ for (;;) { auto item = in[j]; atomicAdd(&bins[item], 1); } }"
    assert ids(plan(m, [], [], kernel_text=text)) == {"int": "inferred"}
    assert ids(plan(m, [], [], kernel_text="{ auto item = in[j]; out[j] = item * 2; }")) == {"float": "inferred"}


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_an_unlaunched_histogram_unit_compiles(tmp_path: Path) -> None:
    """The kernel in tests/fixtures/unlaunched_histogram, extracted and built with the real nvcc: `T = float` was
    "expression must have integral or unscoped enum type" at `bins[item]`."""
    out = tmp_path / "out"
    subprocess.run([sys.executable, "-m", "miner", "extract", str(FIXTURES / "unlaunched_histogram"), "-o",
                    str(out), "--build", "-q"], check=True, cwd=ROOT)
    (meta_path,) = out.glob("*/metadata.json")
    insts = json.loads(meta_path.read_text())["instantiations"]
    assert [(i["template_args"], i["origin"], i["build"]["status"]) for i in insts] == [
        ({"T": "int"}, "inferred", "ok")]


def test_a_type_parameter_whose_every_bit_is_set_defaults_to_int() -> None:
    """`if (coded[i] == ~((T)0x0))` (an "empty" marker of a code table): `~` takes no float."""
    m = dict(meta(tp("T")), params=[{"name": "coded", "type": "T *"}])
    assert ids(plan(m, [], [], kernel_text="{ if (coded[i] == ~((T)0x0)) return; }")) == {"int": "inferred"}
    assert ids(plan(m, [], [], kernel_text="{ x = ~static_cast<T>(0); }")) == {"int": "inferred"}
    assert ids(plan(m, [], [], kernel_text="{ coded[i] = -coded[i]; }")) == {"float": "inferred"}
