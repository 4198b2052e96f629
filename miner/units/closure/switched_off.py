"""Names the parse found undeclared that the project declares only in an `#if` branch the configuration skips.

A kernel of a build configuration the default does not turn on (cholla's `#ifdef DUST` kernel, reached by
defining the guard around it) may need names its project declares only under further switches that
configuration also sets (`dust_density` of an enum under `#ifdef SCALAR`, `typedef int part_int_t;` under
`#ifdef PARTICLES`). The unit fails on them as the original translation unit would with the same defines; the
stated reason is that switch (units.render._lacking_statement), not a header the translation unit includes that
nobody here has, which the parse would otherwise blame (`<hdf5.h>`, whose absence has nothing to do with it).
"""

from __future__ import annotations

import os
import re

from miner.units.closure.context import TUContext, _skipped_ranges


def _declaration(name: str) -> re.Pattern[bytes]:
    """A declaration of `name` as the text writes one: a macro, a typedef or alias, a class/struct/enum/union,
    an enumerator (the name first on its line, then `,`, `=` or the list's end)."""
    n = re.escape(name.encode())
    return re.compile(rb"#[ \t]*define[ \t]+" + n + rb"\b"
                      rb"|\btypedef\b[^;{}]*\b" + n + rb"\s*(?:\[[^\]]*\]\s*)*;"
                      rb"|\busing\s+" + n + rb"\s*="
                      rb"|\b(?:struct|class|enum|union)\s+(?:class\s+|struct\s+)?" + n + rb"\s*[{:;]"
                      rb"|^[ \t]*" + n + rb"\s*(?:=[^,;{}\n]*)?(?:,|\n\s*}|}|$)", re.M)


def switched_off(ctx: TUContext, name: str) -> str | None:
    """`file:line (under `#ifdef X`)` of a declaration of `name` inside a branch the preprocessor skipped in a
    file the translation unit reached (the outermost skipped directive named), else None."""
    key = f"switched_off:{name}"
    return ctx.memo(key, lambda: _find(ctx, name))


def _find(ctx: TUContext, name: str) -> str | None:
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return None
    pat = _declaration(name)
    for path in ctx.order:
        data = ctx.read(path)
        if name.encode() not in data:
            continue
        for start, end in _skipped_ranges(ctx.tu, ctx.files.get(path)):
            m = pat.search(data, start, end)
            if m is None:
                continue
            nl = data.find(b"\n", start)
            directive = data[start:nl if 0 <= nl < end else end].decode("utf-8", "replace").strip()
            line = data.count(b"\n", 0, m.start()) + (0 if data[m.start():m.start() + 1] == b"\n" else 1)
            return f"{os.path.basename(path)}:{line} (under `{directive}`)"
    return None
