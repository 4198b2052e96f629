"""What a CUDA unit needs that HIP on a 64-lane wavefront does not give it, found in the unit's text:
names the hipify mapping left as they were, inline PTX, cuBLAS/cuDNN, and code that assumes 32 lanes.

Findings are recorded per HIP unit; a unit that builds but has findings is reported as such, never as a
plain ok. A failed HIP build gets one class (unmapped_api, inline_ptx, wave64, other) from its first error
and these findings.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from miner import lazy_re
from miner.builder import hip_branches

KINDS = ("unmapped_api", "inline_ptx", "library", "wave64")
ERROR_CLASSES = ("unmapped_api", "inline_ptx", "wave64", "other")

# CUDA runtime/driver/library names by their prefixes; a project's own CUDA_* macros are excluded below
# by being defined in the unit.
_CUDA_NAME = lazy_re.compile(r"\b(cuda[A-Z]\w*|cu(?:blas|blasLt|dnn|rand|sparse|fft|solver|tensor)[A-Z_]\w*"
                        r"|CU(?:BLAS|DNN|RAND|SPARSE|FFT|DA|DART)_\w+|__nv_\w+|nvrtc\w+|nvtx\w+)\b")
_ANY_CUDA = lazy_re.compile(r"cu[a-zA-Z]|CU[A-Z]|__nv_|nvrtc|nvtx")
_LIBRARY = lazy_re.compile(r"\b(cublas(?:Lt)?\w*|cudnn\w*)\b")
_ASM = lazy_re.compile(r"\b(?:asm|__asm__)\s*(?:volatile\s*|__volatile__\s*)?\(")
_SYNC = lazy_re.compile(r"\b(__(?:shfl(?:_up|_down|_xor)?|ballot|any|all|uni|match_any|match_all|reduce_\w+)_sync)"
                   r"\s*\(\s*([^,()]+(?:\([^()]*\))?)")
_ACTIVEMASK = lazy_re.compile(r"\b__activemask\s*\(")
_WARP32_DEFINE = lazy_re.compile(r"^\s*#\s*define\s+(\w*(?:WARP|Warp|warp)\w*)\s+\(?\s*32\s*\)?\s*$", re.M)
_WARP32_CONST = lazy_re.compile(r"\b(\w*(?:warp|Warp|WARP)\w*)\s*=\s*32\b")
_LANE_MATH = lazy_re.compile(r"(threadIdx\.[xyz]|\b(?:tid|lane\w*|idx|thread_id|threadId)\b)\s*"
                        r"(%\s*32|&\s*(?:31|0x1[fF])|/\s*32|>>\s*5)\b")
_HALF_WARP_LOOP = lazy_re.compile(r"for\s*\([^;]*?=\s*16\s*;[^;]*;[^)]*(?:/=\s*2|>>=\s*1)\s*\)")
_SHARED_WARP = lazy_re.compile(r"__shared__[^;]*\[[^\]]*\b(warpSize|\w*WARP_SIZE\w*|\w*warp_size\w*)\b[^\]]*\]")
_DEFINED = lazy_re.compile(r"^\s*#\s*define\s+(\w+)|\b(?:struct|class|union|enum(?:\s+class)?|using|namespace)\s+(\w+)"
                      r"|\b(\w+)\s*\([^;{}()]*\)\s*(?:const\s*)?\{", re.M)
_FULL32 = lazy_re.compile(r"^(?:0x[fF]{8}[uU]?[lL]{0,2}|4294967295[uU]?|~0[uU]?|\(unsigned\)\s*-1|-1)$")


@dataclass(frozen=True)
class Finding:
    kind: str       # one of KINDS
    what: str       # the construct, as short text
    line: int       # 1-based line in the unit (unit.cu and unit.hip share line numbers)

    def record(self) -> dict[str, Any]:
        return asdict(self)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _macros(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^\s*#\s*define\s+(\w+)[ \t]+([^\n]*)$", text, re.M)}


def find(cuda_text: str, hip_text: str, mapped: Callable[[str], bool]) -> list[Finding]:
    """Findings of one unit. `mapped(name)` says whether the hipify mapping knows a name. Branches that
    hip-clang does not compile (`#else` of `#if defined(__HIP_PLATFORM_AMD__)`) are not read."""
    cuda_text, hip_text = hip_branches.active(cuda_text), hip_branches.active(hip_text)
    out: list[Finding] = []
    seen: set[tuple[str, str]] = set()

    def add(kind: str, what: str, pos: int, text: str = cuda_text) -> None:
        if (kind, what) not in seen:
            seen.add((kind, what))
            out.append(Finding(kind, what, _line(text, pos)))

    # Each scan only where its key substring occurs: most units have none of these, and the scans are the
    # per-unit cost of a HIP build that the compiler does not pay for.
    candidates = {m.group(1) for m in _CUDA_NAME.finditer(hip_text)} if _ANY_CUDA.search(hip_text) else set()
    libraries = _LIBRARY.search(cuda_text) if ("cublas" in cuda_text or "cudnn" in cuda_text) else None
    defined = ({g for m in _DEFINED.finditer(cuda_text) for g in m.groups() if g}
               if candidates or libraries else set())
    for name in sorted(candidates):
        if name not in defined and not mapped(name):
            add("unmapped_api", name, re.search(rf"\b{re.escape(name)}\b", hip_text).start(), hip_text)
    if libraries:
        for m in _LIBRARY.finditer(cuda_text):
            if m.group(1) not in defined:
                add("library", f"{m.group(1)} (needs hipBLAS/MIOpen, not part of a unit)", m.start())
    if "asm" in cuda_text:
        for m in _ASM.finditer(cuda_text):
            add("inline_ptx", "inline asm (PTX is NVIDIA-only)", m.start())
    if "_sync" not in cuda_text and "__activemask" not in cuda_text and "arp" not in cuda_text.lower() \
            and not re.search(r"%\s*32|&\s*(?:31|0x1[fF])|/\s*32|>>\s*5|=\s*16\s*;", cuda_text):
        return sorted(out, key=lambda f: (f.line, f.kind))
    macros = _macros(cuda_text)
    for m in _SYNC.finditer(cuda_text):
        mask = m.group(2).strip()
        value = macros.get(mask, mask).strip().strip("()").strip()
        width = "32-bit mask " + (f"{mask} = {value}" if value != mask else mask)
        if _FULL32.match(value) or value != mask or mask.startswith("0x"):
            add("wave64", f"{m.group(1)} with {width}: covers 32 of a wavefront's 64 lanes", m.start())
        else:
            add("wave64", f"{m.group(1)} takes a 32-bit lane mask ({mask})", m.start())
    for m in _ACTIVEMASK.finditer(cuda_text):
        add("wave64", "__activemask() returns a 32-bit lane mask", m.start())
    for m in _WARP32_DEFINE.finditer(cuda_text):
        add("wave64", f"#define {m.group(1)} 32: warp size hard-coded (a wavefront has 64 lanes)", m.start())
    for m in _WARP32_CONST.finditer(cuda_text):
        add("wave64", f"{m.group(1)} = 32: warp size hard-coded", m.start())
    for m in _LANE_MATH.finditer(cuda_text):
        add("wave64", f"lane arithmetic `{m.group(1)} {' '.join(m.group(2).split())}` assumes 32 lanes", m.start())
    for m in _HALF_WARP_LOOP.finditer(cuda_text):
        if "shfl" in cuda_text[m.end():m.end() + 300].lower():  # __shfl_*, and helpers (WARP_SHFL_XOR)
            add("wave64", "shuffle reduction from offset 16: reduces 32 lanes, not 64", m.start())
    for m in _SHARED_WARP.finditer(cuda_text):
        add("wave64", f"__shared__ array sized by {m.group(1)}", m.start())
    return sorted(out, key=lambda f: (f.line, f.kind))


# "use of undeclared identifier 'X'" first: as a later alternative, "use of undeclared" matched first and
# took "identifier" for the name.
_IDENT = lazy_re.compile(r"(?:use of undeclared identifier|undeclared identifier|unknown type name|no member named"
                    r"|undeclared function|no matching function for call to|use of undeclared)\s*['‘\"]?(\w+)")
_LIBRARY_NAMESPACE = lazy_re.compile(r"(?:member|template|type) named '\w+' in namespace "
                                r"'(?:cooperative_groups|cub|hipcub|thrust|nvcuda|cuda)'")
# ROCm >= 6.2 has the *_sync shuffles behind -DHIP_ENABLE_WARP_SYNC_BUILTINS, asserting a 64-bit mask.
_WAVE64_ASSERT = lazy_re.compile(r"amd_warp_sync_functions\.h:\d+:\d+: error|mask must be a 64-bit integer")
# A candidate of HIP's own headers rejecting a HIP type from the mapping (`__hip_bfloat162 *`).
_HIP_TYPE_MISMATCH = lazy_re.compile(r"/hip/[\w/]+\.h:\d+:\d+: note: candidate [^\n]*no known conversion from "
                                r"'(?:const )?(?:__hip_\w+|hip[A-Z]\w*)")
_WAVE64_NAME = lazy_re.compile(r"__(?:shfl\w*|ballot\w*|activemask|any_sync|all_sync|match_\w+|reduce_\w+)|warpSize")


def _first_error_notes(log: str) -> str:
    """The log from its first error up to the next one: that error's notes (its candidates)."""
    first = log.find(" error: ")
    if first < 0:
        return ""
    nxt = log.find(" error: ", first + 8)
    return log[first:nxt if nxt > 0 else len(log)]


def classify(error: str | None, log: str, findings: list[dict[str, Any]]) -> str:
    """One class for a failed HIP build, from its first error and the unit's findings."""
    text = error or ""
    kinds = {f["kind"] for f in findings}
    if "inline_ptx" in kinds and re.search(r"\basm\b|invalid instruction|unknown token|invalid operand|"
                                           r"instruction not supported|unrecognized instruction", log):
        return "inline_ptx"
    m = _IDENT.search(text)
    name = m.group(1) if m else ""
    if _WAVE64_NAME.search(name) or _WAVE64_NAME.search(text) or _WAVE64_ASSERT.search(text):
        return "wave64"
    if name and (_CUDA_NAME.fullmatch(name) or any(f["kind"] == "unmapped_api" and f["what"] == name
                                                    for f in findings)):
        return "unmapped_api"
    # A reserved name (`__float2bfloat16_rn`, `__ldcs`) comes from the implementation, not the project: one
    # that HIP's headers do not declare, or declare for no such argument types, is CUDA API this HIP lacks.
    if name and re.fullmatch(r"__\w+|_[A-Z]\w*", name) and re.search(r"undeclared|no matching function", text):
        return "unmapped_api"
    # An overload HIP lacks: `atomicAdd(__hip_bfloat162 *, ...)`, whose candidates are all HIP's own (declared
    # in its headers) and none takes the type the mapping gave the CUDA one (`__nv_bfloat162`).
    if name and "no matching function" in text and _HIP_TYPE_MISMATCH.search(_first_error_notes(log)):
        return "unmapped_api"
    # A name the CUDA library has and its HIP counterpart lacks (cg::reduce, cg::plus once a cooperative
    # groups sub-header is mapped to HIP's one header).
    if _LIBRARY_NAMESPACE.search(text):
        return "unmapped_api"
    # Units are self-contained: a header hipcc cannot find is a CUDA header the mapping has no HIP one
    # for (cooperative_groups/reduce.h), or one this HIP release lacks (hip/hip_bf16.h before 5.7).
    if re.search(r"fatal error: '[^']+' file not found", text):
        return "unmapped_api"
    return "other"
