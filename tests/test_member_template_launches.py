"""`extract --build` on tests/fixtures/cuco_like: header-only container libraries (the pattern of cuCollections,
issue 14's fifth blind set) whose kernels are launched only from member function templates of class templates, with
the iterator and ref types deduced from callers in an example; each reproduced by a container of our own and judged
by the real libclang parse and the real nvcc."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

from tests.conftest import build_statuses, extract_and_build, only_meta

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not installed")


@pytest.fixture(scope="module")
def deduced_member(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "cuco_like/deduced_member")


def test_a_deduced_member_template_call_instantiates_the_launch_inside(deduced_member: dict[str, Any]) -> None:
    """`bag.insert(keys, keys + n)` on a `bag_set<int>`, whose member template `insert(InputIt, InputIt, ...)`
    launches `put_n<tile_size, block_size><<<...>>>(first, n, ref())`: the call writes no template arguments, so
    none was recorded and the kernel got `inferred` floats ("expression must have class type"). The member template's
    arguments are now deduced from the call (a pointee's const kept: `int const *` gives a second instantiation),
    the launch's trailing arguments from their types in the member template (its own parameters are depth 1 there;
    `ref()`, dependent through `this`, by the method's declared return type `ref_type`), and the class's probe
    reads `tile_size` and `ref_type` per class instantiation."""
    m = only_meta(deduced_member, "put_n")
    got = sorted((i["args"], i["origin"]) for i in m["instantiations"])
    assert got == [(["2", "128", "const int *", "slotbag::bag_ref<int>"], "host_template"),
                   (["2", "128", "int *", "slotbag::bag_ref<int>"], "host_template")], got
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def forwarding_member(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "cuco_like/forwarding_member")


def test_a_call_forwarded_through_a_member_object_reaches_the_launch(forwarding_member: dict[str, Any]) -> None:
    """`set.insert(keys, keys + n)` on a `hash_set<long long>` whose `insert` forwards to `impl_->insert(first, last,
    ref(), stream)`, `impl_` a `std::unique_ptr<impl_type>` with `impl_type` a private alias of
    `detail::table_impl<Key, TileSize>`, whose member template launches `insert_n<tile_size, block>`: the forwarded
    call names no declaration in the parse (a member of a dependent type), so the implementation class was never
    instantiated (`identifier "tile_size" is undefined`, float iterator and ref). The object's type is now read per
    instantiation of the calling class by its probe (`decltype(*impl_)`, private members readable), which
    instantiates `table_impl<long long, 4>`, and the callee member template's arguments are deduced from the
    forwarded arguments and probed in the caller's class (`ref_type`)."""
    m = only_meta(forwarding_member, "insert_n")
    got = [(i["args"], i["origin"]) for i in m["instantiations"]]
    assert got == [(["4", "128", "long long *", "unsigned long long", "fwdset::set_ref<long long>"],
                    "host_template")], got
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)


@pytest.fixture(scope="module")
def auto_view(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return extract_and_build(tmp_path_factory, "cuco_like/auto_view")


def test_an_auto_local_passed_to_the_launch_takes_its_initializers_type(auto_view: dict[str, Any]) -> None:
    """`auto view = get_mutable_view(); store_n<block_size><<<...>>>(first, n, view);` in a member template of
    `ring_map<Key, Value>`, `mutable_view` a class nested in it: the argument's type was the undeduced `auto`, taken
    as the kernel's `View` (`"auto" is not allowed here`). Now it is the initializer's declared type, a name of the
    class's scope (nested classes count as such), which the class's probe qualifies per instantiation."""
    m = only_meta(auto_view, "store_n")
    got = [(i["args"], i["origin"]) for i in m["instantiations"]]
    assert got == [(["256", "int *", "ringmap::ring_map<int, float>::mutable_view"], "host_template")], got
    assert set(build_statuses(m).values()) == {"ok"}, build_statuses(m)
