"""Launches through a kernel pointer of a named pointer type that travels out of sight (issue 14):

    typedef void (*Scorer)(int *, int);
    Scorer pick = use_fast ? fast_score : NULL;      // chosen in one function,
    run_threads(..., pick);                          // handed on, stored in a context struct,
    Scorer f = ctx->scorer;  f<<<BLOCKS, THREADS>>>(...);   // and launched by a worker thread's function

The value's path (parameters, a struct member, a thread's argument) is not followed. Where a `<<<>>>` launch's
callee is a variable or member of a function-pointer typedef that nothing else resolves, the kernels this
translation unit stores in a variable or member of that same typedef (an assignment or an initializer) are the
ones it launches, each with the launch's configuration; `config["through"]` says that the kernel was matched by the
pointer type, not by its path.
"""

from __future__ import annotations

from dataclasses import dataclass

import clang.cindex as ci

from miner.units.launches.chosen import _is_assignment, _strip
from miner.units.launches.cursors import _template_args
from miner.units.launches.record import K, Launch
from miner.units.launches.state import _kernel_key, _kernel_refs, _State, _written_args
from miner.units.launches.values import _values


@dataclass
class _TypedLaunch:
    typedef: str  # the pointer typedef's key
    spelled: str  # its name
    fn: ci.Cursor
    path: str
    call: ci.Cursor
    parts: list[str | None]
    args: list[str]
    kind: str
    in_lambda: bool
    host_key: tuple[str, int] | None


def _pointer_typedef(t: ci.Type) -> ci.Cursor | None:
    """The typedef (or alias) declaration a type names, where it is a pointer to a function."""
    decl = t.get_declaration()
    if decl is None or decl.kind not in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL):
        return None
    canon = t.get_canonical()
    if canon.kind != ci.TypeKind.POINTER or canon.get_pointee().kind not in (ci.TypeKind.FUNCTIONPROTO,
                                                                              ci.TypeKind.FUNCTIONNOPROTO):
        return None
    return decl


def _key(decl: ci.Cursor) -> str:
    return decl.get_usr() or decl.spelling


def note_typed_store(st: _State, c: ci.Cursor, children: list[ci.Cursor]) -> None:
    """During the walk: a kernel stored in a variable or member of a function-pointer typedef
    (`f = k;`, `Scorer f = cond ? k : NULL;`)."""
    if c.kind == K.VAR_DECL:
        decl = _pointer_typedef(c.type)
        init = [ch for ch in children if ch.kind not in (K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_REF)]
        target = init[-1] if init else None
    else:
        if len(children) != 2 or not _is_assignment(c):
            return
        decl = _pointer_typedef(_strip(children[0]).type) or _pointer_typedef(children[0].type)
        target = children[1]
    if decl is None or target is None:
        return
    for ref, t in _kernel_refs(st, target):
        st.typed_kernels.setdefault(_key(decl), []).append((ref, t))


def note_typed_launch(st: _State, fn: ci.Cursor, path: str, call: ci.Cursor, callee: ci.Cursor,
                      parts: list[str | None], args: list[str], kind: str, in_lambda: bool,
                      host_key: tuple[str, int] | None) -> bool:
    """A `<<<>>>` launch of a variable or member of a function-pointer typedef that names no kernel here: kept
    until the walk has seen every store of that type. True when kept."""
    c = _strip(callee)
    if c.kind not in (K.DECL_REF_EXPR, K.MEMBER_REF_EXPR) or c.referenced is None:
        return False
    decl = _pointer_typedef(c.referenced.type)
    if decl is None:
        return False
    st.typed_launches.append(_TypedLaunch(_key(decl), decl.spelling, fn, path, call, list(parts), list(args), kind,
                                          in_lambda, host_key))
    return True


def finish_typed(st: _State) -> None:
    """After the walk: a launch of each kernel stored in the typedef for each kept launch through it."""
    for tl in st.typed_launches:
        seen: set[tuple[object, ...]] = set()
        for ref, t in st.typed_kernels.get(tl.typedef, ()):
            kkey = _kernel_key(st, t)
            if kkey is None:
                continue
            written = _written_args(st, ref, st.kernels[kkey].name)
            concrete = _template_args(t) if t.kind == K.FUNCTION_DECL else None
            sig = (kkey, tuple(concrete or ()), tuple(written[0]) if written else ())
            if sig in seen:
                continue
            seen.add(sig)
            p = tl.parts
            launch = Launch(kernel=kkey, launcher=tl.fn.spelling, path=tl.path, line=tl.call.location.line,
                            kind=tl.kind, config={"grid": p[0], "block": p[1], "shared_mem": p[2] or "0",
                                                  "stream": p[3] or "0",
                                                  "through": f"a {tl.spelled} pointer: a kernel this translation "
                                                             f"unit stores in a {tl.spelled}"},
                            args=list(tl.args), template_args=concrete,
                            template_args_text=written[0] if written else [], in_lambda=tl.in_lambda,
                            host_template=tl.host_key)
            _values(st.ctx, launch, tl.fn, tl.call)
            st.consumed.add(ref.hash)
            st.launches.append(launch)
