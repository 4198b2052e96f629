"""HIP-native code, mined in its HIP configuration.

Projects that target ROCm too write it in one of two ways, and both are found here:
- HIP sources: a `.hip` file, or one that includes <hip/...> headers or launches with hipLaunchKernelGGL.
  Its kernels are marked as the HIP variant themselves (nothing to re-parse).
- HIP branches: `#if`/`#ifdef` on a HIP guard (`*_WITH_HIP`, `*_USE_HIP`, `USE_ROCM`, `__HIP_PLATFORM_AMD__`,
  `__HIPCC__`, ... in the translation unit's include closure) that change a kernel's code or its closure
  (MMCV's `WARP_SIZE 64` and `__shfl_down` under MMCV_WITH_HIP, a `#define cudaX hipX` remap header).
  The translation unit is parsed again with those guards defined; a kernel whose closure, text or launches
  differ in that configuration, or whose own text or closure tests a guard (the unit then carries the
  define), becomes a variant of its own (`<name>_hip-<hash>`, `variant` block with
  the defines), rendered like any kernel and built by `build --toolchain hip` (nvcc skips it).
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from miner import lazy_re
from miner.frontends import pch

if TYPE_CHECKING:
    from collections.abc import Callable

    from miner.frontends.config import ParseConfig
    from miner.frontends.model import Kernel
    from miner.source.discover import SourceFile
    from miner.source.include_graph import IncludeGraph

_GUARD = lazy_re.compile(rb"\b(__HIP_PLATFORM_(?:AMD|HCC)__|__HIPCC__|__HIP__|__HIP_DEVICE_COMPILE__"
                    rb"|\w*(?:WITH|USE|ENABLE)_(?:HIP|ROCM)\w*)\b")
_COND = lazy_re.compile(rb"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|elifdef|elifndef)\b([^\n]*)", re.M)
_HIP_SOURCE = lazy_re.compile(rb"^[ \t]*#[ \t]*include[ \t]*[<\"]hip/|\bhipLaunchKernelGGL\b", re.M)


def guards(data: bytes) -> list[str]:
    """HIP guard names the file's preprocessor conditions test."""
    found: list[str] = []
    for m in _COND.finditer(data):
        for g in _GUARD.finditer(m.group(1)):
            found.append(g.group(1).decode())
    return list(dict.fromkeys(found))


def is_guard(name: str) -> bool:
    """Whether `name` is one of the HIP guards `guards` finds (a parse's digest covers their branches)."""
    return _GUARD.fullmatch(name.encode()) is not None


def native_reason(path: str, data: bytes, cuda_macros: frozenset[str] = frozenset()) -> str | None:
    """Why a kernel file is HIP code already, or None. A `#include <hip/...>` on the HIP side of a HIP guard
    (`#ifdef USE_HIP` ... `#else #include <cuda_runtime.h>`) is no reason: that file is CUDA in the CUDA build.
    Nor is a `hipLaunchKernelGGL` launch where the project itself defines that name for its CUDA build
    (`cuda_macros`, from `cuda_side_macros`): a CUDA-first project written with HIP's spelling maps it to
    `<<<...>>>` in its own portability header, and its kernels are CUDA's."""
    if os.path.splitext(path)[1].lower() == ".hip":
        return "HIP source (.hip file)"
    for m in _HIP_SOURCE.finditer(data):
        launch = b"hipLaunchKernelGGL" in m.group(0)
        if launch and "hipLaunchKernelGGL" in cuda_macros:
            continue
        if not _on_hip_side(data, m.start()):
            return "HIP source (hipLaunchKernelGGL)" if launch else "HIP source (hip/ headers)"
    return None


_DEFINE_HIP = lazy_re.compile(rb"^[ \t]*#[ \t]*define[ \t]+(hip\w+)", re.M)


def cuda_side_macros(files: list[tuple[str, bytes]]) -> frozenset[str]:
    """The HIP runtime names (`hipLaunchKernelGGL`, `hipMalloc`) the project's own files `#define` outside the
    HIP side of a guard: in its CUDA build they are the project's macros over CUDA, not HIP's API."""
    out: set[str] = set()
    for _path, data in files:
        if b"define" not in data or b"hip" not in data:
            continue
        for m in _DEFINE_HIP.finditer(data):
            if not _on_hip_side(data, m.start()):
                out.add(m.group(1).decode())
    return frozenset(out)


# A condition's HIP guard for telling sides apart: `_GUARD`'s names and any upper-case name with a HIP or ROCM word
# (`#ifdef O_HIP`, `#if defined(HIP_BUILD)`), which selects the ROCm build of a project that ports itself. Only the
# side test reads these; the HIP configuration parsed for variants stays the one `_GUARD` names.
_SIDE_GUARD = lazy_re.compile(rb"\b(?:[A-Z0-9]+_)*(?:HIP|ROCM)(?:_[A-Z0-9]+)*\b")


def _hip_test(cond: bytes) -> bool:
    return bool(_GUARD.search(cond) or _SIDE_GUARD.search(cond))


_DIRECTIVE = lazy_re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b([^\n]*)", re.M)


def _on_hip_side(data: bytes, at: int) -> bool:
    """Whether offset `at` lies in the branch of an enclosing `#if` that only the HIP build takes."""
    stack: list[list[bool]] = []  # [condition tests a HIP guard, the branch taken when it holds]
    for m in _DIRECTIVE.finditer(data, 0, at):
        kind, cond = m.group(1), m.group(2)
        if kind in (b"if", b"ifdef", b"ifndef"):
            neg = kind == b"ifndef" or bool(re.match(rb"\s*!", cond))
            stack.append([_hip_test(cond), not neg])
        elif kind in (b"elif", b"else") and stack:
            top = stack[-1]
            if kind == b"elif":
                top[0], top[1] = _hip_test(cond), not re.match(rb"\s*!", cond)
            else:
                top[1] = not top[1]
        elif kind == b"endif" and stack:
            stack.pop()
    return any(hip and held for hip, held in stack)


@dataclass
class Variant:
    kernel: Kernel          # the kernel as the HIP configuration parsed it (its defines set)
    of: Kernel              # the same kernel in the mined (CUDA) configuration
    units: Any              # UnitData holding this configuration's closure and launches
    defines: list[str]


def _fingerprint(units: Any, k: Kernel, text: bytes, reach: set[str]) -> str:
    """What a configuration gives a kernel: its text, closure and the launches its translation unit sees
    (launches from other translation units are not part of this comparison)."""
    key = (k.path, k.start_offset)
    closure = (c.to_dict() if (c := units.closures.get(key)) is not None else {})
    launches = [{x: v for x, v in lc.to_dict().items() if x != "kernel"} for lc in units.launches.get(key, [])
                if lc.path in reach]
    return json.dumps([text.decode("utf-8", "replace"), closure.get("pieces"), closure.get("includes"), launches],
                      sort_keys=True, default=str)


def variants(files: list[SourceFile], extra: list[SourceFile], graph: IncludeGraph, config: ParseConfig,
             kernels: list[Kernel], tu_of: dict[str, str], inputs: set[str], cuda_units: Any,
             unit_data: type, parse: Callable[[str, ParseConfig], Any]) -> list[Variant]:
    """The kernels whose HIP configuration differs from the mined one, parsed in that configuration
    (by `parse`: the pipeline passes one that goes through its parse cache, with its analysis)."""
    data = {f.path: f.data for f in [*files, *extra]}
    guard_of = {p: guards(d) for p, d in data.items()}
    groups: dict[tuple[str, tuple[str, ...]], list[Kernel]] = {}
    for k in kernels:
        tu = tu_of.get(k.path, k.path)
        if k.frontend == "treesitter" or tu not in data:
            continue
        names = sorted({g for p in graph.closure(tu) for g in guard_of.get(p, [])})
        if names:
            groups.setdefault((tu, tuple(names)), []).append(k)
    out: list[Variant] = []
    planned = [(tu, pch.with_defines(config, [n for n in names if n not in config.defines], only=tu))
               for tu, names in sorted(groups)]
    if hasattr(parse, "prefetch"):  # the pipeline's cached parse runs them in its worker pool first
        parse.prefetch(planned)
    for ((tu, names), wanted), (_tu, cfg) in zip(sorted(groups.items()), planned, strict=True):
        defines = [n for n in names if n not in config.defines]
        res = parse(tu, cfg)
        if res.error:
            continue
        reach = graph.closure(tu)
        hip_units = unit_data()
        hip_units.add(res)
        for w in wanted:
            match = next((c for c in res.kernels if c.path == w.path and c.start_line <= w.end_line
                          and w.start_line <= c.end_line), None)
            if match is None:
                continue
            text_w = data[w.path][w.start_offset:w.end_offset]
            text_m = data[match.path][match.start_offset:match.end_offset]
            found = hip_units.closures.get((match.path, match.start_offset))
            pieces = found.pieces if found is not None else []
            branches = bool(guards(text_m)) or any(guards(p.text.encode()) for p in pieces)
            if not branches and (_fingerprint(cuda_units, w, text_w, reach)
                                 == _fingerprint(hip_units, match, text_m, reach)):
                continue  # the HIP configuration changes nothing this kernel uses
            match.defines = [*match.defines, *defines]
            out.append(Variant(match, w, hip_units, defines))
    return out
