"""CUDA device API that the hipify mapping leaves as it is and HIP spells differently or not at all, rewritten
into the form HIP code uses, in the translated unit.

The mapping renames names one for one; what it leaves are constructs whose HIP form is not a name:

- `__shfl*_sync(mask, v, x[, w])`: HIP's `__shfl*(v, x, w)`, with CUDA's width 32 when none is given, as
  hipify-perl and ROCm ports write it. On a 64-lane wavefront each 32-lane half then shuffles as one CUDA
  warp (HIP's shuffles index within `width`-lane segments), which is what code that hard-codes 32 lanes
  expects. The mask only says which lanes take part: CUDA leaves reading a lane outside it undefined, HIP's
  shuffle reads it all the same, so every result CUDA defines is kept. The unit keeps its wave64 finding
  (portability.py): it builds, it is not called portable. A unit that also uses `warpSize` (64 on CDNA: a
  warp index or loop bound from it would not match the 32-lane segments) is left alone and fails as wave64;
  so does one whose lane masks are values (`__ballot_sync`, `__activemask`: 32 bits on CUDA, 64 on HIP).
- `__syncwarp(...)`: a wavefront-scope fence around `__builtin_amdgcn_wave_barrier()` (a wavefront's lanes
  run together; the fences keep the memory order `__syncwarp` promises).
- Cache-hinted loads and stores (`__ldcs`, `__ldcg`, `__stcs`, ...): a plain load / store, as HIP's own
  `__ldcs(const __half*)` is; HIP declares them for `__half` alone.
- `__float2bfloat16_rn`: HIP's `__float2bfloat16`, which rounds to nearest even.
- `__trap()`: `__builtin_trap()`.
- `cooperative_groups::reduce` and its operators (`plus`, `less`, `greater`, `bit_*`), which HIP's
  cooperative groups lack: a butterfly of the tile's own `shfl_xor` (exact for the power-of-two tiles CUDA
  reduces over; a group without `shfl_xor` still fails, by that name).

Lines are kept one for one; the helpers are one line put on the first blank line of the unit's body (or
inserted with a `#line`). A name the unit defines itself (a project's own `__ldcs` overload) is left alone.
Each rewrite is reported (`ported`), so a unit that builds only through one says so.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from miner import lazy_re
from miner.builder import hip_branches, portability

_SHFL = lazy_re.compile(r"\b__shfl(_up|_down|_xor)?_sync\s*\(")
_SYNCWARP = lazy_re.compile(r"\b__syncwarp\s*\(")
_LOAD = lazy_re.compile(r"\b__ld(?:cs|cg|ca|lu|cv)\s*\(")
_STORE = lazy_re.compile(r"\b__st(?:cs|cg|wb|wt)\s*\(")
_BF16_RN = lazy_re.compile(r"\b__float2bfloat16_rn\s*\(")
_TRAP = lazy_re.compile(r"\b__trap\s*\(\s*\)")
_CG_ALIAS = lazy_re.compile(r"\bnamespace\s+(\w+)\s*=\s*(?:::)?cooperative_groups\s*;")
# CUDA's cooperative_groups operators: `less` / `greater` give the smaller / greater value, not a bool.
_CG_OPS = {"plus": "a + b", "less": "b < a ? b : a", "greater": "a < b ? b : a", "bit_and": "a & b",
           "bit_or": "a | b", "bit_xor": "a ^ b"}
_WARPSIZE = lazy_re.compile(r"\bwarpSize\b")
_LINE_DIRECTIVE = lazy_re.compile(r"^[ \t]*#[ \t]*line[ \t]+(\d+)", re.M)
_COMMENT = lazy_re.compile(r"//[^\n]*|/\*.*?\*/", re.S)

_HELPERS = {
    "syncwarp": "__device__ inline void km_hip_syncwarp() { __builtin_amdgcn_fence(__ATOMIC_RELEASE, \"wavefront\"); "
                "__builtin_amdgcn_wave_barrier(); __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, \"wavefront\"); }",
    "load": "template <class T> __device__ inline T km_hip_load(const T* p) { return *p; }",
    "store": "template <class T, class U> __device__ inline void km_hip_store(T* p, U v) { *p = static_cast<T>(v); }",
    "cg": " ".join(f"template <class T> struct km_hip_cg_{op} {{ __device__ T operator()(T a, T b) const "
                   f"{{ return {expr}; }} }};" for op, expr in _CG_OPS.items())
          # CUDA shuffles any trivially copyable T; HIP's tile shfl_xor takes arithmetic types only. In 32-bit
          # words, as HIP's own __shfl_xor(double) does, the result is the same for every T.
          + " template <class G, class T> __device__ inline T km_hip_cg_shfl_xor(const G& g, T v, unsigned o) { "
            "int w[(sizeof(T) + 3) / 4] = {}; __builtin_memcpy(w, &v, sizeof(T)); "
            "for (unsigned i = 0; i < (sizeof(T) + 3) / 4; ++i) w[i] = g.shfl_xor(w[i], o); "
            "__builtin_memcpy(&v, w, sizeof(T)); return v; }"
            " template <class G, class T, class Op> __device__ inline T km_hip_cg_reduce(const G& g, T v, Op op) { "
            "for (unsigned o = g.size() / 2; o > 0; o /= 2) v = op(v, km_hip_cg_shfl_xor(g, v, o)); return v; }",
}
_HELPER_ORDER = ("syncwarp", "load", "store", "cg")
_MARK = "  // kernel-miner: HIP forms of CUDA API the unit uses (hip_port.py)"


@dataclass(frozen=True)
class Ported:
    what: str   # the CUDA construct and its HIP form
    line: int   # 1-based line in unit.cu (the HIP unit's `#line` directives keep its numbering)

    def record(self) -> dict[str, Any]:
        return asdict(self)


@lru_cache(maxsize=1)
def _shim_bounds() -> tuple[str, str]:
    """First and last line of the inlined unit shim: its HIP branch uses warpSize as c10 does, which says
    nothing about the project's code."""
    path = Path(__file__).resolve().parents[1] / "frontends" / "include" / "unit" / "km_torch_unit.h"
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    except OSError:
        return "", ""
    return (lines[0], lines[-1]) if lines else ("", "")


def _without_shim(text: str) -> str:
    first, last = _shim_bounds()
    start = text.find(first) if first else -1
    end = text.find(last, start) if start >= 0 else -1
    return text if start < 0 or end < 0 else text[:start] + text[end + len(last):]


def _args(text: str, open_paren: int) -> tuple[list[str], int] | None:
    """The top-level comma-separated arguments of the call whose '(' is at open_paren, and the index just
    past its ')'; None when the parentheses do not close."""
    depth, start, args = 0, open_paren + 1, []
    for i in range(open_paren, len(text)):
        c = text[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append(text[start:i])
                return args, i + 1
        elif c == "," and depth == 1:
            args.append(text[start:i])
            start = i + 1
    return None


def _full_mask(arg: str, macros: dict[str, str]) -> bool:
    value = arg.strip()
    for _ in range(3):  # FULL_MASK -> 0xffffffff, through a macro or two
        value = value.strip().strip("()").strip()
        if value not in macros:
            break
        value = macros[value]
    return bool(portability._FULL32.match(value.strip().strip("()").strip()))


class _Rewriter:
    def __init__(self, text: str, live: str) -> None:
        self.text = text
        starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
        live_lines = live.split("\n")
        self.dead = {n for n, (a, b) in enumerate(zip(text.split("\n"), live_lines, strict=False)) if a != b}
        self.starts = starts
        self.edits: list[tuple[int, int, str]] = []
        self.ported: dict[str, int] = {}
        self.helpers: set[str] = set()

    def line(self, pos: int) -> int:
        return bisect.bisect_right(self.starts, pos)

    def cuda_line(self, pos: int) -> int:
        """The line in unit.cu: lines the HIP unit adds (implied headers) are followed by a `#line`."""
        physical = self.line(pos)
        logical, n = physical, 0
        for m in _LINE_DIRECTIVE.finditer(self.text, 0, self.starts[physical - 1]):
            n = self.line(m.start())
            logical = int(m.group(1)) + physical - n - 1
        return logical

    def live(self, pos: int) -> bool:
        return self.line(pos) - 1 not in self.dead

    def edit(self, start: int, end: int, new: str, what: str, helper: str | None = None) -> None:
        # Newlines of the replaced text are kept, after the new text: lines stay one for one.
        self.edits.append((start, end, new + "\n" * self.text.count("\n", start, end)))
        self.ported.setdefault(what, self.cuda_line(start))
        if helper:
            self.helpers.add(helper)

    def apply(self) -> str:
        out, pos = [], 0
        for start, end, new in sorted(self.edits):
            if start < pos:
                continue  # overlapping (a call inside another's arguments): the outer one only
            out += [self.text[pos:start], new]
            pos = end
        return "".join(out) + self.text[pos:]


def port(cuda_text: str, hip_text: str) -> tuple[str, list[Ported]]:
    """hip_text with the CUDA constructs above in their HIP form, and what was rewritten."""
    if not any(k in hip_text for k in ("_sync", "__ld", "__st", "__float2bfloat16_rn", "__trap",
                                       "cooperative_groups")):
        return hip_text, []
    live = hip_branches.active(hip_text)
    # Comments out first: "we're using __shfl_xor_sync" is no using-declaration.
    defined = {g for m in portability._DEFINED.finditer(_COMMENT.sub(" ", live)) for g in m.groups() if g}
    rw = _Rewriter(hip_text, live)
    macros = portability._macros(live)

    if "_sync" in hip_text and not _WARPSIZE.search(_COMMENT.sub(" ", _without_shim(live))):
        for m in _SHFL.finditer(hip_text):
            name = m.group(0).split("(")[0].strip()
            parsed = _args(hip_text, m.end() - 1)
            if name in defined or not rw.live(m.start()) or parsed is None or len(parsed[0]) not in (3, 4):
                continue
            args, end = parsed
            if any("//" in a or "/*" in a or "\\" in a for a in args):
                continue  # a comment or a macro's line continuation inside the call: joining lines would break it
            # One line per call; edit() puts the call's newlines after it.
            value, lane, width = (" ".join(a.split()) for a in (*args[1:], "32")[:3])
            hip = f"__shfl{m.group(1) or ''}"
            mask = "full mask" if _full_mask(args[0], macros) else f"mask {' '.join(args[0].split())}"
            rw.edit(m.start(), end, f"{hip}({value}, {lane}, {width})",
                    f"{name}({mask}, ...) -> {hip}(..., width {width}): each 32-lane half of a "
                    "wavefront shuffles as a CUDA warp")
    for rx, name, new, what, helper in (
            (_SYNCWARP, "__syncwarp", "km_hip_syncwarp()", "__syncwarp -> wavefront fence and barrier", "syncwarp"),
            (_LOAD, None, "km_hip_load(", "cache-hinted load -> plain load", "load"),
            (_STORE, None, "km_hip_store(", "cache-hinted store -> plain store", "store"),
            (_BF16_RN, "__float2bfloat16_rn", "__float2bfloat16(", "__float2bfloat16_rn -> __float2bfloat16", None),
            (_TRAP, "__trap", "__builtin_trap()", "__trap -> __builtin_trap", None)):
        for m in rx.finditer(hip_text):
            called = m.group(0).split("(")[0].strip()
            if called in defined or not rw.live(m.start()):
                continue
            if rx is _SYNCWARP:
                parsed = _args(hip_text, m.end() - 1)
                if parsed is None:
                    continue
                rw.edit(m.start(), parsed[1], new, what, helper)
            else:
                rw.edit(m.start(), m.end(), new, f"{called}: {what}" if name is None else what, helper)
    if "cooperative_groups" in hip_text:
        names = {"cooperative_groups"} | set(_CG_ALIAS.findall(live))
        ns = "|".join(sorted(map(re.escape, names)))
        for m in re.finditer(rf"(?:::)?\b(?:{ns})::(reduce\s*\(|(?:{'|'.join(_CG_OPS)})\s*<)", hip_text):
            if not rw.live(m.start()):
                continue
            member = re.match(r"\w+", m.group(1)).group(0)
            rw.edit(m.start(), m.end(), f"km_hip_cg_{member}{m.group(1)[-1]}",
                    f"cooperative_groups::{member} -> tile shfl_xor butterfly (HIP has no cg reductions)", "cg")
    if not rw.edits:
        return hip_text, []
    out = rw.apply()
    ported = [Ported(what, line) for what, line in sorted(rw.ported.items(), key=lambda kv: (kv[1], kv[0]))]
    if rw.helpers:
        out = _with_helpers(out, " ".join(_HELPERS[h] for h in _HELPER_ORDER if h in rw.helpers))
    return out, ported


def _with_helpers(text: str, helpers: str) -> str:
    """The helpers on one line at the start of the unit's body: on the blank line after `// km:body-begin`
    (no line moves), else inserted there with a `#line` that restores the numbering; a unit without the
    marker gets them after its last leading #include."""
    lines = text.split("\n")
    at = next((i for i, ln in enumerate(lines) if ln.strip() == "// km:body-begin"), None)
    if at is None:
        incs = [i for i, ln in enumerate(lines) if re.match(r"\s*#\s*include\b", ln)]
        at = incs[-1] if incs else -1
    line = helpers + _MARK
    nxt = at + 1
    if nxt < len(lines) and not lines[nxt].strip():
        lines[nxt] = line
    else:
        lines[nxt:nxt] = [line, f"#line {nxt + 1}"]
    return "\n".join(lines)
