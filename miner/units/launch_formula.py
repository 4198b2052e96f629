"""Grid and block of a launch as a formula over the launch's own arguments.

`<<<blocks, threads>>>` with `const int threads = 512;` and
`const int blocks = std::min((int)((numel + threads - 1) / threads), 4096);` earlier in the launching
function becomes `std::min((int)(((numel) + (512) - 1) / (512)), 4096)`: local variables (the closest
declaration before the launch) and the project's macros are put in until only literals and names that
the launch passes to the kernel are left (those the generated wrapper maps onto the kernel's parameters).
A constant of namespace or class scope the launching function names (`int const threadsPerBlock =
sizeof(unsigned long long) * 8;`) is put in as the number clang evaluates it to.
A name that is none of these stays, and the wrapper then does not use the formula.
"""

from __future__ import annotations

import re
from typing import Any

from miner import lazy_re
from miner.units import macro_text

_IDENT = lazy_re.compile(r"[A-Za-z_]\w*")
_MAX_ROUNDS = 6
_MAX_LEN = 600


_INT_KINDS = {"INT", "UINT", "LONG", "ULONG", "LONGLONG", "ULONGLONG", "SHORT", "USHORT", "CHAR_S", "CHAR_U",
              "SCHAR", "UCHAR", "INT128", "UINT128", "BOOL"}


def _scan(fn: Any, cache: dict[Any, Any] | None) -> tuple[list[tuple[Any, str | None, int, int]], dict[str, int]]:
    """One walk of `fn` per translation unit (`cache` is per TU), not one per launch it holds (a profile
    of MMCV spent a seventh of its analysis time walking the same launching functions again): the
    variables it declares, in walk order with their extents, and the constants of namespace or class
    scope it names with clang's value for each (`int const threadsPerBlock = sizeof(unsigned long long) * 8;`
    is 64)."""
    import clang.cindex as ci

    from miner.units.const_eval import const_value

    key = ("scan", fn)
    if cache is not None and key in cache:
        return cache[key]
    found = []
    consts: dict[str, int] = {}
    for c in fn.walk_preorder():
        if c.kind == ci.CursorKind.VAR_DECL:
            e = c.extent
            f = e.start.file
            found.append((c, f.name if f is not None else None, e.start.offset, e.end.offset))
        elif c.kind == ci.CursorKind.DECL_REF_EXPR and c.spelling not in consts:
            ref = c.referenced
            if ref is None or ref.kind != ci.CursorKind.VAR_DECL:
                continue
            parent = ref.semantic_parent
            if parent is None or parent.kind in (ci.CursorKind.FUNCTION_DECL, ci.CursorKind.FUNCTION_TEMPLATE,
                                                 ci.CursorKind.CXX_METHOD, ci.CursorKind.LAMBDA_EXPR):
                continue  # a local: local_initializers puts in its initializer text
            t = ref.type
            if not t.is_const_qualified() or t.get_canonical().kind.name not in _INT_KINDS:
                continue  # a mutable global may change at run time
            if (v := const_value(ref)) is not None:
                consts[c.spelling] = v
    if cache is not None:
        cache[key] = (found, consts)
    return found, consts


def local_initializers(fn: Any, before: int, path: str, read, cache: dict[Any, Any] | None = None) -> dict[str, str]:
    """name -> initializer text of the variables declared in `fn` before offset `before` of `path`
    (`dim3 grid(a, b);` gives `dim3(a, b)`); the last declaration of a name wins."""
    out: dict[str, str] = {}
    data = read(path)
    inits = cache.setdefault("initializers", {}) if cache is not None else {}
    for c, fname, start, end in _scan(fn, cache)[0]:
        if fname is None or end > before or start >= before:
            continue
        if fname != path and not path.endswith(fname.lstrip(".")):
            continue
        # A function with many launches asked for the same declarations once per launch.
        key = (path, start, end, c.hash, c.spelling)
        if key not in inits:
            inits[key] = _initializer(c, data, start, end)
        if inits[key]:
            out[c.spelling] = inits[key]
    return out


def _initializer(c: Any, data: bytes, start: int, end: int) -> str:
    """The initializer text of the variable `c` declared at `data[start:end]` ("" when none is written)."""
    text = data[start:end].decode("utf-8", "replace")
    m = re.search(rf"\b{re.escape(c.spelling)}\s*(=|\(|\{{)", text)
    if not m:
        return ""
    if m.group(1) == "=":
        init = text[m.end():].strip()
    else:  # `grid(std::min(f(a), b))`: only the parenthesis (brace) that closes the initializer goes
        init = text[m.start(1) + 1:].rstrip()
        init = init[:-1].strip() if init.endswith((")", "}")) else init
    if m.group(1) != "=":
        ctype = c.type.spelling
        init = f"dim3({init})" if "dim3" in ctype else f"({init})"
    return init


def formula(expr: str | None, locals_: dict[str, str], macros: dict[str, macro_text.MacroDef],
            keep: set[str], consts: dict[str, int] | None = None) -> str | None:
    """`expr` with locals, macros and the values of namespace-scope constants (`consts`) put in, leaving
    the names in `keep` (the launch's arguments). A local shadows a constant of the same name."""
    consts = consts or {}
    if not expr:
        return None
    text = expr
    for _ in range(_MAX_ROUNDS):
        names = [n for n in dict.fromkeys(_IDENT.findall(text)) if n not in keep]
        grow = {n for n in names if n in locals_}
        if grow:
            text = _IDENT.sub(lambda m, g=grow: f"({locals_[m.group(0)]})" if m.group(0) in g else m.group(0),
                              text)
        used = {n for n in names if n in macros and n not in grow}
        if used:
            text = macro_text.expand(text, macros, used).strip()
        known = {n for n in names if n in consts and n not in grow and n not in used}
        if known:
            text = _IDENT.sub(lambda m, k=known: str(consts[m.group(0)]) if m.group(0) in k else m.group(0), text)
        if not grow and not used and not known:
            break
        if len(text) > _MAX_LEN:
            return None
    text = re.sub(r"\s+", " ", text).strip()
    return None if text == re.sub(r"\s+", " ", expr).strip() else text


def project_macros(ctx_macros: dict[str, list[Any]]) -> dict[str, macro_text.MacroDef]:
    """The TU's macro index (closure.Macro lists) as definitions to expand: the active one of each name."""
    out: dict[str, macro_text.MacroDef] = {}
    for name, lst in ctx_macros.items():
        m = next((m for m in lst if m.active), None)
        if m is None:  # defined only in inactive #if branches: no macro in this configuration
            continue
        d = macro_text.definitions(f"#define {name}{m.body}").get(name)
        if d is not None:
            out[name] = d
    return out


def launch_formulas(ctx: Any, fn: Any, call: Any, config: dict[str, str | None], args: list[str],
                    cache: dict[str, Any]) -> dict[str, str]:
    """Formulas for grid, block and shared memory of one launch (only those that differ from the text)."""
    e = call.extent
    if e.start.file is None:
        return {}
    path = ctx.norm(e.start.file.name)
    if "macros" not in cache:
        cache["macros"] = project_macros(ctx.macros)
    keep = {n for a in args for n in _IDENT.findall(a or "")}
    locals_ = local_initializers(fn, e.start.offset, path, ctx.read, cache) if fn is not None else {}
    consts = _scan(fn, cache)[1] if fn is not None else {}
    out = {}
    for key in ("grid", "block", "shared_mem"):
        f = formula(config.get(key), locals_, cache["macros"], keep, consts)
        if f is not None:
            out[key] = f
    return out
