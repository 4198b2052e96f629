"""A launch's template arguments finished: one list per host instantiation, host parameters
substituted, `conditional_t<is_same<...>>` folded, defaults where nothing is known."""

from __future__ import annotations

import re

from miner.units.launches.cursors import _default_for
from miner.units.launches.record import _IDENT, Launch
from miner.units.launches.state import _State
from miner.units.launches.text import substitute

_MAX_LIST_VARIANTS = 64


_COND = re.compile(r"(?:std::)?conditional_t\s*<\s*(?:std::)?is_same(?:_v\s*<|\s*<)\s*([\w:\s]+?)\s*,\s*([\w:\s]+?)"
                   r"\s*>(?:::value)?\s*,\s*([\w:\s]+?)\s*,\s*([\w:\s]+?)\s*>")


_SAME = {"at::Half": "c10::Half", "at::BFloat16": "c10::BFloat16", "half": "__half", "signed": "int",
         "unsigned": "unsigned int", "signed int": "int"}


_DISTINCT = {"float", "double", "int", "unsigned int", "long", "unsigned long", "long long", "unsigned long long",
             "short", "unsigned short", "char", "signed char", "unsigned char", "bool", "c10::Half",
             "c10::BFloat16", "__half", "__nv_bfloat16"}


def _fold_conditional(text: str) -> str:
    """`std::conditional_t<std::is_same<float, at::Half>::value, int2, int4>` once the class template's
    parameter is bound -> `int4`, where both compared types are known builtins (else left as written)."""
    def one(m: re.Match[str]) -> str:
        a, b = (_SAME.get(" ".join(x.split()), " ".join(x.split())) for x in (m.group(1), m.group(2)))
        if a == b:
            return m.group(3).strip()
        return m.group(4).strip() if a in _DISTINCT and b in _DISTINCT else m.group(0)
    return _COND.sub(one, text)


def _finish(st: _State, rec: Launch, insts: dict[tuple[str, int], list[list[str]]]) -> None:
    """Resolve a record's written arguments: aliases, constants, and the host template's instantiations
    (or its parameters' defaults when none is known); once per value of each list a generic lambda
    parameter in them is dispatched over."""
    alias = getattr(rec, "_aliases", {})
    lists = getattr(rec, "_lists", {})
    for attr in ("_aliases", "_lists"):
        if hasattr(rec, attr):
            delattr(rec, attr)
    if rec.host_template is not None:
        params = st.host_params.get(rec.host_template, [])
        rec.host_params = [p.spelling for p in params]
    variants: list[dict[str, str]] = [{}]
    for name, vals in lists.items():
        variants = [{**v, name: x} for v in variants for x in vals][:_MAX_LIST_VARIANTS]
    if not lists:
        _finish_one(st, rec, insts, alias, {})
        return
    host_args, defaulted = list(rec.host_template_args), rec.host_defaulted
    for variant in variants:
        rec.resolved_text, rec.host_template_args, rec.host_defaulted = None, [], False
        _finish_one(st, rec, insts, alias, variant)
        if rec.resolved_text is not None and rec.resolved_text not in rec.dispatch_args:
            rec.dispatch_args.append(rec.resolved_text)
        for args in rec.host_template_args:
            if args not in host_args:
                host_args.append(args)
        defaulted = defaulted or rec.host_defaulted
    rec.resolved_text, rec.host_template_args, rec.host_defaulted = None, host_args, defaulted and bool(host_args)


def _finish_one(st: _State, rec: Launch, insts: dict[tuple[str, int], list[list[str]]], alias: dict[str, str],
                variant: dict[str, str]) -> None:
    names = set(rec.host_params)
    texts = [substitute(substitute(t, {k: v for k, v in alias.items() if v and k not in names}), variant)
             for t in rec.template_args_text]
    if not texts:
        return
    rec.resolved_text = [st.resolver(t, names) for t in texts]
    idents = {n for t in rec.resolved_text for n in _IDENT.findall(t)}
    used = idents & names
    # A name that depends on something other than the host template's parameters (an enclosing class
    # template's, a generic lambda's `auto`): these arguments cannot be made concrete here.
    unknown = {n for n, v in alias.items() if not v} - names
    if rec.template_args is not None or rec.host_template is None or not used or idents & unknown:
        if used or idents & unknown:
            rec.resolved_text = None
        return
    known = insts.get(rec.host_template, [])
    if known:
        for inst in known:
            mapping = dict(zip(rec.host_params, inst, strict=False))
            args = [_fold_conditional(st.resolver(substitute(t, mapping), set())) for t in rec.resolved_text]
            if args not in rec.host_template_args:
                rec.host_template_args.append(args)
    else:
        params = st.host_params.get(rec.host_template, [])
        mapping = {p.spelling: _default_for(p) for p in params}
        rec.host_template_args.append([_fold_conditional(substitute(t, mapping)) for t in rec.resolved_text])
        rec.host_defaulted = True
    rec.resolved_text = None
