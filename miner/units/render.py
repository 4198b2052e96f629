"""Render one standalone unit and one readable host wrapper per (kernel, instantiation)."""

from __future__ import annotations

import functools
import hashlib
import os
import re
from typing import Any

from miner import __version__, lazy_re
from miner.builder.compiler import ARCH_SPECIFIC
from miner.builder.diagnostics import _CCCL3, CUB_REMOVED
from miner.cuda_libs import header_library_of
from miner.dataset import atomic
from miner.frontends import frameworks
from miner.frontends.common import sizeof_packs
from miner.resources import template_env
from miner.source import build_flags, make_command_line, runtime_defines
from miner.units.closure.context import _STRING_OR_COMMENT
from miner.units.closure.text import HEADER_OF
from miner.units.cub_release import own_kernel_reason
from miner.units.headers import STD_HEADERS, is_toolkit_header
from miner.units.instantiations import (
    INFERRED_CALLABLE,
    INTEGRAL_TYPE,
    class_stand_ins,
    class_types,
    inst_id,
    split_top,
    substitute,
)
from miner.units.orphan_header import includer_statement
from miner.units.records import ClosureRecord, Launch

_CTYPES = [
    (r"^(unsigned\s+long\s+long|uint64_t|size_t|unsigned\s+long)$", "uint64"),
    (r"^(long\s+long|int64_t|long|ptrdiff_t|index_t)$", "int64"),
    (r"^(unsigned(\s+int)?|uint32_t)$", "uint32"), (r"^(int|int32_t|signed)$", "int32"),
    (r"^(short|int16_t)$", "int16"), (r"^(unsigned\s+short|uint16_t)$", "uint16"),
    (r"^(char|signed\s+char|int8_t)$", "int8"), (r"^(unsigned\s+char|uint8_t)$", "uint8"),
    (r"^float$", "float32"), (r"^double$", "float64"), (r"^bool$", "bool"),
    (r"^(c10::Half|at::Half|Half|__half|half)$", "half"), (r"^(c10::BFloat16|at::BFloat16|__nv_bfloat16)$", "bfloat16"),
]


def shim_text(framework: str = "torch") -> str:
    """A framework's unit shim (frontends.frameworks): km_torch_unit.h, km_tf_unit.h."""
    return frameworks.unit_text(framework)


_NO_HALF = ("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__", "__CUDA_NO_BFLOAT16_CONVERSIONS__",
            "__CUDA_NO_HALF2_OPERATORS__")

# The namespaces where a repo's own definition of a unit shim's km:def- name replaces the shim's.
_SHIM_SCOPES = {"torch": ((),), "tf": ((), ("tensorflow",))}
# A TensorFlow or Eigen type named in an instantiation's arguments (`Eigen::half`, `tensorflow::int64`, from a
# `template struct F<GPUDevice, Eigen::half>;`) needs the TensorFlow unit shim even where the closure names none.
_TF_ARG = lazy_re.compile(r"\b(?:Eigen|tensorflow)::")

# Built-ins the shim overloads for c10's 16-bit types; each overload sits between km:<name>-<type> markers.
_SHIM_OVERLOADS = ("atomicAdd", "__ldg")


# A kernel that launches kernels (dynamic parallelism) compiles only as relocatable device code, linked with the
# device runtime: the original's build says so (`-rdc=true`, CMake's CUDA_SEPARABLE_COMPILATION), and nvcc
# rejects the launch without it ("requires separate compilation mode").
_DYNAMIC_PARALLELISM = ["-rdc=true", "-lcudadevrt"]
_LAUNCH = lazy_re.compile(r"<<<")
_DEVICE_CODE = lazy_re.compile(r"\b__(?:global|device)__\b")


# Instructions and feature macros that exist only on an arch-specific target (sm_90a: `wgmma`, `setmaxnreg`;
# sm_100a: `tcgen05`): ptxas rejects them for plain sm_90 ("Instruction 'wgmma.fence' not supported on .target
# 'sm_90'"), and the original's build names the `a` target (`-gencode arch=compute_90a,code=sm_90a`).
_ARCH_SPECIFIC = lazy_re.compile(
    r"\b(?:wgmma|setmaxnreg|tcgen05)\.|\btensormap\.replace\b|\b__CUDA_ARCH_FEAT_SM\d+_ALL\b|\b__CUDA_ARCH_SPECIFIC__\b")


# What every match of `_ARCH_SPECIFIC` holds: a text with none of these is not searched (a unit's pieces are
# most of its text, and the pattern's leading `\b` alternatives cost a scan at every position, per instantiation).
_ARCH_SPECIFIC_WORDS = ("wgmma.", "setmaxnreg.", "tcgen05.", "tensormap.replace", "__CUDA_ARCH_FEAT_SM",
                        "__CUDA_ARCH_SPECIFIC__")


def _arch_specific(kernel_text: str, pieces: list[dict[str, Any]]) -> bool:
    """Whether the kernel or a piece the unit takes uses what only an arch-specific target has."""
    return any(any(w in t for w in _ARCH_SPECIFIC_WORDS) and _ARCH_SPECIFIC.search(t)
               for t in (kernel_text, *(p["text"] for p in pieces)))


def _launches_from_device(kernel_text: str, pieces: list[dict[str, Any]]) -> bool:
    """Whether the kernel, or a device function the unit takes, writes a launch."""
    if _LAUNCH.search(_STRING_OR_COMMENT.sub(" ", kernel_text)):
        return True
    return any(p["kind"] in ("FUNCTION_DECL", "FUNCTION_TEMPLATE") and _DEVICE_CODE.search(p["text"])
               and _LAUNCH.search(_STRING_OR_COMMENT.sub(" ", p["text"])) for p in pieces)


def _shim_for(pieces: list[dict[str, Any]], framework: str = "torch") -> str:
    """A unit shim without the overloads the repo defines itself (its own `atomicAdd(at::Half *, at::Half)`
    or `__ldg(const at::Half *)`) and without the helpers it defines in their place (ATen's `WARP_SHFL_XOR` at
    global scope; TensorFlow's `ldg` or `GpuAtomicAdd` at global scope or in `namespace tensorflow`, as a project
    that carries a copy of gpu_device_functions.h has them): two definitions of one overload would not compile."""
    text = shim_text(framework)
    scopes = _SHIM_SCOPES.get(framework, ((),))
    for p in pieces:
        if (p["kind"] in ("FUNCTION_DECL", "FUNCTION_TEMPLATE", "CLASS_TEMPLATE")
                and tuple(n for n in p.get("namespaces") or () if n) in scopes
                and f"// km:def-{p['name']}-begin\n" in text):
            # (`template <typename T> __device__ T WARP_SHFL_XOR(...)` in the repo's own common.h)
            name = re.escape(p["name"])
            text = re.sub(rf"// km:def-{name}-begin\n.*?// km:def-{name}-end\n", "", text, flags=re.S)
            continue
        if framework == "torch" and p["kind"] == "FUNCTION_DECL" and p["name"] in _SHIM_OVERLOADS:
            head = p["text"].split("{", 1)[0]
            for t in ("Half", "BFloat16", "int64_t", "uint8_t", "int8_t", "int16_t", "bool"):
                if re.search(rf"\b{t}\s*\*", head):
                    name = re.escape(p["name"])
                    text = re.sub(rf"// km:{name}-{t}-begin\n.*?// km:{name}-{t}-end\n", "", text, flags=re.S)
    return text


# Argument types the shim overloads atomics for where CUDA has none (ATen/cuda/Atomic.cuh: int64_t and the 8-
# and 16-bit integers, bool).
_INT64_ARG = lazy_re.compile(r"^(?:long|long int|int64_t|std::int64_t|signed long|(?:unsigned |signed )?char|u?int8_t"
                        r"|short|short int|int16_t|bool)$")
_ATOMIC_CALL = lazy_re.compile(r"\b(?:atomicAdd|gpuAtomicAdd|gpuAtomicMul)\s*\(")


def _shim_types(args: list[str], kernel_text: str, pieces: list[dict[str, Any]]) -> bool:
    """Whether an instantiation needs the unit shim for its template arguments alone: a c10/at type, or
    an integer type CUDA has no atomicAdd for (int64_t, 8/16-bit, bool) where the kernel or its helpers make
    a dependent atomic call (`atomicAdd(out, v)` with out_t = int64_t resolves to ATen's overload; the
    parse saw only an overload set)."""
    if any(re.search(r"\b(c10|at)::", a) for a in args):
        return True
    return any(_INT64_ARG.match(a.strip()) for a in args) and any(
        _ATOMIC_CALL.search(t) for t in (kernel_text, *(p["text"] for p in pieces)))


def ctype_of(type_text: str) -> str:
    t = re.sub(r"\b(const|volatile|__restrict__|__restrict|restrict)\b", "", type_text).strip()
    if "*" in t or "[" in t:
        return "pointer"
    t = re.sub(r"\s+", " ", t)
    for pattern, name in _CTYPES:
        if re.match(pattern, t):
            return name
    return "struct"


_OBJECT_MACRO = lazy_re.compile(r"#[ \t]*define[ \t]+([A-Za-z_]\w*)(?![\w(])[ \t]*((?:[^\n\\]|\\\r?\n|\\.)*)")


def _object_macros(pieces: list[dict[str, Any]]) -> dict[str, str]:
    out = {}
    for p in pieces:
        if p["kind"] == "MACRO" and (m := _OBJECT_MACRO.match(p["text"].lstrip())):
            # (without its comments: `#define MAX_LG 28 // tested up to 2^32` put into a parameter type on one
            # line turns the rest of the launcher's line into a comment)
            value = re.sub(r"\\\n", " ", m.group(2))
            out[m.group(1)] = re.sub(r"//.*$", "", re.sub(r"/\*.*?\*/", " ", value, flags=re.S)).strip()
    return out


def concrete_type(type_text: str, mapping: dict[str, str], macros: dict[str, str]) -> str:
    """A parameter type with the instantiation's arguments put in, looking through object-like macros
    that hide a template parameter (`#define Acc4R PackedTensorAccessor32<scalar_t, 4>`)."""
    # `Array<int, sizeof...(Ds)>` with `Ds` given `0, 1, 3, 2`: the pack's size, before its name is put in
    # (`sizeof...(0, 1, 3, 2)` is no C++).
    type_text = sizeof_packs(type_text, mapping)
    expanded = type_text
    for _ in range(8):
        nxt = re.sub(r"\b[A-Za-z_]\w*\b", lambda m: macros.get(m.group(0), m.group(0)), expanded)
        if nxt == expanded:
            break
        expanded = nxt
    if expanded != type_text and substitute(expanded, mapping) != expanded:
        return _pointer_restrict(substitute(_east_const(expanded, mapping), mapping))
    return _pointer_restrict(substitute(_east_const(type_text, mapping), mapping))


_RESTRICT = lazy_re.compile(r"\b(?:__restrict__|__restrict|restrict)\b")


def _pointer_restrict(type_text: str) -> str:
    """The type without a `__restrict__` that qualifies no pointer or reference: `map_type const __restrict__` is
    accepted in the template (nvcc drops it on substitution), but written out with a class type
    (`table<int> const __restrict__`) in the explicit instantiation it is `"restrict" is not allowed`."""
    out, pos = [], 0
    for m in _RESTRICT.finditer(type_text):
        head = type_text[:m.start()]
        before = _outside_angles(head)
        if head.count("<") > head.count(">") or before.count("(") != before.count(")"):
            continue  # inside a function type's parameter list: left as written
        bare = re.sub(r"(?:\s*\b(?:const|volatile)\b)*\s*$", "", before)
        if not bare.rstrip().endswith(("*", "&")):
            out.append(type_text[pos:m.start()].rstrip())
            pos = m.end()
    out.append(type_text[pos:])
    return re.sub(r"\s+$", "", "".join(out)) if out else type_text


def _outside_angles(type_text: str) -> str:
    """The type text with every `<...>` argument list emptied, so its own declarator shows."""
    out, depth = "", 0
    for ch in type_text:
        depth += ch == "<"
        if depth == 0:
            out += ch
        depth -= ch == ">" and depth > 0
    return out


_GRID_CONSTANT_MACRO = lazy_re.compile(r"^[ \t]*#[ \t]*define[ \t]+(\w+)[ \t]+__grid_constant__[ \t]*$", re.M)


def grid_constant_spellings(pieces: list[dict[str, Any]]) -> tuple[str, ...]:
    """`__grid_constant__` and the project's object macros for it (`#define NCCL_GRID_CONSTANT __grid_constant__`)."""
    return ("__grid_constant__", *dict.fromkeys(n for p in pieces if p["kind"] == "MACRO"
                                               for n in _GRID_CONSTANT_MACRO.findall(p["text"])))


def by_value_unqualified(type_text: str, grid_constant: tuple[str, ...] = ("__grid_constant__",)) -> str:
    """A by-value parameter type without its top-level `const`, for the launcher's own parameter. The
    launcher passes it on to the kernel, which copies it: from a `const` object that needs a `T(const T&)`
    constructor, which a class with only `T(T&)` lacks (the original launch passes a non-const lvalue).
    Top-level `const` is no part of the function's type, so the launcher's symbol is the same. nvcc allows
    `__grid_constant__` on a `__global__` function's parameter only, so the launcher's copy goes without it."""
    type_text = re.sub(r"\b(?:" + "|".join(map(re.escape, grid_constant)) + r")\b\s*", "", type_text)
    # An array parameter (`const unsigned keys[]`, typed `const unsigned []`) is a pointer: the launcher's
    # `T [] name` would not parse ("expected a ')'"); one of several dimensions (`const T [512][512]`) a pointer to
    # the rest (`const T (*)[512]`, which launcher_declaration names).
    if (m := re.fullmatch(r"(.*?\S)\s*\[[^\[\]]*\]((?:\s*\[[^\[\]]*\])*)\s*", type_text)) and "(" not in m.group(1):
        return f"{m.group(1)} (*){m.group(2).strip()}" if m.group(2).strip() else f"{m.group(1)} *"
    outer = _outside_angles(type_text)
    if re.search(r"[*&\[(]", outer) or not re.search(r"\bconst\b", outer):
        return type_text
    head = re.match(r"\s*const\s+", type_text)
    tail = re.search(r"\s+const\s*$", type_text)
    bare = type_text[head.end():] if head else type_text[:tail.start()] if tail else type_text
    # A scalar copies from const alike: its unit text (and build cache key) stays as it was.
    return type_text if _SCALAR.fullmatch(bare.strip()) else bare


def _grid_constant_written(kernel_text: str, name: str, spellings: tuple[str, ...], count: int) -> list[bool]:
    """Per parameter of the kernel's definition, whether its text writes `__grid_constant__` (or a macro for it);
    empty where the list cannot be read or its length is not `count`."""
    text = _STRING_OR_COMMENT.sub(" ", kernel_text)
    m = re.search(rf"\b{re.escape(name)}\s*\(", text)
    if m is None:
        return []
    depth, start = 0, m.end()
    for i in range(start - 1, len(text)):
        depth += text[i] == "("
        depth -= text[i] == ")"
        if depth == 0:
            parts = [q for q in split_top(text[start:i]) if q.strip()]
            word = re.compile(r"\b(?:" + "|".join(map(re.escape, spellings)) + r")\b")
            return [bool(word.search(q)) for q in parts] if len(parts) == count else []
    return []


def launcher_declaration(type_text: str, name: str) -> str:
    """The launcher's parameter declaration: `T name`, or the name inside the declarator of a pointer to an array or
    to a function (`const float (*km_roots)[64]`; `const float (*)[64] km_roots` does not parse)."""
    for m in re.finditer(r"\(\s*([*&])\s*\)", type_text):
        head = type_text[:m.start()]
        if head.count("<") == head.count(">"):
            return f"{head}({m.group(1)}{name}){type_text[m.end():]}"
    return f"{type_text} {name}"


_SCALAR = lazy_re.compile(r"(?:(?:unsigned|signed|long|short)\s+)*(?:char|short|int|long|float|double|bool|size_t"
                     r"|u?int\d+_t|unsigned|__half|half|__nv_bfloat16)")


def _east_const(type_text: str, mapping: dict[str, str]) -> str:
    """`const T` written as `T const` where T's argument is a pointer or reference type: the qualifier
    binds to T itself, so pasting `c10::Half *` into `const T` (a pointer to const) would name another
    type than the kernel's (a const pointer), and the explicit instantiation matches no template."""
    compound = [k for k, v in mapping.items() if re.search(r"[*&]\s*$|\(", v or "")]
    for name in compound:
        type_text = re.sub(rf"\b((?:const|volatile)(?:\s+(?:const|volatile))*)\s+{re.escape(name)}\b",
                           lambda m, n=name: f"{n} {m.group(1)}", type_text)
    return type_text


# A function parameter pack (`ArgTypes... args`, `const Ts&... xs`): its type as the parameter spells it.
_PACK_PARAM = lazy_re.compile(r"((?:const\s+)?)([A-Za-z_]\w*)\s*(&&|&)?\s*\.\.\.")


def _params(decl: list[dict[str, Any]], mapping: dict[str, str], macros: dict[str, str]) -> list[dict[str, Any]]:
    """The kernel's parameters with the instantiation's arguments put in; a parameter pack becomes one parameter
    per element of its template argument (recorded as the elements joined by `, `): `args_0`, `args_1`, ..."""
    out: list[dict[str, Any]] = []
    for p in decl:
        m = _PACK_PARAM.fullmatch(p["type"].strip())
        if m and m.group(2) in mapping:
            elems = split_top(mapping[m.group(2)]) if mapping[m.group(2)].strip() else []
            for j, e in enumerate(elems):
                t = f"{m.group(1)}{e.strip()}{m.group(3) or ''}"
                out.append({"name": f"{p['name'] or 'args'}_{j}", "type": t, "pointer": t.rstrip().endswith("*")})
            continue
        out.append({"name": p["name"], "type": concrete_type(p["type"], mapping, macros), "pointer": p["pointer"]})
    return out


def _base(type_text: str) -> str:
    t = re.sub(r"\b(const|volatile|__restrict__|__restrict|restrict)\b", "", type_text)
    t = t.replace("*", "").strip()
    t = re.sub(r"\s*\[[^\[\]]*\]\s*$", "", t)  # an array parameter's element type (`unsigned []`)
    return "char" if t in ("void", "") else re.sub(r"\s+", " ", t)


_TYPE_PIECES = ("STRUCT_DECL", "CLASS_DECL", "CLASS_TEMPLATE", "UNION_DECL", "ENUM_DECL", "TYPEDEF_DECL",
                "TYPE_ALIAS_DECL", "TYPE_ALIAS_TEMPLATE_DECL")


def _qualified_types(arg: str, pieces: list[dict[str, Any]], kernel_ns: list[str]) -> str:
    """`arg` with each unqualified name of a unit type that the kernel's scope cannot see qualified by its
    namespaces: a kernel at global scope launched from inside `namespace k2 {` with `OperatorAdd<T>` (which
    that launch found as `k2::OperatorAdd`) is instantiated as `k2::OperatorAdd<float>`. Only names one
    piece declares; an anonymous namespace in the chain cannot be written, and is left alone."""
    where: dict[str, list[list[str]]] = {}
    for p in pieces:
        if p["kind"] in _TYPE_PIECES and not p.get("functor"):
            where.setdefault(p["name"], []).append(list(p["namespaces"]))
    named = [n for n in kernel_ns if n]

    def fix(m: re.Match[str]) -> str:
        chains = where.get(m.group(2))
        if not chains or len({tuple(c) for c in chains}) != 1:
            return m.group(0)
        ns = chains[0]
        if not ns or "" in ns or named[:len(ns)] == ns:
            return m.group(0)
        return m.group(1) + "::".join(ns) + "::" + m.group(2)

    return re.sub(r"((?:^|[^\w:]))([A-Za-z_]\w*)(?=\s*(?:<|,|>|\*|&|$|\s))", fix, arg)


def _unnamed_ns_free(text: str) -> str:
    return text.replace("(anonymous namespace)::", "") if isinstance(text, str) else text


def _typed_args(tparams: list[dict[str, Any]], args: list[str], pieces: list[dict[str, Any]] = (),
                kernel_ns: list[str] = ()) -> list[str]:
    """Template arguments as the explicit instantiation writes them: an integer given to a parameter of
    enum type (`ReductionType REDUCE`, recorded as its value 2) is cast to that type, qualified by the
    namespaces of the unit's enum of that name, so it names the enum from any scope; a type argument names
    unit types the kernel's scope cannot see with their namespaces (_qualified_types)."""
    names = {tp["name"] for tp in tparams}
    # Qualified from the kernel's outermost namespace, not from `::`: a build batch wraps the unit in one more.
    enums = {p["name"]: "".join(f"{n}::" for n in p["namespaces"] if n) + p["name"]
             for p in pieces if p["kind"] == "ENUM_DECL" and p["namespaces"]}
    out = []
    for i, a in enumerate(args):
        tp = tparams[i] if i < len(tparams) else {}
        t = (tp.get("type") or "").strip().removesuffix("...").rstrip()  # (a pack's elements: `int... Ds`)
        if (tp.get("kind") == "value" and t and re.fullmatch(r"-?\d+", a.strip())
                and not INTEGRAL_TYPE.fullmatch(t) and not set(re.findall(r"\w+", t)) & names):
            a = f"static_cast<{enums.get(t, t)}>({a.strip()})"
        elif tp.get("kind") == "type" and pieces:
            a = _qualified_types(a, list(pieces), list(kernel_ns))
        out.append(a)
    return out


_FUNCTION_PIECES = ("FUNCTION_DECL", "FUNCTION_TEMPLATE")


def _redeclared_in(chain: list[str], name: str, pieces: list[dict[str, Any]]) -> list[str]:
    """The chain the unit defines the kernel in: its own, or that of a declaration of the kernel the closure
    copies when that one lies in trailing anonymous namespaces of it. Metadata `namespaces` leaves trailing
    anonymous namespaces out (what they declare is visible from around them), but a kernel declared ahead in
    `namespace {` and defined in a later `namespace {` block is one function; defined outside its declaration's
    anonymous namespace in the unit it would be a second one, and every call of its name ambiguous."""
    for p in pieces:
        ns = list(p.get("namespaces") or [])
        if (p.get("name") == name and p.get("kind") in _FUNCTION_PIECES and len(ns) > len(chain)
                and ns[:len(chain)] == chain and not any(ns[len(chain):])):
            return ns
    return chain


def _namespace_context(meta: dict[str, Any], pieces: list[dict[str, Any]] = ()) -> dict[str, Any]:
    """Where the unit puts the kernel (`namespaces`: its chain, an anonymous namespace as "" where a named one
    is nested in it, metadata `namespaces`, or where the closure's declaration of it is: _redeclared_in), the
    launcher (`launcher_namespaces`: the chain before its first anonymous namespace, since a C-linkage function
    inside one would have internal linkage, with `launcher_using` naming the rest) and the host wrapper's
    using-directives (`named_namespaces`)."""
    chain = list(meta.get("namespaces") or meta["qualified_name"].split("::")[:-1])
    chain = _redeclared_in(chain, meta["name"], list(pieces))
    cut = chain.index("") if "" in chain else len(chain)
    return {"namespaces": chain, "launcher_namespaces": chain[:cut],
            "launcher_using": "::".join(n for n in chain[cut:] if n), "named_namespaces": [n for n in chain if n]}


def _written_in(chain: list[str], name: str, kernel_text: str) -> list[str]:
    """The namespaces the kernel's text goes in: its own chain, less the trailing ones its definition names as a
    qualifier (`__global__ void codec::scale(...)`, defined out of line after its declaration in `namespace
    codec`): a qualified name inside its own namespace is "nonstandard" to nvcc."""
    head = kernel_text.split("{", 1)[0]
    m = re.search(rf"((?:[A-Za-z_]\w*\s*::\s*)+){re.escape(name)}\s*\(", head)
    if not m:
        return chain
    written = [q.strip() for q in m.group(1).split("::") if q.strip()]
    return chain[:len(chain) - len(written)] if chain[len(chain) - len(written):] == written else chain


# The toolkit's typedefs of its 16-bit types (`typedef __half half;` in cuda_fp16.h): a template argument
# `half` (`apply_penalty<half, false>` from a host template whose file reached cuda_fp16.h through a project
# header the closure took nothing from) needs the header the typedef is in.
_TOOLKIT_TYPEDEFS = {"half": "cuda_fp16.h", "half2": "cuda_fp16.h", "nv_half": "cuda_fp16.h",
                     "nv_bfloat16": "cuda_bf16.h", "nv_bfloat162": "cuda_bf16.h", "__nv_fp8x2_e4m3": "cuda_fp8.h",
                     "__nv_fp8x4_e4m3": "cuda_fp8.h", "__nv_fp8x2_e5m2": "cuda_fp8.h", "__nv_fp8x4_e5m2": "cuda_fp8.h"}


# CUB's binary functors that CCCL 3 (CUDA 13) removed (builder.diagnostics.CUB_REMOVED, with their replacements):
# code written for CUDA 11/12 (`BlockReduce(t).Reduce(x, cub::Max())`) failed with "namespace cub has no member Max".
_CUB_NAMED = lazy_re.compile(r"\bcub\s*::\s*(" + "|".join(CUB_REMOVED) + r")\b")


def _cub_compat(kernel_text: str, pieces: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(name, replacement) of each removed CUB functor the unit names and the project does not declare in
    `namespace cub` itself. The unit declares them where its CUB lacks them (`CCCL_MAJOR_VERSION >= 3`), in a
    `namespace cub` that also nominates `::cub`: inside a build batch's namespace that block is the batch's own
    `cub`, whose qualified lookups (`cub::BlockReduce`) still reach the toolkit's."""
    names = {m.group(1) for t in (kernel_text, *(p["text"] for p in pieces)) if "cub" in t
             for m in _CUB_NAMED.finditer(t)}
    own = {p["name"] for p in pieces if p.get("namespaces") and p["namespaces"][-1] == "cub"}
    return [(n, CUB_REMOVED[n]) for n in sorted(names - own)]


_QUOTED_INCLUDE = lazy_re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"', re.M)


@functools.lru_cache(maxsize=8)
def _project_file_names(root: str) -> frozenset[str]:
    names: set[str] = set()
    for _dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        names.update(files)
    return frozenset(names)


_BUILD_FILES = lazy_re.compile(r"^(?:CMakeLists\.txt|.*\.cmake|Makefile.*|.*\.mk|setup\.py|.*\.bzl|BUILD(?:\.bazel)?|"
                          r"meson\.build|.*\.gyp|SConstruct|SConscript)$")


@functools.cache
def _build_file_words(root: str) -> frozenset[str]:
    """The words of the project's build files: a name one of them says may be a `-DNAME=...` the build passes."""
    words: set[str] = set()
    for dirpath, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for f in files:
            if _BUILD_FILES.match(f):
                try:
                    with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                        words.update(re.findall(r"[A-Za-z_]\w*", fh.read(1_000_000)))
                except OSError:
                    continue
    return frozenset(words)


def _source_missing(meta: dict[str, Any]) -> str | None:
    """Why a unit cannot compile when the kernel's own file includes a header the project does not contain
    (`#include "range.hpp"` in a sample whose folder lacks it): the names it would declare are nowhere, and the
    original translation unit stops at the include. None where every quoted include of the file is found (next to
    it, or by its file name anywhere in the project)."""
    root = (meta.get("parse_context") or {}).get("root") or ""
    rel = (meta.get("source") or {}).get("path") or ""
    path = os.path.join(root, rel) if root else rel
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    # The parse's include directories, relative to the root (`../../..` of a mined subfolder, whose headers
    # include `src/lib/utils/helpers.h` from the checkout's top): a header found there is the project's, though the
    # mined folder does not hold it.
    given = (meta.get("parse_context") or {}).get("include_dirs") or []
    dirs = [os.path.normpath(os.path.join(root, d)) for d in given]
    for m in _QUOTED_INCLUDE.finditer(text):
        name = m.group(1).strip()
        if os.path.isfile(os.path.join(os.path.dirname(path), name)) or not root:
            continue
        if any(os.path.isfile(os.path.join(d, name)) for d in dirs):
            continue
        if header_library_of(name) is not None or is_toolkit_header(name) or name in STD_HEADERS or _installed(name):
            # (CUTLASS/CuTe: a wheel's, miner.cuda_libs, without it the build says what to install; a toolkit or
            # standard header written with quotes, `#include "cuda_runtime.h"` in nccl's examples; a CUDA library's
            # header a build here finds, `#include "curand_kernel.h"` of a wheel: the statement blamed it for a
            # unit that failed on another library's names)
            continue
        names = _project_file_names(root)
        # A header the build writes from a template the project holds (`nccl.h` from `nccl.h.in`,
        # miner.source.configured_headers) is the project's: the miner writes it as the build would.
        if os.path.basename(name) not in names and not any(os.path.basename(name) + s in names
                                                           for s in (".in", ".cmake", ".cmakein")):
            return (f"{rel} includes \"{name}\", which the project does not contain: the original translation "
                    "unit does not compile either")
    return None


_SYSTEM_INCLUDE_DIRS = ("/usr/include", "/usr/local/include")


@functools.lru_cache(maxsize=256)
def _installed(name: str) -> bool:
    """Whether `#include <name>` resolves for a build here: the toolkit, a CUDA library wheel, the system."""
    from miner.builder.toolchain import find_nvcc
    from miner.cuda_libs import toolkit_include_dirs, wheel_include_dirs
    from miner.errors import MinerError

    try:
        toolkit = toolkit_include_dirs(find_nvcc())
    except (MinerError, OSError):
        return True  # no toolkit to ask: nothing is said to be missing
    return any(os.path.isfile(os.path.join(d, name)) for d in (*toolkit, *wheel_include_dirs(), *_SYSTEM_INCLUDE_DIRS))


def _lacking_statement(meta: dict[str, Any], unresolved: list[dict[str, Any]], lacking: list[str] = (),
                       named: set[str] | None = None) -> str | None:
    """`SYM,SYM reason` for the unit's `// km:lacks-headers` line: the names the parse found declared nowhere
    (closure.text._unresolved's `lacking`) in a translation unit that includes headers neither the project, the
    toolkit, a wheel nor the system has (`CV_PI` with `<opencv2/opencv.hpp>`, TensorRT's `<NvInfer.h>`). A build
    failing on one of those names states this reason (builder.driver), and so does one that finds no operator for
    its operands (`float2 * float2`, which the CUDA samples' `<helper_math.h>` defines) in a TU that includes such a
    header (`lacking`, SYM `-` where the parse missed no name). Only names the unit's text still writes (`named`):
    a host body left out takes its names with it. None where every header is somewhere."""
    root = (meta.get("parse_context") or {}).get("root") or ""
    off = [(u["symbol"], u["switched_off"]) for u in unresolved
           if u.get("switched_off") and (named is None or u.get("symbol") in named)]
    if off:
        return _switched_off_statement(meta, unresolved, dict(off), named)
    if (orphan := includer_statement(meta, unresolved, named)) is not None:
        return orphan
    if root and ((given := make_command_line.statement(root, unresolved, named)) is not None
                 or (given := runtime_defines.statement(root, unresolved, named)) is not None):
        syms, text = given
        # The other names, with the reason they would have had alone (a header nobody here has, say).
        # (not the operators of a header nobody has: those name no symbol, and would be said of every such unit)
        rest = _lacking_statement(meta, [u for u in unresolved if u.get("symbol") not in syms], (), named)
        more, _, why = rest.partition(" ") if rest else ("", "", "")
        return f"{','.join([*syms, *[m for m in more.split(',') if m and m != '-']])} {text}" + (f"; {why}" if why
                                                                                                  else "")
    names = _project_file_names(root) if root else frozenset()
    syms: list[str] = []
    headers: list[str] = []
    for u in unresolved:
        missing = [h for h in u.get("lacking") or () if os.path.basename(h) not in names and not _installed(h)]
        if missing and u.get("symbol") not in syms and (named is None or u.get("symbol") in named):
            syms.append(u["symbol"])
            headers += [h for h in missing if h not in headers]
    if not syms:
        headers = [h for h in lacking if os.path.basename(h) not in names and not _installed(h)]
        said = _build_file_words(root) if root and any(u.get("nowhere") for u in unresolved) else frozenset()
        nowhere = list(dict.fromkeys(u["symbol"] for u in unresolved
                                     if u.get("nowhere") and (named is None or u.get("symbol") in named)
                                     and u.get("symbol") not in said))
        if not headers and nowhere:
            # (the build states it only where nvcc, with the real toolkit, stops on that name too)
            return (f"{','.join(nowhere)} {', '.join(nowhere)} {'is' if len(nowhere) == 1 else 'are'} declared "
                    "nowhere: not in the project's files the translation unit reaches, the toolkit or the system, "
                    "and every header it includes is here, so the original translation unit does not compile "
                    "either (an unfinished source: a placeholder left to fill in)")
        if not headers:
            return None
        what = "it declares" if len(headers) == 1 else "they declare"
        return (f"- the translation unit includes {', '.join(f'<{h}>' for h in headers)}, which neither the project, "
                f"the toolkit nor the system has: the operators {what} are missing, and the original translation unit "
                "does not compile here either")
    return (f"{','.join(syms)} {', '.join(syms)} {'is' if len(syms) == 1 else 'are'} declared in no file the "
            f"translation unit reaches, which includes {', '.join(f'<{h}>' for h in headers)}: neither the project, "
            f"the toolkit nor the system has {'it' if len(headers) == 1 else 'them'}, so the original translation "
            "unit does not compile here either")


def _switched_off_statement(meta: dict[str, Any], unresolved: list[dict[str, Any]], off: dict[str, str],
                            named: set[str] | None) -> str:
    """The `// km:lacks-headers` statement of a unit whose parse found names the project declares only in `#if`
    branches the configuration mined skips (closure.switched_off): the kernel belongs to a configuration that also
    turns those switches on, and with the defines mined the original translation unit does not compile either.
    Other names declared nowhere the parse reached (the same configuration's) are listed with it, so a build
    stopping on any of them states this reason."""
    rest = [u["symbol"] for u in unresolved if u["symbol"] not in off and (u.get("lacking") or u.get("nowhere"))
            and (named is None or u["symbol"] in named)]
    syms = list(dict.fromkeys([*off, *rest]))
    wheres = "; ".join(f"{sym} at {where}" for sym, where in list(off.items())[:4])
    defines = [d for d in (meta.get("parse_context") or {}).get("defines") or ()
               if not d.startswith(("__CUDA_ARCH__", "__NVCC__"))]
    mined = f" (the defines mined: {', '.join(defines)})" if defines else ""
    tail = (f"; {', '.join(rest)} {'is' if len(rest) == 1 else 'are'} declared in no file the translation unit "
            "reaches in that configuration" if rest else "")
    return (f"{','.join(syms)} {', '.join(off)} {'is' if len(off) == 1 else 'are'} declared only in code an `#if` "
            f"of the project switches off in the configuration mined{mined}: {wheres}{tail}. The kernel belongs to "
            "a build configuration that turns those switches on too, and with these defines the original "
            "translation unit does not compile either")


_CUB_MARKERS = ("cub.cuh", "config.cuh", "util_namespace.cuh", "version.cuh", "util_macro.cuh")


def _vendored_cub(meta: dict[str, Any], pieces: list[dict[str, Any]], includes: list[str]) -> str | None:
    """Why a unit that takes text of a vendored copy of CUB (a `cub/` folder of the project with its own
    `cub.cuh`, `config.cuh`, ...) cannot compile when it also includes the toolkit's thrust or CUB: the
    toolkit's thrust needs the toolkit's CUB (CCCL 3's `thrust/system/cuda/config.h` stops with "The version
    of CUB in your include path is not compatible"), and the two CUBs declare the same names in `namespace
    cub`. The original translation unit, which includes both through the vendored CUB's own headers, fails
    the same way. None otherwise."""
    if not any(h.startswith(("thrust/", "cub/")) for h in includes):
        return None
    root = (meta.get("parse_context") or {}).get("root") or ""
    paths = [os.path.join(root, meta["source"]["path"]) if root else meta["source"]["path"],
             *(p["path"] for p in pieces if p.get("path"))]
    for path in paths:
        d = os.path.dirname(path)
        while d and os.path.dirname(d) != d:
            if os.path.basename(d) == "cub" and any(os.path.isfile(os.path.join(d, f)) for f in _CUB_MARKERS):
                rel = os.path.relpath(d, root) if root and d.startswith(root + os.sep) else d
                if path == paths[0] and root and (d == root or root.startswith(d + os.sep)):
                    # The mined tree is CUB and the kernel one of its own: the toolkit's thrust, not the unit's CUB
                    # text, is what stops its original translation unit (units.cub_release).
                    return own_kernel_reason(path, d, os.path.basename(d), _CCCL3)
                return (f"the unit takes code of a vendored CUB ({rel}) and includes the toolkit's thrust/CUB, which "
                        f"needs the toolkit's own CUB ({_CCCL3}): the original source does not compile with this "
                        "toolkit either")
            d = os.path.dirname(d)
    return None


# Standard function objects and types a launch passes as template arguments (`scan<float, std::plus<float>>`):
# the kernel's own file reached <functional> through some host header the closure took nothing from.
_STD_ARGUMENT_HEADERS = {
    **dict.fromkeys(("plus", "minus", "multiplies", "divides", "modulus", "negate", "equal_to", "not_equal_to",
                     "greater", "less", "greater_equal", "less_equal", "logical_and", "logical_or", "logical_not",
                     "bit_and", "bit_or", "bit_xor", "bit_not", "hash", "identity"), "functional"),
    "complex": "complex", "integral_constant": "type_traits", "ratio": "ratio",
}


def render(out_dir: str, meta: dict[str, Any], kernel_text: str, unit: ClosureRecord,
           insts: list[dict[str, Any]], launch: Launch | None) -> list[dict[str, Any]]:
    """Write units/<inst>/unit.cu and host_wrapper.cu; return the metadata `instantiations`."""
    kdir = os.path.join(out_dir, meta["id"])
    root_hint = os.path.dirname(unit.kernel_path)
    # As dicts: the templates and the helpers here read them by key, with `relpath` added.
    pieces = [dict(vars(p), relpath=os.path.relpath(p.path, root_hint) if p.path else "") for p in unit.pieces]
    macros = _object_macros(pieces)
    flags = build_flags.applied(list((meta.get("build_flags") or {}).get("nvcc") or []))
    # The shim's c10::Half wants torch's __CUDA_NO_HALF* defines; where the project's flags say them
    # (-D) or undo them (-U, torch-ngp), the command line decides, as in the original build.
    said = {f[2:].split("=", 1)[0] for f in flags if f.startswith(("-D", "-U"))}
    no_half = [n for n in _NO_HALF if n not in said]
    records = []
    used_ids: set[str] = set()
    source_missing = _source_missing(meta)
    written = set(re.findall(r"[A-Za-z_]\w*", "\n".join([kernel_text, *(p["text"] for p in pieces)])))
    lacks_headers = _lacking_statement(meta, unit.unresolved, unit.lacking, written)
    where = _namespace_context(meta, pieces)
    classes = class_types(meta, kernel_text) if kernel_text else frozenset()
    for inst in insts:
        iid = inst_id(inst["args"])
        while iid in used_ids:
            iid += "_"
        used_ids.add(iid)
        # `ns::(anonymous namespace)::Param<float>`, as the parse spells a type of an unnamed namespace, is no C++:
        # the unit declares that namespace where the source does, so `ns::Param<float>` names the type.
        mapping = {k: _unnamed_ns_free(v) for k, v in inst["template_args"].items()}
        inst = {**inst, "args": [_unnamed_ns_free(a) for a in inst["args"]]}
        typed = _typed_args(meta.get("template_params") or [], inst["args"], pieces, where["namespaces"])
        # The parameter types take the arguments as the instantiation writes them (`ctc_helper::add<float>`
        # where the host template that launches it names the functor from inside its namespace as `add<float>`;
        # an enum's value as its cast, `param_t<static_cast<sar::Compute>(0)>`, where `param_t<0>` names no type).
        # (The recorded `template_args` keep a value as its number.)
        in_types = dict(mapping)
        for tp, a, raw in zip(meta.get("template_params") or [], typed, inst["args"], strict=False):
            if tp.get("name") in mapping and tp.get("kind") == "type":
                mapping[tp["name"]] = in_types[tp["name"]] = a
            elif tp.get("name") in mapping and a != raw:
                in_types[tp["name"]] = a
        params = _params(meta["params"], in_types, macros)
        grid_constant = grid_constant_spellings(pieces)
        for i, p in enumerate(params):
            p["name"] = p["name"] or f"arg{i}"
            p["ctype"] = ctype_of(p["type"])
            p["base"] = _base(p["type"])
            p["launcher_type"] = by_value_unqualified(p["type"], grid_constant)
            p["launcher_decl"] = launcher_declaration(p["launcher_type"], f"km_{p['name']}")
        # The explicit instantiation repeats a `__grid_constant__` the definition writes in front of a parameter's
        # type, which the parse's type spelling drops (`__grid_constant__ const char * const p` reads `const char *
        # const`): without it nvcc stops, "incompatible __grid_constant__ annotation for parameter in instantiation
        # directive".
        written_gc = _grid_constant_written(kernel_text, meta["name"], grid_constant, len(params))
        instantiation_types = [f"__grid_constant__ {p['type']}" if written_gc and written_gc[i]
                               and not any(re.search(rf"\b{re.escape(g)}\b", p["type"]) for g in grid_constant)
                               else p["type"]
                               for i, p in enumerate(params)]
        args_text = ", ".join(typed)
        # A lambda's functor struct only where these arguments name it (another's body need not build here).
        # Pieces another translation unit's closure brought for its argument types: only where those are named.
        named = set(re.findall(r"[A-Za-z_]\w*", args_text))
        own = [p for p in pieces if (not p.get("functor") or re.search(rf"\b{re.escape(p['name'])}\b", args_text))
               and (not p.get("needs") or named & set(p["needs"]))]
        symbol = "km_launch_" + hashlib.sha256(f"{meta['id']}/{iid}".encode()).hexdigest()[:16]
        explicit = bool(inst["args"]) and not meta["is_specialization"]
        # The launcher sits in the kernel's namespaces: the name alone finds the kernel (a `::`-qualified one
        # would not inside the namespace a build batch wraps the unit in).
        callee = meta["name"] + (f"<{args_text}>" if inst["args"] or meta["is_specialization"] else "")
        if meta["is_specialization"]:
            m = re.search(re.escape(meta["name"]) + r"\s*(<[^({]*>)\s*\(", kernel_text)
            callee = meta["name"] + (m.group(1) if m else "")
        # A toolkit type named only in these arguments (`__half` from a host template instantiated in another
        # translation unit than the one the closure was taken in) brings its header.
        # The toolkit's short typedefs (`half` for `__half`) count unless the project declares that name itself.
        declared = {p["name"] for p in pieces}
        extra = [h for t in re.findall(r"[A-Za-z_]\w*", args_text)
                 if (h := HEADER_OF.get(t) or (_TOOLKIT_TYPEDEFS.get(t) if t not in declared else None))]
        extra += [h for t in re.findall(r"\bstd::(\w+)", args_text) if (h := _STD_ARGUMENT_HEADERS.get(t))]
        # torch's __CUDA_NO_HALF* defines belong to torch code only: a unit that takes the shim for its int64
        # atomics alone (no torch name in the closure or the arguments) is built as its project was, with
        # __half's operators (`a > b` on __half in its own helpers).
        torch_code = "torch" in unit.frameworks or any(re.search(r"\b(c10|at)::", a) for a in inst["args"])
        # The frameworks' unit shims, torch's first (frontends.frameworks): those the closure named, torch's for
        # its types in the arguments or an atomic it overloads (_shim_types), TensorFlow's for an Eigen type.
        with_shims = [fw for fw in ("torch", "tf") if fw in unit.frameworks
                      or (fw == "torch" and _shim_types(inst["args"], kernel_text, pieces))
                      or (fw == "tf" and any(_TF_ARG.search(a) for a in inst["args"]))]
        ctx = {
            "build_flags": flags, "no_half": no_half if torch_code else [],
            "unit_flags": [*(_DYNAMIC_PARALLELISM if _launches_from_device(kernel_text, own) else []),
                           *([ARCH_SPECIFIC] if _arch_specific(kernel_text, own) else [])],
            "kernel": meta, "src": meta["source"], "version": __version__, "symbol": symbol,
            "includes": list(dict.fromkeys(unit.includes + extra)),
            # Vendored libraries (closure.vendored): the project's configuring #defines, then its includes.
            "vendored": (meta.get("closure") or {}).get("vendored") or [],
            # The configuration the kernel was mined in; nvcc defines __CUDA_ARCH__ and __NVCC__ itself.
            "defines": [d.split("=", 1) if "=" in d else [d, "1"] for d in meta["parse_context"]["defines"]
                        if d.split("=", 1)[0] not in ("__CUDA_ARCH__", "__NVCC__")],
            "shim_text": "".join(_shim_for(pieces, fw) for fw in with_shims),
            "cub_compat": _cub_compat(kernel_text, own),
            "callable_stand_in": INFERRED_CALLABLE if re.search(rf"\b{INFERRED_CALLABLE}\b", args_text) else "",
            "toolkit_conflict": _vendored_cub(meta, own, list(dict.fromkeys(unit.includes + extra)))
            or source_missing,
            "lacks_headers": lacks_headers,
            # A scalar default given to a class parameter, where nothing better is known (builder.driver states it)
            "class_stand_in": class_stand_ins(inst, meta["name"], classes),
            "pieces": own, **where,
            "text_namespaces": _written_in(where["namespaces"], meta["name"], kernel_text),
            "kernel_text": kernel_text, "callee": callee,
            "macro_names": list(dict.fromkeys(p.name for p in unit.pieces if p.kind == "MACRO")),
            # Names the unit defines with C linkage: one symbol per program, whatever the namespace, so a
            # build batch must not hold two units that define the same one.
            "c_symbols": list(dict.fromkeys([*([meta["name"]] if meta.get("linkage") == "C" else []),
                                             *(p.name for p in unit.pieces if p.c_linkage)])),
            "inst": {"args_text": args_text, "explicit": explicit, "params": params,
                     "param_types": instantiation_types},
        }
        unit_text = template_env().get_template("unit.cu.j2").render(**ctx)
        cfg = launch.config if launch is not None else {}
        vals = launch.values if launch is not None else {}
        wrap = template_env().get_template("host_wrapper.cu.j2").render(
            **ctx, launch_text=f"<<<{cfg.get('grid')}, {cfg.get('block')}, {cfg.get('shared_mem')}>>>"
            if launch else "none recorded",
            grid=256, block=vals.get("block", 256), smem=vals.get("shared_mem", 0))
        udir = os.path.join(kdir, "units", iid)
        atomic.write_text(os.path.join(udir, "unit.cu"), unit_text)
        atomic.write_text(os.path.join(udir, "host_wrapper.cu"), wrap)
        records.append({
            "id": iid, "template_args": mapping, "args": inst["args"], "origin": inst["origin"],
            # (the translation unit a host template's instantiation came from: verify compiles that one)
            **({"origin_tu": inst["origin_tu"]} if inst.get("origin_tu") else {}),
            # (an inferred instantiation's class arguments: why each, units.class_args)
            **({"inferred_classes": inst["inferred_classes"]} if inst.get("inferred_classes") else {}),
            "unit": f"units/{iid}/unit.cu", "host_wrapper": f"units/{iid}/host_wrapper.cu",
            "launcher": {"symbol": symbol, "params": [{k: p[k] for k in ("name", "type", "ctype")} for p in params]},
        })
    return records
