"""Launch sites: `<<<...>>>`, cudaLaunchKernel*, hipLaunchKernelGGL and (void*) tables."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import clang.cindex as ci

from miner.closure import TUContext
from miner.frontends.common import split_top, substitute

K = ci.CursorKind
_API = {"cudaLaunchKernel": 0, "cudaLaunchCooperativeKernel": 0, "cudaLaunchKernelEx": 1,
        "hipLaunchKernel": 0, "hipLaunchCooperativeKernel": 0}
_FUNCS = {K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.CONSTRUCTOR}
_NUM = re.compile(r"^\s*\(?\s*(\d+)[uUlL]*\s*\)?\s*$")


@dataclass
class Launch:
    kernel: tuple[str, int]  # (path, offset of the kernel's name)
    launcher: str
    path: str
    line: int
    kind: str
    config: dict[str, str | None] = field(default_factory=dict)
    values: dict[str, int] = field(default_factory=dict)
    definitions: dict[str, str] = field(default_factory=dict)
    args: list[str] = field(default_factory=list)
    template_args: list[str] | None = None  # concrete, when the AST resolved them
    template_args_text: list[str] = field(default_factory=list)  # as written
    in_lambda: bool = False
    host_template: tuple[str, int] | None = None  # enclosing host function template
    host_params: list[str] = field(default_factory=list)
    host_template_args: list[list[str]] = field(default_factory=list)


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


def _template_args(ref: ci.Cursor) -> list[str] | None:
    n = ref.get_num_template_arguments()
    if n <= 0:
        return None
    out = []
    for i in range(n):
        try:
            kind = ref.get_template_argument_kind(i)
        except ValueError:  # kinds newer than the Python bindings know (packs, ...)
            return None
        if kind == ci.TemplateArgumentKind.INTEGRAL:
            t = ref.get_template_argument_type(i).get_canonical().spelling
            v = ref.get_template_argument_value(i)
            out.append(("true" if v else "false") if t == "bool" else str(v))
        elif kind == ci.TemplateArgumentKind.TYPE:
            out.append(ref.get_template_argument_type(i).get_canonical().spelling)
        else:
            return None
    return out


def _kernel_ref(c: ci.Cursor, kernels: dict[tuple[str, int], Any], ctx: TUContext) -> ci.Cursor | None:
    for d in c.walk_preorder():
        r = d.referenced if d.kind in (K.DECL_REF_EXPR, K.OVERLOADED_DECL_REF) else None
        if r is not None and r.location.file is not None:
            if (ctx.norm(r.location.file.name), r.location.offset) in kernels:
                return r
    return None


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
        for (_ns, nm), lst in ctx.by_name.items():
            if nm == fname:
                p = lst[0][0]
                out.definitions[fname] = ctx.read(p.path)[p.start:p.end].decode("utf-8", "replace")
    for ident in re.findall(r"[A-Za-z_]\w*", text):
        if ident in ctx.macros and ident not in out.definitions:
            body = ctx.macros[ident][0].body.strip()
            out.definitions[ident] = f"#define {ident} {body}"


def find(ctx: TUContext, kernels: dict[tuple[str, int], Any]
         ) -> tuple[list[Launch], dict[tuple[str, int], list[list[str]]]]:
    """All launches of known kernels in repo function bodies, and concrete calls of host templates."""
    launches: list[Launch] = []
    host_calls: dict[tuple[str, int], list[list[str]]] = {}
    for lst in ctx.pieces.values():
        for _s, _e, piece, fn in lst:
            if fn.kind not in _FUNCS or not fn.is_definition():
                continue
            if (piece.path, fn.location.offset) in kernels:
                continue
            _walk_function(ctx, fn, piece.path, kernels, launches, host_calls)
    # Template arguments fixed by a host function template one level up the call chain.
    for launch in launches:
        if launch.template_args is None and launch.host_template in host_calls:
            for concrete in host_calls[launch.host_template]:
                mapping = dict(zip(launch.host_params, concrete, strict=False))
                launch.host_template_args.append(
                    [substitute(t, mapping) for t in launch.template_args_text])
    return launches, host_calls



def _walk_function(ctx, fn, path, kernels, launches, host_calls) -> None:
    host_tmpl = (path, fn.location.offset) if fn.kind == K.FUNCTION_TEMPLATE else None
    stack: list[tuple[ci.Cursor, bool]] = [(fn, False)]
    while stack:
        c, in_lambda = stack.pop()
        if c.kind == K.CALL_EXPR:
            children = list(c.get_children())
            cfg = next((x for x in children if x.kind == K.CALL_EXPR
                        and x.spelling == "__cudaPushCallConfiguration"), None)
            ref = c.referenced
            if cfg is not None:
                _chevron(ctx, fn, path, c, children, cfg, kernels, launches, in_lambda, host_tmpl)
            elif ref is not None and ref.spelling in _API:
                _api_launch(ctx, fn, path, c, children, ref.spelling, kernels, launches, in_lambda)
            elif ref is not None and ref.location.file is not None:
                args = _template_args(ref)
                if args:
                    key = (ctx.norm(ref.location.file.name), ref.location.offset)
                    host_calls.setdefault(key, []).append(args)
        for ch in c.get_children():
            stack.append((ch, in_lambda or c.kind == K.LAMBDA_EXPR))


def _chevron(ctx, fn, path, call, children, cfg, kernels, launches, in_lambda, host_tmpl) -> None:
    callee = children[0]
    ref = call.referenced
    target = None
    if ref is not None and ref.location.file is not None:
        key = (ctx.norm(ref.location.file.name), ref.location.offset)
        target = key if key in kernels else None
    if target is None:
        r = _kernel_ref(callee, kernels, ctx)
        if r is None:
            return
        target = (ctx.norm(r.location.file.name), r.location.offset)
    cfg_text = _src(ctx, cfg).strip()
    cfg_text = cfg_text[3:] if cfg_text.startswith("<<<") else cfg_text
    cfg_text = cfg_text[:-3] if cfg_text.endswith(">>>") else cfg_text
    parts = split_top(cfg_text) + [None] * 4
    callee_text = _src(ctx, callee)
    targs_text = split_top(callee_text[callee_text.find("<") + 1: callee_text.rfind(">")]) if "<" in callee_text else []
    launch = Launch(kernel=target, launcher=fn.spelling, path=path, line=call.location.line, kind="<<<>>>",
                    config={"grid": parts[0], "block": parts[1], "shared_mem": parts[2] or "0",
                            "stream": parts[3] or "0"},
                    args=[_src(ctx, a) for a in children if a is not callee and a is not cfg],
                    template_args=_template_args(ref) if ref is not None else None,
                    template_args_text=targs_text, in_lambda=in_lambda,
                    host_template=host_tmpl,
                    host_params=[ch.spelling for ch in fn.get_children()
                                 if ch.kind in (K.TEMPLATE_TYPE_PARAMETER, K.TEMPLATE_NON_TYPE_PARAMETER)])
    for key in ("grid", "block", "shared_mem"):
        if launch.config.get(key):
            _resolve_value(ctx, launch.config[key], launch, key)
    launches.append(launch)


def _api_launch(ctx, fn, path, call, children, api, kernels, launches, in_lambda) -> None:
    args = children[1:]
    idx = _API[api]
    if len(args) <= idx:
        return
    found = []
    r = _kernel_ref(args[idx], kernels, ctx)
    if r is not None:
        found.append(r)
    else:  # a (void*) table or a function-pointer variable: the kernels are in its initializer
        for d in args[idx].walk_preorder():
            v = d.referenced if d.kind == K.DECL_REF_EXPR else None
            if v is not None and v.kind == K.VAR_DECL:
                vd = v.get_definition() or v
                for x in vd.walk_preorder():
                    rr = x.referenced if x.kind == K.DECL_REF_EXPR else None
                    if rr is not None and rr.location.file is not None and (
                            ctx.norm(rr.location.file.name), rr.location.offset) in kernels:
                        found.append(rr)
    texts = [_src(ctx, a) for a in args]
    for r in found:
        cfg = {"grid": texts[1] if len(texts) > 1 else None, "block": texts[2] if len(texts) > 2 else None,
               "shared_mem": texts[4] if len(texts) > 4 else "0", "stream": texts[5] if len(texts) > 5 else "0"}
        if api == "cudaLaunchKernelEx":
            cfg = {"grid": None, "block": None, "shared_mem": None, "stream": None, "config": texts[0]}
        launch = Launch(kernel=(ctx.norm(r.location.file.name), r.location.offset), launcher=fn.spelling,
                        path=path, line=call.location.line, kind=api, config=cfg,
                        args=texts[idx + 1:] if api == "cudaLaunchKernelEx" else [texts[3]] if len(texts) > 3 else [],
                        template_args=_template_args(r), in_lambda=in_lambda)
        for key in ("grid", "block", "shared_mem"):
            if cfg.get(key):
                _resolve_value(ctx, cfg[key], launch, key)
        launches.append(launch)
