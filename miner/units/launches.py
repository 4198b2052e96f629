"""Launch sites and kernel references: `<<<...>>>`, cudaLaunchKernel*, hipLaunchKernelGGL, (void*) tables,
function pointers, and every other place a kernel is named with template arguments.

Besides launches, `find` returns *references*: a kernel named with template arguments outside a launch
(`spec = {(void*)k<T, 1, 24>, ...}`, `auto f = k<float, 256>;`, a file-scope table). Each is a `Launch`
with kind `reference` and an empty configuration; they fix instantiations even when the launch itself
goes through a pointer we cannot follow.

Template arguments that depend on an enclosing host function template are resolved through the host
call graph, as many levels up as it takes (A<T> calls B<T, 4>, which launches k<T, N>): every concrete
instantiation of a host template (calls with resolved arguments, `template R f<double>(...)` lines,
AT_DISPATCH lambdas) is pushed down through the dependent calls it makes until nothing changes.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass, field
from typing import Any

import clang.cindex as ci

from miner.frontends.common import split_top
from miner.units.closure import TUContext
from miner.units.instantiations import eval_int

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
_NUM = re.compile(r"^\s*\(?\s*(\d+)[uUlL]*\s*\)?\s*$")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
MAX_HOST_INSTANTIATIONS = 64  # per host template: a bound on the call-graph fixed point
_MAX_DEPTH = 8  # propagation rounds through the host call graph
# A host template's parameter with no known instantiation: the same defaults as a kernel's (documented
# in instantiations._default); kept here as text so the two modules need not import each other.
_DEFAULT_TYPE = "float"


@dataclass
class Launch:
    kernel: tuple[str, int]  # (path, offset of the kernel's name)
    launcher: str
    path: str
    line: int
    kind: str  # `<<<>>>`, the launch API or macro, or `reference`
    config: dict[str, str | None] = field(default_factory=dict)
    values: dict[str, int] = field(default_factory=dict)
    definitions: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    template_args: list[str] | None = None  # concrete, when the AST resolved them
    template_args_text: list[str] = field(default_factory=list)  # as written
    in_lambda: bool = False
    host_template: tuple[str, int] | None = None  # enclosing host function template
    host_params: list[str] = field(default_factory=list)
    # One argument list per known instantiation of the enclosing host template(s).
    host_template_args: list[list[str]] = field(default_factory=list)
    # The host template's instantiations were unknown: its parameters took their defaults.
    host_defaulted: bool = False
    # Written arguments with macros, enumerators and aliases replaced (no host parameters left).
    resolved_text: list[str] | None = None
    # One argument list per element of the list a generic lambda is dispatched over
    # (`for_each<list_c<int, 64, 32>>([&](auto Tile) { k<T, Tile><<<...>>>(); })`).
    dispatch_args: list[list[str]] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- text


def _join_tokens(tokens: list[str]) -> str:
    out = ""
    for t in tokens:
        if out and (out[-1].isalnum() or out[-1] == "_") and (t[0].isalnum() or t[0] == "_"):
            out += " "
        elif t == "," or (out.endswith(",")):
            out += "" if t == "," else " "
        out += t
    return out


def _src(ctx: TUContext, c: ci.Cursor) -> str:
    """Source text of an expression; inside a macro argument (AT_DISPATCH lambdas) from tokens."""
    e = c.extent
    if (e.start.file is None or e.end.file is None or e.start.file.name != e.end.file.name
            or e.end.offset <= e.start.offset):
        return _join_tokens([t.spelling for t in c.get_tokens()])
    data = ctx.read(ctx.norm(e.start.file.name))
    return data[e.start.offset:e.end.offset].decode("utf-8", "replace")


def _angle_args(text: str, start: int) -> tuple[list[str], int] | None:
    """Top-level arguments of the `<...>` opening at `start`, and the offset after its `>`. Inside
    parentheses `<` and `>` compare (`!!(W > 8)`); outside they nest template argument lists."""
    angle, paren = 0, 0
    args, cur = [], ""
    for i in range(start, len(text)):
        ch = text[i]
        if ch in "([{":
            paren += 1
        elif ch in ")]}":
            paren -= 1
        elif paren == 0 and ch == "<" and text[i + 1:i + 2] != "<" and text[i - 1:i] != "<":
            angle += 1
            if angle == 1:
                continue
        elif paren == 0 and ch == ">" and text[i + 1:i + 2] != ">" and text[i - 1:i] != ">":
            angle -= 1
            if angle == 0:
                args.append(cur.strip())
                return [a for a in args if a] if any(args) else [], i + 1
        if ch == "," and angle == 1 and paren == 0:
            args.append(cur.strip())
            cur = ""
        elif angle >= 1:
            cur += ch
    return None


def _named_args(text: str, name: str) -> list[list[str]]:
    """Argument lists of every `name<...>` in `text` (a kernel named with template arguments)."""
    out = []
    text = _COMMENT.sub(" ", text)
    for m in re.finditer(rf"(?<![\w.]){re.escape(name)}\s*<(?!<)", text):
        got = _angle_args(text, m.end() - 1)
        if got and got[0] not in out:
            out.append(got[0])
    return out


def substitute(text: str, mapping: dict[str, str]) -> str:
    """Replace whole identifiers in one pass (a value that names another parameter stays as it is)."""
    if not mapping:
        return text
    pat = re.compile(r"\b(" + "|".join(re.escape(k) for k in sorted(mapping, key=len, reverse=True)) + r")\b")
    return pat.sub(lambda m: mapping[m.group(1)], text)


def _macro_params(body: str) -> tuple[list[str], str] | None:
    """A function-like macro's parameters and replacement text (its body starts with `(`)."""
    if not body.startswith("("):
        return None
    close = body.find(")")
    if close < 0:
        return None
    params = [p.strip() for p in body[1:close].split(",") if p.strip()]
    return params, body[close + 1:].replace("\\\n", " ")


def _invocation(text: str) -> tuple[str, list[str]] | None:
    m = re.match(r"\s*([A-Za-z_]\w*)\s*\(", text)
    if not m:
        return None
    depth, start = 0, m.end() - 1
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return m.group(1), split_top(text[start + 1:i], angle=False)
    return None


def expand_macros(ctx: TUContext, text: str, depth: int = 4) -> str:
    """One source text with the repo's function-like macro invocations in it expanded (textually,
    `depth` levels): the kernel named inside `CASE(48, 1, ...)` gets the invocation's arguments."""
    text = _COMMENT.sub(" ", text)
    for _ in range(depth):
        changed = False
        out, pos = "", 0
        for m in _IDENT.finditer(text):
            if m.start() < pos or m.group(0) not in ctx.macros:
                continue
            macro = ctx.macros[m.group(0)][-1]
            mp = _macro_params(macro.body)
            if mp is None:
                continue
            inv = _invocation(text[m.start():])
            if inv is None:
                continue
            params, body = mp
            args = inv[1]
            mapping: dict[str, str] = {}
            for i, p in enumerate(params):
                if p == "...":
                    mapping["__VA_ARGS__"] = ", ".join(args[i:])
                    break
                mapping[p] = args[i] if i < len(args) else ""
            end = m.start() + _invocation_length(text[m.start():])
            out += text[pos:m.start()] + " " + substitute(body.replace("##", ""), mapping) + " "
            pos = end
            changed = True
        text = out + text[pos:]
        if not changed:
            break
    return text


def _invocation_length(text: str) -> int:
    depth = 0
    for i, ch in enumerate(text):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(text)


# ------------------------------------------------------------------------------------------ the AST


def _template_args(ref: ci.Cursor) -> list[str] | None:
    n = ref.get_num_template_arguments()
    if n <= 0:
        return None
    out = []
    # libclang gives integral arguments no type: the template's parameter says bool or unsigned.
    ptypes = [p.type.get_canonical().spelling if p.kind == K.TEMPLATE_NON_TYPE_PARAMETER else ""
              for p in _tparams(_primary(ref))]
    for i in range(n):
        try:
            kind = ref.get_template_argument_kind(i)
        except ValueError:  # kinds newer than the Python bindings know (packs, ...)
            return None
        if kind == ci.TemplateArgumentKind.INTEGRAL:
            t = ptypes[i] if i < len(ptypes) else ""
            if t == "bool":
                out.append("true" if ref.get_template_argument_unsigned_value(i) else "false")
            elif t.startswith("unsigned"):
                out.append(str(ref.get_template_argument_unsigned_value(i)))
            else:
                out.append(str(ref.get_template_argument_value(i)))
        elif kind == ci.TemplateArgumentKind.TYPE:
            out.append(ref.get_template_argument_type(i).get_canonical().spelling)
        else:
            return None
    return out


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


def _default_for(p: ci.Cursor) -> str:
    if p.kind == K.TEMPLATE_TYPE_PARAMETER:
        return "int" if re.search(r"(?i)index|idx|^I$|int", p.spelling) else _DEFAULT_TYPE
    t = p.type.get_canonical().spelling
    return "false" if t == "bool" else "128"


_DEPENDENT_DECLS = (K.TEMPLATE_TYPE_PARAMETER, K.TEMPLATE_NON_TYPE_PARAMETER, K.TEMPLATE_TEMPLATE_PARAMETER)


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
            out[d.spelling] = (d.underlying_typedef_type.spelling if member else "") if dependent else canon.spelling
            if dependent and member:  # unknown unless they are the host's own parameters (checked in _finish)
                for p in _tparams(d.semantic_parent):
                    out.setdefault(p.spelling, "")
        elif d.kind in (K.VAR_DECL, K.PARM_DECL) and ch.kind == K.DECL_REF_EXPR:
            t = d.type.get_canonical()
            if lists and d.kind == K.PARM_DECL and _key(ctx, d) in lists:
                out[d.spelling] = d.spelling
                if found is not None:
                    found[d.spelling] = lists[_key(ctx, d)]  # type: ignore[index]
            elif "type-parameter" in t.spelling or t.kind in (ci.TypeKind.UNEXPOSED, ci.TypeKind.AUTO):
                out[d.spelling] = ""
            elif d.kind == K.VAR_DECL and t.is_const_qualified() and d.semantic_parent is not None \
                    and d.semantic_parent.kind in _FUNCS:
                init = [x for x in d.get_children() if x.kind not in (K.TYPE_REF, K.NAMESPACE_REF)]
                if init:
                    text = _src(ctx, init[-1])
                    inner = _aliases(ctx, init[-1], lists, found) if d.spelling not in text else {}
                    out[d.spelling] = "" if "" in inner.values() else f"({substitute(text, inner)})"
    return out


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
            while cur in self.ctx.macros and seen < 8:
                body = self.ctx.macros[cur][-1].body.strip()
                if body.startswith("("):
                    break
                cur, seen = body, seen + 1
                if not _IDENT.fullmatch(cur):
                    return f"({cur})" if re.search(r"[-+*/%<>&|^!~?]", cur) else (cur or name)
            return self.consts.get(cur, cur)
        return _IDENT.sub(one, text)


# ------------------------------------------------------------------------------------------- walking


@dataclass
class _DepCall:
    caller: tuple[str, int]
    caller_params: list[str]
    callee: tuple[str, int]
    args_text: list[str]


@dataclass
class _State:
    ctx: TUContext
    kernels: dict[tuple[str, int], Any]
    resolver: _Resolver
    launches: list[Launch] = field(default_factory=list)
    refs: list[Launch] = field(default_factory=list)
    concrete: dict[tuple[str, int], list[list[str]]] = field(default_factory=dict)
    dep_calls: list[_DepCall] = field(default_factory=list)
    host_params: dict[tuple[str, int], list[ci.Cursor]] = field(default_factory=dict)
    consumed: set[int] = field(default_factory=set)
    seen_refs: set[tuple[Any, ...]] = field(default_factory=set)
    names: set[str] = field(default_factory=set)  # kernel names: a cheap test before resolving a reference
    bodies: dict[tuple[str, int], tuple[list[tuple[ci.Cursor, ci.Cursor]], dict[int, str]]] = field(
        default_factory=dict)  # a function's kernel references and the fields they are stored into
    # Generic lambda parameters (by declaration) dispatched over a list of values, and those values.
    lists: dict[tuple[str, int], list[str]] = field(default_factory=dict)
    scanned: set[int] = field(default_factory=set)  # scopes searched for explicit class instantiations
    # Partial specializations of each class template: (key, written arguments, parameter names).
    partials: dict[tuple[str, int], list[tuple[tuple[str, int], list[str], list[str]]]] = field(
        default_factory=dict)


def _definitions(st: _State) -> list[tuple[str, ci.Cursor]]:
    """Function definitions (in-class methods included) and namespace-scope variables of the input
    files, from the closure's index of them (a walk of the whole TU costs more than everything else).
    `template R f<double>(...);` lines among them are recorded as host template instantiations."""
    ctx = st.ctx
    out: list[tuple[str, ci.Cursor]] = []
    for path, lst in ctx.pieces.items():
        for _s, _e, _piece, c in lst:
            stack = [c]
            while stack:
                d = stack.pop()
                kind = d.kind
                if kind in _FUNCS:
                    if d.is_definition():
                        out.append((path, d))
                    elif kind == K.FUNCTION_DECL and d.get_num_template_arguments() > 0:
                        key = _key(ctx, _primary(d))
                        args = _template_args(d)
                        if key and args and key not in st.kernels:
                            _add(st.concrete, key, args)
                elif kind == K.VAR_DECL:
                    out.append((path, d))
                elif kind in (K.STRUCT_DECL, K.CLASS_DECL) and d.get_num_template_arguments() > 0:
                    _class_instance(st, d, explicit=True)
                    _sibling_instances(st, d)
                    stack.extend(d.get_children())
                elif kind in _SCOPES:
                    if kind == K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION:
                        _partial(st, d)
                    stack.extend(d.get_children())
    out.sort(key=lambda pc: (pc[0], pc[1].extent.start.offset))
    return out


def _class_instance(st: _State, d: ci.Cursor, explicit: bool = False) -> None:
    """A class template specialization with concrete arguments (`template struct W<Gpu, float, 2>;`, a
    variable of type `W<Gpu, float, 2>`): an instantiation of the class template, for its methods.
    An explicit full specialization (`template <> struct W<float> {...}`, with members of its own) is not."""
    prim = _primary(d)
    if prim.kind == K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION:  # the arguments are the primary's
        prim = _primary(prim)
    if prim.kind != K.CLASS_TEMPLATE:
        return
    if explicit and any(ch.kind in _FUNCS or ch.kind in (K.FIELD_DECL, K.CXX_BASE_SPECIFIER)
                        for ch in d.get_children()):
        return
    key = _key(st.ctx, prim)
    args = _template_args(d)
    if key is not None and key[0] in st.ctx.inputs and args:
        _add(st.concrete, key, args)


def _sibling_instances(st: _State, d: ci.Cursor) -> None:
    """Every explicit instantiation beside `d` in its scope: several written by one macro invocation
    share its extent, and the closure's index keeps only the first of those."""
    parent = d.lexical_parent or d.semantic_parent
    if parent is None or parent.hash in st.scanned:
        return
    st.scanned.add(parent.hash)
    for c in parent.get_children():
        if c.kind in (K.STRUCT_DECL, K.CLASS_DECL) and c.location.file is not None \
                and st.ctx.norm(c.location.file.name) in st.ctx.inputs and c.get_num_template_arguments() > 0:
            _class_instance(st, c, explicit=True)


def _partial(st: _State, d: ci.Cursor) -> None:
    """A partial specialization's written arguments (`struct W<Gpu, T, N>`), to match instantiations."""
    prim = _primary(d)
    key, pkey = _key(st.ctx, prim), _key(st.ctx, d)
    if key is None or pkey is None or prim.kind != K.CLASS_TEMPLATE:
        return
    text = _COMMENT.sub(" ", _src(st.ctx, d))
    m = re.search(rf"\b(?:struct|class)\s+(?:[\w:]*::)?{re.escape(d.spelling)}\s*<", text)
    got = _angle_args(text, m.end() - 1) if m else None
    if got:
        st.partials.setdefault(key, []).append((pkey, got[0], [p.spelling for p in _tparams(d)]))


def _match_partial(pattern: list[str], params: list[str], args: list[str]) -> list[str] | None:
    """The partial specialization's arguments for one instantiation of its primary template, or None
    when it does not match (a written non-parameter argument is compared by its last name)."""
    if len(pattern) != len(args):
        return None
    bound: dict[str, str] = {}
    for pat, arg in zip(pattern, args, strict=True):
        pat = pat.strip()
        if pat in params:
            if bound.setdefault(pat, arg) != arg:
                return None
        else:
            a, b = _IDENT.findall(pat), _IDENT.findall(arg)
            if not a or not b or a[-1] != b[-1]:
                if eval_int(pat) is None or eval_int(pat) != eval_int(arg):
                    return None
    if any(p not in bound for p in params):
        return None
    return [bound[p] for p in params]


def _host_of(st: _State, path: str, fn: ci.Cursor) -> tuple[str, int] | None:
    """The host template a definition's dependent names come from: itself (a function template), or
    the class template (or partial specialization) whose method it is, in-class or out-of-line."""
    if fn.kind == K.FUNCTION_TEMPLATE:
        st.host_params[(path, fn.location.offset)] = _tparams(fn)
        return path, fn.location.offset
    parent = fn.semantic_parent
    if fn.kind in _FUNCS and parent is not None and parent.kind in _CLASS_TEMPLATES:
        key = _key(st.ctx, parent)
        if key is not None:
            # Out of line, the definition names the parameters itself (possibly differently).
            st.host_params.setdefault(key, _tparams(fn) or _tparams(parent))
        return key
    return None


def find(ctx: TUContext, kernels: dict[tuple[str, int], Any]
         ) -> tuple[list[Launch], dict[tuple[str, int], list[list[str]]]]:
    """Launches and references of known kernels, and concrete instantiations of host templates."""
    st = _State(ctx, kernels, _Resolver(ctx))
    st.names = {k.name for k in kernels.values()}
    for path, d in _definitions(st):
        if d.kind == K.VAR_DECL:
            _walk(st, d, path, None)
        elif (path, d.location.offset) not in kernels:
            _walk(st, d, path, d)
    insts = _propagate(st)
    for rec in st.launches + st.refs:
        _finish(st, rec, insts)
    return _merge(st.launches) + _merge(st.refs), insts


def _merge(records: list[Launch]) -> list[Launch]:
    """One record per (kernel, kind, line, concrete arguments): downstream, records are told apart by
    path, line and `template_args` alone, so two references on one line (`b ? (void*)k<T, 8> :
    (void*)k<T, 4>`) become one whose `host_template_args` hold both."""
    out: dict[tuple[Any, ...], Launch] = {}
    for rec in records:
        sig = (rec.kernel, rec.kind, rec.path, rec.line, tuple(rec.template_args or ()))
        first = out.setdefault(sig, rec)
        if first is rec:
            continue
        extra = rec.host_template_args + ([rec.resolved_text] if rec.resolved_text else [])
        if first.resolved_text and rec.kind == "reference":
            first.host_template_args.append(first.resolved_text)
            first.resolved_text = None
        for args in extra:
            if args not in first.host_template_args:
                first.host_template_args.append(args)
        first.host_defaulted = first.host_defaulted and rec.host_defaulted
        for args in rec.dispatch_args:
            if args not in first.dispatch_args:
                first.dispatch_args.append(args)
    return list(out.values())


def _add(table: dict[tuple[str, int], list[list[str]]], key: tuple[str, int], args: list[str]) -> bool:
    lst = table.setdefault(key, [])
    if args in lst or len(lst) >= MAX_HOST_INSTANTIATIONS:
        return False
    lst.append(args)
    return True


def _walk(st: _State, root: ci.Cursor, path: str, fn: ci.Cursor | None) -> None:
    host_key = _host_of(st, path, fn) if fn is not None else None
    stack: list[tuple[ci.Cursor, bool]] = [(root, False)]
    while stack:
        c, in_lambda = stack.pop()
        kind = c.kind
        if kind == K.CALL_EXPR:
            children = list(c.get_children())
            cfg = next((x for x in children if x.kind == K.CALL_EXPR
                        and x.spelling == "__cudaPushCallConfiguration"), None)
            ref = c.referenced
            _lambda_lists(st, c, children)
            if cfg is not None:
                _chevron(st, fn or root, path, c, children, cfg, in_lambda, host_key)
            elif ref is not None and ref.spelling in _API and fn is not None:
                _api_launch(st, fn, path, c, children, ref.spelling, in_lambda, host_key)
            elif fn is not None:
                _host_call(st, c, children, ref, host_key)
        elif kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF) and (
                c.spelling in st.names or (not c.spelling and kind == K.DECL_REF_EXPR)):
            _reference(st, root if fn is None else fn, path, c, in_lambda, host_key)
            if c.kind == K.DECL_REF_EXPR and c.referenced is not None and c.referenced.kind == K.OVERLOADED_DECL_REF:
                continue  # its OVERLOADED_DECL_REF child names the same thing
        elif kind in _TYPED_USES:
            decl = c.type.get_canonical().get_declaration()
            if decl.kind in (K.STRUCT_DECL, K.CLASS_DECL) and decl.get_num_template_arguments() > 0:
                _class_instance(st, decl)
        children_ = list(c.get_children())
        if kind == K.IF_STMT:
            children_ = _taken_branches(c, children_)
        # Reversed onto the stack: records come out in source order (and dispatch order).
        stack.extend((ch, in_lambda or kind == K.LAMBDA_EXPR) for ch in reversed(children_))


_EVAL: Any = None


def _const_value(c: ci.Cursor) -> int | None:
    """clang's value of a constant integer expression (`sizeof(scalar_t) <= 4` once scalar_t is bound)."""
    global _EVAL
    if _EVAL is None:
        try:
            lib = ci.conf.lib
            ev, kind, val, disp = (lib.clang_Cursor_Evaluate, lib.clang_EvalResult_getKind,
                                   lib.clang_EvalResult_getAsLongLong, lib.clang_EvalResult_dispose)
            ev.argtypes, ev.restype = [ci.Cursor], ctypes.c_void_p
            kind.argtypes, kind.restype = [ctypes.c_void_p], ctypes.c_int
            val.argtypes, val.restype = [ctypes.c_void_p], ctypes.c_longlong
            disp.argtypes, disp.restype = [ctypes.c_void_p], None
            _EVAL = (ev, kind, val, disp)
        except AttributeError:
            _EVAL = False
    if not _EVAL:
        return None
    ev, kind, val, disp = _EVAL
    res = ev(c)
    if not res:
        return None
    try:
        return int(val(res)) if kind(res) == 1 else None  # CXEval_Int
    finally:
        disp(res)


def _taken_branches(c: ci.Cursor, children: list[ci.Cursor]) -> list[ci.Cursor]:
    """An `if constexpr` whose condition clang can evaluate keeps only the branch the compiler keeps:
    launches in the discarded one are never instantiated (MMCV excludes double this way)."""
    if len(children) not in (2, 3):
        return children
    toks = []
    for t in c.get_tokens():
        toks.append(t.spelling)
        if len(toks) == 2:
            break
    if toks != ["if", "constexpr"]:
        return children
    v = _const_value(children[0])
    if v is None:
        return children
    return [children[0], children[1]] if v else children[:1] + children[2:]


def _kernel_refs(st: _State, c: ci.Cursor) -> list[tuple[ci.Cursor, ci.Cursor]]:
    """(reference expression, kernel declaration) pairs in `c`'s subtree."""
    out = []
    seen: set[tuple[Any, ...]] = set()
    for d in c.walk_preorder():
        if d.kind not in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF):
            continue
        for t in _targets(st.ctx, d):
            key = _kernel_key(st, t)
            # A DECL_REF_EXPR and its OVERLOADED_DECL_REF child name the same kernel at the same place.
            sig = (key, d.location.offset)
            if key is not None and sig not in seen:
                seen.add(sig)
                out.append((d, t))
    return out


def _kernel_key(st: _State, t: ci.Cursor) -> tuple[str, int] | None:
    key = _key(st.ctx, t)
    if key in st.kernels:
        return key
    key = _key(st.ctx, _primary(t))
    return key if key in st.kernels else None


def _written_args(st: _State, ref: ci.Cursor, name: str) -> list[list[str]]:
    """Template argument lists written at a reference; through the macro invocation it sits in."""
    text = _src(st.ctx, ref)
    stripped = _COMMENT.sub(" ", text).strip()
    if re.match(rf"(?:[\w:]*::)?{re.escape(name)}\b", stripped):
        m = re.match(rf"(?:[\w:]*::)?{re.escape(name)}\s*<(?!<)", stripped)
        got = _angle_args(stripped, m.end() - 1) if m else None
        return [got[0]] if got else []
    return _named_args(expand_macros(st.ctx, text), name)


def _reference(st: _State, fn: ci.Cursor, path: str, c: ci.Cursor, in_lambda: bool,
               host_key: tuple[str, int] | None) -> None:
    if c.hash in st.consumed:
        return
    for t in _targets(st.ctx, c):
        kkey = _kernel_key(st, t)
        if kkey is None:
            continue
        concrete = _template_args(t) if t.kind == K.FUNCTION_DECL else None
        written = _written_args(st, c, st.kernels[kkey].name)
        if not concrete and not written:
            continue  # a kernel named without template arguments fixes no instantiation
        for texts in written or [[]]:
            sig = (kkey, c.location.line, c.location.column, tuple(texts), tuple(concrete or ()))
            if sig in st.seen_refs:
                continue
            st.seen_refs.add(sig)
            rec = Launch(kernel=kkey, launcher=fn.spelling, path=path, line=c.location.line, kind="reference",
                         config={"grid": None, "block": None, "shared_mem": None, "stream": None},
                         template_args=concrete, template_args_text=texts, in_lambda=in_lambda,
                         host_template=host_key)
            _record_aliases(st, rec, c)
            st.refs.append(rec)


def _host_call(st: _State, call: ci.Cursor, children: list[ci.Cursor], ref: ci.Cursor | None,
               host_key: tuple[str, int] | None) -> None:
    """A call of a host function template: concrete arguments, or arguments written in terms of the
    enclosing host template's parameters."""
    ctx = st.ctx
    if ref is not None and ref.kind in _FUNCS and ref.location.file is not None:
        args = _template_args(ref)
        if args:
            key = _key(ctx, _primary(ref))
            if key is not None and ctx.norm(ref.location.file.name) in ctx.inputs:
                _add(st.concrete, key, args)
            return
    if host_key is None or not children:
        return
    callee = children[0]
    for d in callee.walk_preorder():
        if d.kind not in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF):
            continue
        for t in _targets(ctx, d):
            if t.kind != K.FUNCTION_TEMPLATE or _key(ctx, t) in st.kernels:
                continue
            key = _key(ctx, t)
            if key is None or key[0] not in ctx.inputs:
                continue
            texts = _written_args(st, callee, t.spelling)
            if texts:
                params = [p.spelling for p in st.host_params.get(host_key, [])]
                alias = {k: v for k, v in _aliases(ctx, callee, st.lists).items() if v}
                st.dep_calls.append(_DepCall(host_key, params, key, [substitute(x, alias) for x in texts[0]]))
        break


_LIST_VALUE = re.compile(r"integral_constant<[^<>,]+,\s*\(?(-?\d+)[uUlL]*\)?\s*>")
_LIST_C = re.compile(r"\w+_c\s*<\s*(?:(?:unsigned|signed|long|short|std::size_t|size_t|int|bool)\s*)+,([^<>]*)>")


def _list_values(texts: list[str]) -> list[str]:
    """Values of a type list of integral constants (`list<integral_constant<int, 64>, ...>`, `list_c<int,
    64, 32>`), as spelled in the types named by a dispatch call."""
    for t in texts:
        vals = _LIST_VALUE.findall(t)
        if vals:
            return list(dict.fromkeys(vals))
    for t in texts:
        m = _LIST_C.search(t)
        if m:
            vals = [v.strip().rstrip("uUlL") for v in m.group(1).split(",")]
            if vals and all(re.fullmatch(r"-?\d+", v) for v in vals):
                return list(dict.fromkeys(vals))
    return []


def _lambda_lists(st: _State, call: ci.Cursor, children: list[ci.Cursor]) -> None:
    """A call that passes a generic lambda (`auto` parameter) and names a list of integral constants in
    its template arguments (`for_each<list_c<int, 64, 32>>([&](auto Tile) {...})`): the lambda runs once
    per value, so its parameter takes each of them."""
    lambdas = [x for a in children[1:] for x in a.walk_preorder() if x.kind == K.LAMBDA_EXPR]
    if not lambdas or not children:
        return
    parms = [p for lam in lambdas[:1] for p in lam.get_children() if p.kind == K.PARM_DECL
             and p.type.get_canonical().kind in (ci.TypeKind.UNEXPOSED, ci.TypeKind.AUTO)]
    if len(parms) != 1:
        return
    texts: list[str] = []
    ref = call.referenced
    if ref is not None and ref.kind in _FUNCS:
        for i in range(max(ref.get_num_template_arguments(), 0)):
            try:
                if ref.get_template_argument_kind(i) == ci.TemplateArgumentKind.TYPE:
                    texts.append(ref.get_template_argument_type(i).get_canonical().spelling)
            except ValueError:
                break
    for d in children[0].walk_preorder():  # the callee as written: `for_each<tiles_t>`
        if d.kind == K.TYPE_REF and d.referenced is not None:
            r = d.referenced
            if r.kind in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL):
                texts += [r.underlying_typedef_type.get_canonical().spelling, r.underlying_typedef_type.spelling]
            texts.append(d.type.get_canonical().spelling)
    texts.append(_src(st.ctx, children[0]))
    vals = _list_values(texts)
    key = _key(st.ctx, parms[0])
    if vals and key is not None:
        st.lists[key] = vals


def _record_aliases(st: _State, rec: Launch, ref: ci.Cursor) -> None:
    found: dict[str, list[str]] = {}
    rec._aliases = _aliases(st.ctx, ref, st.lists, found)  # type: ignore[attr-defined]
    rec._lists = found  # type: ignore[attr-defined]


def _propagate(st: _State) -> dict[tuple[str, int], list[list[str]]]:
    """Concrete instantiations of every host template, pushed through dependent calls to a fixed point.
    A class template's instantiations reach the partial specializations they match."""
    insts = {k: [list(a) for a in v] for k, v in st.concrete.items()}
    for key, parts in st.partials.items():
        for inst in list(insts.get(key, [])):
            for pkey, pattern, params in parts:
                args = _match_partial(pattern, params, inst)
                if args is not None:
                    _add(insts, pkey, args)
    for _ in range(_MAX_DEPTH):
        changed = False
        for dc in st.dep_calls:
            for inst in list(insts.get(dc.caller, [])):
                mapping = dict(zip(dc.caller_params, inst, strict=False))
                args = [st.resolver(substitute(t, mapping), set()) for t in dc.args_text]
                changed |= _add(insts, dc.callee, args)
        if not changed:
            break
    return insts


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


# ------------------------------------------------------------------------------------------ launches


def _resolve_value(ctx: TUContext, text: str, out: Launch, key: str) -> None:
    """Numeric value of a config expression through macros, and definitions of helpers it calls."""
    m = _NUM.match(text)
    if m:
        out.values[key] = int(m.group(1))
        return
    name = text.strip()
    seen = 0
    while name in ctx.macros and seen < 8:
        body = ctx.macros[name][0].body.strip()
        out.definitions[name] = f"#define {name} {body}".strip()
        m = _NUM.match(body)
        if m:
            out.values[key] = int(m.group(1))
            return
        name, seen = body, seen + 1
    fm = re.match(r"\s*([A-Za-z_]\w*)\s*\(", text)
    if fm:
        fname = fm.group(1)
        if fname in ctx.macros:
            out.definitions[fname] = "#define " + fname + ctx.macros[fname][0].body
        if groups := ctx.groups_named(fname):
            p = groups[-1][0][0]
            out.definitions[fname] = ctx.read(p.path)[p.start:p.end].decode("utf-8", "replace")
    for ident in re.findall(r"[A-Za-z_]\w*", text):
        if ident in ctx.macros and ident not in out.definitions:
            body = ctx.macros[ident][0].body.strip()
            out.definitions[ident] = f"#define {ident} {body}"


def _values(ctx: TUContext, launch: Launch) -> None:
    for key in ("grid", "block", "shared_mem"):
        if launch.config.get(key):
            _resolve_value(ctx, launch.config[key], launch, key)


def _through_variables(st: _State, fn: ci.Cursor, expr: ci.Cursor) -> list[tuple[ci.Cursor, ci.Cursor, dict]]:
    """Kernels that reach a launch through a variable: a function pointer or (void*) table initialized
    with them, a variable assigned from them, or assigned the result of a repo function whose body
    names them (`spec = choose_kernel<T>(p); cudaLaunchKernel(spec.kernel, ...)`). The third item maps
    that function's template parameters to the call's arguments."""
    ctx = st.ctx
    member = next((d.spelling for d in expr.walk_preorder() if d.kind == K.MEMBER_REF_EXPR), None)
    out: list[tuple[ci.Cursor, ci.Cursor, dict]] = []
    for d in expr.walk_preorder():
        v = d.referenced if d.kind == K.DECL_REF_EXPR else None
        if v is None or v.kind not in (K.VAR_DECL, K.PARM_DECL):
            continue
        sources = [v.get_definition() or v]
        for a in fn.walk_preorder():  # assignments to the variable in this function
            kids = _assignment(a)
            if kids and any(k.kind == K.DECL_REF_EXPR and k.referenced == v for k in kids[0].walk_preorder()):
                sources.append(kids[1])
        for src in sources:
            out += [(r, t, {}) for r, t in _kernel_refs(st, src)]
            for call in src.walk_preorder():
                if call.kind != K.CALL_EXPR or call.referenced is None or call.referenced.kind not in _FUNCS:
                    continue
                callee = call.referenced
                prim = _primary(callee)
                body = prim.get_definition() or prim
                bkey = _key(ctx, body)
                if bkey is None or bkey[0] not in ctx.inputs or bkey in st.kernels or not body.is_definition():
                    continue
                mapping = dict(zip([p.spelling for p in _tparams(body)], _template_args(callee) or [], strict=False))
                if bkey not in st.bodies:
                    st.bodies[bkey] = (_kernel_refs(st, body), _member_stores(body))
                refs, stores = st.bodies[bkey]
                if member:
                    picked = [rt for rt in refs if stores.get(rt[0].hash) in (member, None)]
                    refs = picked or refs
                out += [(r, t, mapping) for r, t in refs]
        if out:
            break
    return out


_BINOP: Any = None


def _assignment(c: ci.Cursor) -> list[ci.Cursor] | None:
    """[lhs, rhs] of `lhs = rhs` (built-in or a class's operator=), else None."""
    global _BINOP
    if c.kind == K.CALL_EXPR and c.spelling == "operator=":
        kids = list(c.get_children())
        return [kids[0], kids[-1]] if len(kids) >= 2 else None
    if c.kind != K.BINARY_OPERATOR:
        return None
    if _BINOP is None:
        try:
            fn = ci.conf.lib.clang_getCursorBinaryOperatorKind
            fn.argtypes, fn.restype = [ci.Cursor], ctypes.c_int
            sp = ci.conf.lib.clang_getBinaryOperatorKindSpelling
            sp.argtypes, sp.restype, sp.errcheck = [ctypes.c_int], ci._CXString, ci._CXString.from_result
            _BINOP = (fn, sp)
        except AttributeError:  # libclang older than 17: no operator kinds
            _BINOP = False
    if not _BINOP:
        return None
    if _BINOP[1](_BINOP[0](c)) != "=":
        return None
    kids = list(c.get_children())
    return kids if len(kids) == 2 else None


def _member_stores(body: ci.Cursor) -> dict[int, str]:
    """Kernel-reference cursor hash -> the struct field it is stored into (`s.exec = (void*)k<...>`)."""
    out: dict[int, str] = {}
    for a in body.walk_preorder():
        kids = _assignment(a)
        if kids and kids[0].kind == K.MEMBER_REF_EXPR:
            for d in kids[1].walk_preorder():
                out[d.hash] = kids[0].spelling
    return out


def _targets_of_launch(st: _State, direct: list[tuple[ci.Cursor, ci.Cursor]], fn: ci.Cursor, expr: ci.Cursor
                       ) -> list[tuple[ci.Cursor | None, ci.Cursor, bool]]:
    """(reference, kernel, arguments-belong-to-this-launch) for each kernel a launch expression reaches.
    Through a variable, a kernel reached by several references gets one launch record without template
    arguments: those references fix the instantiations (kind `reference`), not the launch."""
    for r, _t in direct:
        st.consumed.add(r.hash)
    if direct:
        return [(r, t, True) for r, t in direct]
    groups: dict[tuple[str, int], list[tuple[ci.Cursor, ci.Cursor, dict]]] = {}
    for r, t, mapping in _through_variables(st, fn, expr):
        groups.setdefault(_kernel_key(st, t), []).append((r, t, mapping))
    out: list[tuple[ci.Cursor | None, ci.Cursor, bool]] = []
    for lst in groups.values():
        r, t, mapping = lst[0]
        own = len(lst) == 1 and not mapping
        if own:
            st.consumed.add(r.hash)
        out.append((r, t, own))
    return out


def _chevron(st: _State, fn: ci.Cursor, path: str, call: ci.Cursor, children: list[ci.Cursor], cfg: ci.Cursor,
             in_lambda: bool, host_key: tuple[str, int] | None) -> None:
    ctx = st.ctx
    callee = children[0]
    ref = call.referenced
    found = _targets_of_launch(st, _kernel_refs(st, callee), fn, callee)
    if not found:
        return
    cfg_text = _src(ctx, cfg).strip()
    kind = "<<<>>>"
    args_text: list[str] | None = None
    if cfg_text.startswith("<<<"):
        cfg_text = cfg_text[3:-3] if cfg_text.endswith(">>>") else cfg_text[3:]
        parts: list[str | None] = list(split_top(cfg_text))
        args_text = [_src(ctx, a) for a in children if a is not callee and a is not cfg]
    else:  # inside a launch macro: the configuration comes from its expansion
        parts, args_text, kind = _macro_launch(ctx, cfg_text)
    parts = parts + [None] * 4
    for r, t, own in found:
        kkey = _kernel_key(st, t)
        concrete = written = None
        if own:
            written = _written_args(st, r, st.kernels[kkey].name) if r is not None else []
            concrete = _template_args(t) if t.kind == K.FUNCTION_DECL else None
            if concrete is None and ref is not None and _kernel_key(st, ref) == kkey:
                concrete = _template_args(ref)
            if concrete is None and not written and t.kind == K.FUNCTION_TEMPLATE:
                host = [p.spelling for p in st.host_params.get(host_key, [])] if host_key else []
                deduced = _deduce(t, [a for a in children if a is not callee and a is not cfg], host)
                written = [deduced] if deduced else written
        launch = Launch(kernel=kkey, launcher=fn.spelling, path=path, line=call.location.line, kind=kind,
                        config={"grid": parts[0], "block": parts[1], "shared_mem": parts[2] or "0",
                                "stream": parts[3] or "0"},
                        args=args_text or [], template_args=concrete, template_args_text=written[0] if written else [],
                        in_lambda=in_lambda, host_template=host_key)
        if own and r is not None:
            _record_aliases(st, launch, r)
        _values(ctx, launch)
        st.launches.append(launch)


_CV = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict)\b|&")


def _type_text(t: ci.Type, host: list[str]) -> str:
    """A type as text: canonical, with a host template's parameters by name (`type-parameter-0-1` -> Tg)."""
    text = t.get_canonical().spelling

    def name(m: re.Match[str]) -> str:
        depth, index = int(m.group(1)), int(m.group(2))
        return host[index] if depth == 0 and index < len(host) else m.group(0)
    return re.sub(r"type-parameter-(\d+)-(\d+)", name, text)


def _deduce(kernel: ci.Cursor, args: list[ci.Cursor], host: list[str]) -> list[str] | None:
    """Template arguments a launch without `<...>` deduces from its arguments' types: the kernel's
    parameter types with its template parameters as holes, matched against the argument types
    (`adamw_kernel3<<<...>>>(params, grads)` inside `adamw_update<Tp, Tg>` gives <Tp, Tg>)."""
    tps = [p.spelling for p in _tparams(kernel)]
    parms = [c for c in kernel.get_children() if c.kind == K.PARM_DECL]
    if not tps or not parms:
        return None
    bound: dict[str, str] = {}
    for parm, arg in zip(parms, args, strict=False):
        pat = " ".join(_CV.sub(" ", parm.type.spelling).split())
        act = " ".join(_CV.sub(" ", _type_text(arg.type, host)).split())
        if not pat or not act or "type-parameter" in act:
            continue
        holes = [n for n in tps if re.search(rf"\b{re.escape(n)}\b", pat)]
        if not holes:
            continue
        rx, used = "", set()
        for piece in re.split(r"\b(" + "|".join(re.escape(n) for n in holes) + r")\b", pat):
            if piece in holes:
                rx += f"(?P={piece})" if piece in used else f"(?P<{piece}>.+?)"
                used.add(piece)
            else:
                rx += re.escape(piece)
        m = re.fullmatch(rx, act)
        if not m:
            continue
        for n in holes:
            if bound.setdefault(n, m.group(n).strip()) != m.group(n).strip():
                return None  # two arguments disagree: leave it to a better source
    out = []
    for n in tps:  # trailing parameters may have defaults (filled by instantiations.plan)
        if n not in bound:
            break
        out.append(bound[n])
    return out or None


def _macro_launch(ctx: TUContext, text: str) -> tuple[list[str | None], list[str] | None, str]:
    """Configuration and arguments of a launch written through a macro (`hipLaunchKernelGGL(k, g, b,
    smem, stream, args...)`, a repo's `LAUNCH_1D(k, n, stream, ...)`)."""
    inv = _invocation(_COMMENT.sub(" ", text))
    if inv is None:
        return [text], None, "<<<>>>"
    name, args = inv
    if name in _MACRO_LAUNCHES:
        return [*(a or None for a in args[1:5])], args[5:], name
    expanded = expand_macros(ctx, text)
    m = re.search(r"<<<(.*?)>>>\s*\(", expanded, re.S)
    if not m:
        return [text], None, "<<<>>>"
    inv2 = _invocation("f" + expanded[m.end() - 1:])
    return [p.strip() for p in split_top(m.group(1))], [a.strip() for a in inv2[1]] if inv2 else None, "<<<>>>"


def _api_launch(st: _State, fn: ci.Cursor, path: str, call: ci.Cursor, children: list[ci.Cursor], api: str,
                in_lambda: bool, host_key: tuple[str, int] | None) -> None:
    ctx = st.ctx
    args = children[1:]
    idx = _API[api]
    if len(args) <= idx:
        return
    found = _targets_of_launch(st, _kernel_refs(st, args[idx]), fn, args[idx])
    texts = [_src(ctx, a) for a in args]
    seen: set[tuple[Any, ...]] = set()
    for r, t, own in found:
        kkey = _kernel_key(st, t)
        written = _written_args(st, r, st.kernels[kkey].name) if own and r is not None else []
        concrete = _template_args(t) if own and t.kind == K.FUNCTION_DECL else None
        sig = (kkey, tuple(concrete or ()), tuple(written[0]) if written else ())
        if sig in seen:
            continue
        seen.add(sig)
        cfg: dict[str, str | None] = {
            "grid": texts[1] if len(texts) > 1 else None, "block": texts[2] if len(texts) > 2 else None,
            "shared_mem": texts[4] if len(texts) > 4 else "0", "stream": texts[5] if len(texts) > 5 else "0"}
        if api in ("cudaLaunchKernelEx", "cudaLaunchKernelExC"):
            cfg = {"grid": None, "block": None, "shared_mem": None, "stream": None, "config": texts[0]}
        launch = Launch(kernel=kkey, launcher=fn.spelling, path=path, line=call.location.line, kind=api, config=cfg,
                        args=texts[idx + 1:] if api == "cudaLaunchKernelEx" else [texts[3]] if len(texts) > 3 else [],
                        template_args=concrete, template_args_text=written[0] if written else [],
                        in_lambda=in_lambda, host_template=host_key)
        if own and r is not None:
            _record_aliases(st, launch, r)
        _values(ctx, launch)
        st.launches.append(launch)
