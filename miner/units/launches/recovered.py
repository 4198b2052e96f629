"""Launches clang dropped: a `<<<...>>>` statement with an error in it is not in the AST at all.

A launch whose configuration names something only the real build defines (`<<<blocks, FIX_TILE>>>` with
`-DFIX_TILE=...` in the extension's setup script, or a host helper the parse shims lack) is left out of
its function's body by clang's error recovery: the kernel had no launch, and the types its dispatch
macro binds were lost (one instantiation was inferred, the others silently dropped). Such a statement is
read back from the source text where a parse error lies inside it, and the dispatch's type aliases
(`using scalar_t = float;` in each case block the statement sits in) give its template arguments.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable, Iterator
from types import SimpleNamespace
from typing import Any

import clang.cindex as ci

from miner import lazy_re
from miner.frontends.clang_frontend import skipped_in
from miner.frontends.common import split_top
from miner.units.closure.context import Macro
from miner.units.instantiations import eval_int
from miner.units.launch_formula import formula, local_initializers
from miner.units.launches import value_spelling
from miner.units.launches.class_scope import scope_params
from miner.units.launches.macro_sites import enclosing_invocation, expand, fold_locals, launch_macro
from miner.units.launches.record import _FUNCS, _IDENT, K, Launch
from miner.units.launches.state import _add as _add_inst
from miner.units.launches.state import _DepCall, _State
from miner.units.launches.tables import _host_of
from miner.units.launches.text import _angle_args, substitute
from miner.units.launches.values import _values
from miner.units.mentions import _COMMENT_OR_STRING, _blank

_MAX_COMBOS = 16
_ALIASES = (K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL)


def _error_offsets(st: _State) -> dict[str, list[int]]:
    """Offsets of the TU's parse errors, by file."""
    out: dict[str, list[int]] = {}
    for d in st.ctx.tu.diagnostics:
        loc = d.location
        if d.severity >= ci.Diagnostic.Error and loc.file is not None:
            out.setdefault(st.ctx.norm(loc.file.name), []).append(loc.offset)
    return out


def _balanced(text: str, i: int, open_: str, close: str) -> int:
    """Index after the `close` matching the `open_` at text[i], or -1."""
    depth = 0
    for j in range(i, len(text)):
        depth += (text[j] == open_) - (text[j] == close)
        if depth == 0:
            return j + 1
    return -1


def _site(text: str, at: int) -> tuple[list[str], list[str], list[str], int] | None:
    """`name<targs><<<cfg>>>(args)` with `at` just after the name: written template arguments, config
    parts, argument texts and the offset after the closing parenthesis; None if not a launch."""
    i = at
    while i < len(text) and text[i].isspace():
        i += 1
    targs: list[str] = []
    if text.startswith("<", i) and not text.startswith("<<<", i):
        got = _angle_args(text, i)
        if got is None:
            return None
        targs, i = got
        while i < len(text) and text[i].isspace():
            i += 1
    if not text.startswith("<<<", i):
        return None
    end = text.find(">>>", i + 3)
    if end < 0:
        return None
    cfg = [p.strip() for p in split_top(text[i + 3:end])]
    j = end + 3
    while j < len(text) and text[j].isspace():
        j += 1
    if not text.startswith("(", j) or (close := _balanced(text, j, "(", ")")) < 0:
        return None
    args = [a.strip() for a in split_top(text[j + 1:close - 1])] if text[j + 1:close - 1].strip() else []
    return targs, cfg, args, close


def _bindings(fn: ci.Cursor, path: str, offset: int, names: set[str]) -> dict[str, list[str]]:
    """The types each alias in `names` is bound to by the blocks around `offset` (a dispatch macro's case
    blocks, each `{ using scalar_t = T; ... }`, span the macro's invocation)."""
    out: dict[str, list[str]] = {}
    for c in fn.walk_preorder():
        if c.kind != K.COMPOUND_STMT:
            continue
        e = c.extent
        if e.start.file is None or not (e.start.offset <= offset < e.end.offset):
            continue
        for stmt in c.get_children():
            if stmt.kind != K.DECL_STMT:
                continue
            for d in stmt.get_children():
                if d.kind in _ALIASES and d.spelling in names:
                    t = value_spelling.type_spelling(d.underlying_typedef_type)
                    if t not in out.setdefault(d.spelling, []):
                        out[d.spelling].append(t)
    return out


def _unlaunched(st: _State) -> tuple[dict[str, list[tuple[str, int]]], dict[str, list[tuple[str, int]]]]:
    """Every kernel key by name, and by name the keys the walk found no launch or reference of. Overloads of one
    name (`jacobi_kernel` with and without `ny`) are told apart later by the site's argument count."""
    seen = {rec.kernel for rec in st.launches + st.refs}
    by_name: dict[str, list[tuple[str, int]]] = {}
    for key, k in st.kernels.items():
        by_name.setdefault(k.name, []).append(key)
    missing = {n: [k for k in keys if k not in seen] for n, keys in by_name.items()}
    return by_name, {n: keys for n, keys in missing.items() if keys}


def recover_dropped(st: _State, defs: list[tuple[str, ci.Cursor]]) -> None:
    """Launch records for `<<<>>>` statements of kernels the walk found no launch or reference of."""
    by_name, missing = _unlaunched(st)
    if not missing:
        return
    errors = _error_offsets(st)
    if not errors:
        return
    rx = re.compile(r"(?<![\w.])(?:\w+::)*(" + "|".join(map(re.escape, sorted(missing))) + r")\b")
    for path, fn, errs, raw, text in _bodies_naming(st, defs, errors, missing):
        e = fn.extent
        skipped: list[tuple[int, int]] | None = None
        for m in rx.finditer(text):
            site = _site(text, m.end())
            macro: Macro | None = None
            if site is None and (got := _macro_site(st, path, e.start.offset, text, m)) is not None:
                site, macro = got  # (`run_device(CTX, k, n, (x, n))`, a macro whose body launches)
            if site is None:
                continue
            targs, cfg, args, end = site
            # An error inside a macro argument (the dispatch's lambda) is reported where the macro is
            # invoked: the statement is taken to start after the previous `;` or `}`.
            stmt = max(text.rfind(";", 0, m.start()), text.rfind("}", 0, m.start())) + 1
            if not any(e.start.offset + stmt <= o < e.start.offset + end for o in errs):
                # No error of its own, yet no launch of this kernel is in the AST: clang drops a statement
                # silently where it uses a declaration that was invalid (a member whose type came from a
                # header the parse lacks: the error was reported at the member). Only text the preprocessor
                # skipped is no launch of this configuration.
                if skipped is None:
                    skipped = skipped_in(st.ctx.tu, st.ctx.tu.get_file(path))
                if any(a <= e.start.offset + m.start() < b for a, b in skipped):
                    continue
            keys = missing[m.group(1)]
            if len(by_name[m.group(1)]) > 1:
                keys = [k for k in keys if len(st.kernels[k].params) == len(args)]
            if len(keys) != 1:
                continue
            _add(st, fn, path, keys[0], e.start.offset + m.start(),
                 raw.count(b"\n", 0, m.start()) + e.start.line, targs, cfg, args, macro)


def _macro_site(st: _State, path: str, base: int, text: str, m: re.Match[str]
                ) -> tuple[tuple[list[str], list[str], list[str], int], Macro] | None:
    """The launch of the kernel `m` names as an argument of a project macro whose body launches it: the site as
    `_site` gives it (the end being the invocation's), read from the invocation's expansion, the configuration with
    the macro's own locals put in; and the macro. `base`: the offset of `text` (a function's body) in its file."""
    inv = enclosing_invocation(text, m.start())
    if inv is None:
        return None
    macro = launch_macro(st.ctx, inv[0], (path, base + inv[1]))
    expansion = expand(macro, text[inv[1]:inv[2]]) if macro is not None else None
    if macro is None or expansion is None:
        return None
    # (the first mention may be no launch: `#kernel`, the name stringified for a timing range)
    for k in re.finditer(r"(?<![\w.])(?:\w+::)*" + re.escape(m.group(1)) + r"\b", expansion):
        if (got := _site(expansion, k.end())) is not None:
            targs, cfg, args, _end = got
            return (targs, fold_locals(expansion, k.start(), cfg), args, inv[2]), macro
    return None


def recover_dropped_calls(st: _State, defs: list[tuple[str, ci.Cursor]]) -> None:
    """Calls of host function templates with written arguments (`run<scalar_t, Alloc<char>>(...)` in a dispatch
    lambda) in statements clang dropped: a dependent call (or a concrete instantiation) as the walk records it,
    one per type the dispatch binds, so the templates they reach are instantiated."""
    names = {n for n, keys in st.host_names.items() if any(k not in st.kernels for k in keys)}
    errors = _error_offsets(st) if names else {}
    if not errors:
        return
    rx = re.compile(r"(?<![\w.>])(?:\w+::)*(" + "|".join(map(re.escape, sorted(names))) + r")\s*<(?!<)")
    for path, fn, errs, _raw, text in _bodies_with_errors(st, defs, errors):
        e = fn.extent
        host_key = None
        for m in rx.finditer(text):
            got = _angle_args(text, m.end() - 1)
            if got is None or not text[got[1]:].lstrip().startswith("("):
                continue
            # (an error inside a dispatch macro's argument is reported where the macro is invoked)
            stmt = max(text.rfind(";", 0, m.start()), text.rfind("}", 0, m.start())) + 1
            close = text.find(";", got[1])
            if not any(e.start.offset + stmt <= o < e.start.offset + (close if close > 0 else len(text)) for o in errs):
                continue  # clang kept this call: the walk saw it
            host_key = host_key or _host_of(st, path, fn)
            targs = got[0]
            idents = {n for t in targs for n in _IDENT.findall(t)}
            bound = _bindings(fn, path, e.start.offset + m.start(), idents) if idents else {}
            combos = [dict(zip(bound, vals, strict=True)) for vals in itertools.product(*bound.values())]
            params = [p.spelling for p in st.host_params.get(host_key, [])] if host_key is not None else []
            for combo in (combos or [{}])[:_MAX_COMBOS]:
                args = [substitute(t, combo) for t in targs]
                for key in st.host_names[m.group(1)]:
                    if key in st.kernels or len(args) > len(st.host_params.get(key, [])):
                        continue
                    if params and any(re.search(rf"\b{re.escape(p)}\b", a) for a in args for p in params):
                        dc = _DepCall(host_key, params, key, args)  # type: ignore[arg-type]
                        if host_key in st.classes:
                            dc._scope = scope_params(fn, st.classes[host_key])  # type: ignore[attr-defined]
                        if dc not in st.dep_calls:
                            st.dep_calls.append(dc)
                    elif not idents - set(combo) or host_key is None:
                        _add_inst(st.concrete, key, [st.resolver(a, set()) for a in args])


def _add(st: _State, fn: ci.Cursor, path: str, kkey: tuple[str, int], offset: int, line: int,
         targs: list[str], cfg: list[str], args: list[str], macro: Macro | None = None) -> None:
    names = {n for t in targs for n in _IDENT.findall(t)}
    bound = _bindings(fn, path, offset, names) if names else {}
    combos = [dict(zip(bound, vals, strict=True)) for vals in itertools.product(*bound.values())][:_MAX_COMBOS]
    # (`<<<grid, {bx, by, 1}>>>`, a braced list nvcc takes and clang does not: the reason it was dropped)
    parts = [f"dim3({p.strip()[1:-1].strip()})" if p.strip().startswith("{") and p.strip().endswith("}") else p
             for p in cfg] + [None] * 4
    host_key = _host_of(st, path, fn)
    # launch_formulas reads only the call's start (file and offset): the statement's own start stands in.
    call: Any = SimpleNamespace(extent=SimpleNamespace(start=SimpleNamespace(
        file=SimpleNamespace(name=path), offset=offset)))
    # `sweep<BLOCK_X, BLOCK_DIM><<<...>>>` with `constexpr int BLOCK_X = 128;` above it in the function: a value
    # argument's local constants folded to the number (the AST, which would have given it, dropped the statement).
    valued = _local_values(st, fn, path, offset, targs)
    # A launch through a macro (macro_sites) is of that macro's kind; one whose every definition sits in an `#if` branch
    # this parse skipped says which definition it read.
    note: dict[str, str] = {}
    if macro is not None and not macro.active:
        line_no = st.ctx.read(macro.path).count(b"\n", 0, macro.start) + 1
        where = f"{os.path.basename(macro.path)}:{line_no}"
        note["macro"] = (f"{macro.name} as defined at {where}, in an #if branch the parse's configuration leaves "
                         "inactive (a build flag it does not know)")
    for combo in combos or [{}]:
        launch = Launch(kernel=kkey, launcher=fn.spelling, path=path, line=line,
                        kind="<<<>>>" if macro is None else macro.name,
                        config={"grid": parts[0], "block": parts[1], "shared_mem": parts[2] or "0",
                                "stream": parts[3] or "0", **note},
                        args=args, template_args=[substitute(t, combo) for t in valued] if combo
                        else valued if valued != targs else None,
                        template_args_text=targs, in_lambda=bool(combo), host_template=host_key)
        if host_key in st.classes:  # the class's and the member template's parameters as named here
            launch._scope = scope_params(fn, st.classes[host_key])  # type: ignore[attr-defined]
        _values(st.ctx, launch, fn, call)
        st.launches.append(launch)


def _local_values(st: _State, fn: ci.Cursor, path: str, offset: int, targs: list[str]) -> list[str]:
    """`targs` with each argument that the function's own variables before `offset` fold to an integer written as
    that integer; the others as they are."""
    names = {n for t in targs for n in _IDENT.findall(t)}
    locals_ = local_initializers(fn, offset, path, st.ctx.read) if names else {}
    if not names & set(locals_):
        return targs
    out = []
    for t in targs:
        v = eval_int(formula(t, locals_, {}, set()) or t) if set(_IDENT.findall(t)) & set(locals_) else None
        out.append(str(v) if v is not None else t)
    return out


def _bodies_with_errors(st: _State, defs: list[tuple[str, ci.Cursor]], errors: dict[str, list[int]]
                        ) -> Iterator[tuple[str, ci.Cursor, list[int], bytes, str]]:
    """Functions defined in their own file whose body holds a parse error: the error offsets, the raw body and
    the body with comments and strings blanked (offsets kept)."""
    return _bodies_naming(st, defs, errors, None)


def _bodies_naming(st: _State, defs: list[tuple[str, ci.Cursor]], errors: dict[str, list[int]],
                   names: Iterable[str] | None) -> Iterator[tuple[str, ci.Cursor, list[int], bytes, str]]:
    """As `_bodies_with_errors`; with `names`, also the functions without an error whose text names one of them."""
    words = [n.encode() for n in names] if names is not None else []
    for path, fn in defs:
        e = fn.extent
        if fn.kind not in _FUNCS or e.start.file is None or st.ctx.norm(e.start.file.name) != path:
            continue
        errs = [o for o in errors.get(path, []) if e.start.offset <= o < e.end.offset]
        raw = st.ctx.read(path)[e.start.offset:e.end.offset] if errs or words else b""
        if errs or any(w in raw for w in words):
            yield path, fn, errs, raw, _COMMENT_OR_STRING.sub(_blank, raw).decode("utf-8", "replace")


_SCOPES = (K.NAMESPACE, K.LINKAGE_SPEC, K.UNEXPOSED_DECL)
_HEAD_NAME = lazy_re.compile(r"(\w+)\s*$")
_DIRECTIVE = lazy_re.compile(r"^[ \t]*#(?:[^\n\\]|\\\r?\n|\\.)*", re.M)


def _declared_ranges(ctx: Any) -> dict[str, list[tuple[int, int]]]:
    """Extents of the declarations the AST holds at namespace scope, by file (namespaces and `extern "C"` blocks
    entered, not kept: a dropped definition sits inside one)."""
    out: dict[str, list[tuple[int, int]]] = {}
    stack = list(ctx.tu.cursor.get_children())
    while stack:
        c = stack.pop()
        e = c.extent
        if e.start.file is None or c.kind.is_preprocessing():
            continue  # (a macro's expansion inside the dropped body is a cursor of the TU too)
        if c.kind in _SCOPES:
            stack.extend(c.get_children())
            continue
        out.setdefault(ctx.norm(e.start.file.name), []).append((e.start.offset, e.end.offset))
    return out


def recover_dropped_definitions(st: _State) -> None:
    """Launches in function definitions clang dropped whole, so that no cursor covers their text: an explicit
    specialization of a class template's member whose head names a type of a library the machine lacks
    (`template <> void Solver<device_memory>::step() {...}`, `device_memory` a using-declaration of the absent
    library's tag), the only definitions that launch the project's kernels. recover_dropped reads launches back
    from the bodies the AST has; these have none. A `<<<>>>` statement of a kernel the walk found no launch of,
    outside every declaration the AST holds at namespace scope and after a parse error in that gap (the dropped
    head), in a branch the preprocessor took, is read back from the text; its launcher is the name the head
    writes before its parameters. Its configuration's locals are not in the AST either: the values stay text."""
    by_name, missing = _unlaunched(st)
    errors = _error_offsets(st) if missing else {}
    if not errors:
        return
    ctx = st.ctx
    rx = re.compile(r"(?<![\w.])(?:\w+::)*(" + "|".join(map(re.escape, sorted(missing))) + r")\b")
    declared = ctx.memo("_declared_ranges", lambda: _declared_ranges(ctx))
    for path, errs in errors.items():
        if path not in ctx.inputs or (f := ctx.tu.get_file(path)) is None:
            continue
        raw = ctx.read(path)
        text = _COMMENT_OR_STRING.sub(_blank, raw).decode("utf-8", "replace")
        ranges = sorted(declared.get(path, []))
        # (a `#define` whose body launches is no launch where it stands: macro_sites reads its uses)
        directives = [(d.start(), d.end()) for d in _DIRECTIVE.finditer(text)]
        skipped: list[tuple[int, int]] | None = None
        for m in rx.finditer(text):
            at = m.start()
            if any(a <= at < b for a, b in (*ranges, *directives)) or (site := _site(text, m.end())) is None:
                continue
            gap = max((b for a, b in ranges if b <= at), default=0)
            if not any(gap <= o < at for o in errs):
                continue
            skipped = skipped_in(ctx.tu, f) if skipped is None else skipped
            if any(a <= at < b for a, b in skipped):
                continue
            targs, cfg, args, _end = site
            keys = missing[m.group(1)]
            if len(by_name[m.group(1)]) > 1:
                keys = [k for k in keys if len(st.kernels[k].params) == len(args)]
            if len(keys) != 1:
                continue
            body = _outermost_open(text, gap, at)
            head = text[gap:body] if body is not None else ""
            name = _HEAD_NAME.search(head[:head.find("(")] if "(" in head else "")
            line = raw.count(b"\n", 0, at) + 1
            call: Any = SimpleNamespace(extent=SimpleNamespace(start=SimpleNamespace(
                file=SimpleNamespace(name=path), offset=at)))
            parts = list(cfg) + [None] * 4
            own = _own_type_names(text[gap:at])
            unread = sorted({w for t in targs for w in _WORD.findall(t)} & own)
            launch = Launch(kernel=keys[0], launcher=name.group(1) if name else "", path=path, line=line,
                            kind="<<<>>>", config={"grid": parts[0], "block": parts[1], "shared_mem": parts[2] or "0",
                                                   "stream": parts[3] or "0"},
                            args=args, template_args=None if unread else targs or None,
                            template_args_text=[] if unread else targs, unread_args=unread)
            _values(ctx, launch, None, call)
            st.launches.append(launch)


_WORD = lazy_re.compile(r"[A-Za-z_]\w*")
# `template <typename T, class U, int N>` parameters, `typedef ... X;` and `using X = ...;` aliases.
_TEMPLATE_HEAD = lazy_re.compile(r"\btemplate\s*<([^{};]*?)>")
_TEMPLATE_PARAM = lazy_re.compile(r"(\w+)\s*(?:=[^,]*)?(?:,|$)")
_TYPEDEF = lazy_re.compile(r"\btypedef\b[^;{}]*?(\w+)\s*;")
_USING = lazy_re.compile(r"\busing\s+(\w+)\s*=")


def _own_type_names(text: str) -> set[str]:
    """The template parameters and type aliases a dropped definition declares before its launch (`text`: from
    the end of the declaration before it to the launch): dependent names, which the definition's callers fix."""
    out: set[str] = set()
    for m in _TEMPLATE_HEAD.finditer(text):
        out.update(p.group(1) for p in _TEMPLATE_PARAM.finditer(m.group(1).strip()))
    out.update(m.group(1) for m in _TYPEDEF.finditer(text))
    out.update(m.group(1) for m in _USING.finditer(text))
    return out


def _outermost_open(text: str, start: int, at: int) -> int | None:
    """Offset of the `{` opened after `start` that is still open at `at` and encloses it outermost, else None."""
    depth, first = 0, None
    for i in range(start, at):
        c = text[i]
        if c == "{":
            if depth == 0:
                first = i
            depth += 1
        elif c == "}" and depth:
            depth -= 1
    return first if depth else None
