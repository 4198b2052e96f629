"""The Launch record (defined with the other analysis records in miner.units.records), and the cursor
kinds and patterns every part of the launch search uses."""

from __future__ import annotations

import re

import clang.cindex as ci

from miner import lazy_re
from miner.units.records import Launch  # noqa: F401 - the search's parts import it from here

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


_NUM = lazy_re.compile(r"^\s*\(?\s*(\d+)[uUlL]*\s*\)?\s*$")


_IDENT = lazy_re.compile(r"[A-Za-z_]\w*")


_COMMENT = lazy_re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


MAX_HOST_INSTANTIATIONS = 64  # per host template: a bound on the call-graph fixed point


_MAX_DEPTH = 8  # propagation rounds through the host call graph


# A host template's parameter with no known instantiation: the same defaults as a kernel's (documented
# in instantiations._default); kept here as text so the two modules need not import each other.
_DEFAULT_TYPE = "float"
