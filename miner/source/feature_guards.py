"""Feature switches only the build defines, read from where a project writes its explicit instantiations.

A project that instantiates a kernel (or the host template that launches it) for a type only under a switch
its build passes (`#ifdef BF16_AVAILABLE` / `INSTANTIATE(__nv_bfloat16)` / `#endif`, with `-DBF16_AVAILABLE`
in a build script the miner may not see) is built with that switch on: the instantiation exists only there,
and so do the helpers it needs (`template <> __nv_bfloat16 to(float)` under the same `#ifdef`). Explicit
instantiations are read from the text (libclang does not expose them), so they were taken from the
switched-off branch while the parse, and with it the closure, lacked the helpers: every such unit failed
("no instance of function template matches"). A translation unit that reaches such a guarded instantiation is
therefore parsed with the switch defined, and its units carry the `#define` (docs/units.md, "Which
configuration is mined").

A name counts as such a switch when the code tests it with `#ifdef X` / `#if defined(X)` (or the `#else` of
`#ifndef X`) around an explicit instantiation, no source of the project `#define`s it, and it is neither a
reserved name (`__CUDA_ARCH__`, `_WIN32`: the compiler's) nor a platform or version switch (HIP, ROCm, MUSA,
CUDA, `..._VERSION`), nor a valued condition (`#if X >= 3`): those select a platform, not a feature.
"""

from __future__ import annotations

import re

from miner import lazy_re
from miner.units import macro_text
from miner.units.instantiations import _EXPLICIT, writing_template

_EXPLICIT_B = lazy_re.compile(_EXPLICIT.pattern.encode(), re.S)
_DEFINE_B = lazy_re.compile(rb"^[ \t]*#[ \t]*define\b(?:[^\n\\]|\\\r?\n|\\.)*", re.M)
# `template void k<T>(...);`, `template void launch(T *, int);` (deduced), `template class C<float>;`, as a
# statement; not `template <...>` (a definition) nor `x.template f<T>()`.
_INSTANTIATION = lazy_re.compile(r"(?:^|[;{}])\s*(?:extern\s+)?template\s+(?!<)\w")
_CUDA_SUFFIXES = (".cu", ".cuh", ".CU", ".CUH")
_PLATFORM = lazy_re.compile(r"HIP|ROCM|ROCm|MUSA|CUDA|NVCC|CLANG|GNUC|MSC|WIN|APPLE|LINUX|VERSION|ARCH|DEBUG", re.I)


def _invocation_length(text: str) -> int:
    """Length of the macro invocation at the start of `text` (through its matching `)`)."""
    depth = 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


def is_feature_name(name: str) -> bool:
    """A plain project switch (not the compiler's reserved names, not a platform/version selector)."""
    return bool(re.fullmatch(r"[A-Za-z]\w*", name)) and not _PLATFORM.search(name)


_DIRECTIVE = lazy_re.compile(rb"^[ \t]*#[ \t]*(ifdef|ifndef|if|elif|else|endif)\b[ \t]*([^\n]*)", re.M)
_SIMPLE_IF = lazy_re.compile(rb"^(?:defined\s*\(\s*(\w+)\s*\)|defined\s+(\w+)|(\w+))\s*(?://.*|/\*.*)?$")


def _guarded_spans(data: bytes) -> list[tuple[int, int, str, bool]]:
    """(start, end, X, on) of each branch that defining X switches on (on) or off: `#ifdef X`, `#if
    defined(X)`, `#if X` (their first branch; their `#else` is off) and `#ifndef X` (the reverse). A line
    scan, not tree-sitter: an instantiation macro invoked without a `;` made its parse an error node that
    swallowed the `#ifdef`."""
    out: list[tuple[int, int, str, bool]] = []
    stack: list[list] = []  # [directive, name or None, in_else, branch start]
    for m in _DIRECTIVE.finditer(data):
        kind, rest = m.group(1), m.group(2).strip()
        if kind in (b"ifdef", b"ifndef", b"if"):
            name = None
            if kind == b"if":
                cond = _SIMPLE_IF.match(rest)
                name = next((g for g in cond.groups() if g), None) if cond else None
            else:
                name = re.match(rb"\w+", rest).group(0) if re.match(rb"\w+", rest) else None
            stack.append([kind, name.decode() if name else None, False, m.end()])
        elif not stack:
            continue
        elif kind in (b"elif", b"else", b"endif"):
            top = stack[-1]
            if top[1] is not None:
                out.append((top[3], m.start(), top[1], (top[0] == b"ifndef") == top[2]))
            if kind == b"endif":
                stack.pop()
            else:
                top[1] = top[1] if kind == b"else" else None  # an #elif chain: no single switch
                top[2], top[3] = True, m.end()
    return out


def guards(data: bytes, macros: dict[str, macro_text.MacroDef],
           writing: tuple[set[str], re.Pattern[bytes] | None] | None = None) -> set[str]:
    """Names whose definition turns on a branch of `data` that holds an explicit instantiation, written
    directly or through one of the project's macros that write `template` (`macros`). `writing` is what
    `_writing(macros)` gives, when the caller asks for many files with the same macros."""
    spans = _guarded_spans(data)
    if not spans:
        return set()
    writing_names, call = writing if writing is not None else _writing(macros)
    defines = [(m.start(), m.end()) for m in _DEFINE_B.finditer(data)]
    offsets = [m.start() for m in _EXPLICIT_B.finditer(data)]
    if writing_names and call is not None:
        for m in call.finditer(data):
            # Only a macro whose expansion is an explicit instantiation (`template void k<T>(...);`), not one
            # that writes template definitions (a `STUB_GPU(Layer)` that defines members for CPU-only builds).
            head = data[m.start():m.start() + 4000].decode("utf-8", "replace")
            inv = head[:_invocation_length(head)]
            if _INSTANTIATION.search(macro_text.expand(inv, macros, writing_names)):
                offsets.append(m.start())
    on: set[str] = set()
    off_by: set[str] = set()
    for off in offsets:
        if any(a <= off < b for a, b in defines):
            continue  # the text of a macro, not a use of it
        for a, b, name, turns_on in spans:
            if a <= off < b:
                (on if turns_on else off_by).add(name)
    # A switch that would also turn instantiations off (`#ifndef NO_DOUBLE` / INST(double) / `#else` /
    # INST(long)) chooses between them: the default side stays.
    return on - off_by


def _writing(macros: dict[str, macro_text.MacroDef]) -> tuple[set[str], re.Pattern[bytes] | None]:
    """The macros that write `template` and the pattern of a call to one of them: a function of the project's
    macros alone (`switches` made them again for each source with a guarded branch, a few dozen times a run)."""
    writing = writing_template(macros)
    if not writing:
        return writing, None
    return writing, re.compile(rb"(?<![\w.])(?:" + b"|".join(re.escape(n.encode()) for n in sorted(writing))
                               + rb")\s*\(")


def switches(texts: dict[str, bytes]) -> dict[str, set[str]]:
    """Per file (CUDA sources that hold explicit instantiations under a guard), the feature switches the
    build must have defined for them; `texts` are every project source read (inputs and context), which
    also tell which names the project defines itself."""
    macros: dict[str, macro_text.MacroDef] = {}
    defined: set[str] = set()
    for t in texts.values():
        text = t.decode("utf-8", "replace")
        macros.update(macro_text.definitions(text))
        defined.update(re.findall(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", text, re.M))
    out: dict[str, set[str]] = {}
    writing: tuple[set[str], re.Pattern[bytes] | None] | None = None
    for path, data in texts.items():
        # CUDA sources only: a host .cpp's `#ifdef USE_OPENCV` instantiations select optional libraries.
        if not path.endswith(_CUDA_SUFFIXES) or b"#" not in data or b"template" not in data and not macros:
            continue
        if writing is None and _guarded_spans(data):
            writing = _writing(macros)
        names = {n for n in guards(data, macros, writing) if is_feature_name(n) and n not in defined}
        if names:
            out[path] = names
    return out
