"""Project copies of CUDA toolkit headers: a unit includes the toolkit's own header instead of inlining the copy.

Projects bundle older copies of headers the toolkit ships (a profiling wrapper `3rdparty/.../nvtx3.hpp` beside
`<nvtx3/nvToolsExt.h>`, a `cub/` tree). Inlined into a unit they meet the toolkit's copy, which the unit's thrust or
cub includes pull in anyway: the same names declared twice (`"nvtx3::rgb" is ambiguous`), macros redefined. The
toolkit's copy wins: the closure does not inline a declaration of such a file, and the unit `#include`s the toolkit
header instead (its macros come from there too).

A project file is a copy of toolkit header R (a path under one of nvcc's include dirs) when
  - its path ends with R and R has a folder (`.../cub/block/block_reduce.cuh` is `cub/block/block_reduce.cuh`), or
  - it includes a toolkit header `<D/...>`, the toolkit ships `D/<its file name>` and it opens `namespace D`
    (`nvtx3.hpp`, which includes `<nvtx3/nvToolsExt.h>` and declares `namespace nvtx3 {...}`, is the toolkit's
    `nvtx3/nvtx3.hpp`; a project `functional.h` that includes `<thrust/functional.h>` is not a copy).
Without nvcc (an extraction on a machine without the toolkit) no file is taken for a copy. Documented in
docs/units.md ("Host-only member bodies", vendored toolkit headers).
"""

from __future__ import annotations

import functools
import os
import re

from miner import lazy_re
from miner.units.closure.context import TUContext
from miner.units.headers import toolkit_dirs

_DIRECTIVE = lazy_re.compile(rb'^[ \t]*#[ \t]*include[ \t]*<([^>\n]+)>', re.M)
_ANY_DIRECTIVE = lazy_re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.M)
_REFUSES_DIRECT = lazy_re.compile(
    rb'^[ \t]*#[ \t]*error\b[^\n]*\b(?:include|included)\b[^\n]*\bdirectly\b', re.M | re.I)


@functools.lru_cache(maxsize=4096)
def _in_toolkit(rel: str) -> bool:
    return any(os.path.isfile(os.path.join(d, rel)) for d in toolkit_dirs())


class ToolkitCopies:
    """Which project files of one TU are copies of a toolkit header, looked up by file."""

    def __init__(self, ctx: TUContext) -> None:
        self.ctx = ctx
        self._of: dict[str, str | None] = {}

    @classmethod
    def of(cls, ctx: TUContext) -> ToolkitCopies:
        return ctx.memo("_toolkit_copies", lambda: cls(ctx))

    def header_of(self, path: str) -> str | None:
        """The toolkit header (`nvtx3/nvtx3.hpp`) project file `path` is a copy of, else None."""
        if path not in self._of:
            self._of[path] = None  # (an include cycle ends here)
            rel = self._find(path) if path in self.ctx.inputs and toolkit_dirs() else None
            if rel is not None and _REFUSES_DIRECT.search(self.ctx.read(path)):
                # An implementation header that stops a direct include (`#error Never include this file
                # directly -- it is automatically included by nvToolsExtPayload.h`): the unit includes the
                # public header of the copy that includes it.
                rel = next((h for p in self._includers(path) if (h := self.header_of(p)) is not None), rel)
            self._of[path] = rel
        return self._of[path]

    def _includers(self, path: str) -> list[str]:
        """The TU's project files whose `#include` names `path` by its folder and file name."""
        tail = "/".join(path.split(os.sep)[-2:])
        name = os.path.basename(path)
        return [p for p in self.ctx.order if p != path and p in self.ctx.inputs
                and any(s.decode("utf-8", "replace").strip().endswith((tail, "/" + name)) or s.strip() == name.encode()
                        for s in _ANY_DIRECTIVE.findall(self.ctx.read(p)))]

    def _find(self, path: str) -> str | None:
        parts = path.split(os.sep)
        for i in range(len(parts) - 2, 0, -1):  # longest tail first, at least a folder and the file
            rel = "/".join(parts[-i - 1:])
            if _in_toolkit(rel):
                return rel
        name = parts[-1]
        data = self.ctx.read(path)
        for m in _DIRECTIVE.finditer(data):
            spelled = m.group(1).decode("utf-8", "replace").strip()
            folder = spelled.split("/", 1)[0]
            # A copy declares its names in the toolkit header's own namespace (`namespace nvtx3 {`): a project
            # `functional.h` that includes <thrust/functional.h> to build on it is no copy of it.
            if "/" in spelled and _in_toolkit(spelled) and _in_toolkit(f"{folder}/{name}") and re.search(
                    rb"\bnamespace\s+" + re.escape(folder.encode()) + rb"\s*\{", data):
                return f"{folder}/{name}"
        return None
