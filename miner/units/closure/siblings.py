"""Declarations one macro invocation writes beside a kernel (`DEFINE_GPU_OP(abs, ...)` writing the kernel
and the host specializations `template <> void gpu_abs<float>(...)` that launch it): their text is the
kernel's text, so the closure and the launch finder walk them too."""

from __future__ import annotations

import bisect

import clang.cindex as ci


def written_with(kernel: ci.Cursor, memo: dict | None = None) -> list[ci.Cursor]:
    """Declarations whose extent lies inside the kernel's own (one macro invocation wrote them all). `memo` (one
    dict per translation unit) keeps each scope's children by file and start: every function a macro wrote
    scanned all of its scope's children (thousands at a TU's top level), once per such function."""
    parent = kernel.lexical_parent
    ext = kernel.extent
    # Written by a macro, a declaration's location is the invocation's start, as is its extent's; written
    # out, its location is its name. Only the former can have siblings inside it: the scan is skipped.
    if parent is None or ext.start.file is None or kernel.location.offset != ext.start.offset:
        return []
    name, lo, hi = ext.start.file.name, ext.start.offset, ext.end.offset
    if memo is None:
        return [c for c in parent.get_children()
                if c != kernel and c.extent.start.file is not None and c.extent.start.file.name == name
                and lo <= c.extent.start.offset and c.extent.end.offset <= hi]
    key = (parent._kind_id, parent.xdata, *parent.data)  # the cursor itself: equal structs, equal children
    by_file = memo.get(key)
    if by_file is None:
        by_file = memo[key] = _by_file(parent)
    starts, rows, odd = by_file.get(name, ((), (), ()))
    found = [row for row in rows[bisect.bisect_left(starts, lo):bisect.bisect_right(starts, hi)] if row[1] <= hi]
    found += [(i, end, c) for start, i, end, c in odd if lo <= start and end <= hi]
    found.sort()  # the scope's order
    return [c for _i, _end, c in found if c != kernel]


def _by_file(scope: ci.Cursor) -> dict[str, tuple[list[int], list[tuple[int, int, ci.Cursor]], list[tuple]]]:
    """A scope's children by the file their extent starts in: their starts in order, and (place among the scope's
    children, end, cursor) in the same order; apart, those whose extent ends before it starts (no such extent
    should exist; they are tested one by one, as the scan did)."""
    rows: dict[str, list[tuple[int, int, int, ci.Cursor]]] = {}
    for i, c in enumerate(scope.get_children()):
        e = c.extent
        start = e.start
        if start.file is not None:
            rows.setdefault(start.file.name, []).append((start.offset, i, e.end.offset, c))
    out = {}
    for name, lst in rows.items():
        lst.sort(key=lambda r: (r[0], r[1]))
        good = [r for r in lst if r[2] >= r[0]]
        out[name] = ([r[0] for r in good], [(r[1], r[2], r[3]) for r in good], [r for r in lst if r[2] < r[0]])
    return out


def specialized_template(c: ci.Cursor) -> ci.Cursor | None:
    """The primary template an explicit specialization (`template <> void f<float>(...)`) specializes."""
    t = ci.conf.lib.clang_getSpecializedCursorTemplate(c)
    return None if t is None or t.kind.is_invalid() else t
