"""Template kernels whose concrete launches a build switch turns on.

A project may compile its kernels at run time by default and write the static launches only under a build
option (`#if LEGACY_STATIC_KERNELS` around a `switch` of `k<float, 6><<<...>>>`, or around the registration
macro that instantiates the host template launching `k<Traits>`), the option given by the build system alone
(`-DLEGACY_STATIC_KERNELS=$<BOOL:...>`, off by default). The parse, which reads no build system, then saw no
launch, or one inside a host template that nothing instantiates: the kernel took inferred arguments (`Traits
= float`, "name followed by '::' must be a class") or defaults. Such a kernel is parsed again through its
translation unit with the switch on, as a kernel in a file's own inactive `#if` branch is
(extract.parse._variant_parses); it takes its closure and launches from that parse, and records the define
(its unit carries it), when that parse gives it a concrete launch.

The switch is found from the text: a branch that defining a feature name turns on (not a platform or version
selector, not a name any project source `#define`s, not one the configuration defines already) and that names
the kernel or the function its launch sits in, directly or as the leading part of a token paste
(`launch_##KIND##_<...>` for `launch_plain_`).
"""

from __future__ import annotations

import functools
import re

from miner import lazy_re
from miner.frontends import treesitter_frontend
from miner.frontends.model import Kernel
from miner.source.feature_guards import is_feature_name
from miner.source.include_graph import IncludeGraph
from miner.units.records import KernelKey, Launch

_DEFINED = lazy_re.compile(rb"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)
_CONDITIONAL = lazy_re.compile(rb"^[ \t]*#[ \t]*if", re.M)
_PASTE = lazy_re.compile(rb"([A-Za-z_]\w*)[ \t]*##")
# `#ifndef NAME...` or `#if !defined(NAME...`: what follows is NAME, then anything on the line (the pattern
# with NAME written in, `[^\n]*` after it, matched the same lines).
_DEFAULT_TEST = lazy_re.compile(rb"#[ \t]*(?:ifndef[ \t]+|if[ \t]+!\s*defined\s*\(?\s*)([^\n]*)")


def _is_default(text: bytes, at: int, name: bytes) -> bool:
    """Whether the `#define name` at `at` directly follows `#ifndef name` (or `#if !defined(name)`): a default."""
    line = text[text.rfind(b"\n", 0, max(0, text.rfind(b"\n", 0, at))) + 1:at].strip()
    # (one pattern for every name: a pattern per #define compiled anew for each of a tree's hundreds of macros)
    m = _DEFAULT_TEST.fullmatch(line)
    return m is not None and m.group(1).startswith(name)


def concrete(launch: Launch) -> bool:
    """Whether a launch gives its kernel template arguments of its own (not the host template's defaults)."""
    if launch.dispatch_args:
        return True
    if launch.host_template is not None:
        return bool(launch.host_template_args) and not launch.host_defaulted
    return bool(launch.template_args)


def project_defines(data: dict[str, bytes]) -> set[str]:
    """The names the project's files `#define` (`#ifndef X` / `#define X 0` / `#endif` is a default the build
    overrides, not a definition of the project)."""
    return {m.group(1).decode() for text in data.values() for m in _DEFINED.finditer(text)
            if not _is_default(text, m.start(), m.group(1))}


def switched_launches(kernels: list[Kernel], tu_of: dict[str, str], launches: dict[KernelKey, list[Launch]],
                      graph: IncludeGraph, data: dict[str, bytes], defined: list[str], project: set[str]
                      ) -> dict[tuple[str, tuple[str, ...]], list[Kernel]]:
    """(translation unit, defines) -> the template kernels without a concrete launch whose launch site a switch
    of that unit's files turns on. `defined` are the configuration's defines, `project` those the project's files
    write (project_defines)."""
    project = project_defines(data)
    have = {d.partition("=")[0] for d in defined}
    groups: dict[tuple[str, tuple[str, ...]], list[Kernel]] = {}
    for k in kernels:
        if k.frontend != "clang" or not k.template_params:
            continue
        found = launches.get((k.path, k.start_offset), [])
        if any(concrete(lc) for lc in found):
            continue
        names = {k.name} | {lc.launcher for lc in found if lc.launcher}
        tu = tu_of.get(k.path, k.path)
        for path in [tu, *sorted(graph.closure(tu) - {tu})]:
            defines = _switch_naming(data.get(path, b""), names, project | have)
            if defines:
                groups.setdefault((tu, tuple(defines)), []).append(k)
                break
    return groups


@functools.lru_cache(maxsize=4096)
def _word(name: str) -> re.Pattern[bytes]:
    return re.compile(rb"(?<![\w.])" + re.escape(name.encode()) + rb"(?!\w)")


@functools.lru_cache(maxsize=256)
def _pasted(text: bytes) -> tuple[tuple[int, str], ...]:
    """(offset, leading part) of each name pasted together in `text`, once per text: every template kernel without a
    concrete launch asked it of its unit's files, and the pattern tries every position of every word (a ggml run: 113
    scans of the same few headers, the largest serial step after the build-file search)."""
    return tuple((m.start(), m.group(1).decode()) for m in _PASTE.finditer(text))


def _switch_naming(text: bytes, names: set[str], taken: set[str]) -> list[str]:
    """The defines that turn on a branch of `text` naming one of `names` (empty: none does)."""
    if not _CONDITIONAL.search(text):  # (no conditional branch: nothing a define turns on)
        return []
    offsets = []
    for name in sorted(names):
        if name.encode() in text:
            offsets += [m.start() for m in _word(name).finditer(text)]
    # `launch_##KIND##_<...>` inside a macro: the leading part of a name pasted together.
    if b"##" in text:
        offsets += [at for at, head in _pasted(text) if any(n.startswith(head) and n != head for n in names)]
    for off in sorted(offsets):
        defines = treesitter_frontend.activating_defines(text, off)
        wanted = [d for d in defines if is_feature_name(d.partition("=")[0]) and d.partition("=")[0] not in taken]
        # Only a branch that is off now: every name it needs is one nothing defines.
        if wanted and len(wanted) == len(defines):
            return wanted
    return []
