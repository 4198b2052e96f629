"""Kernel template arguments from the instantiations the translation unit itself makes.

A header-only template library launches its kernels from host templates several calls below its public
API (`(out = conv(a, b)).run()` -> an operator class's `exec` -> `conv_impl<Out, In, F>` -> `k<...><<<>>>`),
and the arguments are the library's own expression types, which the program that includes the library
(an example, a test) builds by calling that API. Pushing those types down the call graph by text (the
host-chain propagation) stops at the first operator, deduced return type or member of a class template.
clang has instantiated the whole chain in the parse already: a call in a function's body refers to the
callee's specialization, whose definition cursor walks the *instantiated* body, where the launch refers to
the kernel's specialization with concrete arguments. This module follows those references from the main
file's own (non-template) functions and hands each launch or reference site the kernel arguments reaching
it (`apply`)."""

from __future__ import annotations

import clang.cindex as ci

from miner.units.launches.cursors import _key, _primary, _template_args
from miner.units.launches.record import K, Launch
from miner.units.launches.state import _State

_CALLABLE = {K.FUNCTION_DECL, K.CXX_METHOD, K.CONSTRUCTOR, K.CONVERSION_FUNCTION}

# A bound on the functions walked per translation unit: the instantiated call graph of a program that
# includes a large library is a few thousand functions; the bound only stops a runaway walk.
_MAX_FUNCTIONS = 20000

# (kernel key, path, line) of a site -> the concrete argument lists that reach it, in order of discovery.
Sites = dict[tuple[tuple[str, int], str, int], list[list[str]]]


def wanted(records: list[Launch]) -> bool:
    """Whether a launch or reference of a template kernel was left with no concrete arguments (its host
    template's defaults, or none): only then is the main file parsed again with its instantiations."""
    return any(rec.kernel is not None and rec.template_args is None
               and (rec.host_defaulted or not rec.host_template_args) for rec in records)


def program_sites(st: _State) -> Sites:
    """Kernel specializations named (called or referenced) in the bodies the main file's own functions
    reach through instantiated calls, by the site that names them. The parse leaves the end-of-TU
    instantiations out (clang_frontend.INCOMPLETE, for speed), so the bodies are read in a second parse of
    the main file that makes them (the probe, `instantiate=True`)."""
    ctx = st.ctx
    main = ctx.norm(ctx.tu.spelling)
    found: Sites = {}
    if ctx.probe is None or not _roots(ctx.tu.cursor, ctx, main):
        return found
    tu = ctx.probe("", instantiate=True)
    if tu is None:
        return found
    seen: set[int] = set()
    # Only bodies of the program and of the project's files are walked: a launch of a project kernel sits in
    # one of those, and the toolkit's and standard library's bodies are most of the instantiated graph.
    walkable = ctx.inputs | {main}
    stack: list[ci.Cursor] = [c for c in _roots(tu.cursor, ctx, main)]
    while stack and len(seen) < _MAX_FUNCTIONS:
        fn = stack.pop()
        for d in fn.walk_preorder():
            if d.kind not in (K.CALL_EXPR, K.DECL_REF_EXPR):
                continue
            r = d.referenced
            if r is None or r.kind not in _CALLABLE:
                continue
            kkey = _key(ctx, _primary(r))
            if kkey in st.kernels:
                if r.get_num_template_arguments() > 0 and d.location.file is not None:
                    args = _template_args(r)
                    if args is not None:
                        site = (kkey, ctx.norm(d.location.file.name), d.location.line)
                        lists = found.setdefault(site, [])
                        if args not in lists:
                            lists.append(args)
                continue
            if d.kind != K.CALL_EXPR:
                continue
            body = r.get_definition()
            if body is None or body.location.file is None or ctx.norm(body.location.file.name) not in walkable:
                continue
            h = body.hash
            if h not in seen:
                seen.add(h)
                stack.append(body)
    return found


def _roots(parent: ci.Cursor, ctx, main: str) -> list[ci.Cursor]:
    """The non-template function definitions the main file writes (in namespaces too): a program's own
    code, where every call names a concrete specialization."""
    out: list[ci.Cursor] = []
    for c in parent.get_children():
        if c.location.file is None or ctx.norm(c.location.file.name) != main:
            continue
        if c.kind == K.NAMESPACE:
            out += _roots(c, ctx, main)
        elif c.kind in (K.FUNCTION_DECL, K.CXX_METHOD) and c.is_definition():
            out.append(c)
    return out


def apply(records: list[Launch], sites: Sites) -> None:
    """Each launch or reference at a site the program's instantiations reach takes their arguments: they
    replace a host template's defaults (arguments that stood for nothing) and join known ones."""
    if not sites:
        return
    for rec in records:
        lists = sites.get((rec.kernel, rec.path, rec.line)) if rec.kernel is not None else None
        if not lists:
            continue
        if rec.host_defaulted or (rec.template_args is None and not rec.host_template_args):
            rec.host_template_args = [list(a) for a in lists]
            rec.host_defaulted = False
            rec.resolved_text = None
            continue
        if rec.template_args is not None:
            continue  # (concrete as written: the instantiation is that one)
        for a in lists:
            if list(a) not in rec.host_template_args:
                rec.host_template_args.append(list(a))
