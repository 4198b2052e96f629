"""`__device__` lambdas passed to host function templates that launch a kernel over them
(`for_each_gpu(stream, n, [x] __device__ (size_t i) {...})` ending in `for_each_kernel<F><<<...>>>(n, fun)`).

A lambda's closure type has no name a unit can spell, so such kernels used to keep an inferred `float` for
`F` and failed to build (`fun(i)` on a float). The lambda is rewritten as a functor struct of its own: each
capture a member of the captured variable's type, its parameters, attributes and body those of `operator()`
(`const` unless `mutable`), a template over the enclosing host template's parameters it names. The struct's
name stands for the closure type in the host template's arguments and so in the kernel's instantiation; the
unit defines the struct after the kernel (its body's names come with the closure, `closure.compute`'s
`extra` roots). A lambda that captures `this`, takes `auto` parameters or is host-only is left alone.

Calls of function templates that deduce their arguments (no `<...>` written) are followed as host-template
chains here too: the callee's parameter types are matched against the arguments' (a lambda's is its
struct's name, `std::forward<F>(fun)`'s is `F`), so the struct reaches the function that launches.
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass

import clang.cindex as ci

from miner import lazy_re
from miner.units.closure.shims import _enclosing_namespaces
from miner.units.launches import overload_fit, value_spelling
from miner.units.launches.cursors import _key, _primary, _targets, _tparams
from miner.units.launches.record import K
from miner.units.launches.state import _add, _DepCall, _State, _written_args
from miner.units.launches.text import _src

_FORWARD = lazy_re.compile(r"^\s*(?:::)?std\s*::\s*(?:forward\s*<\s*([^<>]+?)\s*>|move)\s*\(\s*(\w+)\s*\)\s*$")
_CLASSES = {K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE, K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION}
_LOCAL_SCOPES = {K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.CONSTRUCTOR, K.DESTRUCTOR,
                 K.LAMBDA_EXPR}
_ATTRS = {"__device__", "__host__", "__forceinline__", "__noinline__"}


@dataclass
class Functor:
    """A struct standing for one lambda's closure type: its text, the lambda (a closure root) and where."""

    name: str
    text: str
    cursor: ci.Cursor
    namespaces: tuple[str, ...]
    path: str
    line: int


def functors(ctx: object) -> dict[str, Functor]:
    """The TU's functor structs by name (kept on the TU context: the closure step reads them)."""
    return ctx.__dict__.setdefault("_functors", {})


def redeclared(ctx: object) -> set[tuple[str, int]]:
    """Class member aliases the functor structs declare again: the closure does not take their class for them."""
    return ctx.__dict__.setdefault("_functor_skip", set())


def functor_arg(st: _State, lam: ci.Cursor, host_key: tuple[str, int] | None) -> str | None:
    """The template argument naming `lam`'s functor struct (`ns::km_lambda_ops_7<T>`), made on first use."""
    ctx = st.ctx
    if lam.location.file is None:
        return None
    path = ctx.norm(lam.location.file.name)
    name = f"km_lambda_{re.sub(r'[^A-Za-z0-9]', '_', os.path.splitext(os.path.basename(path))[0])}_" \
           f"{lam.location.line}_{lam.location.column}"
    made = functors(ctx)
    if name not in made:
        text = _struct(st, lam, name, host_key)
        if text is None:
            return None
        made[name] = Functor(name, text[0], lam, _enclosing_namespaces(lam), path, lam.location.line)
        made[name].params = text[1]  # type: ignore[attr-defined]
    f = made[name]
    qual = "".join(f"{n}::" for n in f.namespaces if n)
    used = getattr(f, "params", [])
    return qual + name + (f"<{', '.join(used)}>" if used else "")


def _struct(st: _State, lam: ci.Cursor, name: str, host_key: tuple[str, int] | None
            ) -> tuple[str, list[str]] | None:
    if any(c.kind == K.CXX_THIS_EXPR for c in lam.walk_preorder()):
        return None  # members of an enclosing object: not a closure a struct of values can stand for
    text = _src(st.ctx, lam)
    m = re.match(r"\s*\[", text)
    if not m:
        text = _expanded_lambda(st.ctx, lam) or ""
        m = re.match(r"\s*\[", text)
    if not m:
        return None
    end = _balanced(text, m.end() - 1, "[", "]")
    paren = text.find("(", end)
    brace = text.find("{", end)
    if end < 0 or paren < 0 or brace < 0 or paren > brace:
        return None
    attrs = _attributes(st.ctx, text[end + 1:paren].split())
    if "__device__" not in attrs or not set(attrs) <= _ATTRS:
        return None
    close = _balanced(text, paren, "(", ")")
    params = text[paren + 1:close]
    spec = text[close + 1:brace]
    if close < 0 or re.search(r"\bauto\b", params) or re.search(r"\bthis\b", text[:end]):
        return None
    ret = ""
    if "->" in spec:
        ret = spec.split("->", 1)[1].strip()
    const = "" if re.search(r"\bmutable\b", spec) else " const"
    members: dict[str, str] = {}
    for c in lam.get_children():
        if c.kind in (K.PARM_DECL, K.COMPOUND_STMT):
            break
        if c.kind in (K.VARIABLE_REF, K.DECL_REF_EXPR, K.VAR_DECL) and c.spelling:
            t = re.sub(r"^const\s+|\s*&+$", "", c.type.spelling.strip())
            if not t or re.search(r"lambda at|<dependent|\bauto\b|type-parameter", t):
                return None
            members.setdefault(c.spelling, t)
    found = _body_captures(lam)
    if found is None:
        return None
    for n, t in found.items():
        members.setdefault(n, t)
    body = text[brace:]
    # Aliases of the enclosing class the lambda names (`using ROOT = float;` in the class whose method it sits
    # in) mean nothing at namespace scope: the struct declares them again, as their type.
    aliases: dict[str, str] = {}
    for c in lam.walk_preorder():
        d = c.referenced if c.kind == K.TYPE_REF else None
        if d is None or d.kind not in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL) or d.semantic_parent is None \
                or d.semantic_parent.kind not in _CLASSES:
            continue
        under = value_spelling.type_spelling(d.underlying_typedef_type)
        if re.search(r"type-parameter|<dependent|lambda at", under):
            return None
        aliases.setdefault(d.spelling, under)
        if d.location.file is not None:
            redeclared(st.ctx).add((st.ctx.norm(d.location.file.name), d.location.offset))
    hparams = st.host_params.get(host_key, []) if host_key else []
    mentioned = text + " ".join(members.values())
    used, heads = [], []
    for p in hparams:
        if not p.spelling or not re.search(rf"\b{re.escape(p.spelling)}\b", mentioned):
            continue
        if p.kind == K.TEMPLATE_TYPE_PARAMETER:
            heads.append(f"typename {p.spelling}")
        elif p.kind == K.TEMPLATE_NON_TYPE_PARAMETER:
            heads.append(f"{p.type.spelling} {p.spelling}")
        else:
            return None
        used.append(p.spelling)
    head = f"template <{', '.join(heads)}>\n" if heads else ""
    fields = "".join(f"  using {n} = {t};\n" for n, t in aliases.items())
    fields += "".join(f"  {t} {n};\n" for n, t in members.items())
    sig = f"{' '.join(attrs)} auto operator()({params}){const}" + (f" -> {ret}" if ret else "")
    return f"{head}struct {name} {{\n{fields}  {sig} {body}\n}}", used


def _attributes(ctx: object, words: list[str], depth: int = 3) -> list[str]:
    """A lambda's attributes with the project's macros for them expanded (`#define HD __host__ __device__`,
    `[=] HD (size_t i) {...}`); a name that is no such macro stays as written (and the lambda is left alone)."""
    out: list[str] = []
    for w in words:
        found = [m for m in getattr(ctx, "macros", {}).get(w, []) if m.active] if w not in _ATTRS else []
        body = found[0].body if found and not found[0].body.lstrip().startswith("(") else None
        out += _attributes(ctx, body.split(), depth - 1) if body is not None and depth > 0 else [w]
    return out


def _body_captures(lam: ci.Cursor) -> dict[str, str] | None:
    """Locals of the enclosing function the lambda's body names (its captures, by copy): libclang lists
    implicit captures as children only sometimes (not for a lambda a macro writes inside a method), so the body
    is read too. A type written over the enclosing host template's parameters (`T *d`) is kept as written (the
    struct becomes a template over them); None where the parse leaves it unspellable (dependent, a closure)."""
    body = next((c for c in lam.get_children() if c.kind == K.COMPOUND_STMT), None)
    if body is None:
        return {}
    # By cursor, not by location: in a macro's expansion every declaration has the invocation's location.
    own = {c.hash for c in lam.walk_preorder() if c.kind in (K.PARM_DECL, K.VAR_DECL)}
    out: dict[str, str] = {}
    for c in body.walk_preorder():
        d = c.referenced if c.kind == K.DECL_REF_EXPR else None
        if d is None or d.kind not in (K.VAR_DECL, K.PARM_DECL) or not d.spelling \
                or d.hash in own or (d.get_definition() or d).hash in own \
                or d.semantic_parent is None or d.semantic_parent.kind not in _LOCAL_SCOPES:
            continue
        t = re.sub(r"^const\s+|\s*&+$", "", d.type.spelling.strip())
        if not t or re.search(r"lambda at|<dependent|\bauto\b|type-parameter", t):
            return None
        out.setdefault(d.spelling, t)
    return out


_INVOCATION = lazy_re.compile(r"([A-Za-z_]\w*)\s*\(")


def _expanded_lambda(ctx: object, lam: ci.Cursor) -> str | None:
    """The text of a lambda a project macro writes (`#define EVAL(n, name, ...) auto name = [=] __device__
    __VA_ARGS__; ...`), whose extent is only the invocation's first token: the invocation expanded (that macro
    first, then every project macro) and the one `__device__` lambda in it taken."""
    from miner.units import launch_formula, macro_text

    e = lam.extent
    if e.start.file is None:
        return None
    data = ctx.read(ctx.norm(e.start.file.name)).decode("utf-8", "replace")  # type: ignore[attr-defined]
    m = _INVOCATION.match(data, e.start.offset)
    macros = launch_formula.project_macros(ctx.macros)  # type: ignore[attr-defined]
    if m is None or m.group(1) not in macros:
        return None
    call = macro_text._call_args(data, m.end() - 1)
    if call is None:
        return None
    invocation = data[m.start():call[1]]
    for names in ({m.group(1)}, None):
        found = set(_device_lambdas(macro_text.expand(invocation, macros, names)))
        if len(found) == 1:
            return found.pop()
    return None


def _device_lambdas(text: str) -> list[str]:
    """Every `[captures] __device__ ... (params) ... { body }` in `text`, as written."""
    out = []
    for m in re.finditer(r"\[[^\[\]]*\]\s*__device__\b", text):
        paren = text.find("(", m.end())
        close = _balanced(text, paren, "(", ")") if paren >= 0 else -1
        brace = text.find("{", close) if close >= 0 else -1
        end = _balanced(text, brace, "{", "}") if brace >= 0 else -1
        if end >= 0 and re.fullmatch(r"[\w\s]*", text[m.end():paren]):
            out.append(text[m.start():end + 1])
    return out


def _balanced(text: str, start: int, open_: str, close: str) -> int:
    depth = 0
    for i in range(start, len(text)):
        if text[i] == open_:
            depth += 1
        elif text[i] == close:
            depth -= 1
            if depth == 0:
                return i
    return -1


def lambda_overrides(st: _State, args: list[ci.Cursor], host_key: tuple[str, int] | None) -> dict[int, str]:
    """By argument position, the functor struct standing for each lambda among `args` (for `_deduce`)."""
    out = {}
    for i, a in enumerate(args):
        lam = _lambda_of(a)
        if lam is not None and (arg := functor_arg(st, lam, host_key)) is not None:
            out[i] = arg
    return out


@functools.lru_cache(maxsize=4096)
def _names_any_of(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(re.escape(h) for h in names) + r")\b")


def _names_any(names: list[str]) -> re.Pattern[str]:
    """One pattern for `any(re.search(rf"\b{re.escape(h)}\b", text) for h in names)`: each argument's type text
    was made and searched once per host parameter."""
    return _names_any_of(tuple(names))


def deduced_call(st: _State, call: ci.Cursor, children: list[ci.Cursor], host_key: tuple[str, int] | None) -> None:
    """A call of a project function template whose arguments are deduced, with a lambda among its arguments
    or inside a host template: the callee's instantiation, concrete or in the caller's parameters."""
    from miner.units.launches.sites import _deduce, _type_text  # (sites imports the walk's helpers)

    if not children:
        return
    args = children[1:]
    lambdas = {i: a for i, a in enumerate(args) for a in [_lambda_of(a)] if a is not None}
    if not lambdas and host_key is None:
        return  # (tested before the callee's text, which costs more: most calls stop here)
    given: list[str] | None = None
    if re.search(r">\s*$", _src(st.ctx, children[0])):
        if not lambdas:
            return  # arguments written (`f<T>(...)`): the written-argument reader has them
        # The leading ones written, the callable's type deduced from the lambda (`for_n<2, 64>(n, s, [=] ...)`).
        written = _written_args(st, children[0], children[0].spelling or call.spelling)
        given = written[0] if written else None
        if not given:
            return
    host = [p.spelling for p in st.host_params.get(host_key, [])] if host_key else []
    overrides: dict[int, str] = {}
    for i, lam in lambdas.items():
        arg = functor_arg(st, lam, host_key)
        if arg is None:
            return
        overrides[i] = arg
    for i, a in enumerate(args):
        m = _FORWARD.match(_src(st.ctx, a))
        if i not in overrides and m and m.group(1):
            overrides[i] = m.group(1)
    if not lambdas and not overrides and not (host and any(
            _names_any(host).search(_type_text(a.type, host)) for a in args)):
        return  # nothing dependent: libclang's own deduction (host_chain._host_call) has it
    seen: set[tuple[str, int]] = set()
    for d in children[0].walk_preorder():
        if d.kind not in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF, K.UNEXPOSED_EXPR, K.MEMBER_REF_EXPR):
            continue
        for t in [*_targets(st.ctx, d), *([d.referenced] if d.referenced is not None else [])]:
            t = _primary(t) if t.kind == K.FUNCTION_DECL else t
            key = _key(st.ctx, t)
            if t.kind != K.FUNCTION_TEMPLATE or key is None or key in seen or key in st.kernels \
                    or key[0] not in st.ctx.inputs:
                continue
            seen.add(key)
            parms = [c for c in t.get_children() if c.kind == K.PARM_DECL]
            if len(parms) < len(args) or overload_fit.too_few(st.ctx, parms, len(args)):
                continue
            # (an argument of a known type the parameter cannot take: another overload of the same length's)
            if any(overload_fit.ill_typed(a, p) for a, p in zip(args, parms, strict=False)):
                continue
            got = _deduce(t, args, host, overrides, given)
            if not got or len(got) != len(_tparams(t)):
                continue
            if host_key is not None and any(re.search(rf"\b{re.escape(h)}\b", a) for a in got for h in host):
                dc = _DepCall(host_key, host, key, got, binds=[
                    b for a, p in zip(args, parms, strict=False)
                    if (b := overload_fit.reference_binds(a, p, host)) is not None])
                if dc not in st.dep_calls:
                    st.dep_calls.append(dc)
            elif lambdas:
                _add(st.concrete, key, got)


def _lambda_of(a: ci.Cursor, through_var: bool = True) -> ci.Cursor | None:
    """The lambda an argument is (through the implicit conversions the AST wraps it in), or the one a local
    variable it names was initialized with (`auto fun = [=] __device__ (int i) {...}; apply(n, fun);`, the
    closure type then being the variable's)."""
    while a.kind in (K.UNEXPOSED_EXPR, K.PAREN_EXPR) or _copy_construction(a):
        kids = list(a.get_children())
        if len(kids) != 1:
            return None
        a = kids[0]
    if a.kind == K.DECL_REF_EXPR and through_var:
        var = a.referenced
        if var is None or var.kind != K.VAR_DECL or var.semantic_parent is None \
                or var.semantic_parent.kind not in _LOCAL_SCOPES:
            return None
        inits = [c for c in var.get_children() if c.kind not in (K.TYPE_REF, K.NAMESPACE_REF, K.TEMPLATE_REF)]
        return _lambda_of(inits[0], through_var=False) if len(inits) == 1 else None
    return a if a.kind == K.LAMBDA_EXPR else None


def _copy_construction(a: ci.Cursor) -> bool:
    """A closure passed by value (`k<<<g, b>>>(fun, out)` with `fun` a local lambda): the AST wraps the variable in
    a call of the closure type's copy constructor (a CALL_EXPR spelled `(lambda at ...)`)."""
    if a.kind != K.CALL_EXPR or not a.spelling.startswith("(lambda at "):
        return False
    ctor = a.referenced
    return ctor is not None and ctor.kind == K.CONSTRUCTOR
