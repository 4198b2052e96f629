"""`extract --build` on tests/fixtures/blind21: patterns found on the twenty-first set of repositories (issue 14,
scripts/corpus_repos_blind21.txt, ML-style repos measured in session 21), each reproduced by code of our own and
judged by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build

_nvcc = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def specialized_elsewhere(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "blind21/specialized_elsewhere")


def _specialization(ds: dict[str, Any], name: str, arg: str) -> dict[str, Any]:
    [m] = [m for m in ds["metas"] if m["name"] == name and f"{name}<{arg}>" in m["signature"]]
    return m


@_nvcc
@pytest.mark.parametrize(("kernel", "arg", "line"), [
    # launched from a host template instantiated for float and __half: `T` deduced per instantiation
    ("blend_rows", "float", 8), ("blend_rows", "__half", 8),
    # launched from a plain function with float arguments, beside a specialization for int nothing calls
    ("shift_rows", "float", 15),
    # launched from a member of a class template nothing instantiates, with __half buffers of its own
    ("scale_rows", "__half", 23),
    # launched from a member of a class template whose element type is `typename Traits<P>::Elem`, instantiated
    # for both precisions: text cannot evaluate the member type, so every fitting specialization has the launch
    ("negate_rows", "float", 37), ("negate_rows", "__half", 37),
])
def test_a_launch_through_a_declared_template_reaches_the_specializations_another_file_defines(
        specialized_elsewhere: dict[str, Any], kernel: str, arg: str, line: int) -> None:
    """The header only declares the kernel template; each type has an explicit specialization in another .cu, which
    the launching file cannot see (the linker joins them). With two or more specializations of the name, none was
    given the launch ("named nowhere ... nothing there launches it")."""
    m = _specialization(specialized_elsewhere, kernel, arg)
    assert [lc["line"] for lc in m["launches"]] == [line], m.get("launch_missing")
    assert m["launches"][0]["path"].endswith("src/blend.cu"), m["launches"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@_nvcc
@pytest.mark.parametrize(("kernel", "arg"), [("blend_rows", "double"), ("shift_rows", "int"), ("scale_rows", "float")])
def test_a_specialization_no_launch_can_take_stays_unlaunched(specialized_elsewhere: dict[str, Any], kernel: str,
                                                              arg: str) -> None:
    """No instantiation of the host template takes double, the plain call passes float, the class member __half:
    those specializations are the program's dead code, not launched."""
    m = _specialization(specialized_elsewhere, kernel, arg)
    assert m["launches"] == [], m["launches"]
    assert m["launch_missing"]["reason"] == "not_referenced", m["launch_missing"]
