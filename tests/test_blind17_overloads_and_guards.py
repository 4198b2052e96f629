"""`extract --build` on tests/fixtures/blind17: two more patterns of the seventeenth set of repositories (issue 14,
scripts/corpus_repos_blind17.txt): explicit instantiations of an overloaded host template, and macro definitions a
compiler feature test chooses. Reproduced by code of our own and judged by the real libclang parse and nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta, unit_texts

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def overloaded(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind17/overloaded_launchers")


@pytest.mark.parametrize(("kernel", "op", "repeat"), [
    ("devFtoD", "opScale", "4"), ("devDtoD", "opCopy", "4"), ("devDDtoD", "opSum", "2"),
    ("devtoD", "opNegate", "1"), ("devDFtoD", "opAxpy", "8")])
def test_an_explicit_instantiation_of_an_overloaded_host_template_instantiates_that_overload_only(
        overloaded: dict[str, Any], kernel: str, op: str, repeat: str) -> None:
    """`template bool apply<opSum>(Field *out, const Field *a, const Field *b, cudaStream_t stream);` names one of
    five `apply<Op>` overloads, each launching its own element-wise kernel: every overload took every line, so each
    kernel was instantiated with all five functors, four of another arity ("cannot be called with the given
    argument list"). `devFtoD` and `devDtoD` have overloads of as many parameters (`float` against `const Field *`):
    the parameter types decide, and `opCopy` would compile in `devFtoD` too, so only the exact list tells."""
    m = only_meta(overloaded, kernel)
    insts = [(i["template_args"], i["origin"]) for i in m["instantiations"]]
    assert insts == [({"Op": op, "repeat": repeat}, "host_template")], insts
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def feature_guard(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind17/feature_guard")


def test_a_macro_a_compiler_feature_test_chooses_keeps_its_chain(feature_guard: dict[str, Any]) -> None:
    """`#ifdef __has_feature` / `# define PORT_HAS_FEATURE(x) __has_feature(x)` / `#else` / `... 0` / `#endif` in
    a portability header: the parse (clang) took the first branch and the unit copied that `#define` alone, so
    g++'s host pass stopped at `#if PORT_USE_RVALUE_REFERENCES` ("missing binary operator before token"). The
    chain comes whole, as does `PORT_GCC_VERSION`'s (`#if defined(__GNUC__) && !defined(__clang__)`), whose
    clang branch `0` nvcc's passes never take."""
    m = only_meta(feature_guard, "shift_left")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    for text in unit_texts(feature_guard, m):
        assert "#ifdef __has_feature\n# define PORT_HAS_FEATURE(x) __has_feature(x)\n#else\n" in text, text
        assert "#if defined(__GNUC__) && !defined(__clang__)\n# define PORT_GCC_VERSION (__GNUC__" in text, text


@pytest.fixture(scope="module")
def macro_namespace(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind17/macro_namespace")


def test_a_macro_invocation_that_opens_a_namespace_is_one_piece_with_what_it_needs(
        macro_namespace: dict[str, Any]) -> None:
    """`EXPR_BINARY(Plus, +, a + b)` writes `namespace op { struct Plus ... }`, the alias `Plus` and operator
    templates naming `IsClass` and `Capture`. The parse puts `op::Plus` at the invocation, in namespace `op`: the
    unit copied the invocation twice (once inside `namespace op {`) and never took `IsClass`/`Capture`, which only
    the operator templates name ("IsClass is not a template")."""
    m = only_meta(macro_namespace, "apply_expr")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    for text in unit_texts(macro_namespace, m):
        assert text.count("EXPR_BINARY(Plus, +, a + b)") == 1, text
