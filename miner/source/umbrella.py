"""Translation units that reach a library's kernel headers only through its public ("umbrella") header.

A header-only library mined from its header folder (`include/lib/`) has no translation unit of its own: its
kernel headers are parsed alone, and they often include nothing of what they use (a `detail::` helper, an alias
template), because every user includes the one public header (`include/lib.h`) that includes the library's
parts in the order they need each other. Parsed alone, such a header loses what precedes it, and its unit
loses the declarations or their order. The project's own programs (examples, tests) include that public header:
one of them is the translation unit the library is really compiled in.

Chosen here: project translation units whose includes reach a kernel header nothing else includes from a
translation unit, through the inputs' own includes or one public header outside the inputs that includes them;
greedily, the fewest that reach them all, smaller includers first (one parse each).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from miner.source.discover import SOURCE_SUFFIXES
from miner.source.include_graph import TU_SUFFIXES, IncludeGraph

MAX_UMBRELLA_UNITS = 4


def _reach(start: str, edges: dict[str, set[str]]) -> set[str]:
    return IncludeGraph(edges=edges).closure(start)


def units_through_public_headers(inputs: dict[str, bytes], orphans: set[str], pool: Iterable[str],
                                 taken: Iterable[str], includes: Callable[[bytes], list[str]],
                                 lookup: Callable[[str, str], str | None],
                                 read: Callable[[str], bytes | None]) -> list[tuple[str, bytes]]:
    """(path, text) of the project translation units to take as context for `orphans` (kernel headers among
    `inputs` no input translation unit includes directly) that no input or `taken` translation unit reaches.
    `lookup(name, folder)` finds an include in the project, `includes(text)` lists a text's project includes."""
    edges: dict[str, set[str]] = {}
    for p, data in inputs.items():
        edges[p] = {q for n in includes(data) if (q := lookup(n, os.path.dirname(p))) in inputs}
    # A header included by a header an input translation unit includes is reached: no includer is needed.
    orphans = orphans - {q for p in inputs if os.path.splitext(p)[1].lower() in TU_SUFFIXES
                         for q in _reach(p, edges)}
    feeds = {p: got for p in inputs if (got := _reach(p, edges) & orphans)}
    if not feeds:
        return []
    # Headers outside the inputs that include an input reaching an orphan: the library's public header(s).
    public: dict[str, set[str]] = {}
    texts: dict[str, bytes] = {}
    for p in sorted(set(pool)):
        if p in inputs or os.path.splitext(p)[1].lower() not in SOURCE_SUFFIXES:
            continue
        data = read(p)
        if not data:
            continue
        texts[p] = data
        if os.path.splitext(p)[1].lower() in TU_SUFFIXES:
            continue
        got = set().union(*(feeds.get(lookup(n, os.path.dirname(p)) or "", set()) for n in includes(data)))
        if got:
            public[p] = got
    reached: dict[str, set[str]] = {}
    for p, data in texts.items():
        if os.path.splitext(p)[1].lower() not in TU_SUFFIXES:
            continue
        got: set[str] = set()
        for n in includes(data):
            q = lookup(n, os.path.dirname(p)) or ""
            got |= feeds.get(q, set()) | public.get(q, set())
        if got:
            reached[p] = got
    chosen: list[tuple[str, bytes]] = []
    left = set(orphans) - set().union(*(reached.pop(p, set()) for p in taken))
    # The one reaching most first; of those, the one with the fewest includes (an example over a test that
    # also pulls a test framework), then by path for a stable choice.
    while left and len(chosen) < MAX_UMBRELLA_UNITS:
        best = min(reached, key=lambda p: (-len(reached[p] & left), len(includes(texts[p])), p), default=None)
        if best is None or not reached[best] & left:
            break
        chosen.append((best, texts[best]))
        left -= reached.pop(best)
    return chosen
