"""Why a kernel header that no file of its project includes fails on a name another project file declares.

A header of kernels that nothing includes (a variant left beside the ones a `.cu` includes, a file the build no
longer names) is mined as its own translation unit. Such a header often uses names its includers brought in
before including it (`siphash_keys` from `../crypto/siphash.hpp`, a result struct from the library's main header):
it compiles only after an includer's includes, and the project has no includer. The unit, which copies what the
header's parse reached, stops on those names exactly as the header compiled alone does; this says so
(units.render._lacking_statement, the unit's `// km:lacks-headers` line, stated by the build) instead of leaving
an unexplained "identifier is undefined".
"""

from __future__ import annotations

import functools
import os
from typing import Any

from miner import lazy_re
from miner.source.discover import _SKIP_DIRS
from miner.source.include_graph import TU_SUFFIXES
from miner.units.closure.switched_off import _declaration

# What the parse says of a name the translation unit never declared.
_UNDECLARED = lazy_re.compile(r"^(?:use of undeclared identifier|unknown type name|no template named|"
                         r"no type named) '([A-Za-z_]\w*)'")
_SOURCES = (".h", ".hh", ".hpp", ".hxx", ".cuh", ".inl", ".cu", ".cpp", ".cc", ".cxx")
_MAX_FILES = 5000  # a bigger project is not scanned: the reason stays unstated
_MAX_BYTES = 1 << 20


@functools.cache
def _project_sources(root: str) -> tuple[tuple[str, bytes], ...]:
    out: list[tuple[str, bytes]] = []
    for d, dirs, names in os.walk(root):
        dirs[:] = sorted(x for x in dirs if x not in _SKIP_DIRS and not x.startswith("."))
        for n in sorted(names):
            if os.path.splitext(n)[1].lower() not in _SOURCES:
                continue
            path = os.path.join(d, n)
            try:
                if os.path.getsize(path) > _MAX_BYTES:
                    continue  # (generated tables, amalgamations: no declaration an includer brings)
                with open(path, "rb") as fh:
                    out.append((os.path.relpath(path, root), fh.read()))
            except OSError:
                continue
            if len(out) >= _MAX_FILES:
                return ()
    return tuple(out)


def _declared_in(root: str, name: str, skip: str) -> list[str]:
    """The project files (relative to root) other than `skip` whose text declares `name` as a type, macro,
    alias or enumerator."""
    pat = _declaration(name)
    word = name.encode()
    return [rel for rel, data in _project_sources(root) if rel != skip and word in data and pat.search(data)]


def includer_statement(meta: dict[str, Any], unresolved: list[dict[str, Any]],
                       named: set[str] | None = None) -> str | None:
    """`SYM,SYM reason` where the kernel's translation unit is a header (no file of the project includes it) whose
    parse found names undeclared that other project files declare; None otherwise."""
    pc = meta.get("parse_context") or {}
    tu, root = pc.get("translation_unit") or "", pc.get("root") or ""
    if not tu or not root or os.path.splitext(tu)[1].lower() in TU_SUFFIXES:
        return None
    found: dict[str, list[str]] = {}
    for u in unresolved:
        m = _UNDECLARED.search(u.get("reason") or "")
        sym = u.get("symbol")
        if (m is None or sym != m.group(1) or sym in found or u.get("lacking") or u.get("switched_off")
                or (named is not None and sym not in named)):
            continue
        if files := _declared_in(root, sym, tu):
            found[sym] = files
    if not found:
        return None
    # Names declared nowhere at all (a placeholder the header leaves to fill in) fail the same header too.
    nowhere = [u["symbol"] for u in unresolved if u.get("nowhere") and u["symbol"] not in found
               and (named is None or u["symbol"] in named)]
    syms = list(dict.fromkeys([*found, *nowhere]))
    where = "; ".join(f"{s} in {', '.join(files[:3])}" for s, files in list(found.items())[:4])
    also = (f" ({', '.join(nowhere)} {'is' if len(nowhere) == 1 else 'are'} declared nowhere in the project at all)"
            if nowhere else "")
    return (f"{','.join(syms)} {tu} is included by no file of the project (mined as its own translation unit) "
            f"and uses names it does not declare or include: {where}{also}. It compiles only after the includes of "
            "an includer, which the project does not have, so the header does not compile on its own either")
