"""The AST side: declarations behind a reference, template parameters and arguments, type aliases,
and the resolver that reads constant values of enumerators and constexpr variables."""

from __future__ import annotations

import ctypes
import re
from typing import Any

import clang.cindex as ci

from miner import lazy_re
from miner.frontends.common import split_top
from miner.units.closure import TUContext
from miner.units.launches import value_spelling
from miner.units.launches.record import _CLASS_TEMPLATES, _COMMENT, _DEFAULT_TYPE, _FUNCS, _IDENT, _NUM, _TPARAMS, K
from miner.units.launches.text import _src, substitute


def _template_args(ref: ci.Cursor, as_written: list[str] | None = None) -> list[str] | None:
    """A specialization's template arguments as text; None where one cannot be spelled. libclang spells no
    declaration argument (a function, `act<float, relu<float>>`) nor a null pointer: with `as_written` (the
    arguments as the reference writes them) those take their written text."""
    n = ref.get_num_template_arguments()
    if n <= 0:
        return None
    out = []
    # libclang gives integral arguments no type: the template's parameter says bool or unsigned.
    ptypes = [p.type.get_canonical().spelling if p.kind == K.TEMPLATE_NON_TYPE_PARAMETER else ""
              for p in _tparams(_primary(ref))]
    written: list[str] | None = None
    for i in range(n):
        try:
            kind = ref.get_template_argument_kind(i)
        except ValueError:  # kinds newer than the Python bindings know (packs, templates, ...)
            if _raw_argument_kind(ref, i) == _TEMPLATE_KIND and ref.kind in (K.STRUCT_DECL, K.CLASS_DECL):
                # A template template argument (`template class Map<int, detail::pool_allocator>;`): libclang
                # names it nowhere but in the specialization's type, which spells it qualified.
                if written is None:
                    written = _type_args(value_spelling.type_spelling(ref.type))
                if written is None or i >= len(written):
                    return None
                out.append(written[i])
                continue
            if _raw_argument_kind(ref, i) == _TEMPLATE_KIND:
                # A function template's template template argument (`host_apply<ScaleEpilogue>(...)`): its type
                # spells nothing, the call's written text names it.
                if as_written is None or i >= len(as_written) or not as_written[i].strip():
                    return None
                out.append(as_written[i].strip())
                continue
            pack = _pack_elements(ref) if i == n - 1 else None
            if pack is None:
                return None
            out.append(pack)
            break
        if kind == ci.TemplateArgumentKind.INTEGRAL:
            t = ptypes[i] if i < len(ptypes) else ""
            if t == "bool":
                out.append("true" if ref.get_template_argument_unsigned_value(i) else "false")
            elif t.startswith("unsigned"):
                out.append(str(ref.get_template_argument_unsigned_value(i)))
            else:
                out.append(str(ref.get_template_argument_value(i)))
        elif kind == ci.TemplateArgumentKind.TYPE:
            out.append(value_spelling.type_spelling(ref.get_template_argument_type(i)))
        elif (kind in (ci.TemplateArgumentKind.DECLARATION, ci.TemplateArgumentKind.NULLPTR)
              and as_written is not None and i < len(as_written) and as_written[i].strip()):
            out.append(as_written[i].strip())
        else:
            return None
    return out


_TEMPLATE_KIND = 5  # CXTemplateArgumentKind_Template
_RAW_KIND: list[Any] = []


def _raw_argument_kind(ref: ci.Cursor, i: int) -> int:
    """The argument kind as libclang's number (the bindings' own wrapper raises on kinds it does not know)."""
    if not _RAW_KIND:
        fn = ci.conf.lib["clang_Cursor_getTemplateArgumentKind"]  # a fresh pointer, without the bindings' errcheck
        fn.argtypes, fn.restype = [ci.Cursor, ctypes.c_uint], ctypes.c_int
        _RAW_KIND.append(fn)
    return int(_RAW_KIND[0](ref, i))


def _type_args(spelling: str) -> list[str] | None:
    """The top-level template arguments of a type's spelling (`ns::W<int, ns::pool>` -> [`int`, `ns::pool`])."""
    start = spelling.find("<")
    if start < 0 or not spelling.rstrip().endswith(">"):
        return None
    return [a.strip() for a in split_top(spelling[start + 1:spelling.rstrip().rfind(">")])]


def _pack_elements(spec: ci.Cursor) -> str | None:
    """A function template specialization's trailing type pack (`template <int D, class T, class... Ts> void
    f(T op, Ts... args)` called as `f<2>(op, a, b)`), as its element types joined by `, `: read from the
    specialization's parameter types, where the pack's function parameter stands. None for anything else."""
    prim = _primary(spec)
    tps = _tparams(prim)
    if not tps or tps[-1].kind != K.TEMPLATE_TYPE_PARAMETER or not any(
            t.spelling == "..." for t in tps[-1].get_tokens()):
        return None
    parms = [c for c in prim.get_children() if c.kind == K.PARM_DECL]
    packed = [j for j, p in enumerate(parms) if p.type.spelling.replace(" ", "") in (
        f"{tps[-1].spelling}...", f"{tps[-1].spelling}&&...", f"const{tps[-1].spelling}&...")]
    if len(packed) != 1 or spec.type.kind != ci.TypeKind.FUNCTIONPROTO:
        return None
    types = list(spec.type.argument_types())
    j, after = packed[0], len(parms) - packed[0] - 1
    elems = types[j:len(types) - after]
    strip = re.compile(r"^const\s+|\s*&+$")
    return ", ".join(strip.sub("", t.get_canonical().spelling) for t in elems)


def _overloaded(c: ci.Cursor) -> list[ci.Cursor]:
    lib = ci.conf.lib
    return [lib.clang_getOverloadedDecl(c, i) for i in range(lib.clang_getNumOverloadedDecls(c))]


def _primary(d: ci.Cursor) -> ci.Cursor:
    """The template a specialization was instantiated from (itself otherwise)."""
    t = ci.conf.lib.clang_getSpecializedCursorTemplate(d)
    return t if t is not None and t.kind != K.INVALID_FILE and not t.kind.is_invalid() else d


def _key(ctx: TUContext, d: ci.Cursor | None) -> tuple[str, int] | None:
    if d is None or d.location.file is None:
        return None
    return ctx.norm(d.location.file.name), d.location.offset


def _targets(ctx: TUContext, c: ci.Cursor) -> list[ci.Cursor]:
    """Declarations a DECL_REF_EXPR / OVERLOADED_DECL_REF names (every overload of a dependent name)."""
    if c.kind == K.OVERLOADED_DECL_REF:
        return _overloaded(c)
    r = c.referenced
    if r is None:
        return []
    if r.kind == K.OVERLOADED_DECL_REF:
        return _overloaded(r)
    return [r]


def _tparams(fn: ci.Cursor) -> list[ci.Cursor]:
    return [ch for ch in fn.get_children() if ch.kind in _TPARAMS]


# as instantiations.INDEX_LIKE
_INDEX_LIKE = lazy_re.compile(r"(?i:index|idx)|^I$|int|INT|Int(?:eger|(?![a-z]))|Id(?![a-z])|(?<![A-Z])ID(?![A-Z])")


def _default_for(p: ci.Cursor) -> str:
    if p.kind == K.TEMPLATE_TYPE_PARAMETER:
        return "int" if _INDEX_LIKE.search(p.spelling) else _DEFAULT_TYPE
    canon = p.type.get_canonical()
    if canon.kind == ci.TypeKind.ENUM:
        # An enum parameter (`AMGX_VecPrecision t_vecPrec`) takes its enumeration's first value: 128 is often no
        # enumerator, and a trait specialized per enumerator (`PrecisionMap<(Prec)128>`) is then incomplete.
        first = next((c.enum_value for c in canon.get_declaration().get_children()
                      if c.kind == K.ENUM_CONSTANT_DECL), 0)
        return str(first)
    # A pointer parameter (`float (*OP)(float)`) takes no 128: nullptr suits every pointer (as instantiations).
    return "false" if canon.spelling == "bool" else "nullptr" if canon.kind == ci.TypeKind.POINTER else "128"


_DEPENDENT_DECLS = (K.TEMPLATE_TYPE_PARAMETER, K.TEMPLATE_NON_TYPE_PARAMETER, K.TEMPLATE_TEMPLATE_PARAMETER)


def _names_itself_only_as_template(name: str, underlying: str) -> bool:
    """Whether a local alias's text can stand for it: it names the alias's own name nowhere (`using value_type =
    typename Traits::value_type;` would name itself again), or only as the class template it specializes
    (`using Kernel_traits = Kernel_traits<T, kCols>;`: the alias hides the template's name after it)."""
    word = re.compile(rf"(?<![\w:])(?:\w+\s*::\s*)*{re.escape(name)}\b")
    hits = list(word.finditer(underlying))
    return not hits or (len(hits) == 1 and hits[0].start() == 0 and underlying[hits[0].end():].lstrip().startswith("<")
                        and not re.search(rf"::\s*{re.escape(name)}\b", underlying[hits[0].end():]))


def _with_sibling_aliases(d: ci.Cursor) -> str:
    """A class template's member alias as text in the class's parameters, with the other member aliases it names
    put in (`typedef Matrix<Config<dev, V, I>> Matrix_d; typedef typename Matrix_d::index_type IndexType;`):
    `Matrix_d` means nothing in the unit's explicit instantiation, the class's parameters are bound later."""
    siblings = {c.spelling: c.underlying_typedef_type.spelling for c in d.semantic_parent.get_children()
                if c.kind in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL) and c.spelling and c.spelling != d.spelling}
    siblings = {n: t for n, t in siblings.items() if _names_itself_only_as_template(n, t)}
    text = d.underlying_typedef_type.spelling
    if not siblings:
        return text
    # an unqualified name only: `Matrix_d::index_type` keeps its member name even where the class has an alias so
    # named; a few rounds for an alias naming another
    pat = re.compile(r"(?<![\w:.])(" + "|".join(re.escape(n) for n in sorted(siblings, key=len, reverse=True))
                     + r")\b")
    for _ in range(4):
        new = pat.sub(lambda m: siblings[m.group(1)], text)
        if new == text:
            break
        text = new
    return text


def _aliases(ctx: TUContext, ref: ci.Cursor, lists: dict[tuple[str, int], list[str]] | None = None,
             found: dict[str, list[str]] | None = None) -> dict[str, str]:
    """What the names in a written argument list stand for, where the AST knows: non-dependent type
    aliases (`scalar_t` inside an AT_DISPATCH lambda) and local constants (`constexpr int kTile = 64;`).
    Names that depend on a template parameter or a generic lambda's `auto` map to "" (unknown here),
    except a generic lambda parameter in `lists` (dispatched over a value list: it stays by name, for
    `_finish` to expand) and a class template's member alias (its text, in the class's parameters)."""
    out: dict[str, str] = {}
    for ch in ref.walk_preorder():
        d = ch.referenced if ch.kind in (K.TYPE_REF, K.DECL_REF_EXPR, K.TEMPLATE_REF) else None
        if d is None or d.spelling in out:
            continue
        if d.kind in _DEPENDENT_DECLS:
            out[d.spelling] = ""
        elif d.kind in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL):
            canon = d.underlying_typedef_type.get_canonical()
            dependent = canon.kind == ci.TypeKind.UNEXPOSED or "type-parameter" in canon.spelling
            member = d.semantic_parent is not None and d.semantic_parent.kind in _CLASS_TEMPLATES
            local = d.semantic_parent is not None and d.semantic_parent.kind in _FUNCS
            out[d.spelling] = ((_with_sibling_aliases(d) if member else "") if dependent
                              else value_spelling.type_spelling(canon))
            if dependent and member:  # unknown unless they are the host's own parameters (checked in _finish)
                for p in _tparams(d.semantic_parent):
                    out.setdefault(p.spelling, "")
            elif dependent and local and _names_itself_only_as_template(d.spelling, d.underlying_typedef_type.spelling):
                # `using Traits = ScanTraits<kThreads, kIsEven, T>;` in the launching function (or a lambda
                # of it): its text, with the constants it names put in; the host template's parameters
                # stay by name and anything else unknown is marked so (checked in _finish).
                inner = _aliases(ctx, d, lists, found)
                for n, v in inner.items():
                    out.setdefault(n, v)
                known = {n: v for n, v in inner.items() if v}
                out[d.spelling] = substitute(d.underlying_typedef_type.spelling, known)
        elif d.kind == K.ENUM_CONSTANT_DECL and ch.kind == K.DECL_REF_EXPR and _local_enumerator(d):
            # `enum { kDims = 3 };` in the launching function: the name means nothing where the unit
            # instantiates the kernel, its value does.
            out[d.spelling] = _enumerator_value(ctx, d)
        elif d.kind in (K.VAR_DECL, K.PARM_DECL) and ch.kind == K.DECL_REF_EXPR:
            t = d.type.get_canonical()
            if lists and d.kind == K.PARM_DECL and _key(ctx, d) in lists:
                out[d.spelling] = d.spelling
                if found is not None:
                    found[d.spelling] = lists[_key(ctx, d)]  # type: ignore[index]
            elif (d.kind == K.VAR_DECL and d.semantic_parent is not None and d.semantic_parent.kind in _FUNCS
                  and (obj := _constant_object(ctx, d)) is not None):
                # `constexpr Props<V> props;` in the launching host template, read as `props.rounds()` in a
                # constant's initializer: the value-initialized object, qualified, with the host's
                # parameters by name (bound per instantiation in _finish).
                inner = _aliases(ctx, d, lists, found)
                for n, v in inner.items():
                    out.setdefault(n, v)
                out[d.spelling] = f"({substitute(obj, {n: v for n, v in inner.items() if v})})"
            elif "type-parameter" in t.spelling or t.kind in (ci.TypeKind.UNEXPOSED, ci.TypeKind.AUTO):
                out[d.spelling] = ""
            elif d.kind == K.VAR_DECL and t.is_const_qualified() and d.semantic_parent is not None \
                    and d.semantic_parent.kind in _FUNCS and (v := _evaluated(d)) is not None:
                # The compiler's value: the initializer's text may be a whole macro invocation
                # (`constexpr static bool kIsEven = true;` written by a BOOL_SWITCH).
                out[d.spelling] = ("true" if v else "false") if t.kind == ci.TypeKind.BOOL else str(v)
            elif d.kind == K.VAR_DECL and t.is_const_qualified() and d.semantic_parent is not None \
                    and d.semantic_parent.kind in _FUNCS:
                init = [x for x in d.get_children() if x.kind not in (K.TYPE_REF, K.NAMESPACE_REF)]
                if init:
                    text = _src(ctx, init[-1])
                    # (`kVpt = Layout::kVpt`: a member of that name is not the variable itself)
                    inner = _aliases(ctx, init[-1], lists, found) if not re.search(
                        rf"(?<![\w:.]){re.escape(d.spelling)}\b", text) else {}
                    # `constexpr int kVec = Dh_MAX * sizeof(T) / 16;` in the launching host template: its
                    # text, with the host's parameters by name (bound per instantiation in _finish); names
                    # unknown here stay marked unknown, so the argument is given up only when one is used.
                    for n, v in inner.items():
                        out.setdefault(n, v)
                    out[d.spelling] = f"({substitute(text, {n: v for n, v in inner.items() if v})})"
    return out


def _local_enumerator(d: ci.Cursor) -> bool:
    """An enumerator of an enumeration declared in a function's body (a host template's `enum { D = 3 };`)."""
    enum = d.semantic_parent
    parent = enum.semantic_parent if enum is not None else None
    return parent is not None and parent.kind in _FUNCS


def _enumerator_value(ctx: TUContext, d: ci.Cursor) -> str:
    """An enumerator's value as clang evaluates its initializer (libclang gives an enumeration inside a template's
    body the value 0 for each), else the initializer's text; one more than the one before where it has none."""
    value = ""
    for e in d.semantic_parent.get_children():
        if e.kind != K.ENUM_CONSTANT_DECL:
            continue
        init = list(e.get_children())
        if init:
            v = _evaluated(init[-1])
            value = str(v) if v is not None else f"({_src(ctx, init[-1])})"
        else:
            value = "0" if not value else str(int(value) + 1) if value.lstrip("-").isdigit() else f"({value} + 1)"
        if e == d:
            break
    return value


def _constant_object(ctx: TUContext, d: ci.Cursor) -> str | None:
    """`Props<V>{}` for a local `constexpr Props<V> props;` (or `props{}` / `props = {}`) of a class type that
    depends on the host's parameters, its template qualified from the global scope; else None."""
    if not re.match(r"\s*(?:static\s+)?constexpr\b", _src(ctx, d)):
        return None
    init = [x for x in d.get_children() if x.kind not in (K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_REF)
            and not (x.kind == K.DECL_REF_EXPR and x.extent.end.offset <= d.location.offset)]
    if any(re.sub(r"[\s{}()=]", "", _src(ctx, x)) for x in init):
        return None  # an initializer with arguments: its value is not the default one
    ref = next((x for x in d.get_children() if x.kind in (K.TEMPLATE_REF, K.TYPE_REF)), None)
    if ref is None or ref.referenced is None or ref.referenced.kind not in (*_CLASS_TEMPLATES, K.STRUCT_DECL,
                                                                            K.CLASS_DECL):
        return None
    written = _src(ctx, d)[:max(0, d.location.offset - d.extent.start.offset)]
    written = re.sub(r"^\s*(?:static\s+)?constexpr\s+(?:const\s+)?", "", written).strip()
    if not written.startswith(ref.spelling.split("<", 1)[0].split("::")[-1]) and "::" not in written:
        return None
    chain, parent = [], ref.referenced.semantic_parent
    while parent is not None and parent.kind == K.NAMESPACE:
        chain.insert(0, parent.spelling)
        parent = parent.semantic_parent
    name = ref.referenced.spelling
    if "::" not in written.split("<", 1)[0] and chain:
        written = "::".join(chain) + "::" + written
    return f"{written}{{}}" if written.split("<", 1)[0].endswith(name) else None


def _evaluated(d: ci.Cursor) -> int | None:
    """The integer value of a constant variable as clang evaluates it, or None."""
    lib = ci.conf.lib
    if not hasattr(lib, "clang_Cursor_Evaluate"):
        return None
    fn = lib.clang_Cursor_Evaluate
    if fn.restype is not ctypes.c_void_p:
        fn.argtypes, fn.restype = [ci.Cursor], ctypes.c_void_p
        lib.clang_EvalResult_getKind.argtypes, lib.clang_EvalResult_getKind.restype = [ctypes.c_void_p], ctypes.c_int
        lib.clang_EvalResult_getAsLongLong.argtypes = [ctypes.c_void_p]
        lib.clang_EvalResult_getAsLongLong.restype = ctypes.c_longlong
        lib.clang_EvalResult_dispose.argtypes, lib.clang_EvalResult_dispose.restype = [ctypes.c_void_p], None
    res = fn(d)
    if not res:
        return None
    try:
        return int(lib.clang_EvalResult_getAsLongLong(res)) if lib.clang_EvalResult_getKind(res) == 1 else None
    finally:
        lib.clang_EvalResult_dispose(res)


_QUALIFIED = lazy_re.compile(r"(?<![\w:])(?:[A-Za-z_]\w*\s*::\s*)+([A-Za-z_]\w*)\b(?!\s*[(<:])")


class _Resolver:
    """Identifiers in template arguments that are constants: macros, enumerators, constexpr values."""

    def __init__(self, ctx: TUContext) -> None:
        self.ctx = ctx
        self.consts: dict[str, str] = {}
        for lst in ctx.pieces.values():
            for _s, _e, piece, c in lst:
                if piece.kind == "ENUM_DECL":
                    for e in c.get_children():
                        if e.kind == K.ENUM_CONSTANT_DECL:
                            self.consts.setdefault(e.spelling, str(e.enum_value))
                elif piece.kind == "VAR_DECL" and c.type.is_const_qualified():
                    lits = [t.spelling for t in c.get_tokens()]
                    if "=" in lits and len(lits) >= 2 and _NUM.match(lits[-2] if lits[-1] == ";" else lits[-1]):
                        self.consts.setdefault(c.spelling, (lits[-2] if lits[-1] == ";" else lits[-1]).rstrip("uUlL"))

    def __call__(self, text: str, keep: set[str]) -> str:
        def one(m: re.Match[str]) -> str:
            name = m.group(0)
            if name in keep:
                return name
            seen = 0
            cur = name
            while (defs := self.ctx.active_defs(cur)) and seen < 8:
                # (`#define CHANNELS 3 // Default 3, RGB`: the comment is no part of the value; kept, the
                # template argument `(3 // Default 3, RGB)` commented out the rest of the unit's line)
                body = _COMMENT.sub(" ", defs[-1].body).strip()
                if body.startswith("("):
                    break
                cur, seen = body, seen + 1
                if not _IDENT.fullmatch(cur):
                    return f"({cur})" if re.search(r"[-+*/%<>&|^!~?]", cur) else (cur or name)
            return self.consts.get(cur, cur)

        def qualified(m: re.Match[str]) -> str:
            # `Mode::Accumulate` (an enum class's enumerator, a namespace's constant) is one value: the
            # qualifier goes with the name, or `Mode::1` would be left behind.
            name = m.group(1)
            return self.consts[name] if name in self.consts and m.group(0).split("::")[0].strip() not in keep \
                else m.group(0)
        text = _QUALIFIED.sub(qualified, text)
        return _IDENT.sub(one, text)


def qualify_namespaces(ref: ci.Cursor, written: list[str]) -> list[str]:
    """Template arguments as written at a launch (`k<cuda::device_type<T>>` in `namespace proj::ops`, where
    `cuda::` is `proj::cuda`), with each namespace qualifier that the launch's scope completes spelled in
    full: the unit writes its explicit instantiation in the kernel's namespace, where `cuda::` would be the
    toolkit's `::cuda`. The namespaces come from the reference's own NAMESPACE_REF cursors."""
    full: dict[str, str] = {}
    for c in ref.walk_preorder():
        ns = c.referenced if c.kind == K.NAMESPACE_REF else None
        if ns is None or ns.kind != K.NAMESPACE:
            continue
        chain: list[str] = []
        p: ci.Cursor | None = ns
        while p is not None and p.kind == K.NAMESPACE:
            chain.append(p.spelling)
            p = p.semantic_parent
        path = "::".join(reversed(chain))
        if path != c.spelling and all(chain):
            full.setdefault(c.spelling, path)
    if not full:
        return written
    pat = re.compile(r"(?<![\w:])(" + "|".join(re.escape(n) for n in full) + r")::")
    return [pat.sub(lambda m: full[m.group(1)] + "::", a) for a in written]
