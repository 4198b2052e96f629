"""A parse through a precompiled prefix that holds project headers, shown to the walks as the plain parse shows it.

A prelude that holds a project header (`common.cuh` and everything it includes, `frontends.prelude`) takes most of
a unit's parse away (0.6 s -> 0.01 s on a template-heavy backend), but three things a walk reads come out otherwise
than in the plain parse of the unit:

- the diagnostics the prefix's files raised belong to the prefix's build: the unit's parse does not report them;
- the translation unit's top level lists the prefix's contents first and the unit's own entities after them, so
  the unit's `#include` directives (and anything it writes before the held headers) move behind the headers'
  contents;
- `get_includes()` lists only the inclusions the unit's own parse made.

The build records its diagnostics and inclusions (`record`), and `install` hands each unit's parse the plain
parse's views: the recorded diagnostics and inclusions merged with the unit's own at their places in the
preprocessed stream, and the top level merged the same way. A place is the chain of `#include` offsets that lead
from the main file to a file, then the offset in it (as `units.closure.context` orders pieces): the prefix's
files come in the plain parse's order by construction (`prelude.walk`), so both lists are sorted by it and a
merge restores the plain order. The prefix file's own `#include` lines stand for the unit's: an inclusion the
prefix file made is placed where the unit's directive that names the same file sits.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any

from miner import lazy_re

_DIAGS = "_km_diagnostics"
_INCLUDES = "_km_includes"


@dataclass(frozen=True)
class RecordedFile:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class RecordedLocation:
    file: RecordedFile | None
    line: int
    column: int
    offset: int


@dataclass(frozen=True)
class RecordedDiagnostic:
    """A diagnostic of the prefix's build, as the walks read one (`severity`, `location`, `spelling`)."""
    severity: int
    location: RecordedLocation
    spelling: str
    option: str = ""


@dataclass(frozen=True)
class Record:
    """What the build of a prefix that holds project headers saw: its file, diagnostics and inclusions (source
    name or None, included name, offset, line, column of the directive, depth), in its parse's order."""
    prefix_file: str
    diagnostics: tuple[RecordedDiagnostic, ...]
    includes: tuple[tuple[str | None, str, int, int, int, int], ...]
    pp_end: int = 0  # where its top level's last preprocessing entity was listed, plus one
    anchors: tuple[int, ...] = ()  # where the prefix file's own `#include` lines were listed


def record(tu: Any, prefix_file: str) -> Record:
    """What `prefix_view.install` needs of the prefix's build `tu` (read before it is saved: a parse through the
    saved prefix reports none of it)."""
    import clang.cindex as ci

    diags = []
    for d in tu.diagnostics:
        loc = d.location
        f = loc.file
        diags.append(RecordedDiagnostic(d.severity, RecordedLocation(RecordedFile(f.name) if f is not None else None,
                                                                     loc.line, loc.column, loc.offset),
                                        d.spelling, d.option or ""))
    incs = []
    for inc in tu.get_includes():
        loc = inc.location
        incs.append((inc.source.name if inc.source is not None else None, inc.include.name, loc.offset, loc.line,
                     loc.column, inc.depth))
    top = list(tu.cursor.get_children())
    anchors = tuple(i for i, c in enumerate(top) if (f := c.location.file) is not None and f.name == prefix_file)
    pp = {ci.CursorKind.MACRO_DEFINITION, ci.CursorKind.MACRO_INSTANTIATION, ci.CursorKind.INCLUSION_DIRECTIVE}
    pp_end = max((i + 1 for i, c in enumerate(top) if c.kind in pp), default=0)
    return Record(prefix_file, tuple(diags), tuple(incs), pp_end, anchors)


@dataclass
class Inclusion:
    """One entry of the merged `get_includes()`: `include` is the TU's own File (skipped ranges are asked with it)."""
    source: Any
    include: Any
    location: RecordedLocation
    depth: int

    @property
    def is_input_file(self) -> bool:
        return self.depth == 0


def install(tu: Any, rec: Record, top: list[Any]) -> list[Any]:
    """Give `tu` (parsed through the prefix `rec` describes) the plain parse's diagnostics and inclusions, and
    return its top-level cursors `top` in the plain parse's order. LookupError where the unit's text does not
    match the prefix the way `prelude.walk` planned (the caller parses it the plain way then).

    Only the unit's own entities before its last held header are looked at: its top level lists the prefix's
    preprocessing entities first, as the build listed them (the prefix file's `#include` lines among them: the
    anchors), then the unit's own preprocessing entities in stream order, then the rest, so the unit's entities up
    to its directive of the n-th held header go where the prefix file's n-th `#include` line was listed. Where the
    list does not start that way, the prefix's run is found by the files of its entities."""
    import clang.cindex as ci

    _patch(ci)
    inclusion = ci.CursorKind.INCLUSION_DIRECTIVE
    ours = {rec.prefix_file, *(name for _s, name, *_r in rec.includes)}

    def of_prefix(c: Any) -> bool:
        f = c.location.file
        return f is None or f.name in ours

    n, anchors_at = rec.pp_end, rec.anchors
    if not (n < len(top) and not of_prefix(top[n]) and all(
            top[i].kind == inclusion and (f := top[i].location.file) is not None and f.name == rec.prefix_file
            for i in anchors_at)):
        n = 0
        while n < len(top) and of_prefix(top[n]):
            n += 1
        anchors_at = tuple(i for i in range(n) if (f := top[i].location.file) is not None
                           and f.name == rec.prefix_file)
    held = [name for src, name, *_r in rec.includes if src == rec.prefix_file]
    if len(anchors_at) != len(held):
        raise LookupError("the prefix file's directives are not all listed")
    own = top[n:]
    slots: list[list[Any]] = [[] for _ in range(len(held) + 1)]
    directives: list[Any] = []  # the unit's directive of each held header
    k, i = 0, 0
    while k < len(held) and i < len(own):
        c = own[i]
        i += 1
        slots[k].append(c)
        if c.kind == inclusion and (inc := c.get_included_file()) is not None:
            if inc.name == held[k]:
                directives.append(c)
                k += 1
            elif inc.name in held[k + 1:]:
                raise LookupError(f"the unit includes {inc.name} before {held[k]}")
    if k < len(held):
        raise LookupError(f"no directive of the unit includes {held[k]}")
    slots[-1] = own[i:]
    out: list[Any] = []
    last = 0
    for a, slot in zip(anchors_at, slots, strict=False):
        out += top[last:a]
        out += slot
        last = a + 1
    out += top[last:n]
    out += slots[-1]
    if len(out) != len(top) - len(held):
        raise LookupError("the top level was not merged whole")
    # The inclusions: the prefix's with those of its file re-parented to the unit's directives, the unit's own
    # before the held header whose directive comes after theirs (places: the chain of `#include` offsets from the
    # main file, as `units.closure.context` orders pieces; the files up to the last held header are the unit's).
    own_includes = list(_ORIGINAL["get_includes"](tu))
    chain: dict[str, tuple[int, ...]] = {tu.spelling: ()}
    depth_of: dict[str, int] = {tu.spelling: 0}
    for inc in own_includes:
        if inc.source is not None and inc.source.name in chain:
            chain.setdefault(inc.include.name, (*chain[inc.source.name], inc.location.offset))
            depth_of.setdefault(inc.include.name, inc.depth)

    def place(name: str | None, offset: int) -> tuple[int, ...] | None:
        c = chain.get(name) if name is not None else None
        return None if c is None else (*c, offset)

    anchors = []  # per held header: its directive's place, and the inclusion's offset, line, column, file
    for d in directives:
        where = place(d.location.file.name, d.extent.start.offset)
        if where is None:
            raise LookupError("a held header's directive outside the unit's chain of files")
        anchors.append((where, *_name_token(d), d.location.file.name))
    places = [a[0] for a in anchors]

    def slot(key: tuple[int, ...] | None) -> int:
        """The held header an entity of the unit at `key` comes before (len(held): after the prefix)."""
        if key is None or not places or key > places[-1]:
            return len(places)
        return bisect.bisect_left(places, key)

    files: dict[str, Any] = {}

    def file(name: str) -> Any:
        if name not in files:
            files[name] = tu.get_file(name)
        return files[name]

    inc_slots: list[list[Any]] = [[] for _ in range(len(held) + 1)]
    for inc in own_includes:
        inc_slots[slot(place(inc.source.name if inc.source is not None else None, inc.location.offset))].append(inc)
    includes: list[Any] = []
    shift: dict[str, int] = {}  # per file entered through the prefix file: its plain depth less the prefix's
    k = 0
    for src, name, offset, line, column, depth in rec.includes:
        if src == rec.prefix_file:
            includes += inc_slots[k]
            _w, offset, line, column, src = anchors[k]
            k += 1
            d = depth_of.get(src, 0) + 1
        else:
            d = depth + shift.get(src, 0) if src is not None else depth
        shift[name] = d - depth
        includes.append(Inclusion(file(src) if src is not None else None, file(name),
                                  RecordedLocation(RecordedFile(src) if src else None, line, column, offset), d))
    includes += inc_slots[-1]
    tu.__dict__[_INCLUDES] = includes
    # The diagnostics: the prefix's, then the unit's. One the unit raised in its own text before a held header
    # would come among the prefix's: not placed, the unit is parsed the plain way.
    own_diags = list(_ORIGINAL["diagnostics"].fget(tu))
    for d in own_diags:
        f = d.location.file
        if f is not None and slot(place(f.name, d.location.offset)) < len(places):
            raise LookupError("a diagnostic before a held header")
    tu.__dict__[_DIAGS] = [*rec.diagnostics, *own_diags]
    return out


_INCLUDE_WORD = lazy_re.compile(rb"#\s*include(?:_next)?\s*")


def _name_token(directive: Any) -> tuple[int, int, int]:
    """Offset, line and column of an `#include` directive's file name (where an inclusion's location is)."""
    loc = directive.location
    with open(loc.file.name, "rb") as fh:
        data = fh.read()
    m = _INCLUDE_WORD.match(data, directive.extent.start.offset)
    if m is None:
        raise LookupError("an #include directive without its text")
    return m.end(), loc.line, loc.column + (m.end() - directive.extent.start.offset)


_ORIGINAL: dict[str, Any] = {}


def _patch(ci: Any) -> None:
    """`TranslationUnit.diagnostics` and `get_includes` answer the merged views of a TU that has them."""
    if _ORIGINAL:
        return
    _ORIGINAL["diagnostics"] = ci.TranslationUnit.diagnostics
    _ORIGINAL["get_includes"] = ci.TranslationUnit.get_includes
    diagnostics, get_includes = _ORIGINAL["diagnostics"], _ORIGINAL["get_includes"]

    def merged_diagnostics(self: Any) -> Any:
        got = self.__dict__.get(_DIAGS)
        return got if got is not None else diagnostics.fget(self)

    def merged_includes(self: Any) -> Any:
        got = self.__dict__.get(_INCLUDES)
        return iter(got) if got is not None else get_includes(self)

    ci.TranslationUnit.diagnostics = property(merged_diagnostics)
    ci.TranslationUnit.get_includes = merged_includes


def release(tu: Any) -> None:
    tu.__dict__.pop(_DIAGS, None)
    tu.__dict__.pop(_INCLUDES, None)
