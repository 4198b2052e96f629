"""Where templates are instantiated outside launches: definitions (host templates, explicit
instantiations), class template instances and partial specializations, and kernel references
(pointer tables, function pointers)."""

from __future__ import annotations

import re

import clang.cindex as ci

from miner import lazy_re
from miner.units import macro_text
from miner.units.closure import written_with
from miner.units.instantiations import eval_int, explicit_in, writing_template
from miner.units.launches import deduced, scope_names, value_spelling
from miner.units.launches.cursors import _key, _primary, _targets, _template_args, _tparams
from miner.units.launches.record import _CLASS_TEMPLATES, _COMMENT, _FUNCS, _IDENT, _SCOPES, K, Launch
from miner.units.launches.state import _add, _kernel_key, _record_aliases, _State, _written_args
from miner.units.launches.text import _angle_args, _src


def _definitions(st: _State) -> list[tuple[str, ci.Cursor]]:
    """Function definitions (in-class methods included) and namespace-scope variables of the input
    files, from the closure's index of them (a walk of the whole TU costs more than everything else).
    `template R f<double>(...);` lines among them are recorded as host template instantiations."""
    ctx = st.ctx
    out: list[tuple[str, ci.Cursor]] = []
    siblings = ctx.memo("_siblings", dict)
    for path, lst in ctx.pieces.items():
        for _s, _e, _piece, c in lst:
            # A function written by a macro with others (a kernel and the host specializations that launch
            # it): the index keeps the outermost one, the others are walked as well.
            stack = [c, *written_with(c, siblings)] if c.kind in _FUNCS else [c]
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
                    if kind in _CLASS_TEMPLATES:
                        _bases(st, d)
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
        (st.explicit_classes if explicit else st.typed_classes).add((key, tuple(args)))


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
        # A written argument that is a typedef (`struct F<GPUDevice, T>` with `typedef Eigen::GpuDevice GPUDevice;`,
        # TensorFlow's functor style) is matched as the type it names: instantiations spell the type itself.
        aliases = {r.spelling: value_spelling.type_spelling(r.referenced.underlying_typedef_type)
                   for r in d.get_children() if r.kind == K.TYPE_REF and r.referenced is not None
                   and r.referenced.kind in (K.TYPEDEF_DECL, K.TYPE_ALIAS_DECL)}
        pattern = [_aliased(a, aliases) for a in got[0]]
        st.partials.setdefault(key, []).append((pkey, pattern, [p.spelling for p in _tparams(d)]))


def _bases(st: _State, d: ci.Cursor) -> None:
    """The base class templates of class template `d` as written in its parameters (`class S<Config<dev, V, I>>
    : public SBase<Config<dev, V, I>>`): an instantiation of `d` instantiates them, and with them the base's
    members that launch (its constructor and virtual members are used by the derived class's), though only
    the derived class is explicitly instantiated."""
    key = _key(st.ctx, d)
    params = [p.spelling for p in _tparams(d)]
    if key is None or not params:
        return
    for b in d.get_children():
        if b.kind != K.CXX_BASE_SPECIFIER or b.referenced is None:
            continue
        prim = _primary(b.referenced)
        bkey = _key(st.ctx, prim) if prim.kind == K.CLASS_TEMPLATE else None
        text = _COMMENT.sub(" ", _src(st.ctx, b))
        m = re.search(rf"\b{re.escape(prim.spelling)}\s*<", text)
        got = _angle_args(text, m.end() - 1) if m else None
        if bkey is not None and got and got[0]:
            st.bases.setdefault(key, []).append((bkey, got[0], params))


def _aliased(written: str, aliases: dict[str, str]) -> str:
    """A written partial-specialization argument that names a typedef, as the type it stands for."""
    w = written.strip()
    for name, canonical in aliases.items():
        # (a TYPE_REF's spelling is the typedef's qualified name as clang prints it: `tf::GPUDevice`)
        if canonical and (w == name or name.endswith("::" + w) or w.endswith("::" + name.rsplit("::", 1)[-1])
                          and w.rsplit("::", 1)[-1] == name.rsplit("::", 1)[-1]):
            return canonical
    return written


def _match_partial(pattern: list[str], params: list[str], args: list[str]) -> list[str] | None:
    """The partial specialization's arguments for one instantiation of its primary template, or None
    when it does not match (a written non-parameter argument is compared by its last name)."""
    bound: dict[str, str] = {}
    if not _bind(pattern, params, args, bound) or any(p not in bound for p in params):
        return None
    return [bound[p] for p in params]


_TEMPLATE_ID = lazy_re.compile(r"^\s*(?:typename\s+)?((?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*)\s*<")


def _nested(text: str) -> tuple[str, list[str]] | None:
    """`ns::Config<space_device, V, I>` as its last name and its top-level arguments; None for anything that is
    not one template-id alone (a member of it, `Config<...>::Type`, is not)."""
    m = _TEMPLATE_ID.match(text)
    got = _angle_args(text, m.end() - 1) if m else None
    if m is None or got is None or text[got[1]:].strip():
        return None
    return m.group(1).rsplit("::", 1)[-1].strip(), got[0]


def _bind(pattern: list[str], params: list[str], args: list[str], bound: dict[str, str]) -> bool:
    """Match written arguments against concrete ones, binding the parameters in `bound`. A parameter may sit
    inside a template argument (`class S<Config<space_device, V, I>>`, a partial specialization over a
    configuration class): a template-id is matched by its name and then argument by argument."""
    if len(pattern) != len(args):
        return False
    for pat, arg in zip(pattern, args, strict=True):
        pat, arg = pat.strip(), arg.strip()
        if pat in params:
            if bound.setdefault(pat, arg) != arg:
                return False
            continue
        inner, got = _nested(pat), _nested(arg)
        if inner is not None and got is not None and any(n in params for n in _IDENT.findall(pat)):
            if inner[0] != got[0] or not _bind(inner[1], params, got[1], bound):
                return False
            continue
        a, b = _IDENT.findall(pat), _IDENT.findall(arg)
        if not a or not b or a[-1] != b[-1]:
            if eval_int(pat) is None or eval_int(pat) != eval_int(arg):
                return False
    return True


def _host_of(st: _State, path: str, fn: ci.Cursor) -> tuple[str, int] | None:
    """The host template a definition's dependent names come from: itself (a function template), or
    the class template (or partial specialization) whose method it is, in-class or out-of-line."""
    parent = fn.semantic_parent
    if fn.kind == K.FUNCTION_TEMPLATE:
        own = _tparams(fn)
        if parent is not None and parent.kind in _CLASS_TEMPLATES and fn.lexical_parent != parent:
            # Out of line, a member template lists its own parameters, then its class's as written there
            # (`template <typename C> template <bool r> void W<C>::f()` gives `r, C`): its own instantiations
            # (`template void W<int>::f<true>();`) bind the first ones only.
            own = own[:max(len(own) - len(_tparams(parent)), 0)]
            decl = _key(st.ctx, fn.canonical)
            if decl is not None and decl != (path, fn.location.offset):
                st.out_of_line[decl] = (path, fn.location.offset)
        st.host_params[(path, fn.location.offset)] = own
        st.host_names.setdefault(fn.spelling, set()).add((path, fn.location.offset))
        st.host_cursors[(path, fn.location.offset)] = fn
        if parent is not None and parent.kind == K.CLASS_TEMPLATE and (ck := _key(st.ctx, parent)) is not None:
            st.classes[(path, fn.location.offset)], st.class_keys[(path, fn.location.offset)] = parent, ck
        return path, fn.location.offset
    if fn.kind in _FUNCS and parent is not None and parent.kind in _CLASS_TEMPLATES:
        key = _key(st.ctx, parent)
        if key is not None:
            # (a partial specialization's too: `static constexpr int kThreads = 32;` in `struct F<GPUDevice, T>`,
            # TensorFlow's functor style, is read by class_scope's probe of `F<Eigen::GpuDevice, float>`)
            st.classes[key], st.class_keys[key] = parent, key
            # Out of line, the definition names the parameters itself (possibly differently).
            st.host_params.setdefault(key, _tparams(fn) or _tparams(parent))
            if parent.kind == K.CLASS_TEMPLATE:
                st.host_names.setdefault(parent.spelling, set()).add(key)
        return key
    return None


def _explicit_host_instantiations(st: _State) -> None:
    """`template void scan_cuda<float>(Params &, cudaStream_t);` and `template void Layer<float>::Forward(...);`
    lines (libclang does not expose explicit function instantiations), also written through the project's
    macros: concrete instantiations of host function templates and of the class templates whose methods
    launch."""
    if not st.host_names:
        return
    ctx = st.ctx
    # (the branches this configuration takes: a line under `#ifdef NAME` that a build's `-D` would switch on names
    # `NAME`, nothing the unit has)
    texts = [ctx.active_text(p) for p in [*ctx.order, *ctx.instances] if p in ctx.inputs]
    macros: dict[str, macro_text.MacroDef] = {}
    for t in texts:
        macros.update(macro_text.definitions(t))
    # A file may write its instantiations only through the macros (a generated `DECL_CASE(64, float);`).
    writers = writing_template(macros)
    # (key, arguments, read from an explicit line), in the order found: the lines' namespace heads are spelled
    # in full by one probe before they are added.
    found: list[tuple[tuple[str, int], list[str], bool]] = []
    for t in texts:
        if "template" not in t and not any(w in t for w in writers):
            continue
        written = explicit_in(t, macros, members=True)
        # Parameter types of the lines that name an overloaded template, or that write only its leading
        # arguments (`template void launch<true>(const float *, ...);` of `template <bool R, typename T>`: the
        # rest the compiler deduces from those types).
        spelled = {n for n, keys in st.host_names.items() if n in t and (len(keys) > 1 or any(
            0 < len(args) < len(st.host_params.get(k, [])) for k in keys for args in written.get(n, [])))}
        lines = deduced.written_parameters(macro_text.expand(t, macros, writers) if writers else t,
                                           spelled) if spelled else {}
        for name, lists in written.items():
            for args in lists:
                given = lines.get((name, tuple(args)), [])
                for key in _overloads(st, st.host_names.get(name, set()), given):
                    if len(args) == len(st.host_params.get(key, [])):
                        found.append((key, args, True))
                    elif 0 < len(args) < len(st.host_params.get(key, [])) and key in st.host_cursors:
                        found += [(key, full, True) for full in _completed(st, key, args, given)]
        # Read after the project's macros are expanded (which also drops `#define` lines): the text of
        # `#define INST(T) template void launch(T *, int);` bound the launcher's `T` to the macro's `T`.
        for name, ret, types in deduced.deduced_in(macro_text.expand(t, macros, writers) if writers else t,
                                                   set(st.host_names)):
            for key in st.host_names[name]:
                fn = st.host_cursors.get(key)
                decl = deduced.declaration(ctx.read(key[0]), fn) if fn is not None else None
                params = [p.spelling for p in st.host_params.get(key, [])]
                args = deduced.bind(decl, (ret, types), params) if decl and params else None
                if args:
                    found.append((key, args, False))
    # Namespace heads an explicit line writes relative to its scope (`elem::Min` under `using namespace
    # functional;`) spelled in full, as the compiler reads them there: the kernels instantiate them elsewhere.
    asked = [i for i, (key, _a, explicit) in enumerate(found) if explicit and key in st.host_cursors]
    spelled = dict(zip(asked, scope_names.qualify(ctx, [(st.host_cursors[found[i][0]], found[i][1]) for i in asked]),
                       strict=True))
    for i, (key, args, _explicit) in enumerate(found):
        _add(st.concrete, key, [st.resolver(a, set()) for a in spelled.get(i, args)])


def _completed(st: _State, key: tuple[str, int], args: list[str], lines: list[list[str]]) -> list[list[str]]:
    """The full argument lists of a host template whose explicit instantiation writes only the leading
    `args`, the rest bound by the parameter types each of its `lines` spells."""
    decl = deduced.declaration(st.ctx.read(key[0]), st.host_cursors[key])
    params = [p.spelling for p in st.host_params.get(key, [])]
    out = []
    for types in lines:
        full = deduced.bind_rest(decl, types, params, args) if decl else None
        if full and full not in out:
            out.append(full)
    return out


def _overloads(st: _State, keys: set[tuple[str, int]], lines: list[list[str]]) -> list[tuple[str, int]]:
    """The templates of one name an explicit instantiation `name<args>(params);` instantiates: with several
    overloads (`run<Op>(Out *, const Stream &)`, `run<Op>(Out *, const In *, const Stream &)`, ...), those whose
    declared parameter types its `params` spell, else those with as many parameters; all where neither picks one
    (a line spelled through aliases the declaration does not use). Each overload took every line before, and so
    every kernel it launches took every functor of the file: `Op` of another arity, whose call did not compile
    ("cannot be called with the given argument list")."""
    if len(keys) < 2 or not lines:
        return sorted(keys)
    declared: dict[tuple[str, int], list[str]] = {}
    for key in keys:
        fn = st.host_cursors.get(key)
        decl = deduced.declaration(st.ctx.read(key[0]), fn) if fn is not None else None
        if decl is None:
            return sorted(keys)  # (an overload whose parameters are not read: none is ruled out)
        declared[key] = decl[1]
    for same in (lambda k, ln: deduced.spells(declared[k], ln, [p.spelling for p in st.host_params.get(k, [])]),
                 lambda k, ln: len(declared[k]) == len(ln)):
        chosen = [k for k in sorted(keys) if any(same(k, ln) for ln in lines)]
        if chosen:
            return chosen
    return sorted(keys)


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
        if not concrete and not written and (fn is None or t.kind == K.FUNCTION_TEMPLATE
                                             or c.hash not in st.as_pointer):
            continue  # a kernel named without template arguments fixes no instantiation (unless chosen)
        for texts in written or [[]]:
            sig = (kkey, c.location.line, c.location.column, tuple(texts), tuple(concrete or ()))
            if sig in st.seen_refs:
                continue
            st.seen_refs.add(sig)
            rec = Launch(kernel=kkey, launcher=fn.spelling, path=path, line=c.location.line, kind="reference",
                         config={"grid": None, "block": None, "shared_mem": None, "stream": None},
                         template_args=concrete, template_args_text=texts, in_lambda=in_lambda,
                         host_template=host_key)
            rec.via_member = st.stored.get(c.hash)
            _record_aliases(st, rec, c)
            st.refs.append(rec)
