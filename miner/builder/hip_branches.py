"""The lines of a unit that hip-clang cannot compile, blanked: `#if` branches that are dead on HIP.

Portability findings are read from the unit's text. Code written for both platforms keeps its CUDA form
under `#if !defined(__HIP_PLATFORM_AMD__)` / `#else` (or a project's `*_WITH_HIP` that a HIP variant's unit
defines): a 32-bit `__shfl_xor_sync` there is never compiled for AMD GPUs and is no hazard of the HIP unit.

Conservative on purpose: a condition is decided only when every name in it is known, i.e. defined or
undefined earlier in the unit, a macro hip-clang predefines, or a CUDA compiler macro it does not; any
other condition (a value test, a macro from a header) keeps every branch. Lines keep their numbers.
"""

from __future__ import annotations

import re

from miner import lazy_re

# hip-clang predefines these on both the host and the device pass (__HIP_DEVICE_COMPILE__ only on one,
# so it stays unknown); it defines none of nvcc's.
HIP_DEFINED = frozenset({"__HIP__", "__HIPCC__", "__HIP_PLATFORM_AMD__", "__HIP_PLATFORM_HCC__", "__clang__",
                         "__HIP_PLATFORM_AMD", "__AMDGCN_WAVEFRONT_SIZE__"})
HIP_UNDEFINED = frozenset({"__CUDACC__", "__NVCC__", "__CUDA_ARCH__", "__CUDACC_VER_MAJOR__",
                           "__HIP_PLATFORM_NVIDIA__", "__HIP_PLATFORM_NVCC__"})

_DIRECTIVE = lazy_re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif|define|undef)\b\s*(.*)$")
_DEFINED = lazy_re.compile(r"\bdefined\s*(?:\(\s*(\w+)\s*\)|(\w+))")


def _decide(cond: str, defined: set[str], undefined: set[str]) -> bool | None:
    """True/False/None (unknown) for an #if condition: defined(X) of known names decides, any other operand
    (`CUDA_VERSION >= 11000`, a macro's value) is unknown, and !, &&, || combine the three states, so
    `!defined(A_WITH_HIP) && CUDA_VERSION >= 11000` is false where the unit defines A_WITH_HIP."""
    def known(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        return " 1 " if name in defined else " 0 " if name in undefined else " ? "

    expr = _DEFINED.sub(known, re.sub(r"//.*|/\*.*?\*/", " ", cond))
    tokens = re.findall(r"&&|\|\||!(?!=)|\(|\)|[^\s()!&|]+|[!&|]+", expr)
    pos = 0

    def operand() -> bool | None:
        nonlocal pos
        if pos < len(tokens) and tokens[pos] == "!":
            pos += 1
            v = operand()
            return None if v is None else not v
        if pos < len(tokens) and tokens[pos] == "(":
            pos += 1
            v = either()
            if pos < len(tokens) and tokens[pos] == ")":
                pos += 1
            return v
        words = []
        while pos < len(tokens) and tokens[pos] not in ("&&", "||", ")"):
            words.append(tokens[pos])
            pos += 1
        return {"1": True, "0": False}.get(" ".join(words)) if words else None

    def both() -> bool | None:
        nonlocal pos
        vals = [operand()]
        while pos < len(tokens) and tokens[pos] == "&&":
            pos += 1
            vals.append(operand())
        return False if False in vals else True if all(v is True for v in vals) else None

    def either() -> bool | None:
        nonlocal pos
        vals = [both()]
        while pos < len(tokens) and tokens[pos] == "||":
            pos += 1
            vals.append(both())
        return True if True in vals else False if all(v is False for v in vals) else None

    value = either()
    return value if pos == len(tokens) else None


def active(text: str, defines: frozenset[str] = HIP_DEFINED, undefines: frozenset[str] = HIP_UNDEFINED) -> str:
    """`text` with the lines of branches that are dead under hip-clang replaced by empty lines."""
    if "#" not in text or not re.search(r"^\s*#\s*(?:if|ifdef|ifndef)\b", text, re.M):
        return text
    defined, undefined = set(defines), set(undefines)
    # Per open #if: [state of the current branch (True: surely compiled, False: surely not, None: unknown),
    # an earlier branch surely taken, an earlier branch unknown, the enclosing code live].
    stack: list[list[bool | None]] = []
    live = True
    out: list[str] = []
    for line in text.split("\n"):
        m = _DIRECTIVE.match(line)
        kind, rest = (m.group(1), m.group(2)) if m else ("", "")
        if kind in ("if", "ifdef", "ifndef"):
            word = rest.split()[0] if rest.split() else ""
            cond = (_decide(rest, defined, undefined) if kind == "if" else
                    _decide(("!" if kind == "ifndef" else "") + f"defined({word})", defined, undefined))
            stack.append([cond, cond is True, cond is None, live])
        elif kind == "elif" and stack:
            _, taken, unsure, parent = stack[-1]
            cond = False if taken else _decide(rest, defined, undefined)
            state = None if (cond is True and unsure) else cond
            stack[-1] = [state, taken or state is True, unsure or state is None, parent]
        elif kind == "else" and stack:
            _, taken, unsure, parent = stack[-1]
            state = False if taken else None if unsure else True
            stack[-1] = [state, True, unsure, parent]
        elif kind == "endif" and stack:
            stack.pop()
        if kind in ("if", "ifdef", "ifndef", "elif", "else", "endif"):
            live = all(e[0] is not False for e in stack)
            out.append(line)
            continue
        if kind in ("define", "undef") and live:
            name = re.match(r"\w+", rest)
            if name:
                defined.discard(name.group(0))
                undefined.discard(name.group(0))
                if all(e[0] is True for e in stack):  # a define under an unknown branch leaves it unknown
                    (defined if kind == "define" else undefined).add(name.group(0))
        out.append(line if live else "")
    return "\n".join(out)
