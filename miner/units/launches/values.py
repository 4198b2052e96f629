"""Value folding: launch configuration values resolved to integers, and constant branches folded
so only the taken branch is walked."""

from __future__ import annotations

import re

import clang.cindex as ci

from miner.units import launch_formula
from miner.units.closure import TUContext
from miner.units.const_eval import const_value as _const_value
from miner.units.instantiations import eval_int
from miner.units.launches.record import _NUM, Launch


def _taken_branches(c: ci.Cursor, children: list[ci.Cursor]) -> list[ci.Cursor]:
    """An `if constexpr` whose condition clang can evaluate keeps only the branch the compiler keeps:
    launches in the discarded one are never instantiated (MMCV excludes double this way)."""
    if len(children) not in (2, 3):
        return children
    toks = []
    for t in c.get_tokens():
        toks.append(t.spelling)
        if len(toks) == 2:
            break
    if toks != ["if", "constexpr"]:
        return children
    v = _const_value(children[0])
    if v is None:
        return children
    return [children[0], children[1]] if v else children[:1] + children[2:]


def _resolve_value(ctx: TUContext, text: str, out: Launch, key: str) -> None:
    """Numeric value of a config expression through macros, and definitions of helpers it calls."""
    m = _NUM.match(text)
    if m:
        out.values[key] = int(m.group(1))
        return
    name = text.strip()
    seen = 0
    while (defs := ctx.active_defs(name)) and seen < 8:
        body = defs[0].body.strip()
        out.definitions[name] = f"#define {name} {body}".strip()
        m = _NUM.match(body)
        if m:
            out.values[key] = int(m.group(1))
            return
        name, seen = body, seen + 1
    fm = re.match(r"\s*([A-Za-z_]\w*)\s*\(", text)
    if fm:
        fname = fm.group(1)
        if defs := ctx.active_defs(fname):
            out.definitions[fname] = "#define " + fname + defs[0].body
        if groups := ctx.groups_named(fname):
            p = groups[-1][0][0]
            out.definitions[fname] = ctx.read(p.path)[p.start:p.end].decode("utf-8", "replace")
    for ident in re.findall(r"[A-Za-z_]\w*", text):
        if ident not in out.definitions and (defs := ctx.active_defs(ident)):
            body = defs[0].body.strip()
            out.definitions[ident] = f"#define {ident} {body}"


def _values(ctx: TUContext, launch: Launch, fn: ci.Cursor | None = None, call: ci.Cursor | None = None) -> None:
    for key in ("grid", "block", "shared_mem"):
        if launch.config.get(key):
            _resolve_value(ctx, launch.config[key], launch, key)
    if call is not None:
        cache = ctx.__dict__.setdefault("_formula_cache", {})
        launch.formula = launch_formula.launch_formulas(ctx, fn, call, launch.config, launch.args, cache)
        for key, text in launch.formula.items():  # `threads` with `const int threads = 512;` is 512
            # `dim3 block(512)` is 512 too: a one-argument dim3 is its x (two or more stay a formula)
            if key not in launch.values and (v := eval_int(re.sub(r"\bdim3\s*\(", "(", text))) is not None:
                launch.values[key] = v
