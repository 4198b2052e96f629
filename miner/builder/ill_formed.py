"""A unit that fails on an error inside the kernel's own text that nvcc reports at the definition itself.

Some errors do not depend on anything the closure supplies or on the template arguments chosen: a kernel that
redeclares its loop variable in the loop's body (`for (int i = 0; ...) { ... int i = ...; }`) is ill-formed as
written, and nvcc (EDG) rejects it where it is defined, instantiated or not. A unit copies the kernel's text as the
source wrote it, so it stops there exactly as the original translation unit does; the build states that (the
`toolkit_removed` field of the build record, as for the other reasons no unit can remove) instead of leaving an
unexplained error. Only messages of that kind, and only on a line of the kernel's own text in the unit.
"""

from __future__ import annotations

import re

from miner import lazy_re

# EDG's definition-time diagnostics that a kernel's statements alone cause.
_DEFINITION_ERRORS = (
    lazy_re.compile(r'"(\w+)", declared in for-loop initialization, may not be redeclared in this scope'),
)
_ERROR_AT = lazy_re.compile(r"\((\d+)\): error: (.*)$", re.M)
_KERNEL_MARK = lazy_re.compile(r"^// the kernel, (.+?):(\d+)(?:, with its C linkage|$)")
# What the unit template writes after the kernel's text (units/unit.cu.j2): a piece placed after it, the
# explicit instantiation, the launcher.
_AFTER_KERNEL = lazy_re.compile(r'^(?://\s\w+ \S+ from \S+:\d+|// device passes only|extern "C" int km_launch_)')


def ill_formed_kernel(unit_text: str | None, error: str | None) -> str | None:
    """Why the unit fails, where its first error is one of those diagnostics on a line of the kernel's own text;
    None otherwise."""
    if not unit_text or not error:
        return None
    m = _ERROR_AT.search(error)
    if m is None:
        return None
    line, message = int(m.group(1)), m.group(2).strip()
    if not any(p.search(message) for p in _DEFINITION_ERRORS):
        return None
    lines = unit_text.splitlines()
    start = next((i for i, t in enumerate(lines) if _KERNEL_MARK.match(t)), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if _AFTER_KERNEL.match(lines[i])), len(lines))
    if not start + 1 < line <= end:  # (the kernel's text is lines start+2 .. end, 1-based)
        return None
    mark = _KERNEL_MARK.match(lines[start])
    assert mark is not None
    # (the kernel's first line follows the mark, or the `extern "C" {` a C-linkage kernel is wrapped in)
    first = start + 2 + (start + 1 < len(lines) and lines[start + 1].startswith('extern "C" {'))
    where = f"{mark.group(1)}:{int(mark.group(2)) + line - first}"
    return (f"the kernel's own text is ill-formed as written ({message}, at {where}): nvcc rejects it at the "
            "definition, instantiated or not, so the original translation unit does not compile either")
