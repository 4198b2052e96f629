"""Launches through a kernel pointer an object keeps (issue 14): one method stores a parameter in a member, another
method of the class launches that member,

    class kernel_object {
      void create(const char *name, const void *fn) { fn_ = fn; }
      void execute(void **args, cudaStream_t s) { cudaLaunchKernel(fn_, grid_, block_, args, 0, s); }
    };
    k.create("scale", (const void *)&scale);   // in one file
    k.set_work(n, 128); k.execute(args);       // in others

The object is not followed from the storing call to the launching one (they are often in different files, the
object a member of a larger one): the storing call with a kernel is the launch, as a launch helper's call is
(launches.helpers), of the kind the launching method uses (`<<<>>>` on a typed member, or the launch API). Its
grid and block are the launching method's where they name none of that method's parameters or locals nor the
class's members (`dim3(32)`); otherwise they are left unread, and `config["stored"]` says which member holds the
kernel and which method launches it (launch_unread states it). The kernel's template arguments are the address's
(`t.bind(step<3>)`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import clang.cindex as ci

from miner import lazy_re
from miner.frontends.common import split_top
from miner.units.launches.chosen import _is_assignment, _strip
from miner.units.launches.cursors import _primary
from miner.units.launches.helpers import Helper, _helper_name
from miner.units.launches.record import K, Launch
from miner.units.launches.state import _State
from miner.units.launches.text import _src

_IDENT = lazy_re.compile(r"[A-Za-z_]\w*")


@dataclass
class _Store:
    method: ci.Cursor  # the storing method
    index: int  # the parameter it stores
    names: list[str]  # its parameters' names


@dataclass
class _MemberLaunch:
    method: str  # the launching method's name
    kind: str  # `<<<>>>` or the launch API
    config: list[str | None]  # grid, block, shared memory, stream where readable at any call, else None
    member: str
    cls: str
    written: list[str | None]  # grid and block as the launching function writes them


def _own_member(expr: ci.Cursor, own: bool = True) -> ci.Cursor | None:
    """The field an expression names on the method's own object (`fn_`, `this->fn_`), else None; with `own`
    False, on any object (`props.fn`, a launch's)."""
    c = _strip(expr)
    if c.kind == K.MEMBER_REF_EXPR and c.referenced is None and not own:
        return _dependent_member(c)
    if c.kind != K.MEMBER_REF_EXPR or c.referenced is None or c.referenced.kind != K.FIELD_DECL:
        return None
    base = [k for k in c.get_children() if k.kind not in (K.TYPE_REF, K.NAMESPACE_REF)]
    if own and base and _strip(base[0]).kind != K.CXX_THIS_EXPR:
        return None  # another object's member: `other.fn_`
    return c.referenced


def _dependent_member(c: ci.Cursor) -> ci.Cursor | None:
    """The field a member access names on an object whose type depends on a template (`props.fn` with
    `props<Enclosing::F> &props`: libclang resolves no member), looked up by name in that type's class template."""
    base = [k for k in c.get_children() if k.kind not in (K.TYPE_REF, K.NAMESPACE_REF)]
    if len(base) != 1:
        return None
    # (the access spells no member either: its last token names it, `props.fn` / `props->fn`)
    tokens = [t.spelling for t in c.get_tokens()]
    name = c.spelling or (tokens[-1] if len(tokens) >= 3 and tokens[-2] in (".", "->") else "")
    t = _strip(base[0]).type
    if t.kind in (ci.TypeKind.LVALUEREFERENCE, ci.TypeKind.RVALUEREFERENCE, ci.TypeKind.POINTER):
        t = t.get_pointee()
    if t.kind == ci.TypeKind.ELABORATED:
        t = t.get_named_type()
    decl = t.get_declaration()
    if not name or decl is None or decl.kind not in (K.CLASS_TEMPLATE, K.STRUCT_DECL, K.CLASS_DECL):
        return None
    return next((f for f in _primary(decl).get_children() if f.kind == K.FIELD_DECL and f.spelling == name), None)


def _holds_function(field: ci.Cursor) -> bool:
    """A member that can hold a kernel's address: a function pointer, `void *`, or a type a template leaves open."""
    t = field.type.get_canonical()
    if t.kind != ci.TypeKind.POINTER:
        return t.kind in (ci.TypeKind.UNEXPOSED, ci.TypeKind.DEPENDENT, ci.TypeKind.AUTO)
    return t.get_pointee().kind in (ci.TypeKind.VOID, ci.TypeKind.FUNCTIONPROTO, ci.TypeKind.FUNCTIONNOPROTO,
                                    ci.TypeKind.UNEXPOSED)


def _key(field: ci.Cursor) -> str:
    """A member's key: its class template's (the pattern's, where the launch names a specialization's member and the
    constructor that stores it is the template's) and its name."""
    cls = field.semantic_parent
    if cls is None:
        return field.get_usr() or field.spelling
    primary = _primary(cls)
    return f"{primary.get_usr() or primary.spelling}::{field.spelling}"


def note_store(st: _State, fn: ci.Cursor, c: ci.Cursor, children: list[ci.Cursor]) -> None:
    """During the walk: `member_ = param;` in a method, the member able to hold a kernel's address."""
    if fn.kind != K.CXX_METHOD or len(children) != 2 or not _is_assignment(c):
        return
    field = _own_member(children[0])
    if field is None or not _holds_function(field):
        return
    rhs = _strip(children[1])
    if rhs.kind != K.DECL_REF_EXPR or rhs.referenced is None or rhs.referenced.kind != K.PARM_DECL:
        return
    names = [p.spelling for p in fn.get_children() if p.kind == K.PARM_DECL]
    if rhs.referenced.spelling in names:
        st.member_stores.setdefault(_key(field), []).append(_Store(fn, names.index(rhs.referenced.spelling), names))


def note_ctor_stores(st: _State, fn: ci.Cursor) -> None:
    """A constructor's member initializers that store one of its parameters (`fn(fn)` of `props(KernelFn fn, int
    threads) : fn(fn), threads(threads)`): the constructor is a storing method of that member."""
    kids = list(fn.get_children())
    names = [p.spelling for p in kids if p.kind == K.PARM_DECL]
    for j, ch in enumerate(kids[:-1]):
        field = ch.referenced if ch.kind == K.MEMBER_REF else None
        if field is None or field.kind != K.FIELD_DECL or not _holds_function(field):
            continue
        init = _strip(kids[j + 1])
        while init.kind in (K.CALL_EXPR, K.INIT_LIST_EXPR) and len(inner := list(init.get_children())) == 1:
            init = _strip(inner[0])  # (`fn{fn}`, a conversion's call)
        if init.kind == K.DECL_REF_EXPR and init.referenced is not None and init.referenced.kind == K.PARM_DECL \
                and init.referenced.spelling in names:
            st.member_stores.setdefault(_key(field), []).append(_Store(fn, names.index(init.referenced.spelling),
                                                                       names))


def note_member_launch(st: _State, fn: ci.Cursor, launched: ci.Cursor, parts: list[str | None], kind: str) -> bool:
    """A function that launches a member (`cudaLaunchKernel(fn_, ...)`, `body_<<<g, b>>>(...)` in a method of the
    object, `props.fn<<<g, props.threads>>>(...)` anywhere). True when recorded."""
    field = _own_member(launched, own=False)
    if field is None or not _holds_function(field):
        return False
    cls = field.semantic_parent
    # Names that mean nothing at the storing call: the launching function's own, and the object's members.
    own = {d.spelling for d in fn.walk_preorder() if d.kind in (K.PARM_DECL, K.VAR_DECL)}
    if cls is not None:
        own |= {f.spelling for f in cls.get_children() if f.kind == K.FIELD_DECL}
    config = [p if p and not (set(_IDENT.findall(p)) & own) else None for p in (list(parts) + [None] * 4)[:4]]
    st.member_launches.setdefault(_key(field), []).append(
        _MemberLaunch(fn.spelling, kind, config, field.spelling, cls.spelling if cls is not None else "",
                      [(p or None) and " ".join(str(p).split()) for p in (list(parts) + [None, None])[:2]]))
    return True


def stored_helpers(st: _State) -> None:
    """After the walk: each storing method of a member some method launches is a launch helper of the kernel it
    is given (launches.helpers.finish_helpers makes the launches)."""
    for key, stores in st.member_stores.items():
        launches = st.member_launches.get(key)
        if not launches:
            continue
        first = launches[0]
        by = ", ".join(dict.fromkeys(f"{m.method} (grid {m.written[0]}, block {m.written[1]})"
                                     if m.written[0] and m.written[1] else m.method for m in launches))
        # The configuration where every launching method writes the same readable one.
        config = [first.config[i] if all(m.config[i] == first.config[i] for m in launches) else None
                  for i in range(4)]
        for s in stores:
            # (a constructor's call names no class: `props<F> p(k, 128);` is a call of `props`)
            # (a class template's constructor is spelled `props<F>`)
            name = s.method.spelling.split("<", 1)[0] if s.method.kind == K.CONSTRUCTOR else \
                _helper_name(s.method.spelling, s.method.semantic_parent)
            have = st.helpers.setdefault(name, [])
            if any(h.origin == s.method.hash and h.index == s.index for h in have):
                continue
            have.append(Helper(s.index, s.names, None, list(config), [], {}, kind=first.kind, origin=s.method.hash,
                               stored=f"member {first.member} of {first.cls}, launched by {by}"))


@dataclass
class _Construction:
    fn: ci.Cursor
    path: str
    var: ci.Cursor
    cls: str  # the class's name, as a constructor's helper is keyed
    args: list[str]  # the initializer's arguments as written
    in_lambda: bool
    host_key: tuple[str, int] | None


# A kernel named as an argument (`k<typename P::Up>`, `(const void *)&k`): its name and written template arguments.
_KERNEL_ARG = lazy_re.compile(r"^[&(\s]*(?:\(\s*(?:const\s+)?void\s*(?:const\s*)?\*\s*\)\s*)?&?\s*(?:[\w:]*::)?(\w+)\s*"
                         r"(<.*>)?\s*\)?\s*$", re.S)


def note_construction(st: _State, fn: ci.Cursor, path: str, var: ci.Cursor, in_lambda: bool,
                      host_key: tuple[str, int] | None) -> None:
    """During the walk: a local object constructed with arguments the parse leaves out of the AST (in a function
    template, `props<F> p(k<typename P::Up>, 128);` whose argument depends on the template: libclang shows the
    variable with no initializer). Its written arguments are kept, in case the class's constructor stores a kernel
    (`finish_constructions`)."""
    if any(ch.kind not in (K.TYPE_REF, K.TEMPLATE_REF, K.NAMESPACE_REF, K.UNEXPOSED_EXPR) for ch in var.get_children()):
        return  # an initializer the AST has (a constructor's call): note_call sees it
    # (the dependent initializer is at most an unexposed expression, a parenthesized list)
    decl = var.type.get_canonical().get_declaration()
    if decl is None or decl.kind not in (K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE):
        return
    text = _src(st.ctx, var)
    m = re.search(rf"\b{re.escape(var.spelling)}\s*[({{]", text)
    if m is None or not any(re.search(rf"(?<!\w){re.escape(n)}(?!\w)", text[m.end():]) for n in st.names if n):
        return
    inner = text[m.end():].rstrip().rstrip(";").rstrip()
    if not inner.endswith((")", "}")):
        return
    st.constructions.append(_Construction(fn, path, var, decl.spelling.split("<", 1)[0],
                                          [a.strip() for a in split_top(inner[:-1])], in_lambda, host_key))


def finish_constructions(st: _State) -> None:
    """After the walk: a launch for each kept construction whose class's constructor stores the kernel one of its
    written arguments names (one kernel of that name), its template arguments as written (the host template's
    instantiations resolve them, as for any launch in it)."""
    for c in st.constructions:
        for h in st.helpers.get(c.cls, ()):
            if not h.stored or h.index >= len(c.args) or len(c.args) > len(h.params):
                continue
            m = _KERNEL_ARG.match(c.args[h.index])
            keys = [k for k, v in st.kernels.items() if m and v.name == m.group(1)]
            if len(keys) != 1:
                continue
            written = m.group(2)
            targs = [a.strip() for a in split_top(written[1:-1])] if written else []
            cfg = h.config
            st.launches.append(Launch(
                kernel=keys[0], launcher=c.fn.spelling, path=c.path, line=c.var.location.line, kind=h.kind,
                config={"grid": cfg[0], "block": cfg[1], "shared_mem": cfg[2] or "0", "stream": cfg[3] or "0",
                        "stored": h.stored},
                args=[], template_args=None, template_args_text=targs, in_lambda=c.in_lambda,
                host_template=c.host_key))
