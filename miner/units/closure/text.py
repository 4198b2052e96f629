"""A closure as text: pieces and macros rendered in source order, the `#include`s a unit keeps, and the
parse errors left inside the closure (its unresolved names)."""

from __future__ import annotations

import os
import re
from collections import Counter
from typing import Any

import clang.cindex as ci

from miner import lazy_re
from miner.builder.diagnostics import HEADERS_REMOVED
from miner.source.include_graph import INCLUDE
from miner.units.closure.arch_branches import PARSER_ONLY, _arch_test, arch_chain, arch_dependent, arch_guards
from miner.units.closure.compiler_chains import identity_projection
from miner.units.closure.context import Closure, Macro, Piece, TUContext, _skipped_ranges
from miner.units.closure.device_pass import device_only_include
from miner.units.closure.host_bodies import DECLARED_ONLY, DECLARED_ONLY_UNRESOLVED
from miner.units.closure.inner_includes import inline_includes
from miner.units.closure.per_inclusion import per_inclusion
from miner.units.closure.shims import UNRESOLVED_BASE
from miner.units.closure.switched_off import switched_off
from miner.units.headers import FRAMEWORK as _FRAMEWORK
from miner.units.headers import STD_HEADERS as _STD_HEADERS
from miner.units.headers import UNIT_LIBRARY_HEADER, is_toolkit_header, toolkit_lacks

# Names a kernel may take from a C/C++ or toolkit header that its repo only reached through a framework
# header (FLT_MAX through torch, std::vector through a helper): the header a unit must include for each.
HEADER_OF = {
    **dict.fromkeys(("FLT_MAX", "FLT_MIN", "FLT_EPSILON", "DBL_MAX", "DBL_MIN", "DBL_EPSILON", "FLT_DIG",
                     "DBL_DIG", "FLT_MAX_EXP", "HUGE_VALF"), "cfloat"),
    **dict.fromkeys(("INT_MAX", "INT_MIN", "UINT_MAX", "LONG_MAX", "LLONG_MAX", "SHRT_MAX", "CHAR_BIT",
                     "INT32_MAX", "INT64_MAX"), "climits"),
    **dict.fromkeys(("int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t", "uint64_t",
                     "intptr_t", "uintptr_t"), "cstdint"),
    "assert": "cassert", "printf": "cstdio", "memcpy": "cstring", "memset": "cstring",
    "va_list": "cstdarg", "va_start": "cstdarg",
    "vector": "vector", "string": "string", "stringstream": "sstream", "cout": "iostream", "cerr": "iostream",
    "numeric_limits": "limits", "initializer_list": "initializer_list",
    "is_same": "type_traits", "enable_if": "type_traits", "conditional": "type_traits",
    "tuple": "tuple", "array": "array", "pair": "utility", "swap": "utility",
    "__nv_bfloat16": "cuda_bf16.h", "__nv_bfloat162": "cuda_bf16.h", "__float2bfloat16": "cuda_bf16.h",
    "__bfloat162float": "cuda_bf16.h", "__half": "cuda_fp16.h", "__half2": "cuda_fp16.h",
    "__float2half": "cuda_fp16.h", "__half2float": "cuda_fp16.h",
    "cooperative_groups": "cooperative_groups.h",
    # Linux's fixed-endian and fixed-width kernel types in structs a device function reads (a NIC's work queue
    # entry: `__be32 lkey;`), and POSIX's: every Linux toolchain has these headers.
    **dict.fromkeys(("__be16", "__be32", "__be64", "__le16", "__le32", "__le64", "__u8", "__u16", "__u32",
                     "__u64", "__s8", "__s16", "__s32", "__s64"), "linux/types.h"),
    **dict.fromkeys(("pid_t", "ssize_t", "off_t", "mode_t", "useconds_t"), "sys/types.h"),
    # `#if CUDA_VERSION >= 9000` in a header whose includer brought cuda.h: undefined, the unit took the
    # pre-CUDA-9 branch (`__shfl_xor`, gone from the toolkit).
    "CUDA_VERSION": "cuda.h", "CUDART_VERSION": "cuda_runtime_api.h",
    **dict.fromkeys(("__pipeline_commit", "__pipeline_wait_prior", "__pipeline_memcpy_async"),
                    "cuda_pipeline_primitives.h"), "__nv_fp8_e4m3": "cuda_fp8.h", "__nv_fp8_e5m2": "cuda_fp8.h",
    "__nv_fp8_e8m0": "cuda_fp8.h",
    # CCCL's execution-space macros (`_CCCL_DEVICE` for `__device__`): the project had them through Thrust or CUB.
    **dict.fromkeys(("_CCCL_HOST", "_CCCL_DEVICE", "_CCCL_HOST_DEVICE", "_CCCL_FORCEINLINE"), "cuda/__cccl_config"),
    **dict.fromkeys(("__nv_fp4_e2m1", "__nv_fp4x2_e2m1", "__nv_fp4x4_e2m1"), "cuda_fp4.h"),
    # cuRAND's generator states, which a launch may name only as a template argument (`Rotate` of a
    # `GpuMat<curandState>`, whose kernel is `CudaRotateKernel<curandStateXORWOW>`): the unit includes its header.
    **dict.fromkeys(("curandState", "curandState_t", "curandStateXORWOW", "curandStateXORWOW_t",
                     "curandStatePhilox4_32_10", "curandStatePhilox4_32_10_t", "curandStateMRG32k3a",
                     "curandStateMRG32k3a_t", "curandStateSobol32", "curandStateSobol32_t"), "curand_kernel.h"),
}
_C_HEADER = {"float.h": "cfloat", "limits.h": "climits", "stdint.h": "cstdint", "assert.h": "cassert",
             "stdio.h": "cstdio", "string.h": "cstring"}
_QUOTED = lazy_re.compile(r"'([^']+)'")
_UNDECLARED = lazy_re.compile(r"(?:use of undeclared identifier|unknown type name|no template named|"
                         r"no member named) '([^']+)'")


def _text(ctx: TUContext, p: Piece | Macro) -> str:
    cuts = getattr(p, "cuts", ())
    # A host-only body (closure.host_bodies) leaves the member's declaration: `;` ends it.
    notes = ["; /* kernel-miner: host-only body left out: no device code calls it */" if why == DECLARED_ONLY
             else "; /* kernel-miner: host-only body left out: it names what the parse could not resolve */"
             if why == DECLARED_ONLY_UNRESOLVED
             else " /* kernel-miner: base class left out: the parse could not resolve it */" if why == UNRESOLVED_BASE
             else f"/* kernel-miner: host-only member left out of the unit: it uses {why} */" for _s, _e, why in cuts]
    return _cut(ctx.read(p.path), p.start, p.end, [(s, e) for s, e, _w in cuts], notes).decode("utf-8", "replace")


_CONDITIONAL = lazy_re.compile(rb"^[ \t]*#[ \t]*(?:if|ifdef|ifndef|elif|else|endif)\b[^\n]*", re.M)


def _cut(data: bytes, start: int, end: int, cuts: list[tuple[int, int]], note: list[str] | None = None) -> bytes:
    """data[start:end] without the ranges in `cuts` (each replaced by its note, if given). A cut keeps the
    conditional directives inside it, each on a line of its own: a member whose declaration the source writes
    twice (`#if CUDA_VERSION >= 12000` / `Ld(double4_16a &val, ...)` / `#else` / `Ld(double4 &val, ...)` /
    `#endif` / its body) starts after the `#if`, so cutting its range took the `#else` and `#endif` and left
    the `#if` unterminated."""
    out, pos = [], start
    for i, (s, e) in enumerate(sorted(cuts)):
        if s < pos or e > end:
            continue
        out.append(data[pos:s])
        if note:
            out.append(note[i].encode())
        out += [b"\n" + m.group(0).strip() for m in _CONDITIONAL.finditer(data, s, e)]
        if out[-1].startswith(b"\n#"):
            out.append(b"\n")
        pos = e
    out.append(data[pos:end])
    return b"".join(out)


def _includes(ctx: TUContext, files: set[str], tokens: list[str],
              needed: tuple[str, ...] | list[str] = (), own: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """The `#include <...>` lines a unit keeps, plus the toolkit headers `needed` by declarations the closure
    names (found in our parse shims of those headers) and by names in `tokens` (HEADER_OF) that the closure does
    not define itself (`own`: a source written for NVRTC, which has no `<cuda_fp16.h>`, declares its own
    `struct __half`; the header beside it defined the class twice)."""
    out: list[str] = []
    depends = None
    cccl = _names_cccl(ctx, files, tokens)
    for path in sorted(files, key=lambda p: ctx.order.get(p, 0)):
        data, skipped = ctx.read(path), None
        for m in INCLUDE.finditer(data):
            name = m.group(2).decode().strip()
            angle = m.group(1) == b"<"
            # An include in a branch this configuration skipped (`#ifdef CUDA_11 <cub/iterator/...> #else
            # <thrust/system/cuda/detail/cub/...> #endif`) is not the translation unit's: both were kept, and the
            # old toolkit's header stopped the unit. A branch on `__CUDA_ARCH__` stays (nvcc's host pass may take it).
            skipped = _skipped_ranges(ctx.tu, ctx.files.get(path)) if skipped is None else skipped
            if any(s <= m.start() < e for s, e in skipped):
                depends = depends or arch_dependent(ctx)
                if not _arch_test(data, next(s for s, e in skipped if s <= m.start() < e), depends):
                    continue
            if name.startswith(TF_CUB):  # TensorFlow's alias of the toolkit's CUB ("gpu/cub/device/...")
                name, angle = name[len(TF_CUB) - 4:], True
            # A library header (curand_kernel.h) is not kept for being included: only when the closure names
            # something it declares (`needed`), so a kernel of the same file that draws no random numbers
            # does not depend on a header the toolkit may lack.
            kept = name in _STD_HEADERS or (is_toolkit_header(name) and not _project_owned(ctx, name))
            # A header this toolkit no longer ships, of a library the unit names nothing of (a plugin's host code
            # sorts with `cub::CountingInputIterator`, its kernels do not): included, it only stops the build.
            if name in HEADERS_REMOVED and name.split("/")[0] not in tokens:
                continue
            # thrust and CUB headers for the file's host code (`thrust::sort` of a solver's cell lists) when the unit
            # names neither: each costs nvcc's front end seconds per unit (a 15.8 s unit built in 2.2 s without
            # `<thrust/sort.h>` and its kin) and gives the kernel nothing.
            if name.startswith(_CCCL_FOLDERS) and not cccl:
                continue
            if not angle or _FRAMEWORK.search(name) or not kept:
                continue
            if name not in out:
                out.append(name)
    # Names the repo took from a header that only a framework header included.
    have = set(out) | {_C_HEADER.get(h, h) for h in out}
    for h in needed:
        if h not in have and _C_HEADER.get(h, h) not in have:
            have.add(h)
            out.append(h)
    out += _library_includes(ctx, tokens, out)
    for t in dict.fromkeys(tokens):
        h = HEADER_OF.get(t) if t not in own else None
        if h and h not in have and not (ctx.active_macro(t) or (h.endswith(".h") and h[:-2] in have)):
            have.add(h)
            out.append(h)
    return out


_CCCL_FOLDERS = ("thrust/", "cub/")
_USES_CCCL = lazy_re.compile(rb"\busing\s+namespace\s+(?:::\s*)?(?:thrust|cub)\b"
                        rb"|\bnamespace\s+\w+\s*=\s*(?:::\s*)?(?:thrust|cub)\b"
                        rb"|\bnamespace\s+(?:thrust|cub)\s*\{|\b(?:THRUST|CUB)_NAMESPACE_BEGIN\b")


_CCCL_USING = lazy_re.compile(rb"\busing\s+(?:::\s*)?(?:thrust|cub)\s*::\s*(\w+)\s*;")


def _names_cccl(ctx: TUContext, files: set[str], tokens: list[str]) -> bool:
    """Whether the unit may use thrust or CUB: its text names either namespace (one brings the other), or one of its
    files opens them to unqualified use (`using namespace cub;`, `namespace cb = cub;`) or writes code inside
    them (CUB's own files: `CUB_NAMESPACE_BEGIN`)."""
    if {"thrust", "cub"} & set(tokens) or any(t.startswith(("CUB_", "THRUST_")) for t in tokens):
        return True  # (their macros too: `CUB_PTX_WARP_THREADS`)
    # (per file once per TU: every kernel's closure asked it of the same headers)
    opens = ctx.memo("opens_cccl", dict)
    declared = ctx.memo("cccl_usings", dict)
    names = set(tokens)
    for path in files:
        if path not in opens:
            opens[path] = _USES_CCCL.search(ctx.read(path)) is not None
            declared[path] = {m.group(1).decode() for m in _CCCL_USING.finditer(ctx.read(path))}
        # `using thrust::plus;` in a header of device functors, of which the unit uses `plus`: the using is the
        # unit's only line that names thrust (was "plus is not a template": `<thrust/functional.h>` left out).
        if opens[path] or declared[path] & names:
            return True
    return False


# TensorFlow's spelling of the toolkit's CUB (`#include "gpu/cub/device/device_reduce.cuh"`): `<cub/...>` in a unit.
TF_CUB = "gpu/cub/"
# A library's namespace, and the include folder a project header reaches it through.
_LIBRARY_NAMESPACES = {"cub": "cub/", "thrust": "thrust/"}


def _library_includes(ctx: TUContext, tokens: list[str], have: list[str]) -> list[str]:
    """The library headers (`<cub/cub.cuh>`) the translation unit's project headers include, for a unit whose text
    names that library's namespace but whose own files include none of it: a plugin's kernels reach the library
    through a compatibility header of their project that contributes nothing else to the unit."""
    named = set(tokens)
    folders = [f for ns, f in _LIBRARY_NAMESPACES.items() if ns in named and not any(h.startswith(f) for h in have)]
    out: list[str] = []
    for path in sorted(ctx.order, key=lambda p: ctx.order[p]) if folders else ():
        if path not in ctx.inputs:
            continue
        skipped = None
        for m in INCLUDE.finditer(ctx.read(path)):
            name = m.group(2).decode().strip()
            angle = m.group(1) == b"<"
            # Not one of a branch this configuration skipped (`#if defined(X_COMPILING_CUDA) <thrust/system/cuda/..>
            # #else <thrust/system/hip/...> #endif` in a header the backends share), as in _includes.
            skipped = _skipped_ranges(ctx.tu, ctx.files.get(path)) if skipped is None else skipped
            if any(s <= m.start() < e for s, e in skipped):
                continue
            if name.startswith(TF_CUB):
                name, angle = name[len(TF_CUB) - 4:], True
            if angle and name.startswith(tuple(folders)) and name not in out:
                out.append(name)
    return out


def _unresolved(ctx: TUContext, files: set[str], ranges: set[tuple[str, int, int]],
                kernel: tuple[str, int, int], cuts: list[tuple[str, int, int]] = ()) -> list[dict[str, str]]:
    """Parse errors inside the kernel or a piece, less those in members the unit leaves out (`cuts`). `ranges`
    are the pieces' (path, start, end)."""
    spans = [*ranges, kernel]
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    lacking = _lacking_headers(ctx)
    plain = not lacking and _plain(ctx)
    for path, off, line, spelling in _errors(ctx):
        if path not in files:
            continue
        if not any(p == path and s <= off <= e for p, s, e in spans) or any(
                p == path and s <= off <= e for p, s, e in cuts):
            continue
        # A missing name is the symbol; other errors (a stub overload that does not fit) name the
        # first quoted entity, or none: still listed, since the parse of that piece is incomplete.
        m = _UNDECLARED.search(spelling) or _QUOTED.search(spelling)
        symbol = m.group(1) if m else "?"
        key = spelling if symbol == "?" else symbol
        if key not in seen:
            seen.add(key)
            # (a name the project declares only under a switch this configuration leaves off: that switch is why,
            # not a missing header; closure.switched_off)
            switch = switched_off(ctx, symbol) if m is not None and _UNDECLARED.search(spelling) else None
            if switch is not None:
                out.append({"symbol": symbol, "reason": spelling,
                            "where": f"{os.path.basename(path)}:{line}", "switched_off": switch})
                continue
            out.append({"symbol": symbol, "reason": spelling,
                        "where": f"{os.path.basename(path)}:{line}",
                        # A name declared nowhere the parse reached, in a translation unit that includes headers
                        # it found nowhere (OpenCV's, TensorRT's): where no build can find them either, the unit's
                        # failure on it is stated (units.render._lacking_statement).
                        **({"lacking": lacking} if lacking and _NOT_DECLARED.search(spelling) else {}),
                        # One declared nowhere in a translation unit whose every header is here and none a
                        # framework's stand-in: the source itself lacks it (an exercise's `FIXME` placeholder).
                        # Not in a template of a file only nvcc's device pass reads, which leaves templates
                        # nothing instantiates unchecked: the original compiles (closure.device_pass).
                        **({"nowhere": True} if plain and _UNDECLARED_ID.search(spelling)
                           and not _device_pass_template(ctx, path, off, spans) else {})})
    return out


_TEMPLATE_HEAD = lazy_re.compile(rb"\s*template\s*<\s*[^>\s]")


def _device_pass_template(ctx: TUContext, path: str, offset: int, spans: list[tuple[str, int, int]]) -> bool:
    """Whether the error at `offset` lies in a template (not a full specialization, `template <>`) of a file the
    original compiles in nvcc's device pass only."""
    if device_only_include(ctx, path) is None:
        return False
    data = ctx.read(path)
    return any(p == path and s <= offset <= e and _TEMPLATE_HEAD.match(data, s) for p, s, e in spans)


def _errors(ctx: TUContext) -> list[tuple[str, int, int, str]]:
    """The translation unit's errors with a file, in the parse's order: (real path, offset, line, message). Read
    once per TU: every kernel's closure asks (a diagnostic's location and text are C calls each)."""
    return ctx.memo("_closure_errors", lambda: [
        (ctx.norm(d.location.file.name), d.location.offset, d.location.line, d.spelling)
        for d in ctx.tu.diagnostics if d.severity >= ci.Diagnostic.Error and d.location.file is not None])


_UNDECLARED_ID = lazy_re.compile(r"^use of undeclared identifier '")


def _plain(ctx: TUContext) -> bool:
    """Whether the translation unit includes no framework header (whose parse stand-ins may lack a name the real
    header declares). Once per TU (it reads every file the TU includes; each kernel's closure asks)."""
    return ctx.memo("_closure_plain", lambda: not any(
        _FRAMEWORK.search(m.group(2).decode("utf-8", "replace"))
        for path in ctx.order for m in INCLUDE.finditer(ctx.read(path))))


def _project_owned(ctx: TUContext, name: str) -> bool:
    """A toolkit-spelled include (`<cuda/api.hpp>`) the toolkit lacks and the translation unit found among the
    project's files: the closure inlines what the unit needs of it, and nvcc would not find the include."""
    tail = "/" + name
    return "/" in name and toolkit_lacks(name) and any(p.endswith(tail) for p in ctx.files if p in ctx.inputs)


_NOT_FOUND = lazy_re.compile(r"^'([^']+)' file not found")
_NOT_DECLARED = lazy_re.compile(r"^(?:use of undeclared identifier|unknown type name|no template named) '")


def _lacking_headers(ctx: TUContext) -> list[str]:
    """The `#include`s the translation unit's parse found nowhere, less the standard, toolkit and framework headers
    the parse leaves out by design (its stub and shims stand in for them). A new list each call, made once per TU."""
    def lacking() -> list[str]:
        out: list[str] = []
        for d in ctx.tu.diagnostics:
            m = _NOT_FOUND.match(d.spelling)
            name = m.group(1) if m else ""
            if name and name not in out and name not in _STD_HEADERS and not is_toolkit_header(name) \
                    and not _FRAMEWORK.search(name) and not UNIT_LIBRARY_HEADER.match(name):
                out.append(name)
        return out
    return list(ctx.memo("_closure_lacking", lacking))


_FUNCTION_PIECES = ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CXX_METHOD", "CONSTRUCTOR", "DESTRUCTOR")


def render_pieces(ctx: TUContext, closure: Closure, kernel_path: str, kernel_start: int) -> list[dict[str, Any]]:
    """Pieces and macros as text, interleaved in source order, each with its namespace chain; those
    after the kernel in the source (its own specializations, say) are marked to follow it."""
    kernel_key = ctx.sort_key(kernel_path, kernel_start)
    items: list[tuple[tuple[int, ...], dict[str, Any]]] = []
    taken = frozenset(p.path for p in closure.pieces)
    for p in closure.pieces:
        # (`namespace a { namespace b {} }` before a `using namespace a::b;` whose namespace the unit opens later)
        opened = "".join(f"namespace {n} {{ " for n in p.declares) + "}" * len(p.declares)
        items.append((ctx.sort_key(p.path, p.start), {
            "kind": p.kind, "name": p.name, "namespaces": list(p.namespaces),
            "text": (opened + "\n" if opened else "") + _undef_before(ctx, p)
            + per_inclusion(ctx, p, inline_includes(ctx, p.path, p.start, p.end, _text(ctx, p), taken)),
            # (a declaration the source writes under `#if __CUDA_ARCH__ >= X` alone: under it in the unit too, or
            # the host pass compiles what the original's never sees. Not a function under an arch test: a kernel
            # specialization written under the same test calls it, and the unit writes the kernel bare, so the
            # host pass would miss it: MMCV's `bbox_overlaps_cuda_kernel_half`)
            "guards": [g for g in arch_guards(ctx.read(p.path), p.start, p.end)
                       if p.kind not in _FUNCTION_PIECES or PARSER_ONLY.search(g)],
            "c_linkage": p.c_linkage, "path": p.path, "line": ctx.read(p.path).count(b"\n", 0, p.start) + 1}))
    defined: set[str] = set()
    for m in closure.macros:  # in source order; a redefinition undefines the one before it
        undef = f"#undef {m.name}\n" if m.name in defined else ""
        defined.add(m.name)
        # (a definition chosen by `#ifdef __CUDA_ARCH__` comes with its chain: nvcc's host pass takes the other; so
        # does one chosen by what the compiler answers, `#ifdef __has_feature`: the parse is clang, nvcc is not)
        # (and one inside a chain of branches per compiler, `#if defined(__clang__)` / `#elif defined(__GNUC__)`, comes
        # with every branch's definition of it: the parse took clang's branch, nvcc's passes take g++'s)
        data = ctx.read(m.path)
        text = (identity_projection(data, m.start, m.name)
                or arch_chain(data, m.start, m.name, arch_dependent(ctx), compiler=True) or _text(ctx, m))
        items.append((ctx.sort_key(m.path, m.start), {
            "kind": "MACRO", "name": m.name, "namespaces": [], "text": undef + text, "path": m.path,
            "line": ctx.read(m.path).count(b"\n", 0, m.start) + 1}))
    # A macro follows the kernel where it has several definitions there (closure.compute._macros: those the
    # pieces after the kernel see); a single definition after the kernel's place stays before it, as before.
    count = Counter(m.name for m in closure.macros)
    ordered = [dict(d, after=key > kernel_key and (d["kind"] != "MACRO" or count[d["name"]] > 1))
               for key, d in sorted(items, key=lambda t: t[0])]
    return _macros_before_templates(_without_extern_twins(ordered), [m.name for m in closure.macros])


_EXTERN = lazy_re.compile(r"^\s*extern\b(?!\s*\")", re.M)


def _without_extern_twins(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`extern __device__ Counters dct;` (the header) and `__device__ Counters dct;` (the .cu that owns it) both in
    the unit: a project built with separable compilation (`-rdc`), or to a cubin the driver API loads, accepts the
    pair; nvcc's whole-program mode stops in the host pass ("redefinition of 'Counters dct'"). The definition alone
    says all the declaration does: it takes the place of the first `extern` declaration and the others go. In its
    own place it may follow code that names the variable (headers that declare it `extern`, included before the
    .cu defines it, their device functions or kernels using it): where it came before the kernel the
    declarations were dropped alone, where it came after it the pair stayed and stopped the build."""
    def key(d: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
        return d["name"], tuple(d["namespaces"])

    def extern(d: dict[str, Any]) -> bool:
        return d["kind"] == "VAR_DECL" and bool(_EXTERN.search(d["text"]))

    defined = {key(d): d for d in items if d["kind"] == "VAR_DECL" and not extern(d)}
    out: list[dict[str, Any]] = []
    placed: set[tuple[str, tuple[str, ...]]] = set()  # definitions already in `out`, in place or moved up
    for d in items:
        k = key(d)
        if extern(d) and k in defined:
            if k not in placed:
                placed.add(k)
                out.append(dict(defined[k], after=d["after"]))
            continue
        if d["kind"] == "VAR_DECL" and d is defined.get(k):
            if k in placed:
                continue
            placed.add(k)
        out.append(d)
    return out


def _undef_before(ctx: TUContext, p: Piece) -> str:
    """`#ifdef M_PI #undef M_PI #endif` then `__device__ static const float M_PI = ...;`: the project declares a
    name a system header defines as a macro and clears the macro first. The unit has the same system headers,
    so the declaration keeps its `#undef` (else nvcc reads `float 3.14159...` and stops: "expected an
    identifier"). An `#undef` of a name nothing defines is harmless."""
    name = getattr(p, "name", "") or ""
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        return ""
    before = ctx.read(p.path)[:p.start]
    return f"#undef {name}\n" if re.search(rb"^[ \t]*#[ \t]*undef[ \t]+" + re.escape(name.encode()) + rb"\b",
                                            before, re.M) else ""


_TEMPLATES = ("FUNCTION_TEMPLATE", "CLASS_TEMPLATE", "CLASS_TEMPLATE_PARTIAL_SPECIALIZATION")


_IDENT_WORD = lazy_re.compile(r"[A-Za-z_]\w*")


def _macros_before_templates(items: list[dict[str, Any]], names: list[str]) -> list[dict[str, Any]]:
    """A macro a template names before the macro's `#define` (a header of helpers written to be included
    after the one that defines it: compilers that looked non-dependent names up at instantiation accepted it,
    nvcc now stops with `identifier is undefined`) moves to just before that template. Only a macro defined
    once in the unit, and only over templates: anything else naming it first would have failed in any compiler."""
    counts = Counter(names)
    once = {n for n, c in counts.items() if c == 1}
    out = list(items)
    # Each template's words, once: a unit of thousands of pieces and hundreds of macros (a path tracer's kernel)
    # ran the macro's pattern over every template before it, per macro and per kernel.
    words: dict[int, set[str]] = {}

    def names_word(e: dict[str, Any], name: str) -> bool:
        got = words.get(id(e))
        if got is None:
            got = words[id(e)] = set(_IDENT_WORD.findall(e["text"]))
        return name in got

    for d in items:
        if d["kind"] != "MACRO" or d["name"] not in once:
            continue
        word = re.compile(rf"(?<![\w#]){re.escape(d['name'])}(?!\w)")
        at = out.index(d)
        # (not over a template that declares the name itself, `static const uint32_t TPI = tpi;` of a header the
        # file defining `#define TPI 32` includes first: the original's template never saw the macro, and in front
        # of it the macro turns the member's name into a number, "expected an identifier")
        first = next((i for i, e in enumerate(out[:at]) if e["kind"] in _TEMPLATES and names_word(e, d["name"])
                      and word.search(e["text"]) and not _declares(e["text"], d["name"])), None)
        if first is not None:
            out.insert(first, out.pop(at))
    return out


# Words that may stand before a name in an expression (`return TPI;`) where a declaration has its type.
_NOT_TYPES = {"return", "case", "else", "throw", "goto", "sizeof", "alignof", "co_return", "co_yield", "delete", "new",
              "typename", "using", "define", "undef", "ifdef", "ifndef", "defined"}


def _declares(text: str, name: str) -> bool:
    """Whether C++ `text` declares `name` (a member, a variable, a parameter, a template parameter): the name after a
    type word or a `*`/`&`/`>` and before what ends a declarator (`=`, `;`, `[`, `,`, `{`, `(`, `)`)."""
    pattern = re.compile(rf"(\w+|[*&>])\s+{re.escape(name)}\s*[=;\[,{{()]|[*&]{re.escape(name)}\s*[=;\[,{{()]")
    return any(m.group(1) not in _NOT_TYPES for m in pattern.finditer(text))
