"""`extract --build` on tests/fixtures/host_api_map: kernels that use only the device side of a bundled GPU hash
map of our own whose host API (a traced factory, an allocating constructor, `print`) reaches a vendored profiling
header that clashes with the toolkit's own copy (issue 14). Real libclang parse, real nvcc."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "host_api_map")


def _body(dataset: dict[str, Any], meta: dict[str, Any]) -> str:
    (inst,) = meta["instantiations"]
    text = (Path(dataset["out"]) / meta["id"] / "units" / inst["id"] / "unit.cu").read_text(encoding="utf-8")
    return text[text.index("// km:body-begin"):]


@pytest.mark.parametrize("name", ["insert_keys", "lookup_keys"])
def test_a_kernel_using_a_maps_device_members_carries_its_host_api_as_declarations(
        dataset: dict[str, Any], name: str) -> None:
    m = only_meta(dataset, name)
    # was: `"nvtx3::rgb" is ambiguous` (the vendored wrapper, reached from the host members' bodies, inlined next
    # to the toolkit's copy that thrust includes)
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    body = _body(dataset, m)
    assert "class slot_map" in body and "__device__ Value find(Key k) const {" in body
    # the host API stays declared (the class's interface and layout are the source's), without its bodies
    assert "static auto create(" in body and "void destroy(cudaStream_t stream) ;" in body
    # a constructor template's member initializers go with its body
    assert "slot_map(slot_map<Key, OtherValue> const &other, Value fill)\n      ;" in body, body
    assert "HM_TRACE" not in body and "nvtx3" not in body and "check_cuda" not in body, body
    # nor what only those bodies named: the map's own init kernel, the project's host helpers
    assert "init_slots" not in body and "to_host" not in body


def test_a_host_member_the_host_side_of_a_kept_member_calls_keeps_its_body(dataset: dict[str, Any]) -> None:
    body = _body(dataset, only_meta(dataset, "lookup_keys"))
    assert "return host_size_hint();" in body
    assert "std::size_t host_size_hint() const { return capacity_ / 2; }" in body


def test_restrict_on_a_class_type_parameter_is_not_written_into_the_instantiation(dataset: dict[str, Any]) -> None:
    # `map_type const __restrict__ map`: nvcc drops the qualifier when it substitutes a class; written out in the
    # explicit instantiation and the launcher it was `"restrict" is not allowed`
    m = only_meta(dataset, "lookup_keys")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    body = _body(dataset, m)
    assert "lookup_keys<slot_map<int, int>>(slot_map<int, int> const, int const *__restrict__, int, int *);" in body
    assert "slot_map<int, int> km_map," in body and "int> const __restrict__" not in body


def test_the_maps_own_kernel_launched_by_its_host_constructor_is_still_mined(dataset: dict[str, Any]) -> None:
    m = only_meta(dataset, "init_slots")
    assert [i["args"] for i in m["instantiations"]] == [["int", "int"]], m["instantiations"]
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_vendored_copy_of_a_toolkit_header_gives_way_to_the_toolkits_own(dataset: dict[str, Any]) -> None:
    # `traced_scale` traces its host side through the project macro, which expands to the vendored copy's
    # NVTX3_FUNC_RANGE_IN: the unit includes <nvtx3/nvtx3.hpp> instead of inlining the copy, whose names the
    # toolkit's copy (included by thrust) would declare a second time
    m = only_meta(dataset, "scale_values")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    (inst,) = m["instantiations"]
    text = (Path(dataset["out"]) / m["id"] / "units" / inst["id"] / "unit.cu").read_text(encoding="utf-8")
    assert "#include <nvtx3/nvtx3.hpp>" in text
    body = text[text.index("// km:body-begin"):]
    assert "struct rgb" not in body and "scoped_range_in" not in body, body
    # the host pass expands the project macro: the domain type its body names comes along (was: "namespace hm
    # has no member trace_domain")
    assert "struct trace_domain" in body and "#define HM_TRACE()" in body


def test_a_type_parameter_read_as_a_subscript_is_guessed_as_an_integer(dataset: dict[str, Any]) -> None:
    m = only_meta(dataset, "gather_sorted")
    assert [(i["origin"], i["args"]) for i in m["instantiations"]] == [("inferred", ["float", "int"])], \
        m["instantiations"]
    # was `<float, float>`: "expression must have integral or unscoped enum type"
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


def test_a_project_header_named_like_a_toolkit_header_is_no_copy_of_it(dataset: dict[str, Any]) -> None:
    m = only_meta(dataset, "triple_values")
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
    body = _body(dataset, m)
    assert "struct times_three" in body, body
