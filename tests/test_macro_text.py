"""miner.units.macro_text: the project's macros expanded in text, to read the lines they write."""

from __future__ import annotations

from miner.units import instantiations, macro_text

SRC = """
#define GLOBAL __global__
#define ONE(T, N) template GLOBAL void k<T, N>(T *); // one
#define ALL(T) ONE(T, 1) ONE(T, 2)
#define NAME(a, b) a##_##b
#define STR(x) #x
#define VA(f, ...) f(__VA_ARGS__)
ALL(float)
ONE(at::Half, 8)
"""


def test_expand_nested_invocations_and_read_explicit_instantiations() -> None:
    macros = macro_text.definitions(SRC)
    assert macros["ALL"].params == ("T",) and macros["GLOBAL"].params is None
    found = instantiations.explicit_in(SRC, macros)
    assert found == {"k": [["float", "1"], ["float", "2"], ["at::Half", "8"]]}


def test_paste_stringize_and_variadic() -> None:
    macros = macro_text.definitions(SRC)
    out = macro_text.expand("NAME(x, y) STR(z) VA(g, 1, 2)", macros, {"NAME", "STR", "VA"})
    assert out.split() == ["x_y", '"z"', "g(1,", "2)"]


def test_without_macros_a_plain_line_and_a_macro_spelled_global() -> None:
    assert instantiations.explicit_in("template GLOBAL __launch_bounds__(256) void k<int, 3>(int *);") == {
        "k": [["int", "3"]]}
    assert instantiations.explicit_in("template class W<float>; template <> __global__ void k<int>(int *) {}") == {}
