"""The Launch record, and the cursor kinds and patterns every part of the launch search uses."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import clang.cindex as ci

K = ci.CursorKind


_API = {"cudaLaunchKernel": 0, "cudaLaunchCooperativeKernel": 0, "cudaLaunchKernelEx": 1,
        "cudaLaunchKernelExC": 1, "hipLaunchKernel": 0, "hipLaunchCooperativeKernel": 0}


# Launches written through these shim macros get the macro's name as their kind.
_MACRO_LAUNCHES = {"hipLaunchKernelGGL"}


_FUNCS = {K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.CONVERSION_FUNCTION}


_CLASS_TEMPLATES = (K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION)


# Where a class template is used with concrete arguments (`W<Gpu, float> w;`, `W<Gpu, float>()(x)`).
_TYPED_USES = (K.VAR_DECL, K.TYPE_REF, K.CALL_EXPR, K.UNEXPOSED_EXPR, K.CXX_FUNCTIONAL_CAST_EXPR)


_SCOPES = {K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL, K.CLASS_DECL, K.STRUCT_DECL, K.CLASS_TEMPLATE,
           K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION, K.UNION_DECL}


_TPARAMS = (K.TEMPLATE_TYPE_PARAMETER, K.TEMPLATE_NON_TYPE_PARAMETER, K.TEMPLATE_TEMPLATE_PARAMETER)


_NUM = re.compile(r"^\s*\(?\s*(\d+)[uUlL]*\s*\)?\s*$")


_IDENT = re.compile(r"[A-Za-z_]\w*")


_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


MAX_HOST_INSTANTIATIONS = 64  # per host template: a bound on the call-graph fixed point


_MAX_DEPTH = 8  # propagation rounds through the host call graph


# A host template's parameter with no known instantiation: the same defaults as a kernel's (documented
# in instantiations._default); kept here as text so the two modules need not import each other.
_DEFAULT_TYPE = "float"


@dataclass
class Launch:
    kernel: tuple[str, int]  # (path, offset of the kernel's name)
    launcher: str
    path: str
    line: int
    kind: str  # `<<<>>>`, the launch API or macro, or `reference`
    config: dict[str, str | None] = field(default_factory=dict)
    values: dict[str, int] = field(default_factory=dict)
    # grid/block/shared memory with locals and macros put in (miner.units.launch_formula), where that differs.
    formula: dict[str, str] = field(default_factory=dict)
    definitions: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    template_args: list[str] | None = None  # concrete, when the AST resolved them
    template_args_text: list[str] = field(default_factory=list)  # as written
    in_lambda: bool = False
    host_template: tuple[str, int] | None = None  # enclosing host function template
    host_params: list[str] = field(default_factory=list)
    # One argument list per known instantiation of the enclosing host template(s).
    host_template_args: list[list[str]] = field(default_factory=list)
    # The host template's instantiations were unknown: its parameters took their defaults.
    host_defaulted: bool = False
    # Written arguments with macros, enumerators and aliases replaced (no host parameters left).
    resolved_text: list[str] | None = None
    # One argument list per element of the list a generic lambda is dispatched over
    # (`for_each<list_c<int, 64, 32>>([&](auto Tile) { k<T, Tile><<<...>>>(); })`).
    dispatch_args: list[list[str]] = field(default_factory=list)
