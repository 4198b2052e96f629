"""A feature macro a portable header decides per compiler (`#if defined(__clang__)` ... `#elif defined(__GNUC__)`
...): the parse (clang) took the clang branch, nvcc's passes take g++'s. tests/fixtures/compiler_chains reproduces a
half-precision library's shape, where the macro enables a friend declaration; a unit with only the clang branch left
the macro undefined for nvcc ("member ... is inaccessible"). Real libclang parse, real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from miner.units.closure.compiler_chains import identity_projection
from tests.conftest import FIXTURES, build_statuses, extract_and_build, only_meta

HEADER = FIXTURES / "compiler_chains" / "include" / "tiny_half.h"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "compiler_chains")


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")
def test_unit_defines_the_macro_as_nvcc_takes_it(dataset: dict[str, Any]) -> None:
    meta = only_meta(dataset, "scale_by_fixed")
    assert set(build_statuses(meta).values()) == {"ok"}, build_statuses(meta)
    unit = (Path(dataset["out"]) / meta["id"] / meta["instantiations"][0]["unit"]).read_text(encoding="utf-8")
    assert "#elif defined(__GNUC__)" in unit and "#if TH_GCC_VERSION >= 407" in unit


def test_projection_keeps_every_branch_of_the_macro_and_nothing_else() -> None:
    data = HEADER.read_bytes()
    at = data.index(b"#define TH_USER_LITERALS 1")
    text = identity_projection(data, at, "TH_USER_LITERALS")
    assert text is not None
    assert text.count("#define TH_USER_LITERALS 1") == 4  # clang, Intel, g++, MSVC
    # the macros its conditions read, defined as the file does, undefined after as the file does
    assert text.startswith("#define TH_GCC_VERSION (__GNUC__ * 100 + __GNUC_MINOR__)\n#if defined(__INTEL_COMPILER)")
    assert text.rstrip().endswith("#undef TH_GCC_VERSION\n#undef TH_ICC_VERSION")
    # other macros of the chain stay out
    assert "TH_CONSTEXPR_OK" not in text and "TH_TWOS_COMPLEMENT" not in text


def test_no_projection_outside_a_chain_per_compiler() -> None:
    data = HEADER.read_bytes()
    assert identity_projection(data, data.index(b"#define TINY_HALF_H"), "TINY_HALF_H") is None
    assert identity_projection(data, data.index(b"#define TH_ICC_VERSION 0"), "TH_ICC_VERSION") is not None


def test_no_projection_where_a_kept_condition_reads_a_dropped_definition() -> None:
    data = (b"#if defined(__clang__)\n#define LEVEL 2\n#if LEVEL > 1\n#define FAST 1\n#endif\n"
            b"#elif defined(__GNUC__)\n#define FAST 1\n#endif\n")
    assert identity_projection(data, data.index(b"#define FAST"), "FAST") is None
