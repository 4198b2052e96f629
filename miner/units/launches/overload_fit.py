"""Which overload of a host function template a dependent call can reach, by its arguments' types: a call in a
host template names its whole overload set, and same-length lists differ in their parameters' types
(`reduce(Grid &out, Red red, Post post, cudaStream_t s)` beside `reduce(Red red, Pre pre, Post post, Grid &out)`).
Deduction by position alone took the overload a compiler never picks, and pushed a functor into the wrong
template parameter: the kernel's instantiation then called a unary functor with two arguments.

Three rules, each one the compiler's own:
- too few arguments for the parameters without a default (`too_few`);
- a non-const lvalue reference to a class binds only an lvalue of that class (or one derived from it): an
  argument of pointer or arithmetic type cannot bind to it, nor can a class argument bind to a pointer
  parameter unless the class converts (`ill_typed`);
- an argument whose type is the caller's own template parameter (`red`, of type `Red`) can bind to such a
  reference only where that parameter is the class: the caller's instantiations decide (`reference_binds`,
  checked where the call is propagated, `class_ok`)."""

from __future__ import annotations

import re

import clang.cindex as ci

from miner.units.closure import TUContext
from miner.units.launches.text import _src

K = ci.CursorKind
T = ci.TypeKind

# Canonical type kinds that are no class and never one derived from a class.
_SCALAR = {T.POINTER, T.BOOL, T.CHAR_U, T.UCHAR, T.CHAR16, T.CHAR32, T.USHORT, T.UINT, T.ULONG, T.ULONGLONG,
           T.CHAR_S, T.SCHAR, T.WCHAR, T.SHORT, T.INT, T.LONG, T.LONGLONG, T.FLOAT, T.DOUBLE, T.LONGDOUBLE,
           T.NULLPTR, T.ENUM}


def _class_of_reference(parm: ci.Cursor) -> ci.Cursor | None:
    """The class declaration a non-const lvalue reference parameter (`Grid &out`) refers to, else None."""
    t = parm.type
    if t.kind != T.LVALUEREFERENCE:
        return None
    pointee = t.get_pointee()
    if pointee.is_const_qualified():
        return None
    canon = pointee.get_canonical()
    if canon.kind != T.RECORD:
        return None
    decl = canon.get_declaration()
    return decl if decl.kind in (K.CLASS_DECL, K.STRUCT_DECL) else None


def _converts(record: ci.Cursor) -> bool:
    """Whether a class declares a conversion function (`operator float *()`): it may reach a pointer parameter."""
    d = record.get_definition() or record
    return any(c.kind == K.CONVERSION_FUNCTION for c in d.get_children())


def ill_typed(arg: ci.Cursor, parm: ci.Cursor) -> bool:
    """Whether an argument of a known type cannot reach a parameter of a known type: a pointer or a number for a
    `Class &`, a class without conversions for a pointer."""
    a = arg.type.get_canonical()
    if a.kind == T.LVALUEREFERENCE:
        a = a.get_pointee().get_canonical()
    if _class_of_reference(parm) is not None:
        return a.kind in _SCALAR
    p = parm.type.get_canonical()
    if p.kind == T.POINTER and a.kind == T.RECORD:
        decl = a.get_declaration()
        return decl.kind in (K.CLASS_DECL, K.STRUCT_DECL) and not _converts(decl)
    return False


def reference_binds(arg: ci.Cursor, parm: ci.Cursor, caller_params: list[str]) -> tuple[str, str] | None:
    """(the caller's template parameter, the class's name) where `arg` is a variable of the caller typed by one of
    its template type parameters (`Red red`) and `parm` a non-const lvalue reference to a class: the call reaches
    this overload only for instantiations whose parameter is that class."""
    record = _class_of_reference(parm)
    if record is None:
        return None
    inner = arg
    while inner.kind == K.UNEXPOSED_EXPR:  # (an implicit cast or the like around the reference)
        kids = list(inner.get_children())
        if len(kids) != 1:
            return None
        inner = kids[0]
    if inner.kind != K.DECL_REF_EXPR or inner.referenced is None:
        return None
    var = inner.referenced
    if var.kind not in (K.PARM_DECL, K.VAR_DECL):
        return None
    spelled = re.sub(r"\b(const|volatile)\b|[&\s]", "", var.type.spelling)
    if spelled not in caller_params:
        return None
    return spelled, record.spelling


def too_few(ctx: TUContext, parms: list[ci.Cursor], nargs: int) -> bool:
    """Whether `nargs` arguments leave a parameter without a default (nor a pack) unfilled: a call of another
    overload of the name, one with fewer parameters, whose arguments would be mapped onto this one wrongly."""
    return nargs < sum(1 for p in parms if "=" not in (text := _src(ctx, p)) and "..." not in text)


def bare_class(text: str) -> str:
    """`ns::Sum<float>` -> `Sum`: the class name a resolved argument spells, without scope or arguments."""
    return re.sub(r"<.*", "", text.strip()).rsplit("::", 1)[-1].strip()


def class_ok(binds: list[tuple[str, str]], mapping: dict[str, str], derived: set[str]) -> bool:
    """Whether an instantiation of the caller (`mapping`: its parameters' arguments) lets each argument bind to
    the reference it meets: the parameter's class is the reference's own, or one of the classes the translation
    unit derives from some class (`derived`: not told apart further)."""
    for param, cls in binds:
        value = mapping.get(param)
        if value is None:
            continue
        got = bare_class(value)
        if got != cls and got not in derived:
            return False
    return True


def derived_classes(tu: ci.TranslationUnit) -> set[str]:
    """Names of the classes the translation unit's own code declares with a base: an argument of such a class may
    bind to a reference to its base, which `class_ok` does not tell apart."""
    out: set[str] = set()

    def walk(c: ci.Cursor) -> None:
        for ch in c.get_children():
            if ch.kind in (K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL):
                walk(ch)
            elif ch.kind in (K.CLASS_DECL, K.STRUCT_DECL, K.CLASS_TEMPLATE,
                             K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION):
                if any(g.kind == K.CXX_BASE_SPECIFIER for g in ch.get_children()):
                    out.add(ch.spelling)
                walk(ch)
    walk(tu.cursor)
    return out
