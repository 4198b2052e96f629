"""PTX read as functions and globals, one kernel's code cut out and normalized, two listings compared.

A kernel's *listing* is its `.entry`, then every `.func` it reaches (transitively, in order of first
use), then the declarations of the globals those use (`$str`, `__constant__` arrays, `__device__`
variables). The normalization removes only what depends on where the code sits, never what it does:

- comments, blank lines, `.loc`/`.file` line info and debug sections;
- the function index inside labels and local depots (`$L__BB3_2` -> `$L__BB_2`, `__local_depot3`):
  nvcc numbers them by the function's position in the file;
- the per-file uniquifier of internal names (anonymous namespaces, `static` functions):
  `_ZN34_INTERNAL_65b35793_4_a_cu_d589cb60...` -> `_ZN<INTERNAL>...`;
- the numbering of string constants (`$str$7` -> `$str$1` by order of first use in the listing);
- runs of blanks.

Registers, instructions, immediates, callee names, parameter symbols, types, alignments and shared
memory sizes are compared exactly.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

_FUNC_HEAD = re.compile(r"^(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\b")
_NAME_AFTER = re.compile(r"^\s*(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_GLOBAL_DECL = re.compile(
    r"^(?:\.(?:visible|weak|extern)\s+)*\.(?:global|const|shared)\b.*?([A-Za-z_$][\w$]*)\s*(?:\[|=|;)")
_IDENT = re.compile(r"[A-Za-z_$][\w$]*")
_LABEL = re.compile(r"\$L__(BB|tmp)\d+_(\d+)")
_DEPOT = re.compile(r"__local_depot\d+")
_INTERNAL = re.compile(r"(\d+)(_INTERNAL_|_GLOBAL__N_)")
_COMPONENT = re.compile(r"_(?:INTERNAL|GLOBAL__N)_\w*_[0-9a-f]{8}")
_STR = re.compile(r"\$str(?:\$\d+)?\b")


@dataclass
class Ptx:
    functions: dict[str, list[str]] = field(default_factory=dict)   # name -> definition lines (with body)
    entries: list[str] = field(default_factory=list)                # .entry names, in file order
    globals: dict[str, str] = field(default_factory=dict)           # name -> declaration line


def _func_name(head: str) -> str | None:
    m = _FUNC_HEAD.match(head)
    if not m:
        return None
    n = _NAME_AFTER.match(head[m.end():])
    return n.group(1) if n else None


def parse(text: str) -> Ptx:
    """Top-level functions (definitions only, not prototypes), entries and global declarations."""
    out = Ptx()
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        s = line.strip()
        if s.startswith(".section") and ".debug" in s:
            break  # debug sections come last and describe, not define, the code
        if _FUNC_HEAD.match(s):
            # The head may run over several lines: `.func (.param .b32 r) name` then `(` params `)`.
            head = s
            j = i
            while j + 1 < len(lines) and not (lines[j].rstrip().endswith(";") or lines[j + 1].startswith("{")):
                j += 1
                head += " " + lines[j].strip()
            name = _func_name(head)
            if j + 1 < len(lines) and lines[j + 1].startswith("{"):
                k = j + 1
                while k < len(lines) and not lines[k].startswith("}"):
                    k += 1
                if name:
                    out.functions[name] = lines[i:k + 1]
                    if ".entry" in head.split("(")[0]:
                        out.entries.append(name)
                i = k + 1
                continue
            i = j + 1
            continue
        m = _GLOBAL_DECL.match(s)
        if m:
            out.globals[m.group(1)] = s
        i += 1
    return out


def strip_internal(name_or_line: str) -> str:
    """`34_INTERNAL_<hash>_<len>_<file>_<hash>` and `36_GLOBAL__N__<hash>...` (length-prefixed mangled
    components naming the source file) -> `<INTERNAL>` / `<ANON>`."""
    s = name_or_line
    out: list[str] = []
    pos = 0
    while (m := _INTERNAL.search(s, pos)) is not None:
        digits, body = m.group(1), m.start(2)
        # The digit run may be glued to the previous component's trailing hex: the length is the
        # longest suffix of it that spans a component ending in the 8-hex uniquifier.
        for k in range(len(digits)):
            n = int(digits[k:])
            if body + n <= len(s) and _COMPONENT.fullmatch(s[body:body + n]):
                out += [s[pos:m.start(1) + k], "<INTERNAL>" if m.group(2) == "_INTERNAL_" else "<ANON>"]
                pos = body + n
                break
        else:
            out.append(s[pos:m.end()])
            pos = m.end()
    out.append(s[pos:])
    return "".join(out)


def find_entry(ptx: Ptx, name: str) -> str | None:
    """The entry of `ptx` with the same mangled name, internal-name uniquifiers aside."""
    if name in ptx.functions:
        return name
    want = strip_internal(name)
    hits = [e for e in ptx.entries if strip_internal(e) == want]
    return hits[0] if hits else None


def _clean(line: str) -> str | None:
    s = line.split("//", 1)[0].strip()
    if not s or re.match(r"\.(?:loc|file)\s", s):
        return None
    return re.sub(r"\s+", " ", s)


def listing(ptx: Ptx, entry: str) -> list[str]:
    """The entry, the functions it reaches and the globals they use, normalized (see the module doc)."""
    order: list[str] = []
    todo = [entry]
    used_globals: list[str] = []
    while todo:
        name = todo.pop(0)
        if name in order:
            continue
        order.append(name)
        for line in ptx.functions[name][1:]:
            for tok in _IDENT.findall(line.split("//", 1)[0]):
                if tok in ptx.functions and tok not in order and tok not in todo:
                    todo.append(tok)
                elif tok in ptx.globals and tok not in used_globals:
                    used_globals.append(tok)
    raw = [ln for name in order for ln in ptx.functions[name]] + [ptx.globals[g] for g in used_globals]
    strings: dict[str, str] = {}

    def renumber(m: re.Match[str]) -> str:
        return strings.setdefault(m.group(0), f"$str${len(strings) + 1}")

    out: list[str] = []
    for line in raw:
        s = _clean(line)
        if s is None:
            continue
        s = _LABEL.sub(lambda m: f"$L__{m.group(1)}_{m.group(2)}", s)
        s = _DEPOT.sub("__local_depot", s)
        s = _STR.sub(renumber, strip_internal(s))
        out.append(s)
    return out


def first_difference(original: list[str], unit: list[str], context: int = 1, limit: int = 12) -> list[str]:
    """The first hunk of a unified diff (original -> unit), at most `limit` lines."""
    diff = list(difflib.unified_diff(original, unit, "original", "unit", n=context, lineterm=""))
    return diff[2:2 + limit]
