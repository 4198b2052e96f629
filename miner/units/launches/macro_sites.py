"""A launch written through a project macro whose body holds the `<<<...>>>`, read from the macro's text where the
parse has no launch: `run_device(CTX, scale_kernel, n, (x, a, n))` with

    #define run_device(context, kernel, dim, args) { \\
        const int num_blocks = (dim + 255) / 256; \\
        kernel<<<num_blocks, 256, 0, stream>>>args; }

The parse drops such a launch where the macro is not defined in its configuration (the definition sits in an `#if`
branch a build flag the parse does not know switches on: the invocation is then a call of an undeclared name) or
where the expansion has an error. The invocation is expanded with the macro's definition (the one in force, else the
last one the project writes, said in the record), the macro's own local constants are put into the configuration
(`num_blocks` -> `((n) + 255) / 256`), and the `<<<>>>` it holds is the launch.
"""

from __future__ import annotations

import re
from typing import Any

from miner import lazy_re
from miner.units.closure.context import Macro
from miner.units.launches.text import _invocation, _macro_params, bind_params, substitute

# A local declaration with an initializer in a macro's body: `const int num_blocks = (dim + 255) / 256;`.
_LOCAL = lazy_re.compile(r"(?:^|(?<=[;{}]))\s*(?:(?:const|constexpr|static|unsigned|signed|long)\s+)*[A-Za-z_][\w:]*"
                    r"(?:\s+|\s*[*&]\s*)(?:const\s+)?([A-Za-z_]\w*)\s*=\s*([^;{}=][^;{}]*);")
_MAX_ROUNDS = 4


def enclosing_invocation(text: str, pos: int) -> tuple[str, int, int] | None:
    """(callee name, its start, the end of its argument list) of the call whose arguments hold `pos` in `text`
    (comments and strings blanked), the innermost one; None where `pos` is in no argument list of a named call."""
    depth, i = 0, pos - 1
    while i >= 0:
        ch = text[i]
        if ch in ")]":
            depth += 1
        elif ch in "([":
            if depth == 0:
                break
            depth -= 1
        elif ch in ";{}" and depth == 0:
            return None
        i -= 1
    if i < 0 or text[i] != "(":
        return None
    m = re.search(r"([A-Za-z_]\w*)\s*$", text[max(0, i - 200):i])
    if m is None:
        return None
    start = i - (len(text[max(0, i - 200):i]) - m.start())
    depth = 0
    for j in range(i, len(text)):
        if text[j] in "([":
            depth += 1
        elif text[j] in ")]":
            depth -= 1
            if depth == 0:
                return m.group(1), start, j + 1
    return None


def launch_macro(ctx: Any, name: str, at: tuple[str, int]) -> Macro | None:
    """The function-like project macro `name` whose body launches (`<<<`): the definition in force at `at`, else
    the last the project writes (in an `#if` branch this configuration skips); None where no such macro exists."""
    found = [m for m in ctx.macros.get(name, ()) if "<<<" in m.body and _macro_params(m.body) is not None]
    if not found:
        return None
    active = [m for m in found if m.active]
    if active:
        above = [m for m in active if m.path == at[0] and m.start < at[1]]
        return (above or active)[-1]
    return found[-1]


def expand(macro: Macro, invocation: str) -> str | None:
    """The replacement text of one invocation of `macro`, its parameters replaced by the invocation's arguments."""
    mp = _macro_params(macro.body)
    inv = _invocation(invocation)
    if mp is None or inv is None:
        return None
    params, body = mp
    return substitute(body.replace("##", ""), bind_params(params, inv[1], strip=True))


def fold_locals(expansion: str, before: int, parts: list[str]) -> list[str]:
    """`parts` (a launch's configuration in `expansion`) with the locals the expansion declares before offset
    `before` put in, as many levels as they name each other."""
    values = {m.group(1): f"({m.group(2).strip()})" for m in _LOCAL.finditer(expansion, 0, before)}
    out = list(parts)
    for _ in range(_MAX_ROUNDS):
        nxt = [substitute(p, values) for p in out]
        if nxt == out:
            break
        out = nxt
    return out
