"""Declarations one macro invocation writes beside a kernel (`DEFINE_GPU_OP(abs, ...)` writing the kernel
and the host specializations `template <> void gpu_abs<float>(...)` that launch it): their text is the
kernel's text, so the closure and the launch finder walk them too."""

from __future__ import annotations

import clang.cindex as ci


def written_with(kernel: ci.Cursor) -> list[ci.Cursor]:
    """Declarations whose extent lies inside the kernel's own (one macro invocation wrote them all)."""
    parent = kernel.lexical_parent
    ext = kernel.extent
    # Written by a macro, a declaration's location is the invocation's start, as is its extent's; written
    # out, its location is its name. Only the former can have siblings inside it: the scan is skipped.
    if parent is None or ext.start.file is None or kernel.location.offset != ext.start.offset:
        return []
    name, lo, hi = ext.start.file.name, ext.start.offset, ext.end.offset
    return [c for c in parent.get_children()
            if c != kernel and c.extent.start.file is not None and c.extent.start.file.name == name
            and lo <= c.extent.start.offset and c.extent.end.offset <= hi]


def specialized_template(c: ci.Cursor) -> ci.Cursor | None:
    """The primary template an explicit specialization (`template <> void f<float>(...)`) specializes."""
    t = ci.conf.lib.clang_getSpecializedCursorTemplate(c)
    return None if t is None or t.kind.is_invalid() else t
