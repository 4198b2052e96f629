"""Template arguments that name a member type of a concrete class template instance, read by the compiler.

A host template `impl<Kind k>` that launches `k<typename PodOf<k>::type>` (through `using out_t = typename
PodOf<k>::type;`) leaves, once `k` is bound, `typename PodOf<Kind::F32>::type` in the launch's
arguments: a valid unit, but no concrete type in the dataset's metadata. Each such text that names no template
parameter any more is declared in a probe struct in the launching function's namespace, the main file is parsed
once more with the probes appended (`LiveTU.probe`), and the alias's canonical type (`float`, `__half`)
replaces the text; one the compiler rejects stays as written.
"""

from __future__ import annotations

import re

from miner import lazy_re
from miner.units.closure.shims import _enclosing_namespaces
from miner.units.launches.class_scope import _read
from miner.units.launches.record import Launch
from miner.units.launches.state import _State

_MEMBER_TYPE = lazy_re.compile(r"(?:\btypename\s+)?[\w:]*\w\s*<.*>\s*::\s*[A-Za-z_]\w*\s*$", re.S)
_MAX_PROBES = 128


def resolve(st: _State, records: list[Launch]) -> None:
    if st.ctx.probe is None:
        return
    wanted: dict[tuple[tuple[str, ...], str], str] = {}
    for rec in records:
        host = st.host_cursors.get(rec.host_template) if rec.host_template is not None else None
        ns = tuple(_enclosing_namespaces(host)) if host is not None else ()
        params = {p.spelling for p in st.host_params.get(rec.host_template, [])} if rec.host_template else set()
        for args in rec.host_template_args or []:
            for a in args:
                if (ns, a) in wanted or len(wanted) >= _MAX_PROBES or not _MEMBER_TYPE.match(a.strip()):
                    continue
                if params & set(re.findall(r"[A-Za-z_]\w*", a)):
                    continue  # still names the host's parameter: not concrete
                wanted[(ns, a)] = f"__km_probe_member_{len(wanted)}"
    if not wanted:
        return
    lines = []
    for (ns, text), name in wanted.items():
        head = "".join(f"namespace {n} {{ " if n else "namespace { " for n in ns)
        lines.append(f"{head}struct {name} {{\nusing a0 = {text};\n}};{' }' * len(ns)}")
    tu = st.ctx.probe("\n".join(lines))
    if tu is None:
        return
    found = _read(tu, st.ctx.norm(st.ctx.tu.spelling), st.ctx.norm)
    for rec in records:
        host = st.host_cursors.get(rec.host_template) if rec.host_template is not None else None
        ns = tuple(_enclosing_namespaces(host)) if host is not None else ()
        rec.host_template_args = [[found.get(wanted.get((ns, a), ""), {}).get("a0") or a for a in args]
                                  for args in rec.host_template_args or []]
