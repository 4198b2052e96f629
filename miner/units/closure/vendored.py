"""Vendored third-party header libraries (glm in `third_party/glm`, a git submodule): a unit `#include`s
them, as it does toolkit headers, instead of inlining their declarations.

A closure that walks into a header-only library takes whole overload sets and class templates with all
their out-of-line members: a kernel that uses `glm::vec3` inlined ~15k lines of glm, parsed again in every
unit of a batch. A library the project vendors is code nobody mined and the unit does not need to show; the
project itself compiles against it with an include dir, and so can the unit.

Rule (documented in docs/units.md, "Vendored header libraries"). An include directive of a project file
that lands in file P, spelled `<a/b.h>` or `"a/b.h"` and resolved against include dir D (P = D/a/b.h), keeps
the library as an `#include` when:
  - D lies in third-party territory: below the inputs' common folder, one of its folder names is
    third_party / external / vendor / 3rdparty / deps / ... (`THIRD_PARTY_DIRS`), or D is inside a
    git submodule (a `.gitmodules` path of an enclosing checkout). A spelling that walks into such a
    folder (`"third_party/tl/tl.hpp"`) makes that folder D (`<tl/tl.hpp>`);
  - the library is self-contained in this TU: every file it includes lies under D or is no project file
    (standard, toolkit, our shims); a library that includes the project's headers stays inlined;
  - its files, the parts of D the project reaches (`a/`, or the single file `b.h`), total at most
    `MAX_BYTES` (they are carried into the dataset);
  - the kernel itself is not in it (a library's own kernels are mined with their closure as before).
The unit then writes the project's `#define`s that the library's files mention and the include lines as the
project spells them, interleaved in TU order (`#define GLM_FORCE_CUDA` before `<glm/glm.hpp>`); the
dataset carries a copy of the library's parts (units.vendor_copy) that the build puts on the include path.
"""

from __future__ import annotations

import configparser
import functools
import os
from dataclasses import dataclass, field

from miner import cuda_libs, lazy_re
from miner.cuda_libs import HeaderLibrary, header_library_of
from miner.source.configured_headers import is_generated
from miner.units.closure.context import _IDENT, _STRING_OR_COMMENT, Macro, TUContext, _skipped_ranges
from miner.units.headers import FRAMEWORK, STD_HEADERS, TOOLKIT_HEADER

THIRD_PARTY_DIRS = frozenset({"third_party", "third-party", "thirdparty", "3rdparty", "3rd_party", "3rd-party",
                              "external", "externals", "extern", "vendor", "vendored", "deps", "dependencies",
                              "submodules"})
MAX_BYTES = 32 << 20
_DIRECTIVE = lazy_re.compile(rb'#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]')


@dataclass
class Library:
    """One vendored library as a TU reaches it."""

    include_dir: str            # D: what its include lines are spelled against
    parts: list[str]            # what the dataset carries, relative to D: `glm` (a folder) or `json.hpp`
    headers: list[str] = field(default_factory=list)  # include spellings the project uses, in TU order
    first: tuple[int, ...] = ()  # sort key of the first include of it in the TU
    at: dict[str, tuple[int, ...]] = field(default_factory=dict)  # spelling -> sort key of its first include
    files: set[str] = field(default_factory=set)  # its files this TU read
    # A header-only library of an installed wheel (CUTLASS: miner.cuda_libs.HEADER_LIBRARIES) the tree lacks: not
    # carried into the dataset, the build finds the wheel's copy. `include_dir` is the wheel's, or "" where the
    # wheel is not installed (the unit keeps the includes all the same, and its build says what to install).
    wheel: HeaderLibrary | None = None

    def holds(self, path: str) -> bool:
        return self.part_of(path) is not None

    def part_of(self, path: str) -> str | None:
        return next((p for p in self.parts if path == os.path.join(self.include_dir, p)
                     or path.startswith(os.path.join(self.include_dir, p) + os.sep)), None)

    def without(self, part: str) -> Library | None:
        """The library less one part (the one that holds the kernel being mined): None when nothing of the
        rest is included by the project."""
        at = {h: k for h, k in self.at.items() if h.split("/", 1)[0] != part}
        if not at:
            return None
        gone = Library(self.include_dir, [part])
        return Library(self.include_dir, [p for p in self.parts if p != part], [h for h in self.headers if h in at],
                       min(at.values()), at, {f for f in self.files if not gone.holds(f)})


_ROOTS: dict[frozenset[str], str] = {}


def _inputs_root(inputs: frozenset[str]) -> str:
    """The folder that holds every input: the same for every TU of a run (a worker parses many), and
    `commonpath` over a few hundred paths was a hundredth of a cold MMCV run."""
    if inputs not in _ROOTS:
        # (a header the build writes from a template lies in the user's cache: not a folder of the project)
        tree = [p for p in inputs if not is_generated(p)] or list(inputs)
        root = os.path.commonpath(sorted(tree)) if tree else "/"
        if os.path.isfile(root):
            root = os.path.dirname(root)
        _ROOTS.clear()  # (one run's inputs at a time)
        _ROOTS[inputs] = root
    return _ROOTS[inputs]


class Vendored:
    """The vendored libraries of one TU, looked up by file."""

    def __init__(self, ctx: TUContext) -> None:
        self.ctx = ctx
        self.libraries: list[Library] = []
        self._of: dict[str, Library | None] = {}
        self._defines: dict[str, list[Macro]] = {}
        # (sort key, name) of each standard or toolkit header a project file includes: those before a library
        # may define what it tests (`<cuda.h>`'s CUDA_VERSION, which glm requires once GLM_FORCE_CUDA is set).
        self._toolkit: list[tuple[tuple[int, ...], str]] = []
        self.root = _inputs_root(frozenset(ctx.inputs))
        self._find()

    @classmethod
    def of(cls, ctx: TUContext) -> Vendored:
        """The TU's libraries, found once per TUContext (every kernel of the TU asks)."""
        return ctx.memo("_vendored", lambda: cls(ctx))

    def _find(self) -> None:
        ctx = self.ctx
        by_dir: dict[str, Library] = {}
        edges: list[tuple[str, str]] = []
        for inc in ctx.tu.get_includes():
            if inc.source is None:
                continue
            src, dst = ctx.norm(inc.source.name), ctx.norm(inc.include.name)
            edges.append((src, dst))
            if dst not in ctx.inputs and src in ctx.inputs and not self._third_party(src):
                name = self._spelling(src, inc.location.offset)
                if name and (name in STD_HEADERS or TOOLKIT_HEADER.match(name)) and not FRAMEWORK.search(name):
                    self._toolkit.append((ctx.sort_key(src, inc.location.offset), name))
            if dst not in ctx.inputs or not self._third_party(dst):
                continue
            spelled = self._spelling(src, inc.location.offset)
            if spelled is None or ".." in spelled.split("/") or not dst.endswith(os.sep + spelled):
                continue
            d = dst[: -len(spelled) - 1]
            if self._third_party(src) and src.startswith(d + os.sep):
                continue  # the library including itself
            if not self._third_party_dir(d):
                # `#include "third_party/tl/tl.hpp"` from the project's folder: the library's include dir
                # is the third-party folder, and the unit spells the include from there (`<tl/tl.hpp>`).
                comps = spelled.split("/")
                cut = max((i for i, c in enumerate(comps[:-1]) if c.lower() in THIRD_PARTY_DIRS), default=-1)
                if cut < 0:
                    continue
                d = os.path.join(d, *comps[: cut + 1])
                spelled = "/".join(comps[cut + 1:])
            lib = by_dir.setdefault(d, Library(d, []))
            part = spelled.split("/", 1)[0]
            if part not in lib.parts:
                lib.parts.append(part)
            key = ctx.sort_key(src, inc.location.offset)
            if spelled not in lib.at or key < lib.at[spelled]:
                lib.at[spelled] = key
            lib.first = min(lib.first, key) if lib.first else key
        project = {dst for _src, dst in edges if dst in ctx.inputs}
        self._find_wheels()
        for lib in by_dir.values():
            # Self-contained, part by part (`json/`, `pcg32/` under one `dependencies/`): what its files include
            # is its own or no project file at all. A part that includes the project's headers is inlined; the
            # other parts stay #includes.
            for part in list(lib.parts):
                one = Library(lib.include_dir, [part])
                files = {dst for _src, dst in edges if one.holds(dst)}
                if any(one.holds(src) and dst in ctx.inputs and not one.holds(dst) for src, dst in edges) or any(
                        self._includes_project(f, one, project) for f in files):
                    lib.parts.remove(part)
                    lib.at = {h: k for h, k in lib.at.items() if h.split("/", 1)[0] != part}
            if not lib.parts:
                continue
            lib.first = min(lib.at.values())
            lib.headers = sorted(lib.at, key=lambda h: lib.at[h])
            lib.files = {dst for _src, dst in edges if lib.holds(dst)}
            if _size(lib.include_dir, tuple(lib.parts)) > MAX_BYTES:
                continue
            self.libraries.append(lib)

    def _find_wheels(self) -> None:
        """Header-only libraries of wheels (CUTLASS/CuTe) that the project's files include and the tree lacks: where
        the wheel is installed the parse found them in its include dir (header_wheels) and the TU's inclusion list
        says which of the project's directives landed there; where it is not, the project's active directives
        spelled for the library (`cutlass/...`) that found no file. Each is kept as the project's include lines,
        never inlined (the parse has no piece of it) nor carried into the dataset."""
        ctx = self.ctx
        found: dict[HeaderLibrary, Library] = {}

        def add(lib: HeaderLibrary, include_dir: str, spelled: str, key: tuple[int, ...], dst: str | None) -> None:
            got = found.setdefault(lib, Library(include_dir, [], wheel=lib))
            part = spelled.split("/", 1)[0]
            if part not in got.parts:
                got.parts.append(part)
            if spelled not in got.at or key < got.at[spelled]:
                got.at[spelled] = key
            if dst is not None:
                got.files.add(dst)

        resolved: set[tuple[str, int]] = set()  # (project file, line start) of directives that found a file
        reached: list[str] = []
        for inc in ctx.tu.get_includes():
            if inc.source is None:
                continue
            src, dst = ctx.norm(inc.source.name), ctx.norm(inc.include.name)
            if src not in ctx.inputs:
                reached.append(dst)
                continue
            data = ctx.read(src)
            resolved.add((src, data.rfind(b"\n", 0, inc.location.offset) + 1))
            if dst in ctx.inputs:
                continue
            spelled = self._spelling(src, inc.location.offset)
            lib = header_library_of(spelled) if spelled else None
            where = cuda_libs.header_library_dir(lib) if lib is not None else None
            if lib is not None and where is not None and dst.startswith(where + os.sep) and spelled:
                add(lib, where, spelled, ctx.sort_key(src, inc.location.offset), dst)
        for src in ctx.order:
            if src not in ctx.inputs:
                continue
            data = ctx.read(src)
            if b"cutlass/" not in data and b"cute/" not in data:  # (HEADER_LIBRARIES' folders)
                continue
            skipped: list[tuple[int, int]] | None = None
            for m in _DIRECTIVE.finditer(data):
                spelled = m.group(2).decode("utf-8", "replace").strip().lstrip("./")
                lib = header_library_of(spelled)
                if lib is None or cuda_libs.header_library_dir(lib) is not None:
                    continue  # (installed: the inclusion list above says which directives the parse took)
                line = data.rfind(b"\n", 0, m.start()) + 1
                if (src, line) in resolved:
                    continue
                if skipped is None:
                    skipped = _skipped_ranges(ctx.tu, ctx.files.get(src))
                if any(s <= m.start() < e for s, e in skipped):
                    continue  # an inactive #if branch
                add(lib, "", spelled, ctx.sort_key(src, m.start()), None)
        for lib in found.values():
            if lib.include_dir:  # the library's files this TU read (their names select the project's #defines)
                lib.files |= {f for f in reached if f.startswith(lib.include_dir + os.sep)}
            lib.first = min(lib.at.values())
            lib.headers = sorted(lib.at, key=lambda h: lib.at[h])
            self.libraries.append(lib)

    def _includes_project(self, path: str, lib: Library, project: set[str]) -> bool:
        """Whether a library file's own `#include` lines name a project file outside the library. The TU's
        inclusion list misses those the project had already included (an include guard or `#pragma once` skips
        them there), yet the library copied alone into the dataset would not find them."""
        here = os.path.dirname(path)
        for m in _DIRECTIVE.finditer(self.ctx.read(path)):
            spelled = m.group(2).decode("utf-8", "replace").strip()
            local = os.path.normpath(os.path.join(here, spelled))
            if os.path.isfile(local):
                local = self.ctx.norm(local)
                if local in project and not lib.holds(local):
                    return True
                continue
            if spelled in STD_HEADERS or TOOLKIT_HEADER.match(spelled):
                continue  # `<math.h>` is the C library's, whatever the project names so
            tail = os.sep + spelled.lstrip("./")
            if any(p.endswith(tail) and not lib.holds(p) for p in project):
                return True
        return False

    def _spelling(self, src: str, offset: int) -> str | None:
        data = self.ctx.read(src)
        line_start = data.rfind(b"\n", 0, offset) + 1
        end = data.find(b"\n", offset)
        m = _DIRECTIVE.search(data, line_start, end if end >= 0 else len(data))
        return m.group(2).decode("utf-8", "replace").strip().lstrip("./") if m else None

    def _third_party(self, path: str) -> bool:
        return self._third_party_dir(os.path.dirname(path))

    def _third_party_dir(self, d: str) -> bool:
        # Memoized per instance: an `lru_cache` on the method was one cache for the class, keyed by `self`, so it
        # held every instance, its TUContext and through that the translation unit (libclang's whole AST) of
        # every file parsed in the process (mlx's run grew to 7.4 GB and was killed for memory).
        cache = self.__dict__.setdefault("_third_party_dirs", {})
        if d not in cache:
            rel = os.path.relpath(d, self.root)
            cache[d] = (not rel.startswith("..") and any(c.lower() in THIRD_PARTY_DIRS for c in rel.split(os.sep))
                        ) or _in_submodule(d)
        return cache[d]

    def prelude(self, lib: Library) -> list[str]:
        """The unit's lines for the library: its configuring #defines and its #includes, interleaved in TU order
        (a define written between two includes stays between them), after the standard and toolkit headers the
        project included before it."""
        ctx = self.ctx
        last = max(lib.at.values())
        items = [(ctx.sort_key(m.path, m.start), ctx.read(m.path)[m.start:m.end].decode("utf-8", "replace").strip())
                 for m in self.config_defines(lib)]
        items += [(key, f"#include <{h}>") for h, key in lib.at.items()]
        items += [(key, f"#include <{name}>") for key, name in self._toolkit if key < last]
        return list(dict.fromkeys(line for _k, line in sorted(items)))

    def library_of(self, path: str) -> Library | None:
        if not path:
            return None
        if path not in self._of:
            self._of[path] = next((lib for lib in self.libraries if lib.holds(path)), None)
        return self._of[path]

    def config_defines(self, lib: Library) -> list[Macro]:
        """The project's #defines whose name the library's files mention, written before one of its includes
        (`GLM_FORCE_CUDA`; `GLM_ENABLE_EXPERIMENTAL` before `<glm/gtx/...>` only)."""
        key = f"{lib.include_dir}|{'|'.join(lib.parts)}"
        if key not in self._defines:
            ctx = self.ctx
            names: set[str] = set()
            for f in lib.files:
                names |= _identifiers(f, ctx.read(f))
            if lib.wheel is not None:  # (its files may not be installed: its macros' prefixes)
                names |= {n for n in ctx.macros if n.startswith(lib.wheel.macro_prefixes)}
            out: list[Macro] = []
            last = max(lib.at.values())
            for name in sorted(names):
                for m in ctx.active_defs(name):
                    if not self.library_of(m.path) and ctx.sort_key(m.path, m.start) < last:
                        out.append(m)
            self._defines[key] = sorted(out, key=lambda m: ctx.sort_key(m.path, m.start))
        return self._defines[key]


_IDENTS: dict[tuple[str, int, int], frozenset[str]] = {}  # per worker process: every TU that includes glm asks


def _identifiers(path: str, data: bytes) -> frozenset[str]:
    """Identifiers of a library file outside comments and strings, cached by path, size and content hash."""
    key = (path, len(data), hash(data))
    if key not in _IDENTS:
        _IDENTS[key] = frozenset(_IDENT.findall(_STRING_OR_COMMENT.sub(" ", data.decode("utf-8", "replace"))))
    return _IDENTS[key]


@functools.lru_cache(maxsize=256)
def _size(include_dir: str, parts: tuple[str, ...]) -> int:
    total = 0
    for p in parts:
        path = os.path.join(include_dir, p)
        if os.path.isfile(path):
            total += os.path.getsize(path)
        for dp, _dns, fns in os.walk(path):
            total += sum(os.path.getsize(os.path.join(dp, f)) for f in fns)
    return total


@functools.lru_cache(maxsize=1024)
def _in_submodule(d: str) -> bool:
    """Whether folder `d` is inside a git submodule of an enclosing checkout (its `.gitmodules`)."""
    cur = d
    while True:
        parent = os.path.dirname(cur)
        gm = os.path.join(parent, ".gitmodules")
        if os.path.isfile(gm):
            rel = os.path.relpath(d, parent)
            return any(rel == p or rel.startswith(p + os.sep) for p in _submodule_paths(gm))
        if parent == cur:
            return False
        cur = parent


@functools.lru_cache(maxsize=64)
def _submodule_paths(gitmodules: str) -> tuple[str, ...]:
    cp = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        cp.read(gitmodules, encoding="utf-8")
    except (configparser.Error, OSError, UnicodeDecodeError):
        return ()
    return tuple(os.path.normpath(cp[s]["path"].strip()) for s in cp.sections() if "path" in cp[s])
