"""Launches through the project's own launch helpers: a function (template) whose body launches one of
its parameters,

    template <class K, class T, class... A>
    void linear_kernel(K kernel, uint32_t smem, cudaStream_t s, T n, A... args) {
        kernel<<<blocks_for(n), 128, smem, s>>>(n, args...);
    }

called with a kernel (`linear_kernel(sgd_step<T>, 0, stream, n, weights)`). The call is the launch: its
configuration and arguments are the helper's, with the helper's parameters replaced by the call's
arguments (a trailing parameter pack by the rest of them). Without this the kernel was only `referenced`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import clang.cindex as ci

from miner.units.launches.cursors import _template_args
from miner.units.launches.record import _COMMENT, K, Launch
from miner.units.launches.state import (
    REF,
    _kernel_key,
    _kernel_refs,
    _record_aliases,
    _State,
    _written_args,
    subtree_flags,
)
from miner.units.launches.text import _src, substitute
from miner.units.launches.values import _values


@dataclass
class Helper:
    index: int  # the parameter that is launched
    params: list[str]  # parameter names, in order
    pack: str | None  # a trailing parameter pack's name (`args` of `A... args`)
    config: list[str | None]  # grid, block, shared memory, stream as the helper writes them
    args: list[str]  # the launch's arguments as the helper writes them


@dataclass
class HelperCall:
    fn: ci.Cursor
    path: str
    call: ci.Cursor
    name: str  # the function called
    index: int
    ref: ci.Cursor
    target: ci.Cursor
    args: list[str]
    in_lambda: bool
    host_key: tuple[str, int] | None


def note_helper(st: _State, fn: ci.Cursor, callee: ci.Cursor, parts: list[str | None], args: list[str]) -> bool:
    """Record `fn` as a launch helper when the launched expression is one of its parameters."""
    ref = next((d.referenced for d in callee.walk_preorder() if d.kind == K.DECL_REF_EXPR), None)
    if ref is None or ref.kind != K.PARM_DECL:
        return False
    params = [p for p in fn.get_children() if p.kind == K.PARM_DECL]
    names = [p.spelling for p in params]
    if ref.spelling not in names:
        return False
    last = _COMMENT.sub(" ", _src(st.ctx, params[-1])) if params else ""
    pack = names[-1] if "..." in last else None
    helper = Helper(names.index(ref.spelling), names, pack, (list(parts) + [None] * 4)[:4], list(args))
    st.helpers.setdefault(fn.spelling, []).append(helper)
    return True


_PLAIN_REF = re.compile(r"^[&(\s]*(?:\(\s*void\s*\*\s*\)\s*)?&?\s*(?:[\w:]*::)?(\w+)\s*(?:<.*>)?\s*\)?\s*$", re.S)


def note_call(st: _State, fn: ci.Cursor, path: str, call: ci.Cursor, children: list[ci.Cursor], in_lambda: bool,
              host_key: tuple[str, int] | None) -> None:
    """Keep a call that passes a kernel itself as an argument until every helper of the TU is known."""
    if not subtree_flags(st, call) & REF:
        return  # (its arguments are in its subtree: none names a kernel)
    name = call.spelling
    if not name and children:  # a dependent call (in a template) has no spelling: its callee's overload set does
        name = next((d.spelling for d in children[0].walk_preorder() if d.kind == K.OVERLOADED_DECL_REF), "")
    if not name:
        return
    args = list(call.get_arguments()) or children[1:]
    found = [(i, refs) for i, a in enumerate(args) if len(refs := _kernel_refs(st, a)) == 1]
    if not found:
        return  # no argument names one kernel: the arguments' texts are not needed (most calls)
    texts = [_src(st.ctx, a) for a in args]
    for i, refs in found:
        m = _PLAIN_REF.match(_COMMENT.sub(" ", texts[i]))
        if len(refs) == 1 and m and m.group(1) == refs[0][1].spelling:
            ref, target = refs[0]
            st.helper_calls.append(HelperCall(fn, path, call, name, i, ref, target, texts, in_lambda, host_key))


def finish_helpers(st: _State) -> None:
    """A launch for each call of a known helper with a kernel where the helper launches its parameter."""
    for hc in st.helper_calls:
        helper = next((h for h in st.helpers.get(hc.name, ()) if h.index == hc.index and (
            len(hc.args) == len(h.params) or (h.pack and len(hc.args) >= len(h.params) - 1))), None)
        kkey = _kernel_key(st, hc.target)
        if helper is None or kkey is None:
            continue
        fixed = helper.params[:-1] if helper.pack else helper.params
        mapping = {p: f"({a.strip()})" for p, a in zip(fixed, hc.args, strict=False)}
        rest = hc.args[len(fixed):]
        args: list[str] = []
        for a in helper.args:
            if helper.pack and re.fullmatch(rf"\s*{re.escape(helper.pack)}\s*\.\.\.\s*", a):
                args += [r.strip() for r in rest]
            else:
                args.append(substitute(a, mapping))
        cfg = [substitute(c, mapping) if c else None for c in helper.config]
        written = _written_args(st, hc.ref, st.kernels[kkey].name)
        concrete = _template_args(hc.target) if hc.target.kind == K.FUNCTION_DECL else None
        launch = Launch(kernel=kkey, launcher=hc.fn.spelling, path=hc.path, line=hc.call.location.line,
                        kind="<<<>>>", config={"grid": cfg[0], "block": cfg[1], "shared_mem": cfg[2] or "0",
                                               "stream": cfg[3] or "0"},
                        args=args, template_args=concrete, template_args_text=written[0] if written else [],
                        in_lambda=hc.in_lambda, host_template=hc.host_key)
        _record_aliases(st, launch, hc.ref)
        _values(st.ctx, launch, hc.fn, hc.call)
        st.consumed.add(hc.ref.hash)
        st.launches.append(launch)

