"""nvcc's error lines (EDG front end, host gcc, ptxas/nvlink/ld) and the names they say are missing."""

from __future__ import annotations

import re
from dataclasses import dataclass

from miner import lazy_re

_EDG = lazy_re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?:catastrophic )?error\b:?\s*(?P<msg>.*)$")
_GCC = lazy_re.compile(r"^(?P<file>[^\s:(][^:(]*):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$")
_TOOL = lazy_re.compile(r"^(?:ptxas|nvlink|ld|fatbinary|cicc|nvcc)\b.*?(?:fatal|error)\s*:?\s*(?P<msg>.*)$", re.I)
_LINK = lazy_re.compile(r"undefined reference to [`'](?P<sym>[^'`]+)'")

_MISSING = [
    lazy_re.compile(r'identifier "(?P<sym>[^"]+)" is undefined'),
    lazy_re.compile(r"use of undeclared identifier '(?P<sym>[^']+)'"),
    lazy_re.compile(r"[‘'`](?P<sym>[^’'`]+)[’'] was not declared"),
    lazy_re.compile(r'namespace "(?P<ns>[^"]+)" has no member "(?P<sym>[^"]+)"'),
    lazy_re.compile(r'no instance of (?:overloaded )?function(?: template)? "(?P<sym>[^"]+)" matches'),
    lazy_re.compile(r'(?:undefined|unknown) (?:identifier|type name) [‘\'"`](?P<sym>[^’\'"`]+)'),
    lazy_re.compile(r'"(?P<sym>[^"]+)" is not a (?:class |function |variable )?template'),
    lazy_re.compile(r"undefined reference to [`'](?P<sym>[^'`]+)'"),
    lazy_re.compile(r"[‘'`](?P<sym>[^’'`]+)[’'] (?:does not name a type|has not been declared)"),
]
_UNDEFINED = lazy_re.compile(r'^identifier "[^"]+" is undefined$|^[‘\'`][^’\'`]+[’\'] was not declared in this scope$'
                        r"|^use of undeclared identifier '[^']+'(?:; did you mean '[^']+'\?)?$")  # clang (hipcc)
_MISSING_INCLUDE = lazy_re.compile(r"fatal error: (?P<inc>[^:]+): No such file")


@dataclass
class Diagnostic:
    file: str | None
    line: int | None
    message: str
    text: str        # the whole first line, as the compiler printed it
    caret_token: str | None = None


def located_error(line: str) -> re.Match[str] | None:
    """An error the front end or host compiler printed with its file and line."""
    return _EDG.match(line) or _GCC.match(line)


def is_tool_error(line: str) -> bool:
    """An error from a later tool (ptxas, nvlink, ld, ...) or an undefined reference: no file, no line."""
    return bool(_TOOL.match(line.strip()) and "info" not in line.split(":")[0] or _LINK.search(line))


def is_undefined_name(message: str) -> bool:
    """An error that names a missing declaration and leaves the parser on track."""
    return bool(_UNDEFINED.search(message))


def parse_errors(log: str) -> list[Diagnostic]:
    lines = log.splitlines()
    out: list[Diagnostic] = []
    for i, line in enumerate(lines):
        m = located_error(line)
        if m:
            d = Diagnostic(m.group("file"), int(m.group("line")), m.group("msg").strip(), line.strip())
            # EDG prints the source line and a caret under the offending token.
            if _EDG.match(line) and i + 2 < len(lines) and lines[i + 2].strip() == "^":
                col = lines[i + 2].index("^")
                tok = re.match(r"[A-Za-z_]\w*", lines[i + 1][col:])
                d.caret_token = tok.group(0) if tok else None
            out.append(d)
            continue
        if is_tool_error(line):
            out.append(Diagnostic(None, None, line.strip(), line.strip()))
    return out


def missing_symbol(diags: list[Diagnostic]) -> str | None:
    for d in diags:
        for pat in _MISSING:
            m = pat.search(d.message)
            if m:
                ns = m.groupdict().get("ns")
                return f"{ns}::{m.group('sym')}" if ns else m.group("sym")
        if 'name followed by "::" must be a class or namespace name' in d.message and d.caret_token:
            return d.caret_token
    return None


# Names the toolkit's own libraries removed: a unit (and the original translation unit) that uses one cannot compile
# with a toolkit past that release, whatever the closure does. Name -> (release, what replaces it).
_CCCL3 = "CCCL 3.0 (CUDA 13.0)"
# CUB's binary functors that CCCL 3 removed, and what its migration guide puts in their place (units declare these
# replacements: units.render._cub_compat).
CUB_REMOVED: dict[str, str] = {
    "Sum": "::cuda::std::plus<>", "Max": "::cuda::maximum<>", "Min": "::cuda::minimum<>",
    "Difference": "::cuda::std::minus<>", "Division": "::cuda::std::divides<>",
    "Equality": "::cuda::std::equal_to<>", "Inequality": "::cuda::std::not_equal_to<>",
}
TOOLKIT_REMOVED: dict[str, tuple[str, str]] = {f"cub::{n}": (_CCCL3, r.removeprefix("::"))
                                               for n, r in CUB_REMOVED.items()}
# The warp intrinsics without a mask: CUDA 9.0 deprecated them and its headers define them only for targets
# below sm_70, and CUDA 13's oldest target is sm_75, so no build of this toolkit has them. Their *_sync forms
# take a mask the original does not say, so a unit cannot stand in for them faithfully.
TOOLKIT_REMOVED.update({
    n: ("CUDA 9.0 for sm_70 and later targets (CUDA 13 targets sm_75 and later only)", f"{n}_sync(mask, ...)")
    for n in ("__shfl", "__shfl_up", "__shfl_down", "__shfl_xor", "__any", "__all", "__ballot")})


# Toolkit headers a later toolkit no longer ships: a unit including one cannot compile with it, whatever the closure
# does, so it keeps one only where it names that header's library (units.closure.text._includes) and a build that
# then stops at it states why. Header -> (release, what replaces it).
HEADERS_REMOVED: dict[str, tuple[str, str]] = {
    f"cub/iterator/{n}_iterator.cuh": (_CCCL3, f"thrust::{r}_iterator")
    for n, r in (("constant_input", "constant"), ("counting_input", "counting"), ("discard_output", "discard"),
                 ("transform_input", "transform"))}
HEADERS_REMOVED["cub/iterator/tex_ref_input_iterator.cuh"] = ("CUDA 12.0 (texture references)",
                                                              "cub::TexObjInputIterator")


# A kernel that waits for its child grids (`cudaDeviceSynchronize()` after a device-side launch): CUDA 12.0 removed
# it from device code, so nvcc 13 takes the host function and refuses the call.
_DEVICE_SYNC = lazy_re.compile(r'calling a __host__ function\("(cudaDeviceSynchronize)"\) from a '
                          r'__(?:global|device)__ function')


# ptxas on inline PTX written for targets before Volta (`vote.any.pred` without `.sync`): no target this
# toolkit builds accepts it, so the original does not assemble either.
_PTX_WITHOUT_SYNC = lazy_re.compile(
    r"Instruction '(\w+)' without '\.sync' is not supported on \.target sm_70 and higher")


# A legacy texture or surface reference (`texture<float, 2, cudaReadModeElementType> lut;` at namespace scope, read
# by tex1D/tex2D/tex1Dfetch, bound by cudaBindTexture): CUDA 12.0 removed the `texture`/`surface` templates and
# their functions, so nvcc 13 stops on the declaration the unit keeps as the source wrote it.
_TEXTURE_REFERENCE = lazy_re.compile(r"\b(texture|surface) is not a template\b")


# `wmma::mma_sync(d, a, b, c, satf)` on a floating-point accumulator: CUDA 9's <mma.h> declared the saturate flag for
# every accumulator, this toolkit's declares it for integer accumulators only, so such a call matches no overload.
_MMA_CALL = lazy_re.compile(r"\bmma_sync\s*\(")
_FP_ACCUMULATOR = (r"\bfragment\s*<\s*(?:\w+\s*::\s*)*accumulator\b[^<>;]*,\s*(?:float|double|half|__half)\s*>"
                   r"[^;]*?\b{}\b")


def _call_arguments(text: str, open_at: int) -> list[str] | None:
    depth, start, out = 0, open_at + 1, []
    for i in range(open_at, len(text)):
        ch = text[i]
        depth += (ch in "([{") - (ch in ")]}")
        if depth == 1 and ch == ",":
            out.append(text[start:i])
            start = i + 1
        elif depth == 0:
            return [*out, text[start:i]]
    return None


def float_saturate_call(symbol: str | None, text: str | None) -> str | None:
    """Why an `mma_sync` call matches no overload when the unit passes the saturate flag with a floating-point
    accumulator (a CUDA 9-era signature this toolkit dropped), or None."""
    if (symbol or "").removeprefix("::").removeprefix("nvcuda::wmma::") != "mma_sync" or not text:
        return None
    for m in _MMA_CALL.finditer(text):
        args = _call_arguments(text, m.end() - 1)
        if args is None or len(args) != 5:
            continue
        base = re.match(r"\s*\**\s*(\w+)", args[0])
        if base and re.search(_FP_ACCUMULATOR.format(re.escape(base.group(1))), text):
            return ("wmma::mma_sync with a saturate argument (`satf`) on a floating-point accumulator: CUDA 9's "
                    "<mma.h> declared it, this toolkit's declares it for integer accumulators only: the original "
                    "source does not compile with this toolkit either")
    return None


def removed_from_toolkit(symbol: str | None, error: str | None = None) -> str | None:
    """Why a missing name cannot be supplied: the toolkit removed it (the source needs an older toolkit), or None.
    With the build's `error`, also inline PTX that no target of this toolkit assembles."""
    found = TOOLKIT_REMOVED.get((symbol or "").removeprefix("::"))
    if found is None and error and (m := _MISSING_INCLUDE.search(error)) and m.group("inc").strip() in HEADERS_REMOVED:
        header = m.group("inc").strip()
        release, instead = HEADERS_REMOVED[header]
        return (f"<{header}> was removed in {release} (replaced by {instead}): the original source does not compile "
                "with this toolkit either")
    if found is None and error and (m := _DEVICE_SYNC.search(error)):
        return (f"{m.group(1)}() in device code (dynamic parallelism's old API) was removed in CUDA 12.0 (replaced by "
                "launches into cudaStreamTailLaunch / cudaStreamFireAndForget): the original source does not compile "
                "with this toolkit either")
    if found is None and error and (m := _TEXTURE_REFERENCE.search(error)):
        kind = m.group(1)
        use = "read by tex1D/tex2D/tex1Dfetch" if kind == "texture" else "used by surf2Dread/surf2Dwrite"
        return (f"{kind} references (`{kind}<...>` variables {use}) were removed in CUDA 12.0 (replaced by {kind} "
                f"objects, cuda{kind.title()}Object_t): the original source does not compile with this toolkit "
                "either")
    if found is None and error and (m := _PTX_WITHOUT_SYNC.search(error)):
        return (f"inline PTX `{m.group(1)}` without `.sync` is not supported on sm_70 and later targets (PTX ISA 6.4; "
                "CUDA 13 targets sm_75 and later only): the original source does not assemble with this toolkit "
                "either")
    if found is None:
        return None
    return (f"{symbol} was removed in {found[0]} (replaced by {found[1]}): the original source does not compile "
            "with this toolkit either")


def missing_include(diags: list[Diagnostic]) -> str | None:
    for d in diags:
        m = _MISSING_INCLUDE.search(d.message) or _MISSING_INCLUDE.search(d.text)
        if m:
            return m.group("inc").strip()
    return None
