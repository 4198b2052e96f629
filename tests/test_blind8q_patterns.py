"""`extract --build` on tests/fixtures/blind8q: patterns found on the eighth and seventh sets (issue 14,
scripts/corpus_repos_blind8.txt and blind7.txt, development repos since session 12), each reproduced by code of our
own and judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


def _args(meta: dict[str, Any]) -> list[tuple[list[str], str]]:
    return [(i["args"], i["origin"]) for i in meta["instantiations"]]


def _unit(dataset: dict[str, Any], meta: dict[str, Any]) -> str:
    inst = meta["instantiations"][0]
    return (Path(dataset["out"]) / meta["id"] / inst["unit"]).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def member_fields(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind8q/member_fields")


def test_members_of_a_dependent_nested_class_deduce_the_kernel_arguments(member_fields: dict[str, Any]) -> None:
    """`scatter_rows<W><<<...>>>((real_t*) work_, s.rows, s.cols, s.lanes, p.bits, out)` in a member template of
    `Lattice<R>`, with `s` a `LaneSlots<W>` (its `rows` declared in the base `Slots<W>`) and `p` an `auto` a member
    template returns: the parse types none of these (`<dependent type>`), so `key_t` was never deduced and the
    kernel fell back to inferred floats ("expression must have integral or unscoped enum type"). The members'
    declared types (`key_t *`, through the base; `key_t` of the returned `Pattern`) name the class's alias, which
    its probe reads for `Lattice<float>`: one instantiation per `W` the class's switch instantiates."""
    m = only_meta(member_fields, "scatter_rows")
    args = _args(m)
    assert {tuple(a) for a, _ in args} == {("1", "float", "unsigned long"), ("2", "float", "unsigned long")}, args
    assert {o for _, o in args} == {"host_template"}, args
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_typed_argument_wins_over_a_member_read_from_its_declaration(member_fields: dict[str, Any]) -> None:
    """`gather_rows<W><<<...>>>(..., s.rows, seed, out)`: the member gives `key_t` as text, the local `seed` gives
    `unsigned long` from the AST; the two differ only in spelling, and the typed one is kept (before, any two
    arguments that disagreed dropped the whole deduction)."""
    m = only_meta(member_fields, "gather_rows")
    assert {tuple(a) for a, _ in _args(m)} == {("1", "float", "unsigned long"), ("2", "float", "unsigned long")}
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def callable_default(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind8q/callable_default")


def test_a_function_object_parameter_takes_a_callable_stand_in(callable_default: dict[str, Any]) -> None:
    """`fold_kernel<Acc, T, Combine>(n, combine, in, out)` launched from a host template nothing instantiates hands
    `combine` to a device function that calls it; `visit_kernel<Chunk, Visit, Extra...>` calls `visit(...)` itself.
    An inferred `float` is no function object ("expression preceding parentheses of apparent call must have
    (pointer-to-) function type"); such a parameter takes a stand-in the unit declares, whose call returns its first
    argument. A parameter that is data (`Chunk info`, handed to `visit`) keeps its argument."""
    fold = only_meta(callable_default, "fold_kernel")
    assert _args(fold) == [(["float", "float", "km_inferred_callable"], "inferred")]
    assert "struct km_inferred_callable" in _unit(callable_default, fold)
    assert set(build_statuses(fold).values()) == {"ok"}, build_statuses(fold)
    visit = only_meta(callable_default, "visit_kernel")
    assert _args(visit) == [(["int", "km_inferred_callable", "float"], "inferred")]
    assert set(build_statuses(visit).values()) == {"ok"}, build_statuses(visit)


@pytest.fixture(scope="module")
def bounded_depth(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind8q/bounded_depth")


def test_a_host_value_parameter_that_indexes_a_table_stays_in_bounds(bounded_depth: dict[str, Any]) -> None:
    """`for_each_chunk<depth>` (nothing instantiates it) reads `lists_per_depth[depth - 1]` of a 4-entry table and
    launches with a `Batch<depth>` whose members the same tables size: the usual value default 128 made
    `Batch<128>`, "expression must have a constant value". The default is the largest value that keeps the host's
    subscripts of known-size arrays in bounds."""
    m = only_meta(bounded_depth, "batch_kernel")
    assert _args(m) == [(["Batch<4>"], "inferred")] or _args(m) == [(["lists::Batch<4>"], "inferred")], _args(m)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def inactive_branch(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind8q/inactive_branch")


def test_a_kernel_without_an_ast_takes_its_file_s_toolkit_includes(inactive_branch: dict[str, Any]) -> None:
    """`to_half_scaled` sits in `#if 0`: only tree-sitter sees it and no define turns its branch on, so it has no
    AST closure, and its unit included nothing of its file ("identifier "__half" is undefined"). It takes the
    standard and toolkit headers its file includes unconditionally before it (not `<iostream>`, which sits under
    an `#ifdef`)."""
    m = only_meta(inactive_branch, "to_half_scaled")
    assert m["frontend"] == "treesitter"
    assert m["closure"]["includes"] == ["cuda_fp16.h", "cstdio"], m["closure"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def missing_header(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind8q/missing_header")


def test_a_header_the_project_lacks_is_a_stated_reason(missing_header: dict[str, Any]) -> None:
    """`#include "stride_helpers.hpp"`, a file the project never committed: the unit cannot declare what it
    would, and the original translation unit stops at the include. The failed build says so (`toolkit_removed`,
    the build record's stated reason) instead of only "identifier is undefined"."""
    m = only_meta(missing_header, "fill_strided")
    (inst,) = m["instantiations"]
    assert inst["build"]["status"] == "failed"
    assert "stride_helpers.hpp" in inst["build"]["toolkit_removed"], inst["build"]
    assert "does not contain" in inst["build"]["toolkit_removed"]
