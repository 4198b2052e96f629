"""cindex_speed.get_children answers the cursors that never have children (references, literals) without asking
libclang, and every listing stays the bindings' own."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

ci = pytest.importorskip("clang.cindex")

from miner.frontends import cindex_speed  # noqa: E402

# Every reference and literal kind of LEAF_KINDS but Objective-C's, beside the kinds that look alike and do have
# children (an imaginary literal, a base specifier).
SOURCE = r"""
namespace ns { struct Base { int m = 0; }; template <class T> struct Box { T v; }; int g; }
struct Derived : ns::Base { int n; Derived() : n(1) {} };
template <class T> T twice(T x) { return x + x; }
template <class T> T twice(T* x) { return *x; }
template <class T> auto pick(T x) { return twice(x); }   // an unresolved overload set: OVERLOADED_DECL_REF
int main() {
    ns::Box<const char*> b{"text"};
    int v[3] = {1, 2, 3};
    Derived d;
    d.m = 'c';
    double f = 1.5 + twice(2.5f);
    bool t = true;
    int* p = nullptr;
    auto z = 2.0i;
    int k = 0;
    auto lam = [&k]() { return k + ns::g; };
    const char* name = b.v;
    if (t) goto done;
    k = lam() + pick(1);
done:
    return (int)f + (p == nullptr) + (int)sizeof(b) + v[0] + d.n + (name != nullptr) + (int)__real__ z;
}
"""


@pytest.fixture()
def tu(tmp_path: Path):
    cindex_speed.install()
    src = tmp_path / "leaves.cpp"
    src.write_text(SOURCE)
    parsed = ci.Index.create().parse(str(src), args=["-x", "c++", "-std=c++17"])
    assert not [d for d in parsed.diagnostics if d.severity >= ci.Diagnostic.Error]
    return parsed, str(src)


def _nodes(tu, path: str) -> list:
    """Every node of the main file's declarations, listed by the bindings' own get_children."""
    own = cindex_speed.ORIGINAL["get_children"]
    out, stack = [], [c for c in own(tu.cursor) if c.location.file is not None and c.location.file.name == path]
    while stack:
        c = stack.pop()
        out.append(c)
        stack.extend(own(c))
    return out


def test_leaf_kinds_have_no_children_and_every_listing_is_the_bindings(tu) -> None:
    parsed, path = tu
    own = cindex_speed.ORIGINAL["get_children"]
    nodes = _nodes(parsed, path)
    kinds = Counter(c._kind_id for c in nodes)
    # The source holds each leaf kind the check is about (Objective-C's aside) and the look-alikes with children.
    assert {43, 45, 46, 47, 48, 49, 50, 106, 107, 109, 110, 130, 131} <= set(kinds), sorted(kinds)
    assert {44, 108} <= set(kinds)
    for c in nodes:
        mine = list(c.get_children())
        assert mine == list(own(c)), c.kind
        if c._kind_id in cindex_speed.LEAF_KINDS:
            assert mine == []
    assert any(list(own(c)) for c in nodes if c._kind_id in (44, 108))  # (why they are not leaves)


def test_a_leaf_is_answered_without_a_libclang_call(tu, monkeypatch) -> None:
    parsed, path = tu
    nodes = _nodes(parsed, path)
    lib = ci.conf.lib
    real = lib.clang_visitChildren
    calls = Counter()

    def counting(cursor, visitor, data):
        calls[cursor._kind_id] += 1
        return real(cursor, visitor, data)
    monkeypatch.setattr(lib, "clang_visitChildren", counting)
    for c in nodes:
        list(c.get_children())
    assert not set(calls) & cindex_speed.LEAF_KINDS  # (at the base every node, leaves too, was one call)
    assert calls  # (the others still are)
