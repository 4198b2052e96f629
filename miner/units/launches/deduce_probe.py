"""A launch's template arguments deduced by the compiler, per instantiation of the class template it sits in.

`copy_diagonal<<<g, b>>>(A.values.raw(), out.raw(), n)` in a method of `LevelBase<C>`, with `Matrix<TConfig> &A`:
the argument types depend on the class's configuration (`Matrix<C>::values` is a `DeviceArray<typename
C::ValueType>`), the parse leaves them `<dependent type>`, and no written type deduces the kernel's `ValueType`.
The class-scope probe (`class_scope`) evaluates texts per instantiation of the class; here the text is the
deduction itself: a declaration with the kernel's template and function parameters that returns its template
arguments as a list,

    namespace ns { template <typename ValueType> ::__km_list<ValueType> __km_ded_0(const ValueType *, int); }

called with the launch's arguments, each local variable or parameter replaced by a value of its declared type
(`::__km_lval<const Matrix<TConfig> &>().values.raw()`, `this` by `&::__km_lval<LevelBase>()`), inside the probe
struct derived from the class's instantiation, where `TConfig` and the other member aliases are visible. The
compiler deduces as it does for the real launch; each position is read back from the list
(`typename ::__km_at<0, decltype(...)>::type`, a value parameter's through `::value`).
"""

from __future__ import annotations

from typing import Any

import clang.cindex as ci

from miner.units.closure import TUContext
from miner.units.closure.shims import _enclosing_namespaces
from miner.units.launches.cursors import _tparams
from miner.units.launches.record import K

# Declared once at the head of a probe that deduces (global namespace, names no project uses).
HELPERS = """template <class... KmT> struct __km_list {};
template <class KmT, KmT KmV> struct __km_v { static constexpr KmT value = KmV; };
template <int KmI, class KmL> struct __km_at;
template <class KmH, class... KmT> struct __km_at<0, __km_list<KmH, KmT...> > { typedef KmH type; };
template <int KmI, class KmH, class... KmT> struct __km_at<KmI, __km_list<KmH, KmT...> >
    : __km_at<KmI - 1, __km_list<KmT...> > {};
template <class KmT> KmT &__km_lval() noexcept;"""

NAME = "@KM_DEDUCE@"  # the declaration's name, given when the probe is written (one per launch)
_FUNCTIONS = (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR, K.LAMBDA_EXPR)


def prepare(ctx: TUContext, kernel: ci.Cursor, args: list[ci.Cursor], cls: ci.Cursor | None, given: list[str]
            ) -> dict[str, Any] | None:
    """The deduction's declaration and call as text (the name still `NAME`), None where it cannot be written:
    a pack or template template parameter, an argument count that differs, a local whose type is not written
    (`auto`, a lambda), an argument from a macro expansion."""
    tps = _tparams(kernel)
    parms = [c for c in kernel.get_children() if c.kind == K.PARM_DECL]
    if not tps or len(parms) != len(args) or len(given) >= len(tps):
        return None
    heads, listed = [], []
    for p in tps:
        if p.kind == K.TEMPLATE_TYPE_PARAMETER:
            head, item = f"typename {p.spelling}", p.spelling
        elif p.kind == K.TEMPLATE_NON_TYPE_PARAMETER:
            head, item = f"{p.type.spelling} {p.spelling}", f"::__km_v<decltype({p.spelling}), {p.spelling}>"
        else:
            return None
        toks = [t.spelling for t in p.get_tokens()]
        if "..." in toks or not p.spelling:
            return None
        if "=" in toks:  # a default decides what no argument deduces, as at the real launch
            head += " = " + " ".join(toks[toks.index("=") + 1:])
        heads.append(head)
        listed.append(item)
    params = []
    for i, parm in enumerate(parms):
        t = parm.type.spelling
        if not t or "<dependent" in t or "(lambda" in t:
            return None
        params.append(f"{t} km_p{i}")
    exprs = []
    for a in args:
        e = _expression(ctx, a, cls)
        if e is None:
            return None
        exprs.append(e)
    ns = _enclosing_namespaces(kernel)
    head = "".join(f"namespace {n} {{ " if n else "namespace { " for n in ns)
    decl = (f"{head}template <{', '.join(heads)}> ::__km_list<{', '.join(listed)}> {NAME}({', '.join(params)});"
            + " }" * len(ns))
    qual = "".join(f"::{n}" for n in ns if n) + f"::{NAME}"
    explicit = f"<{', '.join(given)}>" if given else ""
    return {"decl": decl, "call": f"{qual}{explicit}({', '.join(exprs)})"}


def texts(info: dict[str, Any], kinds: list[str]) -> list[str]:
    """One probe text per kernel template parameter: the deduced list's element there."""
    out = []
    for i, kind in enumerate(kinds):
        at = f"::__km_at<{i}, decltype({info['call']})>::type"
        out.append(f"{at}::value" if kind == "value" else f"typename {at}")
    return out


def _expression(ctx: TUContext, arg: ci.Cursor, cls: ci.Cursor | None) -> str | None:
    """The argument's text with each local variable or parameter of the launching function replaced by a value of
    its declared type, and `this` by a pointer to the class (its injected name, visible in the probe struct
    derived from the class): a text that means the same at class scope, for `decltype`."""
    e = arg.extent
    if e.start.file is None or e.end.file is None or e.start.file.name != e.end.file.name \
            or e.end.offset <= e.start.offset:
        return None
    start, end = e.start.offset, e.end.offset
    text = ctx.read(ctx.norm(e.start.file.name))[start:end].decode("utf-8", "replace")
    reps: list[tuple[int, int, str]] = []
    for c in arg.walk_preorder():
        ce = c.extent
        if c.kind == K.CXX_THIS_EXPR:
            toks = [t.spelling for t in c.get_tokens()]
            if toks != ["this"]:
                continue  # (an implicit `this`: the member named alone means the same in the probe)
            if cls is None or cls.kind not in (K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION,
                                               K.CLASS_DECL, K.STRUCT_DECL) or not cls.spelling:
                return None
            reps.append((ce.start.offset, ce.end.offset, f"(&::__km_lval<{cls.spelling}>())"))
        elif c.kind == K.DECL_REF_EXPR and (d := c.referenced) is not None and d.kind in (K.PARM_DECL, K.VAR_DECL) \
                and d.semantic_parent is not None and d.semantic_parent.kind in _FUNCTIONS:
            t = " ".join(d.type.spelling.split())
            if not t or t in ("auto", "auto &", "const auto &") or "<dependent" in t or "(lambda" in t \
                    or c.spelling != d.spelling:
                return None
            reps.append((ce.start.offset, ce.end.offset, f"::__km_lval<{t}>()"))
    out, at = [], start
    for s, t_end, rep in sorted(reps):
        if s < at or t_end > end or t_end <= s:
            return None
        out.append(text[at - start:s - start])
        out.append(rep)
        at = t_end
    out.append(text[at - start:])
    return "".join(out)

