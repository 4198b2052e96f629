"""Several units as one translation unit, and a failed batch's log traced back to its members.

Includes are hoisted and de-duplicated, each body sits in its own `namespace km_b<i>_` after a
`#line` tag naming the unit, and the macros a body defines are restored after it; an error then
names its unit by that tag, or by the namespace inside a mangled symbol.
"""

from __future__ import annotations

import re

from miner import lazy_re
from miner.builder.diagnostics import is_tool_error, located_error, parse_errors
from miner.builder.unit_split import Unit

_NS = lazy_re.compile(r"km_b(\d+)_")
_NOTE = lazy_re.compile(r"^(?P<file>.+?)\(\d+\): (?:warning|remark)")


# Repos overload these for their own types (atomicAdd for Half...). Declared inside a batch namespace,
# such an overload would hide the global ones; a using-declaration keeps both visible.
_BUILTINS = (
    "atomicAdd atomicSub atomicExch atomicMin atomicMax atomicInc atomicDec atomicCAS atomicAnd atomicOr "
    "atomicXor __ldg __ldcs __ldcg __ldca __ldlu __ldcv __stcs __stcg __stwb __stwt __shfl_sync "
    "__shfl_up_sync __shfl_down_sync __shfl_xor_sync max min abs fabs fabsf exp expf log logf sqrt sqrtf "
    "rsqrt rsqrtf pow powf floor floorf ceil ceilf round roundf tanh tanhf fmaxf fminf fma fmaf erf erff"
).split()
_DEFINES_FN = r"\b{}\s*\([^;{{}}]*\)\s*\{{"
_DECLARED = lazy_re.compile(
    r"\b(?:struct|class|union|enum(?:\s+class)?)\s+([A-Za-z_]\w*)"
    r"|\b([A-Za-z_]\w*)\s*(?:<[^;{}()]*>)?\s*\([^;{}]*\)\s*(?:const\s*)?\{"
    r"|\busing\s+([A-Za-z_]\w*)\s*="
    r"|\btypedef\b[^;{}]*?\b([A-Za-z_]\w*)\s*;"
)
_NOT_NAMES = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "else", "do"}
_GLOBAL_AFTER = {"return", "new", "delete", "case", "else", "do", "throw", "typename", "co_return", "sizeof",
                 "const", "static", "inline", "extern", "volatile", "public", "private", "protected", "virtual",
                 "friend", "template", "__device__", "__host__", "__global__", "__forceinline__"}


def _text_before(body: str, end: int) -> str:
    """The text before `end`, right-stripped, from a window that holds the last word: slicing and searching the
    whole prefix for each `::` made the batch quadratic (minutes per batch for units that inline a large
    vendored header library)."""
    width = 256
    while True:
        start = max(0, end - width)
        before = body[start:end].rstrip()
        if start == 0 or (before and re.search(r"[^\w]", before)):
            return before
        width *= 4


def _requalify(body: str, ns: str) -> str:
    """`::name` for a name the body itself declares at its top level now means `ns::name`."""
    if "::" not in body:
        return body
    declared = {g for m in _DECLARED.finditer(body) for g in m.groups() if g} - _NOT_NAMES
    out: list[str] = []
    last = 0
    for m in re.finditer(r"::\s*([A-Za-z_]\w*)", body):
        if m.group(1) not in declared:
            continue
        before = _text_before(body, m.start())
        prev = before[-1:] if before else ""
        if prev and (prev in ">)]" or prev.isalnum() or prev == "_"):
            word = re.search(r"[A-Za-z_]\w*$", before)
            if not (word and word.group(0) in _GLOBAL_AFTER):
                continue
        out.append(body[last:m.start()] + ns)
        last = m.start()
    out.append(body[last:])
    return "".join(out)


def batch_source(units: list[Unit]) -> str:
    includes = list(dict.fromkeys(inc for u in units for inc in u.includes))
    parts = [f"// kernel-miner build batch of {len(units)} units", *includes, ""]
    for i, u in enumerate(units):
        ns = f"km_b{i}_"
        uses = [f"using ::{b};" for b in _BUILTINS if b in u.body and re.search(_DEFINES_FN.format(b), u.body)]
        # push/pop, not #undef: a body may redefine a toolkit macro (FLT_MAX) that later units need.
        parts += [f'#pragma push_macro("{name}")' for name in u.macros]
        parts.append(f"namespace {ns} {{ {' '.join(uses)}")
        parts.append(f'#line {u.body_line} "{u.tag}"')
        parts.append(_requalify(u.body, ns))
        parts.append(f"}}  // namespace km_b{i}_")
        parts += [f'#pragma pop_macro("{name}")' for name in u.macros]
        parts.append("")
    return "\n".join(parts) + "\n"


def attribute(log: str, units: list[Unit]) -> set[int]:
    """Which batch members the errors belong to (by #line tag or km_b<i>_ in a symbol)."""
    by_tag = {u.tag: i for i, u in enumerate(units)}
    bad: set[int] = set()
    for d in parse_errors(log):
        if d.file in by_tag:
            bad.add(by_tag[d.file])
        for m in _NS.finditer(d.text):
            if int(m.group(1)) < len(units):
                bad.add(int(m.group(1)))
    return bad


def split_log(log: str, units: list[Unit]) -> tuple[dict[int, str], int]:
    """A batch log cut into each member's diagnostics (paths as a solo compile prints them),
    and the number of error lines that belong to no member."""
    by_tag = {u.tag: i for i, u in enumerate(units)}
    owned: dict[int, list[str]] = {}
    owner: int | None = None
    stray = 0
    for line in log.splitlines():
        m = located_error(line) or _NOTE.match(line)
        if m:
            owner = by_tag.get(m.group("file"))
            if owner is None and "error" in line:
                stray += 1
        elif is_tool_error(line):
            ns = _NS.search(line)
            owner = int(ns.group(1)) if ns and int(ns.group(1)) < len(units) else None
            stray += owner is None
        elif not line.startswith(" ") and line.strip():
            owner = None  # "N errors detected", ptxas info, ...: nobody's
        if owner is not None:
            u = units[owner]
            owned.setdefault(owner, []).append(line.replace(u.tag, u.rel))
    return {i: "\n".join(lines) + "\n" for i, lines in owned.items()}, stray
