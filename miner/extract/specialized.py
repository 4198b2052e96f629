"""Which explicit specializations a launch of a declared-only kernel template reaches.

A header declares `template <typename T> __global__ void K(T *out, const T *in, int n);` and defines nothing; one
.cu defines `template <> __global__ void K<float>(...)` and `K<__half>(...)`, another launches `K<<<...>>>(out, in,
n)` through the declaration (from a host template, `T` deduced per instantiation) and the linker joins them. The
kernels of that name are the specializations: the launch belongs to those whose arguments it can take, read from
the launch's concrete template arguments (or its host template's instantiations) and, failing those, from the
declaration's parameter types matched against each specialization's.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from miner import lazy_re
from miner.frontends.common import split_top
from miner.frontends.model import Kernel
from miner.units.records import Launch

_WORD = lazy_re.compile(r"[A-Za-z_]\w*")
# A type named through a class template's member (`typename Traits<Op>::DataType`): not comparable as text.
_MEMBER_TYPE = lazy_re.compile(r"^\s*typename\b|>\s*::")


def reached(candidates: list[Kernel], launch: Launch, type_key: Callable[[str], str]) -> list[Kernel]:
    """The explicit specializations among `candidates` (same qualified name and parameter count as the
    declaration `launch.declared`) that the launch can call; [] where the declaration is no template.
    `type_key` compares types across translation units (qualifiers and namespace prefixes left out)."""
    decl = launch.declared
    if decl is None or not decl.template_params:
        return []
    wanted = _argument_lists(launch, decl.template_params)
    out: list[Kernel] = []
    for k in candidates:
        if not k.is_specialization:
            continue
        binding = _bind(decl.params, [p.type for p in k.params], decl.template_params, type_key)
        if binding is None:
            continue  # (another overload's specialization: its parameters do not fit this declaration)
        # The specialization's own argument list (`K<float>`) fills what its parameters leave unbound (a value
        # parameter, a type no parameter names).
        for name, arg in zip(decl.template_params, _written_args(k), strict=False):
            binding.setdefault(name, type_key(arg))
        if not wanted or any(all(binding.get(n) in (None, type_key(a)) for n, a in zip(decl.template_params, args,
                                                                                      strict=False))
                             for args in wanted):
            out.append(k)
    return out


def _argument_lists(launch: Launch, tparams: list[str]) -> list[list[str]]:
    """The concrete template argument lists of the launch: the AST's, or the written ones with each
    instantiation of the enclosing host template put in; [] when unknown (a host parameter left open)."""
    if launch.template_args:
        return [list(launch.template_args)]
    written = launch.resolved_text or launch.template_args_text
    if not written:
        return []
    lists: list[list[str]] = []
    host = launch.host_params
    # (a host template nothing instantiates still fixes the arguments it writes concretely: `__half *` locals)
    for args in launch.host_template_args or [[]]:
        text = [_substitute(a, dict(zip(host, args, strict=False))) for a in written]
        if any(w in set(host) | set(tparams) for a in text for w in _WORD.findall(a)):
            continue  # (a parameter still open: this list says nothing)
        if any(_MEMBER_TYPE.search(a) for a in text):
            continue  # (`typename Traits<HALF>::DataType`: a member of a class the text cannot evaluate)
        lists.append(text)
    return lists


def _substitute(text: str, mapping: dict[str, str]) -> str:
    return _WORD.sub(lambda m: mapping.get(m.group(0), m.group(0)), text)


def _written_args(k: Kernel) -> list[str]:
    """`float, 4` of `template <> __global__ void K<float, 4>(...)`: the list after the kernel's name."""
    m = re.search(re.escape(k.name) + r"\s*<", k.signature)
    if m is None:
        return []
    depth, i = 1, m.end()
    while i < len(k.signature) and depth:
        depth += {"<": 1, ">": -1}.get(k.signature[i], 0)
        i += 1
    return split_top(k.signature[m.end():i - 1]) if depth == 0 else []


def _bind(decl: list[str], have: list[str], tparams: list[str],
          type_key: Callable[[str], str]) -> dict[str, str] | None:
    """Each template parameter the declaration's parameter types name, bound to the text standing in its place in
    the specialization's types (`T *` against `float *`: T = float); None where a type does not fit."""
    binding: dict[str, str] = {}
    names = set(tparams)
    for want, got in zip(decl, have, strict=True):
        key_w, key_g = type_key(want), type_key(got)
        parts = re.split(r"([A-Za-z_]\w*)", key_w)
        pattern, seen = "", []
        for piece in parts:
            if piece in names:
                pattern += f"(?P={piece})" if piece in seen else f"(?P<{piece}>.+?)"
                seen.append(piece)
            else:
                pattern += re.escape(piece)
        m = re.fullmatch(pattern, key_g)
        if m is None:
            return None
        for name, value in m.groupdict().items():
            if binding.setdefault(name, value) != value:
                return None
    return binding
