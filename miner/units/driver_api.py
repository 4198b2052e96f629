"""Launches through the driver API: a kernel looked up by name in a module the program loads at run time and
launched through the handle, with no `<<<>>>` and no name the parse can follow.

    load_function(FUNC_SCALE, "scale_voxels");            // calls cuModuleGetFunction(&functions[id], m, name)
    cuLaunchKernel(functions[FUNC_SCALE], gx, 1, 1, 256, 1, 1, 0, stream, args, nullptr);

The sources name such a kernel only in a string (`Mentions.loaded_by_name`). The lookup call's other arguments
say which handle it fills (`FUNC_SCALE`, `&cuScaleKernel`): the words no other call of the same function has. A
`cuLaunchKernel` (or `hipModuleLaunchKernel`) whose handle argument holds one of those words launches this kernel;
its six dimensions, shared memory and stream are the launch configuration. So is a call of the project's own
wrapper around such a launch whose handle parameter takes one of those words (`units.driver_wrappers`), and a
launch of `functions[op]` whose local `op` is given that word (`units.driver_sites`). Text only (host files of such
programs are often not CUDA translation units the miner parses), so a handle filled in one place and copied to
another variable through anything but a local's plain assignment is not followed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from miner import lazy_re
from miner.units.driver_text import bodies, body_at, without_comments
from miner.units.records import Launch

_LAUNCH = lazy_re.compile(rb"\b(cuLaunchKernel|cuLaunchCooperativeKernel|hipModuleLaunchKernel)\s*\(")
_WORD = lazy_re.compile(r"[A-Za-z_]\w*")
_OPEN = {ord("("): ord(")"), ord("["): ord("]"), ord("{"): ord("}")}
_CLOSE = {v: k for k, v in _OPEN.items()}
_ASSIGNED = lazy_re.compile(rb"([A-Za-z_]\w*)\s*(?:\[[^\]]*\])?\s*=(?!=)[^=]*$")


def call_around(text: bytes, at: int) -> tuple[str, int, int] | None:
    """(callee, offset of its `(`, offset of the matching `)`) of the innermost call whose arguments hold `at`."""
    depth, i = 0, at - 1
    while i >= 0:
        c = text[i]
        if c in _CLOSE:
            depth += 1
        elif c in _OPEN:
            if depth == 0:
                if c != ord("("):
                    return None
                m = re.search(rb"([A-Za-z_]\w*)\s*$", text[max(0, i - 200):i])
                close = _matching(text, i)
                return (m.group(1).decode(), i, close) if m and close is not None else None
            depth -= 1
        elif c == ord(";") and depth == 0:
            return None
        i -= 1
    return None


def _matching(text: bytes, open_at: int) -> int | None:
    depth = 0
    for i in range(open_at, min(len(text), open_at + 20000)):
        c = text[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
            if depth == 0:
                return i
    return None


def _args(text: bytes, open_at: int, close: int) -> list[str]:
    """The call's arguments, split at the commas outside brackets, as text."""
    out, depth, start = [], 0, open_at + 1
    for i in range(open_at + 1, close):
        c = text[i]
        if c in _OPEN:
            depth += 1
        elif c in _CLOSE:
            depth -= 1
        elif c == ord(",") and depth == 0:
            out.append(text[start:i].decode("utf-8", "replace").strip())
            start = i + 1
    out.append(text[start:close].decode("utf-8", "replace").strip())
    return out


def enclosing_function(text: bytes, at: int) -> str:
    """The name of the function whose body holds `at` (`driver_text.bodies`: the outermost `{` around it whose head
    is a function's, `Type Class::name(params) const {`, past namespaces, classes and `extern "C"` blocks); or ``."""
    body = body_at(bodies(text), at)
    return body.name if body is not None else ""


def _handle_words(text: bytes, lit: bytes, at: int) -> set[str] | None:
    """The words of the lookup call around the literal at `at` that no other call of the same function holds (the
    handle it fills), or None where the literal is no call argument."""
    call = call_around(text, at)
    if call is None:
        return None
    callee, open_at, close = call
    own = {w for a in _args(text, open_at, close) if a.encode() != lit for w in _WORD.findall(a)}
    # `CUfunction clear_fn = loader.get("clear_voxels");`: the variable assigned is the handle too
    head = text[max(0, open_at - 300):open_at]
    head = head[max((head.rfind(c) for c in b";{}"), default=-1) + 1:]
    if target := _ASSIGNED.search(head):
        own.add(target.group(1).decode())
    for m in re.finditer(rb"\b" + re.escape(callee.encode()) + rb"\s*\(", text):
        if m.end() - 1 == open_at:
            continue
        end = _matching(text, m.end() - 1)
        if end is not None:
            own -= {w for a in _args(text, m.end() - 1, end) for w in _WORD.findall(a)}
    return own - {callee}


_LOOKUP_APIS = {"cuModuleGetFunction", "cuLibraryGetKernel", "hipModuleGetFunction"}


def _lookups(name: str, loads: list[tuple[str, int]], files: dict[str, bytes]
             ) -> tuple[set[str], list[tuple[str, str]]]:
    """The words of the handles the lookups of kernel `name` fill (`_handle_words`), and the (callee, first argument)
    of each lookup call, which say which table the handle is an entry of."""
    lit = b'"' + name.encode() + b'"'
    words: set[str] = set()
    callees: list[tuple[str, str]] = []
    for path, line in loads:
        text = without_comments(files.get(path, b""))
        start = 0
        for _ in range(line - 1):
            start = text.find(b"\n", start) + 1
        at = text.find(lit, start)
        found = _handle_words(text, lit, at) if at >= 0 else None
        if found:
            words |= found
        if at >= 0 and (call := call_around(text, at)) is not None:
            callees.append((call[0], _args(text, call[1], call[2])[0]))
    return words, callees


def launches(name: str, loads: list[tuple[str, int]], files: dict[str, bytes]) -> list[Launch]:
    """The driver-API launches of kernel `name`, which the files name only as the string literal at `loads`
    ((path, line) pairs, Mentions.loaded_by_name); `files`: path -> raw text of every file read. Each launch site
    (`units.driver_sites`: an API launch, or a call of a project wrapper around one) whose handle holds a word of
    the handle a lookup filled; one that holds it only through a variable's assignment says which (`pinned`)."""
    from miner.units import driver_sites

    words, _ = _lookups(name, loads, files)
    if not words:
        return []
    out: list[Launch] = []
    for site in driver_sites.index(files).sites:
        hit = [w for w in site.held if w in words]
        if not hit:
            continue
        config = dict(site.config)
        if all(site.held[w] is not None for w in hit):
            config["pinned"] = str(site.held[hit[0]])
        out.append(make_launch(site.path, site.line, site.launcher, site.kind, config))
    return out


def launch_missing(name: str, loads: list[tuple[str, int]], files: dict[str, bytes],
                   rel: Callable[[str], str]) -> dict[str, Any]:
    """Why a kernel looked up by name has no launch: `driver_api_table` where its handle is an entry of a table some
    launch picks from by an index the text does not pin (which entry that launch takes is known only at run time),
    else `driver_api` (no launch site holds its handle)."""
    from miner.units import driver_sites

    idx = driver_sites.index(files)
    _, callees = _lookups(name, loads, files)
    tables: set[str] = set()
    for callee, first in callees:
        if callee in _LOOKUP_APIS and (entry := driver_sites.table_of(first)):
            tables.add(entry[0])
        tables |= idx.tables.get(callee, set())
    where = ", ".join(f"{rel(p)}:{ln}" for p, ln in loads[:5])
    mentions = [f"{rel(p)}:{ln}" for p, ln in loads[:5]]
    open_sites = [s for s in idx.sites if s.open and s.table in tables]
    if open_sites:
        at = ", ".join(f"`{s.handle}` at {rel(s.path)}:{s.line}" for s in open_sites[:5])
        return {"reason": "driver_api_table", "mentions": mentions,
                "detail": f"{name} is looked up by name (\"{name}\", {where}) into an entry of the table "
                          f"{', '.join(sorted(tables))}, and no launch takes that entry by a constant index; "
                          f"{_launches_pick(len(open_sites))} an entry by an index the code does not pin ({at}): "
                          "which kernel is launched there is known only at run time"}
    return {"reason": "driver_api", "mentions": mentions,
            "detail": f"{name} is named only as the string \"{name}\" ({where}), in a file that looks kernels up in a "
                      "module by name (cuModuleGetFunction): the driver API loads it from a compiled module at run "
                      "time and launches the handle (cuLaunchKernel), and no launch the miner follows takes its handle"}


def _launches_pick(n: int) -> str:
    return "1 launch picks" if n == 1 else f"{n} launches pick"


def config_of(args: list[str]) -> dict[str, str]:
    """The launch configuration of a `cuLaunchKernel` / `hipModuleLaunchKernel` call's arguments (handle, six
    dimensions, shared memory, stream, ...)."""
    return {"grid": _dims(args[1:4]), "block": _dims(args[4:7]), "shared_mem": args[7], "stream": args[8]}


def _dims(xyz: list[str]) -> str:
    # `dim3(n, 1, 1)` is n, as a one-dimensional `<<<n, ...>>>` writes it; `grid.x, grid.y, grid.z` is `grid` (a
    # dim3 or the project's own three-int struct), which a wrapper's call replaces whole
    if xyz[1:] == ["1", "1"]:
        return xyz[0]
    parts = [m.groups() for a in xyz if (m := re.fullmatch(r"(.+?)\s*(?:\.|->)\s*([xyz])", a))]
    if [p[1] for p in parts] == ["x", "y", "z"] and len({p[0] for p in parts}) == 1:
        return parts[0][0]
    return f"dim3({', '.join(xyz)})"


def make_launch(path: str, line: int, launcher: str, kind: str, config: dict[str, str]) -> Launch:
    """A driver-API launch record: the values of the configuration's plain numbers."""
    values = {key: int(v.rstrip("uUlL")) for key, v in config.items() if key in ("grid", "block", "shared_mem")
              and re.fullmatch(r"\d+[uUlL]*", v)}
    return Launch(kernel=None, launcher=launcher, path=path, line=line, kind=kind, config=config, values=values)
