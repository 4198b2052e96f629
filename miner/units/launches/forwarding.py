"""Launch helpers that hand their kernel on to another helper:

    template <typename K, typename... P> void launch(K&& kernel, config cfg, P&&... params) {
        enqueue(std::forward<K>(kernel), stream_t(0), cfg, std::forward<P>(params)...);
    }

where `enqueue` (or a tag-dispatched overload it calls, level after level) is a helper whose body launches its
parameter (units.launches.helpers). `launch` is then a helper too: its configuration and arguments are the inner
helper's with the inner parameters replaced by what the forwarding call passes. Levels are taken one per round
until a round adds none, at most `_DEPTH` of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import clang.cindex as ci

from miner import lazy_re
from miner.units.launches.helpers import (
    _CLASSES,
    Helper,
    _helper_name,
    _object_of,
    apply_helper,
    known_helper,
    spreads,
)
from miner.units.launches.record import _COMMENT, K
from miner.units.launches.state import _State
from miner.units.launches.text import _src

_DEPTH = 6  # forwarding levels followed (a wrapper library's public call reaches its launch in three to five)


@dataclass
class ForwardCall:
    fn: ci.Cursor  # the forwarding function
    call: ci.Cursor
    name: str  # the function called
    index: int  # the argument that is one of fn's parameters
    param: str  # that parameter's name
    args: list[str]  # the call's argument texts


# `kernel`, `std::forward<K>(kernel)`, `std::move(kernel)`, `(void*)kernel`, `&kernel`
_PASSED = lazy_re.compile(r"\s*(?:(?:::)?std\s*::\s*(?:forward|move)\s*(?:<[^()]*>)?\s*\(\s*(\w+)\s*\)"
                     r"|(?:\(\s*(?:const\s+)?void\s*\*\s*\)\s*)?&?\s*(\w+))\s*")


def _kernel_like(p: ci.Cursor) -> bool:
    """A parameter that could hold a kernel: a function (pointer, reference) or a type the template leaves open."""
    t = p.type.get_canonical()
    if t.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE, ci.TypeKind.POINTER):
        t = t.get_pointee().get_canonical()
    return t.kind in (ci.TypeKind.FUNCTIONPROTO, ci.TypeKind.FUNCTIONNOPROTO, ci.TypeKind.UNEXPOSED,
                      ci.TypeKind.DEPENDENT, ci.TypeKind.VOID) or "type-parameter" in t.spelling


def _candidates(st: _State, fn: ci.Cursor) -> dict[str, int]:
    """fn's parameters that could hold a kernel, by name (cached per function: most have none, and then
    their calls are not looked at)."""
    cache: dict[int, dict[str, int]] = st.__dict__.setdefault("_forward_params", {})
    key = fn.hash
    if key not in cache:
        params = [p for p in fn.get_children() if p.kind == K.PARM_DECL]
        cache[key] = {p.spelling: i for i, p in enumerate(params) if p.spelling and _kernel_like(p)}
    return cache[key]


def note_forward(st: _State, fn: ci.Cursor, call: ci.Cursor, children: list[ci.Cursor]) -> None:
    """Keep a call that passes one of fn's (kernel-like) parameters on, until every helper of the TU is known."""
    if fn.kind not in (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD) or not (cand := _candidates(st, fn)):
        return
    args = list(call.get_arguments()) or children[1:]
    if len(args) < 2:
        return  # a helper takes the kernel and something to launch it with
    name = call.spelling
    if not name and children:
        name = next((d.spelling for d in children[0].walk_preorder() if d.kind == K.OVERLOADED_DECL_REF), "")
    if not name:
        return
    hits = [(i, a) for i, a in enumerate(args)
            if any(d.kind == K.DECL_REF_EXPR and d.spelling in cand for d in a.walk_preorder())]
    if not hits:
        return
    obj, cls = _object_of(call, children, args)
    if obj is not None and args and args[0] == obj:
        args = args[1:]
        hits = [(i - 1, a) for i, a in hits if i > 0]
    if cls is not None:
        name = _helper_name(name, cls)
    texts = [_COMMENT.sub(" ", _src(st.ctx, a)) for a in args]
    for i, _ in hits:
        m = _PASSED.fullmatch(texts[i])
        passed = m and (m.group(1) or m.group(2))
        if passed and passed in cand:
            st.forward_calls.append(ForwardCall(fn, call, name, i, passed, texts))


def forward_helpers(st: _State) -> None:
    """A helper for each function that forwards a kernel parameter to a known helper, level by level."""
    done: set[tuple[int, int]] = set()
    for _ in range(_DEPTH):
        added = False
        for fc in st.forward_calls:
            key = (fc.fn.hash, fc.index)
            if key in done:
                continue
            inner = known_helper(st, fc)
            if inner is None or inner.origin == fc.fn.hash or inner.members:
                continue  # (a launcher object's members are read at its own calls, not through a forwarder)
            outer = _forwarded(st, fc, inner)
            if outer is None:
                continue
            done.add(key)
            cls = fc.fn.semantic_parent if fc.fn.semantic_parent is not None \
                and fc.fn.semantic_parent.kind in _CLASSES else None
            st.helpers.setdefault(_helper_name(fc.fn.spelling, cls), []).append(outer)
            added = True
        if not added:
            return


def _forwarded(st: _State, fc: ForwardCall, inner: Helper) -> Helper | None:
    """The forwarding function as a helper: the inner helper's configuration and arguments in its own terms."""
    params = [p for p in fc.fn.get_children() if p.kind == K.PARM_DECL]
    names = [p.spelling for p in params]
    if fc.param not in names:
        return None
    last = _COMMENT.sub(" ", _src(st.ctx, params[-1])) if params else ""
    pack = names[-1] if "..." in last else None
    fixed = inner.params[:-1] if inner.pack else inner.params
    # A plain name goes in bare (`cfg`, not `(cfg)`): the configuration object's reader matches `cfg.dims.grid`.
    mapping = {p: a.strip() if re.fullmatch(r"\s*\w+\s*", a) else f"({a.strip()})"
               for p, a in zip(fixed, fc.args, strict=False)}
    given = list(fc.args)
    if pack is not None:
        # `std::forward<P>(params)...` hands the outer pack on whole: it stays the outer pack.
        given = [f"{pack}..." if spreads(a, pack) else a for a in given]
    args, cfg = apply_helper(inner, given, mapping)
    if cfg[0] is None and cfg[1] is None and inner.kind == "<<<>>>":
        return None
    return Helper(names.index(fc.param), names, pack, cfg, args, {}, inner.kind, fc.fn.hash)
