"""`extract --build` on tests/fixtures/used_methods: a class template whose methods launch kernels, instantiated
implicitly (a base class, a member reached through a pointer). C++ instantiates an implicit instance's method only
where the program uses it, so a method's launch takes only the instances it is called on (the pattern of a
multi-view-stereo library of the tenth set: `FillKernel<curandState>`, which does not compile, was mined because
a `Mat<curandState>` existed). Real libclang parse, real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "used_methods")


def _types(meta: dict[str, Any]) -> set[str]:
    return {next(iter(i["template_args"].values())) for i in meta["instantiations"]}


def test_a_method_takes_only_the_instances_it_is_called_on(dataset: dict[str, Any]) -> None:
    """`Mat<RngState>` (the base of `RngMat`) is only rotated: `fill_kernel<RngState>` is not mined (it used to be,
    and failed: RngState has no `-`); `prob_->Fill(0.5f)` through a `Mat<float>*` member names `Mat<float>`, whose
    type no declaration spells, and gives `fill_kernel<float>`, not `rotate_kernel<float>`."""
    fill = only_meta(dataset, "fill_kernel")
    assert "RngState" not in _types(fill) and "float" in _types(fill), _types(fill)
    rotate = only_meta(dataset, "rotate_kernel")
    assert "RngState" in _types(rotate) and "float" not in _types(rotate), _types(rotate)
    assert set(build_statuses(fill).values()) == set(build_statuses(rotate).values()) == {"ok"}


def test_instances_a_template_brings_keep_every_method(dataset: dict[str, Any]) -> None:
    """`check_fill<int>` / `<double>` build `Mat<T>` and call `m.Fill(...)` in a template body, where the call is
    dependent and records nothing: such instances are not filtered (so `rotate_kernel<int>` stays, over-generated
    but compiling)."""
    fill = only_meta(dataset, "fill_kernel")
    assert {"int", "double"} <= _types(fill), _types(fill)
    assert {"int", "double"} <= _types(only_meta(dataset, "rotate_kernel"))


def test_a_substituted_value_with_a_backslash_is_text_not_a_regex_template() -> None:
    """A template argument holding a character literal (`'\\x00'`) put in for a parameter: `re.sub` read the value
    as a replacement template ("bad escape \\x") and the whole extract stopped with an internal error (a compression
    library of the eleventh set lost half its kernels)."""
    from miner.frontends.common import substitute

    assert substitute("Pad<T, FILL> p;", {"T": "char", "FILL": "'\\x00'"}) == "Pad<char, '\\x00'> p;"
