"""Every driver-API launch site of a set of files, once: each `cuLaunchKernel` / `cuLaunchCooperativeKernel` /
`hipModuleLaunchKernel` call, and each call of a project wrapper around one (`units.driver_wrappers`), with the words
its handle holds; a kernel's launches are the sites holding one of its handle's words (`units.driver_api`).

A handle picked from a table by a variable (`cuLaunchKernel(table[kern], ...)`) holds what the variable is given
where that is known (`units.driver_text.local_values`: `kern = OP_FILL;` in each case of a switch): each of those
constants is launched there, and the record says which assignment pins it. An index the text does not pin (a
parameter no wrapper call fills, a loop counter, an expression) leaves the site `open`: any entry of the table may be
launched there, so a kernel of that table with no pinned launch is `launch_missing: driver_api_table`, not `driver_api`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from miner import lazy_re
from miner.units.driver_api import _LAUNCH, _args, _matching, config_of
from miner.units.driver_text import Body, bodies, body_at, code_only, local_values
from miner.units.driver_wrappers import DEPTH, Call, Wrapper, api_wrapper, calls, deeper

_WORD = lazy_re.compile(r"[A-Za-z_]\w*")
_LOOKUP = lazy_re.compile(rb"\b(?:cuModuleGetFunction|cuLibraryGetKernel|hipModuleGetFunction)\s*\(")
# A table entry: `table[i]`, `&this->table[i]`, `(table)[i]`: the table's name and the index.
_ENTRY = lazy_re.compile(r"^\s*&?\s*\(?\s*(?:[A-Za-z_]\w*\s*(?:\.|->)\s*)*([A-Za-z_]\w*)\s*\)?\s*\[(.*)\]\s*$", re.S)


@dataclass
class Site:
    path: str
    line: int
    launcher: str  # the function holding the call
    kind: str  # the API the launch ends in
    config: dict[str, str]
    handle: str  # as launched, a wrapper's parameters replaced by the call's arguments
    held: dict[str, str | None]  # word -> the assignment that pins it (`kern = OP_FILL`), None where written
    table: str | None = None  # the table a `table[index]` handle picks from
    open: bool = False  # its index is not pinned: any entry of `table`


@dataclass
class Index:
    sites: list[Site] = field(default_factory=list)
    tables: dict[str, set[str]] = field(default_factory=dict)  # loader (last name) -> tables its lookup fills


_cache: list[tuple[dict[str, bytes], Index]] = []


def index(files: dict[str, bytes]) -> Index:
    """The sites of `files` (path -> raw text), computed once per files dict."""
    for known, idx in _cache:
        if known is files:
            return idx
    idx = _build(files)
    _cache[:] = [(files, idx)]
    return idx


def resolve(text: bytes, body: Body | None, expr: str) -> tuple[dict[str, str | None], bool]:
    """The words an expression holds, with the constants its local variables are given (pinned), and whether one of
    its words is a value the text does not pin (a parameter, a variable written otherwise)."""
    held: dict[str, str | None] = {w: None for w in _WORD.findall(expr)}
    unpinned = False
    for w in list(held):
        if body is None:
            continue
        if w in body.params:
            unpinned = True
            continue
        values = local_values(text, body, w)
        if values is None:
            continue
        if not values:
            unpinned = True
        for v in values:
            for given in _WORD.findall(v):
                held.setdefault(given, f"{w} = {v}")
    return held, unpinned


def table_of(handle: str) -> tuple[str, str] | None:
    """(table, index) of a `table[index]` handle (`&table[index]` as a lookup fills it)."""
    m = _ENTRY.match(handle)
    return (m.group(1), m.group(2)) if m else None


def _build(files: dict[str, bytes]) -> Index:
    texts: dict[str, bytes] = {}
    found: dict[str, list[Body]] = {}

    def text_of(path: str) -> bytes:
        if path not in texts:
            texts[path] = code_only(files[path])
        return texts[path]

    def bodies_of(path: str) -> list[Body]:
        if path not in found:
            found[path] = bodies(text_of(path))
        return found[path]

    idx = Index()
    direct: list[tuple[Site, Wrapper | None]] = []
    level: list[Wrapper] = []
    for path, raw in files.items():
        if _LAUNCH.search(raw) is None:
            continue
        text = text_of(path)
        for m in _LAUNCH.finditer(text):
            close = _matching(text, m.end() - 1)
            args = _args(text, m.end() - 1, close) if close is not None else []
            if len(args) < 9:
                continue
            body = body_at(bodies_of(path), m.start())
            line = text.count(b"\n", 0, m.start()) + 1
            kind, config = m.group(1).decode(), config_of(args)
            w = api_wrapper(path, line, body, kind, args[0], config)
            if w is not None:
                # (two launches of the parameter in one function, on two streams: the first is its configuration)
                same = next((o for o in level if o.path == path and o.body.start == w.body.start), None)
                w = same or w
                level += [] if same else [w]
            direct.append((_site(text, path, line, body, kind, config, args[0]), w))
    wrappers = list(level)
    found_calls: list[Call] = []
    for depth in range(DEPTH):
        if not level:
            break
        names = re.compile(rb"\b(?:" + b"|".join(sorted({re.escape(w.body.last.encode()) for w in level})) + rb")\s*\(")
        level_calls = calls(level, text_of, [p for p, raw in files.items() if names.search(raw)], bodies_of)
        found_calls += level_calls
        level = deeper(level, level_calls) if depth + 1 < DEPTH else []
        wrappers += level
    for c in found_calls:
        c.wrapper.called = True
    # A launch or call handing the function's own parameter on made it a wrapper: where that wrapper is called,
    # its calls are the sites, not the launch inside it.
    made = {w.origin for w in wrappers if w.called}
    idx.sites += [site for site, w in direct if w is None or not w.called]
    for c in found_calls:
        if (c.path, c.line) in made:
            continue
        config = {"grid": c.config[0] or "", "block": c.config[1] or "", "shared_mem": c.config[2] or "0",
                  "stream": c.config[3] or "0", "through": " -> ".join(c.wrapper.through)}
        idx.sites.append(_site(text_of(c.path), c.path, c.line, c.body, c.wrapper.helper.kind, config, c.handle))
    idx.tables = _loader_tables(files, text_of, bodies_of)
    return idx


def _site(text: bytes, path: str, line: int, body: Body | None, kind: str, config: dict[str, str], handle: str
          ) -> Site:
    """The site of a launch of `handle` (a wrapper's with the call's arguments put in) in `body`."""
    handle = _unparenthesized(handle.strip())
    entry = table_of(handle)
    held, unpinned = resolve(text, body, entry[1] if entry else handle)
    held.update({w: None for w in _WORD.findall(handle) if w not in held})
    return Site(path, line, body.name if body is not None else "", kind, config, handle, held,
                entry[0] if entry else None, unpinned and entry is not None)


def _unparenthesized(text: str) -> str:
    while text.startswith("(") and text.endswith(")") and _matching(text.encode(), 0) == len(text.encode()) - 1:
        text = text[1:-1].strip()
    return text


def _loader_tables(files: dict[str, bytes], text_of: Callable[[str], bytes], bodies_of: Callable[[str], list[Body]]
                   ) -> dict[str, set[str]]:
    """The project's lookup functions that fill a table's entry at a parameter (`cuModuleGetFunction(&table[id],
    module, name)` in `load(int id, const char *name)`): last name -> the tables."""
    out: dict[str, set[str]] = {}
    for path, raw in files.items():
        if _LOOKUP.search(raw) is None:
            continue
        text = text_of(path)
        for m in _LOOKUP.finditer(text):
            close = _matching(text, m.end() - 1)
            body = body_at(bodies_of(path), m.start())
            if close is None or body is None:
                continue
            entry = table_of(_args(text, m.end() - 1, close)[0])
            if entry and any(w in body.params for w in _WORD.findall(entry[1])):
                out.setdefault(body.last, set()).add(entry[0])
    return out
