"""Explicit instantiations of host function templates whose arguments are deduced, not written:
`template Encoder<float> *create_encoder(int which, uint32_t dims);` names no `<float>` after the function's
name, so the written-argument reader (instantiations.explicit_in) misses it. The arguments are read by matching
the line's return and parameter types against the template's own declaration (`Encoder<T> *create_encoder(int
which, uint32_t dims)`): each template parameter binds to the text it faces."""

from __future__ import annotations

import re

import clang.cindex as ci

from miner import lazy_re
from miner.frontends.common import matching
from miner.units.instantiations import _EXPLICIT, _member_of_class, split_top

# `template RET NAME(PARAMS);` (no `<` after `template`, none after NAME): a deduced explicit instantiation.
_DEDUCED = lazy_re.compile(r"\btemplate\s+(?!<)((?:[^;{}()]|\([^;{}()]*\))*?)\b([A-Za-z_]\w*)\s*"
                      r"\(((?:[^;{}()]|\([^;{}()]*\))*)\)\s*(?:const\s*)?(?:noexcept\s*)?;", re.S)
_TOKEN = lazy_re.compile(r"[A-Za-z_]\w*|::|\d+\w*|\S")
_TYPE_WORDS = {"int", "unsigned", "signed", "long", "short", "char", "float", "double", "bool", "void", "const",
               "volatile", "auto", "size_t", "struct", "class", "typename", "restrict", "__restrict__"}
_QUALIFIERS = {"inline", "static", "extern", "constexpr", "__host__", "__device__", "__forceinline__", "virtual",
               "explicit", "friend"}


def deduced_in(text: str, names: set[str]) -> list[tuple[str, str, list[str]]]:
    """(name, return type text, parameter type texts) of each deduced explicit instantiation of `names`."""
    out = []
    for m in _DEDUCED.finditer(text):
        ret, name = m.group(1).strip(), m.group(2)
        if name in names and ret and not ret.endswith("::"):  # (`template R C<float>::f(...)`: a member's)
            out.append((name, _drop_qualifiers(ret), [_param_type(p) for p in split_top(m.group(3)) if p.strip()]))
    return out


def written_parameters(text: str, names: set[str]) -> dict[tuple[str, tuple[str, ...]], list[list[str]]]:
    """The parameter type texts each `template R name<args>(params);` line of `names` spells, by (name, written
    arguments), in a text whose project macros are already expanded. An overloaded host template (`run<Op>(Out *,
    const Stream &)` beside `run<Op>(Out *, const In *, float, const Stream &)`) is instantiated by such a line
    in the one overload whose parameters it spells, not in every template of that name."""
    out: dict[tuple[str, tuple[str, ...]], list[list[str]]] = {}
    if not any(n in text for n in names):
        return out
    text = re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.S)
    for m in _EXPLICIT.finditer(text):
        if m.group(1) not in names or _member_of_class(m.group(2)) is not None:
            continue  # (a member template's or a return type's list: explicit_in reads those)
        close = matching(text, m.end() - 1, "(", ")", limit=4000)
        if close < 0:
            continue
        params = [_param_type(p) for p in split_top(text[m.end():close]) if p.strip()]
        lists = out.setdefault((m.group(1), tuple(a.strip() for a in split_top(m.group(2)))), [])
        if params != ["void"] and params not in lists:
            lists.append(params)
    return out


def spells(template: list[str], inst: list[str], params: list[str]) -> bool:
    """Whether an instantiation line's parameter types `inst` are the template's own `template` with its
    parameters `params` bound (consistently) to some text: the line names this overload."""
    if len(template) != len(inst):
        return False
    bound: dict[str, str] = {}
    for t, i in zip(template, inst, strict=True):
        got = _unify(t, i, params)
        if got is None:
            return False
        for k, v in got.items():
            if bound.setdefault(k, v) != v:
                return False
    return True


def declaration(data: bytes, fn: ci.Cursor) -> tuple[str, list[str]] | None:
    """The template's return type text and parameter type texts, as written in `data` (its file's text),
    names and defaults dropped."""
    head = data[fn.extent.start.offset:fn.location.offset].decode("utf-8", "replace")
    m = re.match(r"\s*template\s*<", head)
    if not m:
        return None
    depth, i = 1, m.end()
    while i < len(head) and depth:
        depth += {"<": 1, ">": -1}.get(head[i], 0)
        i += 1
    ret = _drop_qualifiers(re.sub(r"(?:[\w:]+::)$", "", head[i:].strip()).strip())
    rest = data[fn.location.offset:fn.location.offset + 4000].decode("utf-8", "replace")
    open_ = rest.find("(")
    if open_ < 0:
        return None
    depth, j = 0, open_
    for j in range(open_, len(rest)):
        depth += {"(": 1, ")": -1}.get(rest[j], 0)
        if depth == 0:
            break
    params = [_param_type(p) for p in split_top(rest[open_ + 1:j]) if p.strip()]
    return ret, [p for p in params if p != "void"]


def bind(template: tuple[str, list[str]], inst: tuple[str, list[str]], params: list[str]) -> list[str] | None:
    """Each of `params` as the instantiation line spells it, or None where the two do not match or a
    parameter stays unbound (deduction from a default argument is not followed)."""
    t_ret, t_params = template
    i_ret, i_params = inst
    if len(t_params) != len(i_params):
        return None
    bound: dict[str, str] = {}
    for t, i in [(t_ret, i_ret), *zip(t_params, i_params, strict=True)]:
        got = _unify(t, i, params)
        if got is None:
            return None
        for k, v in got.items():
            if bound.setdefault(k, v) != v:
                return None
    if any(p not in bound for p in params):
        return None
    return [bound[p] for p in params]


def bind_rest(template: tuple[str, list[str]], types: list[str], params: list[str], written: list[str]
              ) -> list[str] | None:
    """`params` for an explicit instantiation that writes the leading `written` arguments and spells the
    parameter `types` (`template void f<true>(const float *, int);`): the written ones as written, the rest bound
    by matching `types` against the template's own parameter types; None where they do not match or one stays
    unbound (the return type is not read: the line's may sit before the written list)."""
    t_params = template[1]
    if len(t_params) != len(types) or len(written) > len(params):
        return None
    bound = dict(zip(params, written, strict=False))
    for t, i in zip(t_params, types, strict=True):
        got = _unify(t, i, params)
        if got is None:
            return None
        for k, v in got.items():
            if " ".join(bound.setdefault(k, v).split()) != " ".join(v.split()):
                return None
    if any(p not in bound for p in params):
        return None
    return [bound[p] for p in params]


def _unify(t: str, i: str, params: list[str]) -> dict[str, str] | None:
    toks = _TOKEN.findall(t)
    if not any(tok in params for tok in toks):
        return {} if _TOKEN.findall(i) == toks else None
    pattern, seen = [], set()
    for tok in toks:
        if tok in params and tok.isidentifier():
            pattern.append(f"(?P={tok})" if tok in seen else f"(?P<{tok}>.+?)")
            seen.add(tok)
        else:
            pattern.append(re.escape(tok))
    m = re.fullmatch(r"\s*".join(pattern), i.strip())
    return {k: v.strip() for k, v in m.groupdict().items()} if m else None


def _param_type(p: str) -> str:
    """A parameter declaration without its default and its name (`const json& encoding = {}` -> `const json&`)."""
    p = split_top(p.replace("=", ",", 1))[0] if "=" in p else p
    toks = _TOKEN.findall(p)
    if len(toks) >= 2 and re.fullmatch(r"[A-Za-z_]\w*", toks[-1]) and toks[-1] not in _TYPE_WORDS \
            and toks[-2] != "::" and not (len(toks) == 2 and toks[0] in ("const", "volatile")):
        p = p[: p.rstrip().rfind(toks[-1])]
    return " ".join(p.split())


def _drop_qualifiers(ret: str) -> str:
    words = ret.split()
    while words and words[0] in _QUALIFIERS:
        words.pop(0)
    return " ".join(words)
