"""Launches through the project's own launch helpers: a function (template) whose body launches one of
its parameters,

    template <class K, class T, class... A>
    void linear_kernel(K kernel, uint32_t smem, cudaStream_t s, T n, A... args) {
        kernel<<<blocks_for(n), 128, smem, s>>>(n, args...);
    }

called with a kernel (`linear_kernel(sgd_step<T>, 0, stream, n, weights)`). The call is the launch: its
configuration and arguments are the helper's, with the helper's parameters replaced by the call's
arguments (a trailing parameter pack by the rest of them). Without this the kernel was only `referenced`.

The helper may be a method of a launcher object that keeps the configuration in members its constructor sets
(`Launcher run{blocks, 256}; run(k, a, b);`, `Launcher{g, b, 0, s}(k, a)`): the members in the configuration
are read back through the constructor's member initializers from the object's construction (a local variable's
initializer or the temporary itself), its defaulted parameters as declared.

A method helper called where its object's type is a template parameter (`template <class C> void reset(C &ctx) {
ctx.launch({g, b}, k, *this); }`) has neither a name nor a class in the AST: the member's name is read from the call's
tokens and the helper is the TU's one launcher method of that name. A call depending on a generic lambda's `auto`
parameter leaves an overloaded kernel's name unresolved: each overload whose parameters take the launched arguments is
launched there (the lambda's instantiations pick one each). A configuration object a method helper reads members of
(`lc.dg`) passed as a braced list (`{blocks, 128, smem}`) gives its elements (config_objects), as for a function helper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import clang.cindex as ci

from miner import lazy_re
from miner.frontends.common import split_top
from miner.units.launches.config_objects import object_config, object_parts
from miner.units.launches.cursors import _template_args
from miner.units.launches.record import _COMMENT, _IDENT, K, Launch
from miner.units.launches.state import (
    REF,
    _kernel_key,
    _kernel_refs,
    _record_aliases,
    _State,
    _written_args,
    host_names,
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
    members: dict[str, ci.Cursor]  # for a method: the class's fields its configuration names
    kind: str = "<<<>>>"  # how the body launches: `<<<>>>` or the launch API it calls (`cudaLaunchKernel`)
    origin: int | None = None  # the hash of the function it was read from (a forwarding helper's own)
    config_object: int | None = None  # the parameter holding the whole configuration (a signature helper's)
    # A method that stores the kernel in a member another method launches (launches.stored): which, said.
    stored: str | None = None


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
    obj: ci.Cursor | None = None  # a method helper's object expression
    # One of the overloads a dependent call names (note_call): a launch only where its parameters fit the arguments.
    overloaded: bool = False



def note_helper(st: _State, fn: ci.Cursor, callee: ci.Cursor, parts: list[str | None], args: list[str],
                kind: str = "<<<>>>") -> bool:
    """Record `fn` as a launch helper when the launched expression is one of its parameters (`kernel<<<...>>>`,
    or the kernel argument of a launch API: `cudaLaunchKernel(kernel, grid, block, args, smem, stream)`)."""
    ref = next((d.referenced for d in callee.walk_preorder() if d.kind == K.DECL_REF_EXPR), None)
    if ref is None or ref.kind != K.PARM_DECL:
        return False
    params = [p for p in fn.get_children() if p.kind == K.PARM_DECL]
    names = [p.spelling for p in params]
    if ref.spelling not in names:
        return False
    last = _COMMENT.sub(" ", _src(st.ctx, params[-1])) if params else ""
    pack = names[-1] if "..." in last else None
    config = (list(parts) + [None] * 4)[:4]
    cls = fn.semantic_parent if fn.semantic_parent is not None and fn.semantic_parent.kind in _CLASSES else None
    members = {} if cls is None else {f.spelling: f for f in cls.get_children() if f.kind == K.FIELD_DECL
                                      and any(re.search(rf"\b{re.escape(f.spelling)}\b", c or "") for c in config)}
    helper = Helper(names.index(ref.spelling), names, pack, config, list(args), members, kind, fn.hash)
    st.helpers.setdefault(_helper_name(fn.spelling, cls), []).append(helper)
    return True


_CLASSES = {K.STRUCT_DECL, K.CLASS_DECL, K.CLASS_TEMPLATE}


def _helper_name(name: str, cls: ci.Cursor | None) -> str:
    """A helper's key: a method's with its class (two launcher classes each have an `operator()`)."""
    return f"{cls.spelling}::{name}" if cls is not None else name


_PLAIN_REF = lazy_re.compile(r"^[&(\s]*(?:\(\s*(?:const\s+)?void\s*(?:const\s*)?\*\s*\)\s*)?"  # (`(const void *)&k`)
                        r"&?\s*(?:[\w:]*::)?(\w+)\s*(?:<.*>)?\s*\)?\s*$", re.S)


def note_call(st: _State, fn: ci.Cursor, path: str, call: ci.Cursor, children: list[ci.Cursor], in_lambda: bool,
              host_key: tuple[str, int] | None) -> None:
    """Keep a call that passes a kernel itself as an argument (or a local pointer initialized with one) until
    every helper of the TU is known."""
    name = call.spelling
    if not name and children:  # a dependent call (in a template) has no spelling: its callee's overload set does
        name = next((d.spelling for d in children[0].walk_preorder() if d.kind == K.OVERLOADED_DECL_REF), "")
    if not name and children and children[0].kind == K.MEMBER_REF_EXPR:
        name = _dependent_member(children[0])
    if not name:
        return
    via: dict[int, list[tuple[ci.Cursor, ci.Cursor]]] = {}
    if not subtree_flags(st, call) & REF:
        # (its arguments are in its subtree: none names a kernel) `auto kernel = k<T, 4>; enc.add(kernel, ...)`
        via = _local_pointers(st, list(call.get_arguments()) or children[1:])
        if not via:
            return
    args = list(call.get_arguments()) or children[1:]
    found = [(i, refs) for i, a in enumerate(args) if len(refs := via.get(i) or _kernel_refs(st, a)) == 1
             or (len(refs) > 1 and _overload_set(a, refs))]
    if not found:
        return  # no argument names one kernel: the arguments' texts are not needed (most calls)
    obj, cls = _object_of(call, children, args)
    if obj is not None and args and args[0] == obj:
        args, found = args[1:], [(i - 1, refs) for i, refs in found if i > 0]
    if cls is not None:
        name = _helper_name(name, cls)
    texts = [_src(st.ctx, a) for a in args]
    for i, refs in found:
        m = _PLAIN_REF.match(_COMMENT.sub(" ", texts[i]))
        if len(refs) == 1 and (i in via or (m and m.group(1) == refs[0][1].spelling)):
            ref, target = refs[0]
            st.helper_calls.append(HelperCall(fn, path, call, name, i, ref, target, texts, in_lambda, host_key,
                                              obj))
        elif len(refs) > 1 and m and all(m.group(1) == t.spelling for _r, t in refs):
            # An overloaded kernel named in a call whose argument types depend on a template parameter (a generic
            # lambda's `auto`): each instantiation picks the overload its types fit, so each overload the call's
            # argument count fits is a launch (finish_helpers checks the count).
            st.helper_calls += [HelperCall(fn, path, call, name, i, ref, target, texts, in_lambda, host_key, obj,
                                           overloaded=True) for ref, target in refs]


def _dependent_member(head: ci.Cursor) -> str:
    """The member a dependent member call names (`ctx.launch(...)` with `Context &ctx` a template parameter's type:
    clang leaves the member expression unnamed): the identifier after its last `.` or `->`."""
    tokens = [t.spelling for t in head.get_tokens()]
    if len(tokens) >= 2 and tokens[-2] in (".", "->") and _IDENT.fullmatch(tokens[-1]):
        return tokens[-1]
    return ""


def _overload_set(arg: ci.Cursor, refs: list[tuple[ci.Cursor, ci.Cursor]]) -> bool:
    """Whether the kernel references of one argument are the overloads its one name stands for, unresolved because
    the call depends on a template parameter (one OVERLOADED_DECL_REF, every target of that name)."""
    names = {t.spelling for _r, t in refs}
    return len(names) == 1 and any(d.kind == K.OVERLOADED_DECL_REF for d in arg.walk_preorder())


def _local_pointers(st: _State, args: list[ci.Cursor]) -> dict[int, list[tuple[ci.Cursor, ci.Cursor]]]:
    """Argument index -> the one kernel reference of the local variable the argument names, for a variable
    initialized with a kernel (`auto kernel = k<T, 4>;`, then `encoder.add_node(kernel, grid, block, ...)`)."""
    out: dict[int, list[tuple[ci.Cursor, ci.Cursor]]] = {}
    for i, a in enumerate(args):
        # (libclang's referenced() sees through the implicit casts around a variable's name: no child walk here,
        # where every call whose arguments name no kernel comes through)
        v = a.referenced if a.kind in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR) else None
        if v is None or v.kind != K.VAR_DECL or v.semantic_parent is None or v.semantic_parent.kind in _CLASSES:
            continue
        if v.semantic_parent.kind in (K.NAMESPACE, K.TRANSLATION_UNIT):
            continue  # (a table or global: chosen kernel pointers are launches.chosen's)
        t = v.type.get_canonical()
        if t.kind == ci.TypeKind.POINTER:
            t = t.get_pointee()
        if t.kind not in (ci.TypeKind.FUNCTIONPROTO, ci.TypeKind.FUNCTIONNOPROTO, ci.TypeKind.UNEXPOSED,
                          ci.TypeKind.AUTO, ci.TypeKind.DEPENDENT):
            continue
        if len(refs := _kernel_refs(st, v)) == 1:
            out[i] = refs
    return out


def _object_of(call: ci.Cursor, children: list[ci.Cursor], args: list[ci.Cursor]
               ) -> tuple[ci.Cursor | None, ci.Cursor | None]:
    """A method call's object expression and class: `run(k, a)` through `operator()` lists the object as
    its first argument, `run.go(k, a)` names it under the member reference."""
    head = children[0] if children else None
    if call.spelling.startswith("operator") and len(children) > 1 and children[1].spelling == call.spelling \
            and args and head is not None and args[0] == head:
        obj = head
    elif head is not None and head.kind == K.MEMBER_REF_EXPR:
        obj = next(iter(head.get_children()), None)
    else:
        return None, None
    if obj is None:
        return None, None
    decl = obj.type.get_canonical().get_declaration()
    if decl is None or decl.kind not in _CLASSES | {K.CLASS_TEMPLATE_PARTIAL_SPECIALIZATION}:
        return obj, None
    return obj, decl


# Frameworks' launch helpers, as if their bodies were `kernel<<<grid, block, smem, stream>>>(args...)`:
# TensorFlow's `GpuLaunchKernel(kernel, grid, block, smem, stream, args...)` (gpu_kernel_helper.h; `CudaLaunchKernel`
# its older name), whose headers the parse never sees. A project helper of the same name comes first.
_TF_LAUNCH = Helper(0, ["kernel", "grid", "block", "smem", "stream", "args"], "args",
                    ["grid", "block", "smem", "stream"], ["args..."], {})
FRAMEWORK_HELPERS = {"GpuLaunchKernel": _TF_LAUNCH, "CudaLaunchKernel": _TF_LAUNCH}


def _fits(h: Helper, hc: HelperCall) -> bool:
    return h.index == hc.index and (len(hc.args) == len(h.params) or bool(h.pack and len(hc.args) >= len(h.params) - 1))


_FUNCTION_KINDS = (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD)


def _callee_declaration(call: ci.Cursor) -> ci.Cursor | None:
    """The function (template) a call names: the template a specialization comes from, or, for a dependent call
    (inside a generic lambda: `enc.add_node(kernel, ...)` whose kernel depends on the lambda's `auto`), the one
    declaration of the overload set its callee names."""
    ref = call.referenced
    if ref is None:
        kids = list(call.get_children())
        for d in kids[0].walk_preorder() if kids else ():
            if d.kind == K.OVERLOADED_DECL_REF and ci.conf.lib.clang_getNumOverloadedDecls(d) == 1:
                ref = ci.conf.lib.clang_getOverloadedDecl(d, 0)
                break
    if ref is None or ref.kind not in _FUNCTION_KINDS:
        return None
    pattern = ci.conf.lib.clang_getSpecializedCursorTemplate(ref)
    return pattern if pattern is not None and pattern.kind in _FUNCTION_KINDS else ref


def _signature_helper(st: _State, hc: HelperCall) -> Helper | None:
    """A helper known by its signature alone: the kernel, then two `dim3` parameters (grid, block), then other
    parameters (a `smem`/`shared` size, a stream), and a trailing parameter pack, the kernel's arguments:
    `template <typename F, typename... Params> void add_node(F* func, dim3 grid, dim3 block, Params&&... params)`,
    whose body hands the arguments' addresses to a graph or launch API defined in a host source (no launch the
    parse sees). The call is the launch, as for a helper whose body launches."""
    decl = _callee_declaration(hc.call)
    if decl is None:
        return None
    params = [p for p in decl.get_children() if p.kind == K.PARM_DECL]
    i = hc.index
    names = [p.spelling for p in params]
    if len(params) >= i + 3 and (obj := _config_object_helper(st, params, i)) is not None:
        return obj
    if len(params) < i + 4:
        return None
    last = _COMMENT.sub(" ", _src(st.ctx, params[-1]))
    if "..." not in last or not all(params[j].type.get_canonical().spelling.endswith("dim3") for j in (i + 1, i + 2)):
        return None
    smem = stream = None
    for p in params[i + 3:-1]:
        spelled = p.type.spelling
        if stream is None and ("Stream" in spelled or "stream" in p.spelling):
            stream = p.spelling
        elif smem is None and re.search(r"smem|shared|shmem", p.spelling, re.I):
            smem = p.spelling
    return Helper(i, names, names[-1], [names[i + 1], names[i + 2], smem, stream], [names[-1] + "..."], {})


def known_helper(st: _State, hc: HelperCall | Any) -> Helper | None:
    """The helper a call (with a kernel or a forwarded parameter at `hc.index`) reaches: the project's own of that
    name first, then a framework's, then one known by its signature alone."""
    helper = next((h for h in st.helpers.get(hc.name, ()) if _fits(h, hc)), None)
    if helper is None and getattr(hc, "obj", None) is not None and "::" not in hc.name:
        # A method called on an object of a template parameter's type (`ctx.launch(...)` in `template <class Context>
        # void reset(Context &ctx)`): the class is unknown until instantiation; the helper method of that name, where
        # the TU's launcher classes have only one.
        owners = {key for key in st.helpers if key.endswith("::" + hc.name)}
        if len(owners) == 1:
            helper = next((h for h in st.helpers[owners.pop()] if _fits(h, hc)), None)
    if helper is None and (fw := FRAMEWORK_HELPERS.get(hc.name)) is not None and _fits(fw, hc):
        helper = fw
    if helper is None and (sig := _signature_helper(st, hc)) is not None and _fits(sig, hc):
        helper = sig
    return helper


def apply_helper(helper: Helper, given: list[str], mapping: dict[str, str]) -> tuple[list[str], list[str | None]]:
    """A helper's launch arguments and configuration for a call passing `given`: its parameters replaced
    (`mapping`), a trailing pack by the call's remaining arguments."""
    fixed = helper.params[:-1] if helper.pack else helper.params
    rest = given[len(fixed):]
    # (a launcher object's members are put in where its methods name them, `this->grid_` too)
    sub = substitute if helper.members else substitute_names
    args: list[str] = []
    for a in helper.args:
        if helper.pack and spreads(a, helper.pack):
            args += [r.strip() for r in rest]
        else:
            args.append(sub(a, mapping))
    return args, [sub(c, mapping) if c else None for c in helper.config]


def spreads(text: str, pack: str) -> bool:
    """Whether an argument hands a parameter pack on whole: `args...`, `std::forward<A>(args)...`."""
    return re.fullmatch(rf"\s*(?:(?:::)?std\s*::\s*forward\s*<[^()]*>\s*\(\s*)?{re.escape(pack)}\s*\)?\s*\.\.\.\s*",
                        text) is not None


def substitute_names(text: str, mapping: dict[str, str]) -> str:
    """`substitute`, leaving a member's name alone: `cfg.dims.grid` with a parameter `grid` keeps `.grid`."""
    mapping = {k: v for k, v in mapping.items() if k}
    if not mapping:
        return text
    pat = re.compile(r"(?<![.\w])(?<!->)(?<!::)(" + "|".join(re.escape(k) for k in sorted(mapping, key=len,
                     reverse=True)) + r")\b")
    return pat.sub(lambda m: mapping[m.group(1)], text)


# A parameter declared as a launch configuration object: `launch_configuration_t cfg`, `const LaunchConfig& lc`.
_CONFIG_TYPE = lazy_re.compile(r"\b\w*(?:launch_?config(?:uration)?|LaunchConfig(?:uration)?)\w*\b", re.I)


def _config_object_helper(st: _State, params: list[ci.Cursor], i: int) -> Helper | None:
    """A helper known by its signature alone: the kernel, then (a stream and) one launch configuration object, then
    a trailing parameter pack, the kernel's arguments: `template <typename K, typename... P> void launch(K&& kernel,
    launch_configuration_t config, P&&... params)` of a wrapper library whose body (several calls down, in headers
    the parse may not get through) launches it. The configuration is the object's construction's (config_objects),
    where it can be read."""
    names = [p.spelling for p in params]
    texts = [_COMMENT.sub(" ", _src(st.ctx, p)) for p in params]
    if "..." not in texts[-1]:
        return None
    found = [j for j in range(i + 1, len(params) - 1)
             if names[j] and _CONFIG_TYPE.search(texts[j].rsplit(names[j], 1)[0])]
    if len(found) != 1:
        return None
    j = found[0]
    stream = next((names[k] for k in range(i + 1, len(params) - 1)
                   if k != j and re.search(r"stream", texts[k], re.I)), None)
    return Helper(i, names, names[-1], [None, None, None, stream], [names[-1] + "..."], {}, config_object=j)


def finish_helpers(st: _State) -> None:
    """A launch for each call of a known helper with a kernel where the helper launches its parameter."""
    for hc in st.helper_calls:
        helper = known_helper(st, hc)
        kkey = _kernel_key(st, hc.target)
        if helper is None or kkey is None:
            continue
        if hc.overloaded and not _takes(st.kernels[kkey], helper, hc):
            continue
        fixed = helper.params[:-1] if helper.pack else helper.params
        mapping = {p: f"({a.strip()})" for p, a in zip(fixed, hc.args, strict=False)}
        if helper.members and hc.obj is not None:
            mapping.update(_member_values(st, hc.obj, helper.members))
        args, cfg = apply_helper(helper, hc.args, mapping)
        whole: str | None = None
        if helper.config_object is not None:
            # The whole configuration is one object the call passes: its construction's arguments, else unread.
            whole = hc.args[helper.config_object].strip() if helper.config_object < len(hc.args) else None
            first = next(iter(hc.call.get_arguments()), None)
            lead = 1 if hc.obj is not None and first is not None and first == hc.obj else 0  # (as note_call)
            cfg = object_parts(st, hc.call, helper.config_object, cfg, offset=lead)
        elif hc.obj is None:
            # A configuration object passed in (`launch(k, make_config(g, b, smem), args...)`): its parts.
            cfg = object_config(st, helper, hc.call, cfg)
        else:
            # The same passed to a method (`ctx.launch({blocks, 128}, k, args...)`): its arguments after the object.
            cfg = object_config(st, helper, hc.call, cfg, given_args(hc))
        written = _written_args(st, hc.ref, st.kernels[kkey].name)
        concrete = _template_args(hc.target) if hc.target.kind == K.FUNCTION_DECL else None
        launch = Launch(kernel=kkey, launcher=hc.fn.spelling, path=hc.path, line=hc.call.location.line,
                        kind=helper.kind, config={"grid": cfg[0], "block": cfg[1], "shared_mem": cfg[2] or "0",
                                               "stream": cfg[3] or "0",
                                               **({"config": whole} if whole and cfg[0] is None else {}),
                                               **({"stored": helper.stored} if helper.stored else {})},
                        args=args, template_args=concrete, template_args_text=written[0] if written else [],
                        in_lambda=hc.in_lambda, host_template=hc.host_key)
        tparams = st.kernels[kkey].template_params
        if not concrete and not launch.template_args_text and tparams and hc.target.kind == K.FUNCTION_TEMPLATE \
                and (kargs := _launched(helper, given_args(hc))):
            # `ctx.launch(cfg, k, arr, p, part)` in a generic lambda: what the arguments the parse types deduce
            # (`arr`, `part`; not the lambda's `auto &p`), as for `k<<<...>>>(arr, p, part)`.
            from miner.units.launches.sites import _deduce  # (sites imports this module)

            launch.template_args_text = _deduce(hc.target, kargs, host_names(st, hc.host_key, hc.fn)) or []
        if not concrete and len(launch.template_args_text) < len(tparams):
            launch.generic_params = _generic_params(hc.call)
        _record_aliases(st, launch, hc.ref)
        _values(st.ctx, launch, hc.fn, hc.call)
        st.consumed.add(hc.ref.hash)
        st.launches.append(launch)



def given_args(hc: HelperCall) -> list[ci.Cursor]:
    """The argument expressions of a helper call in the helper's parameter order: a method's object left out, a
    dependent call's listed from its children (clang gives it no arguments)."""
    given = list(hc.call.get_arguments()) or list(hc.call.get_children())[1:]
    return given[1:] if hc.obj is not None and given and given[0] == hc.obj else given


def _launched(helper: Helper, given: list[ci.Cursor]) -> list[ci.Cursor] | None:
    """The argument expressions the helper launches the kernel with, where each of its launch arguments is one of
    its parameters or its pack handed on whole; None otherwise (an argument it computes)."""
    fixed = helper.params[:-1] if helper.pack else helper.params
    out: list[ci.Cursor] = []
    for a in helper.args:
        if helper.pack and spreads(a, helper.pack):
            out += given[len(fixed):]
        elif a.strip() in fixed and fixed.index(a.strip()) < len(given):
            out.append(given[fixed.index(a.strip())])
        else:
            return None
    return out


def _generic_params(call: ci.Cursor) -> list[str]:
    """The `auto` parameters (of a generic lambda) a call's arguments name: the types its template arguments are
    deduced from, fixed only per instantiation of the lambda."""
    out: list[str] = []
    for d in call.walk_preorder():
        p = d.referenced if d.kind == K.DECL_REF_EXPR else None
        if p is not None and p.kind == K.PARM_DECL and re.search(r"\bauto\b", p.type.spelling) \
                and p.spelling not in out:
            out.append(p.spelling)
    return out


def _takes(kernel: Any, helper: Helper, hc: HelperCall) -> bool:
    """Whether an overload's parameters take the arguments the helper launches it with: as many as it declares
    (the types are what the call's instantiations fix, unknown here)."""
    fixed = helper.params[:-1] if helper.pack else helper.params
    n = sum(len(hc.args) - len(fixed) if helper.pack and spreads(a, helper.pack) else 1 for a in helper.args)
    params = getattr(kernel, "params", None)
    if params is None:
        return True
    return n == len(params)


def _member_values(st: _State, obj: ci.Cursor, members: dict[str, ci.Cursor]) -> dict[str, str]:
    """What a launcher object's members hold, read from its construction: the constructor's initializer of
    each member with the constructor's parameters replaced by the construction's arguments (a defaulted
    parameter by its default). Members set some other way stay as named (unknown)."""
    ctor_call = _construction(obj)
    ctor = ctor_call.referenced if ctor_call is not None else None
    if ctor is None or ctor.kind != K.CONSTRUCTOR:
        return {}
    cparams = [p for p in ctor.get_children() if p.kind == K.PARM_DECL]
    given = [a for a in ctor_call.get_arguments() if _src(st.ctx, a).strip()]
    values: dict[str, str] = {}
    for i, p in enumerate(cparams):
        if i < len(given):
            values[p.spelling] = f"({_src(st.ctx, given[i]).strip()})"
        elif (default := _default_of(st, p)) is not None:
            values[p.spelling] = f"({default})"
    out: dict[str, str] = {}
    kids = list(ctor.get_children())
    for j, ch in enumerate(kids[:-1]):
        if ch.kind != K.MEMBER_REF or ch.spelling not in members:
            continue
        text = _src(st.ctx, kids[j + 1]).strip()
        # (the initializer's extent may begin at the member's name: `grid_{g, 1, 1}`)
        text = re.sub(rf"^{re.escape(ch.spelling)}\s*(?=[{{(])", "", text)
        init = _unbrace(text)
        if init is not None:
            out[ch.spelling] = substitute(init, values)
    return out


def _construction(obj: ci.Cursor) -> ci.Cursor | None:
    """The constructor call that made `obj`: its own (a temporary) or its local variable's initializer."""
    d = obj.referenced if obj.kind == K.DECL_REF_EXPR else None
    root = d if d is not None and d.kind == K.VAR_DECL else obj
    return next((c for c in root.walk_preorder() if c.kind == K.CALL_EXPR and c.referenced is not None
                 and c.referenced.kind == K.CONSTRUCTOR), None)


def _default_of(st: _State, p: ci.Cursor) -> str | None:
    text = _COMMENT.sub(" ", _src(st.ctx, p))
    return text.split("=", 1)[1].strip() or None if "=" in text else None


def _unbrace(init: str) -> str | None:
    """A member initializer as one expression: `{g, 1, 1}` of a dim3 -> `g` (the rest ones), `{s}` -> `s`,
    `{x, y, z}` -> `dim3(x, y, z)`."""
    inner = init[1:-1] if init[:1] in "{(" and init[-1:] in "})" else init
    parts = [p.strip() for p in split_top(inner)] if inner.strip() else []
    if not parts:
        return None
    if len(parts) == 1 or all(p in ("1", "1u", "1U") for p in parts[1:]):
        return parts[0]
    return f"dim3({', '.join(parts)})"
