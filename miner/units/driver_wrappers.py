"""The project's own wrappers around a driver-API launch: a function whose `cuLaunchKernel` (`hipModuleLaunchKernel`)
takes a handle from one of its parameters,

    void Device::launch(CUfunction fn, Dims block, Dims grid, int nargs, ...) {
        cuLaunchKernel(fn, grid.x, grid.y, grid.z, block.x, block.y, block.z, 0, stream_, params, nullptr);
    }
    void Volume::run_op(int op, int n) { cuLaunchKernel(table[op], n / 64, 1, 1, 64, 1, 1, 0, 0, args, nullptr); }

A call of one (`dev->launch(fScale, blockDims, gridDims, 2, ...)`, `run_op(OP_FILL, n)`) is the launch of the
handle its argument at that parameter holds: the wrapper's configuration with its parameters replaced by the call's
arguments, as a launch helper's (`launches.helpers.apply_helper`). A function that hands its own parameter on to a
wrapper's handle parameter is a wrapper too, up to `DEPTH` levels above the API call.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from miner import lazy_re
from miner.units.driver_api import _args, _matching
from miner.units.driver_text import Body, body_at
from miner.units.launches.helpers import Helper, apply_helper, substitute_names

DEPTH = 3  # wrapper levels followed above the API launch
_WORD = lazy_re.compile(r"[A-Za-z_]\w*")
_OPERAND = lazy_re.compile(r"[A-Za-z_][\w:]*(?:\s*(?:\.|->)\s*[A-Za-z_]\w*)*|\d+[uUlL]*")


@dataclass
class Wrapper:
    body: Body
    path: str
    helper: Helper  # its parameters, the one the handle comes from (`index`), its configuration as written
    handle: str  # the handle its API launch takes, in its own parameters (`fn`, `table[op]`)
    through: list[str]  # its name, then the wrappers it calls down to the API launch
    origin: tuple[str, int]  # (path, line) of the call (or API launch) in its body that makes it one
    called: bool = field(default=False)  # whether some call of it was found


@dataclass
class Call:
    wrapper: Wrapper
    path: str
    line: int
    body: Body
    args: list[str]
    config: list[str | None]  # grid, block, shared memory, stream with the call's arguments put in
    handle: str  # the wrapper's handle with the call's arguments put in


def handle_parameter(handle: str, body: Body | None) -> int | None:
    """The index of the one parameter of `body` that a handle expression names, if exactly one."""
    if body is None:
        return None
    named = {w for w in _WORD.findall(handle) if w in body.params}
    return body.params.index(named.pop()) if len(named) == 1 else None


def api_wrapper(path: str, line: int, body: Body | None, kind: str, handle: str, config: dict[str, str]
                ) -> Wrapper | None:
    """The wrapper an API launch makes of the function around it, where its handle comes from a parameter."""
    index = handle_parameter(handle, body)
    if body is None or index is None:
        return None
    params = list(body.params)
    helper = Helper(index, params, "..." if params[-1:] == ["..."] else None,
                    [config["grid"], config["block"], config["shared_mem"], config["stream"]], [], {}, kind)
    return Wrapper(body, path, helper, handle, [body.name], (path, line))


def _fits(w: Wrapper, args: list[str]) -> bool:
    # (fewer arguments than parameters: the declaration's defaults, which the definition's head does not repeat)
    n = len(w.helper.params)
    return w.helper.index < len(args) and (len(args) <= n or w.helper.pack is not None)


def calls(wrappers: list[Wrapper], texts: Callable[[str], bytes], paths: list[str],
          bodies: Callable[[str], list[Body]]) -> list[Call]:
    """Each call of a wrapper in a function body of the files (`texts`: path -> comment-blanked text, for those that
    spell a wrapper's name), with the first wrapper of that name whose parameters take its arguments. A call in the
    wrapper's own body (recursion) is left out."""
    by_name: dict[str, list[Wrapper]] = {}
    for w in wrappers:
        by_name.setdefault(w.body.last, []).append(w)
    if not by_name:
        return []
    spelled = re.compile(rb"(?<![\w~])(" + b"|".join(re.escape(n.encode()) for n in sorted(by_name)) + rb")\s*\(")
    out: list[Call] = []
    for path in paths:
        text = texts(path)
        found = bodies(path)
        for m in spelled.finditer(text):
            body = body_at(found, m.start())
            close = _matching(text, m.end() - 1)
            if body is None or close is None:
                continue
            args = _args(text, m.end() - 1, close)
            w = next((w for w in by_name[m.group(1).decode()] if _fits(w, args)
                      and not (w.path == path and w.body.start == body.start)), None)
            if w is None:
                continue
            mapping = {p: _operand(a) for p, a in zip(w.helper.params, args, strict=False) if p and p != "..."}
            _, config = apply_helper(w.helper, args, mapping)
            out.append(Call(w, path, text.count(b"\n", 0, m.start()) + 1, body, args, config,
                            substitute_names(w.handle, mapping)))
    return out


def _operand(arg: str) -> str:
    """A call's argument as it replaces a parameter: parenthesized, as `launches.helpers` puts a helper call's
    arguments in, where it is more than one operand (a name, a member, a number, a parenthesized expression)."""
    arg = arg.strip()
    if _OPERAND.fullmatch(arg) or arg.startswith("(") and _matching(arg.encode(), 0) == len(arg.encode()) - 1:
        return arg
    return f"({arg})"


def deeper(level: list[Wrapper], found: list[Call]) -> list[Wrapper]:
    """The wrappers one level up: the functions whose call of a wrapper hands their own parameter on as its handle
    (`void fill(int op) { run_op(op, n); }`)."""
    out: list[Wrapper] = []
    seen: set[tuple[str, int]] = set()
    for c in found:
        if not any(c.wrapper is w for w in level) or (c.path, c.body.start) in seen:
            continue
        index = handle_parameter(c.args[c.wrapper.helper.index], c.body)
        if index is None:
            continue
        seen.add((c.path, c.body.start))
        params = list(c.body.params)
        helper = Helper(index, params, "..." if params[-1:] == ["..."] else None, list(c.config), [], {},
                        c.wrapper.helper.kind)
        out.append(Wrapper(c.body, c.path, helper, c.handle, [c.body.name, *c.wrapper.through], (c.path, c.line)))
    return out
