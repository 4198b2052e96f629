"""Keep the tests that share a costly fixture on one xdist worker.

A module-scoped fixture (one `extract --build` of a fixture project, say) is built once per worker that runs a test
needing it. xdist's default `--dist load` hands out tests in chunks of consecutive ids, so a module's tests are often
split between the two workers and its fixtures built twice. Here every test that needs a fixture of module, class
or package scope gets an `xdist_group` mark naming the set of tests that share such fixtures with it; `--dist
loadgroup` (pyproject's addopts) then sends each set to one worker whole, while the tests that share nothing are
still handed out one by one.
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

SHARED_SCOPES = ("package", "module", "class")


def _fixture_keys(item: pytest.Item) -> list[str]:
    """One key per instance of a shared fixture the test needs: the scope's node id and the fixture's name."""
    info = getattr(item, "_fixtureinfo", None)  # doctest items and the like have none
    if info is None:
        return []
    keys = []
    for name, defs in info.name2fixturedefs.items():
        if not defs:
            continue
        scope = defs[-1].scope  # the definition that wins for this test (a closer override comes last)
        if scope in SHARED_SCOPES:
            node = item.getparent({"package": pytest.Package, "module": pytest.Module, "class": pytest.Class}[scope])
            keys.append(f"{node.nodeid if node else item.nodeid}::{name}")
    return keys


def mark_shared_fixture_groups(items: Iterable[pytest.Item]) -> None:
    """Add `xdist_group(NAME)` to each test that shares a fixture instance with others: tests joined by any chain
    of shared instances form one group, named by its smallest key (the same on every worker)."""
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        while parent.setdefault(k, k) != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    tagged = []
    for item in items:
        keys = _fixture_keys(item)
        if not keys:
            continue
        tagged.append((item, keys[0]))
        for k in keys[1:]:
            a, b = find(keys[0]), find(k)
            if a != b:
                parent[max(a, b)] = min(a, b)  # the smaller key stays the root: the name does not depend on order
    for item, key in tagged:
        item.add_marker(pytest.mark.xdist_group(find(key)))
