"""PTX read as functions and globals, one kernel's code cut out and normalized, two listings compared.

A kernel's *listing* is its `.entry`, then every `.func` it reaches (transitively, in order of first
use), then the declarations of the globals those use (`$str`, `__constant__` arrays, `__device__`
variables). The normalization removes only what depends on where the code sits, never what it does:

- comments, blank lines, `.loc`/`.file` line info and debug sections;
- the function index inside labels and local depots (`$L__BB3_2` -> `$L__BB_2`, `__local_depot3`):
  nvcc numbers them by the function's position in the file;
- the per-file uniquifier of internal names (anonymous namespaces, `static` functions):
  `_ZN34_INTERNAL_65b35793_4_a_cu_d589cb60...` -> `_ZN<INTERNAL>...`;
- the numbering of string constants (`$str$7` -> `$str$1` by order of first use in the listing), and of the
  call prototypes of indirect calls (`prototype_3` -> `prototype_1`: a virtual or function-pointer call; nvcc
  numbers them through the whole file, so every such call of an earlier kernel shifts a later one's);
- the per-file prefix of file-local device variables under separate compilation (`static __constant__ T
  k[4];`: `__nv_static_30__<hash>_9_source_cu_<hash>_k` in an original compiled with `-rdc=true`, `k` in the
  unit, compiled whole-program);
- the names of function-local `__shared__` variables of the functions the entry calls (`static __shared__ float
  partial[32];` in `reduce<Acc>`, `_ZZ6reduceI...E7partial`): they spell the callee's template arguments, which
  name torch's accessors `torch::headeronly::...` in the original and the shim's `at::...` in the unit; renamed
  `<LOCAL$n>` by order of first use (the entry's own are compared as its name is, below), their declarations
  (type, alignment, size) compared as before;
- with `plain_names` (the entry was matched through an anonymous namespace the unit does not keep), every
  mangled name is compared demangled, `(anonymous namespace)::` left out: the namespace's component also
  shifts the substitution indices after it (`..._PS2_E4tile` in the original, `..._PS1_E4tile` in the
  unit for a kernel's function-scope `__shared__` array);
- the linkage of the `.entry` itself (`.visible`, `.weak`): a kernel in an anonymous namespace (as PyTorch
  ops write them) has none in the original, and the unit, which does not keep that namespace, says
  `.visible`;
- the linkage of the device functions and module-scope variables (`.visible`, `.weak` before `.func`,
  `.global`, `.const`): relocatable device code (`-rdc=true`, the original of a unit that holds definitions of
  another file, see verify.md) exports them, whole-program mode (the unit) does not;
- runs of blanks.

Registers, instructions, immediates, callee names, parameter symbols, types, alignments and shared
memory sizes are compared exactly.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from miner import lazy_re

_FUNC_HEAD = lazy_re.compile(r"^(?:\.(?:visible|weak|extern)\s+)*\.(entry|func)\b")
_NAME_AFTER = lazy_re.compile(r"^\s*(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)")
_GLOBAL_DECL = lazy_re.compile(
    r"^(?:\.(?:visible|weak|extern)\s+)*\.(?:global|const|shared)\b.*?([A-Za-z_$][\w$]*)\s*(?:\[|=|;)")
_IDENT = lazy_re.compile(r"(?<![\w$.%])[A-Za-z_$][\w$]*")   # not an opcode part (st.shared) nor a register
_LABEL = lazy_re.compile(r"\$L__(BB|tmp)\d+_(\d+)")
_DEPOT = lazy_re.compile(r"__local_depot\d+")
_INTERNAL = lazy_re.compile(r"(\d+)(_INTERNAL_|_GLOBAL__N_)")
_COMPONENT = lazy_re.compile(r"_(?:INTERNAL|GLOBAL__N)_\w*_[0-9a-f]{8}")
_NUMBERED = lazy_re.compile(r"\$str(?:\$\d+)?(?![\w$])|\b__unnamed_\d+\b|\bprototype_\d+\b")
_NV_STATIC = lazy_re.compile(r"__nv_static_(\d+)_")
_NV_STATIC_BODY = lazy_re.compile(r"_[0-9a-f]{8}_\d+_\w+")
_SHARED_DECL = lazy_re.compile(r"^(?:\.extern\s+)?\.shared\b")
_MOV = lazy_re.compile(r"^(?:mov|cvta\.global)\.u64\s+(%rd\d+),\s*([%\w$]+);")
_MANGLED = lazy_re.compile(r"(?<![\w$])_Z[\w$]+")
_DM_INTERNAL = lazy_re.compile(r"_INTERNAL_[0-9a-f]{8}_\w+?_[0-9a-f]{8}")
_ENTRY_LINKAGE = lazy_re.compile(r"^(?:\.(?:visible|weak)\s+)+\.entry <ENTRY>")
_DATA_LINKAGE = lazy_re.compile(r"^(?:\.(?:visible|weak)\s+)+(?=\.(?:func|global|const)\b)")
_PARAM_STORE = lazy_re.compile(r"^st\.param\.b(?:32|64)\s+\[param(\d+)\+0\],\s*(%?\w+);")


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


def _body_end(lines: list[str], start: int) -> int:
    """The index of the `}` that closes the body opened at `lines[start]`, by brace depth. Not the first line
    that starts with `}`: inline PTX whose text ends in a newline before its closing brace (cuda_fp16's
    `__hadd2` is `asm("{add.f16x2 %0,%1,%2;\\n}")`) puts a `}` in column 0 inside the body."""
    depth = 0
    for k in range(start, len(lines)):
        code = lines[k].split("//", 1)[0]
        depth += code.count("{") - code.count("}")
        if depth <= 0:
            return k
    return len(lines) - 1


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
                k = _body_end(lines, j + 1)
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


def strip_file_static(line: str) -> str:
    """`__nv_static_<n>_<n characters naming the file>_name` -> `name`: the length-prefixed component nvcc puts before
    a file-local (`static`) device variable's name under separate compilation."""
    out: list[str] = []
    pos = 0
    while (m := _NV_STATIC.search(line, pos)) is not None:
        body, n = m.end(), int(m.group(1))
        if _NV_STATIC_BODY.fullmatch(line[body:body + n]) and line[body + n:body + n + 1] == "_":
            out.append(line[pos:m.start()])
            pos = body + n + 1
        else:
            out.append(line[pos:m.end()])
            pos = m.end()
    out.append(line[pos:])
    return "".join(out)


def find_entry(ptx: Ptx, name: str) -> str | None:
    """The entry of `ptx` with the same mangled name, internal-name uniquifiers aside."""
    if name in ptx.functions:
        return name
    want = strip_internal(name)
    hits = [e for e in ptx.entries if strip_internal(e) == want]
    return hits[0] if hits else None


def param_list(ptx: Ptx, name: str) -> list[str]:
    """The `.param` declarations of a function's head, its own name left out: the kernel's ABI (types, sizes,
    alignments of its parameters), which does not depend on how a type was named in C++."""
    head: list[str] = []
    for line in ptx.functions.get(name, []):
        if line.startswith("{"):
            break
        head.append(line.split("//", 1)[0])
    text = " ".join(head).replace(name, "<ENTRY>")
    return [re.sub(r"\s+", " ", m).strip() for m in re.findall(r"\.param\b[^,)]*", text)]


def _clean(line: str) -> str | None:
    s = line.split("//", 1)[0].strip()
    if not s or re.match(r"\.(?:loc|file)\s", s):
        return None
    return re.sub(r"\s+", " ", s)


def _reaching(ptx: Ptx, entry: str) -> tuple[list[str], list[str]]:
    """Functions the entry reaches (itself first) and the globals they use, in order of first use."""
    order: list[str] = []
    todo = [entry]
    used: list[str] = []
    while todo:
        name = todo.pop(0)
        if name in order:
            continue
        order.append(name)
        for line in ptx.functions[name][1:]:
            for tok in _IDENT.findall(line.split("//", 1)[0]):
                if tok in ptx.functions and tok not in order and tok not in todo:
                    todo.append(tok)
                elif tok in ptx.globals and tok not in used:
                    used.append(tok)
    return order, used


def _symbol_in(reg: str, lines: list[str], before: int) -> str | None:
    """The global a 64-bit register was loaded from (`mov.u64 %rd1, $str; cvta.global.u64 %rd2, %rd1`)."""
    for i in range(before - 1, -1, -1):
        m = _MOV.match(lines[i].strip())
        if m and m.group(1) == reg:
            src = m.group(2)
            if not src.startswith("%"):
                return src
            reg = src
    return None


def _assert_positions(lines: list[str]) -> tuple[set[int], set[str]]:
    """`assert` in device code calls `__assertfail(msg, file, line, function, size)`: the indices of the
    lines that store the line number, and the globals holding the file name and the function's name.
    They say where the unit or the original file is and how its types were spelled where the template
    was instantiated (`[with scalar_t = signed short]` in the original, `short` in the unit), not what
    the kernel does."""
    line_idx: set[int] = set()
    files: set[str] = set()
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith("{"):
            j = i
            while j < len(lines) and not lines[j].strip().startswith("}"):
                j += 1
            block = lines[i:j]
            if any("__assertfail" in ln for ln in block):
                for k, ln in enumerate(block, start=i):
                    m = _PARAM_STORE.match(ln.strip())
                    if m and m.group(1) == "2":
                        line_idx.add(k)
                    elif m and m.group(1) in ("1", "3") and (sym := _symbol_in(m.group(2), lines, k)):
                        files.add(sym)  # the file name, and the function's name as __PRETTY_FUNCTION__ spells it
            i = j
        i += 1
    return line_idx, files


def _plain_names(lines: list[str]) -> list[str]:
    """Mangled names demangled, anonymous namespaces and internal-name uniquifiers left out."""
    from miner.builder.ptxas import demangle

    names = sorted({t for s in lines for t in _MANGLED.findall(s)})
    if not names:
        return lines
    dm = demangle(names)
    plain = {n: "{" + _DM_INTERNAL.sub("<INTERNAL>", dm[n].replace("(anonymous namespace)::", "")) + "}"
             for n in names}
    return [_MANGLED.sub(lambda m: plain[m.group(0)], s) for s in lines]


def _local_shared_renamed(lines: list[str], shared: list[str]) -> tuple[list[str], list[str]]:
    """Function-local `__shared__` variables (`_ZZ...E<n><name>` declared `.shared`) renamed `<LOCAL$k>` by order of
    first use in `lines`, in the code and in their declarations."""
    names = {m.group(1) for s in shared if (m := _GLOBAL_DECL.match(s)) and m.group(1).startswith("_ZZ")}
    if not names:
        return lines, shared
    order: dict[str, str] = {}
    token = re.compile(r"(?<![\w$<])_ZZ[\w$]+")

    def rename(m: re.Match[str]) -> str:
        if m.group(0) not in names:
            return m.group(0)
        return order.setdefault(m.group(0), f"<LOCAL${len(order) + 1}>")

    lines = [token.sub(rename, s) for s in lines]
    return lines, [token.sub(rename, s) for s in sorted(shared)]


def listing(ptx: Ptx, entry: str, plain_names: bool = False) -> list[str]:
    """The entry, the functions it reaches and the globals they use, normalized (see the module doc)."""
    order, used = _reaching(ptx, entry)
    code: list[str] = []
    shared: list[str] = []
    file_syms: set[str] = set()
    for name in order:
        lines = ptx.functions[name]
        line_idx, files = _assert_positions(lines)
        file_syms |= files
        for k, line in enumerate(lines):
            s = _clean(line)
            if s is None:
                continue
            if _SHARED_DECL.match(s):
                shared.append(s)  # demoted into the one kernel that uses it, or module level: the same memory
                continue
            if k in line_idx:
                s = re.sub(r",\s*-?\d+;$", ", <LINE>;", s)
            code.append(s)
    data: list[str] = []
    for g in used:
        s = _clean(ptx.globals[g]) or ""
        if _SHARED_DECL.match(s):
            shared.append(s)
        elif g in file_syms:
            data.append(re.sub(r"\[\d+\]\s*=\s*\{.*\}", "[<FILE>]", s))
        else:
            data.append(s)
    counters: dict[str, dict[str, str]] = {"$str": {}, "__unnamed": {}, "prototype": {}}

    def renumber(m: re.Match[str]) -> str:
        kind = next(k for k in counters if m.group(0).startswith(k))
        seen = counters[kind]
        return seen.setdefault(m.group(0), f"{kind}${len(seen) + 1}")

    # The entry's own name (in its head and parameter symbols) is matched by find_entry, not compared: an
    # `extern "C"` original names it `k`, a unit without the linkage `_Z1kPf`.
    own = re.compile(rf"(?<![\w$]){re.escape(entry)}(?=_param_\d|(?![\w$]))")
    # The entry's local statics (`__shared__ T x;` in its body) are `_ZZ<entry less _Z>E1x`: their names spell
    # the entry's, parameter types included (torch's accessors mangle as `torch::headeronly::...` in the
    # original, as the shim's `at::...` in the unit).
    local = f"_ZZ{entry[2:]}E" if entry.startswith("_Z") else None

    def own_names(s: str) -> str:
        return own.sub("<ENTRY>", s.replace(local, "_ZZ<ENTRY>E") if local else s)

    out: list[str] = []
    lines = [own_names(s) for s in code + data]
    shared = [own_names(s) for s in set(shared)]
    if plain_names:
        lines, shared = _plain_names(lines), _plain_names(shared)
    lines, shared = _local_shared_renamed(lines, shared)
    for s in lines + sorted(set(shared)):
        s = _DATA_LINKAGE.sub("", _ENTRY_LINKAGE.sub(".entry <ENTRY>", s))
        s = _LABEL.sub(lambda m: f"$L__{m.group(1)}_{m.group(2)}", s)
        s = _DEPOT.sub("__local_depot", s)
        out.append(_NUMBERED.sub(renumber, strip_file_static(strip_internal(s))))
    return out


def first_difference(original: list[str], unit: list[str], context: int = 1, limit: int = 12) -> list[str]:
    """The first hunk of a unified diff (original -> unit), at most `limit` lines."""
    diff = list(difflib.unified_diff(original, unit, "original", "unit", n=context, lineterm=""))
    return diff[2:2 + limit]
