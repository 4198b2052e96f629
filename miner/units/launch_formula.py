"""Grid and block of a launch as a formula over the launch's own arguments.

`<<<blocks, threads>>>` with `const int threads = 512;` and
`const int blocks = std::min((int)((numel + threads - 1) / threads), 4096);` earlier in the launching
function becomes `std::min((int)(((numel) + (512) - 1) / (512)), 4096)`: local variables (the closest
declaration before the launch) and the project's macros are put in until only literals and names that
the launch passes to the kernel are left (those the generated wrapper maps onto the kernel's parameters).
A name that is neither stays, and the wrapper then does not use the formula.
"""

from __future__ import annotations

import re
from typing import Any

from miner.units import macro_text

_IDENT = re.compile(r"[A-Za-z_]\w*")
_MAX_ROUNDS = 6
_MAX_LEN = 600


def _var_decls(fn: Any, cache: dict[Any, Any] | None) -> list[tuple[Any, str | None, int, int]]:
    """The variables declared in `fn`, in walk order, with their extents: one walk per function and
    translation unit (`cache` is per TU), not one per launch it holds (a profile of MMCV spent a
    seventh of its analysis time walking the same launching functions again)."""
    import clang.cindex as ci

    key = ("var_decls", fn)
    if cache is not None and key in cache:
        return cache[key]
    found = []
    for c in fn.walk_preorder():
        if c.kind == ci.CursorKind.VAR_DECL:
            e = c.extent
            f = e.start.file
            found.append((c, f.name if f is not None else None, e.start.offset, e.end.offset))
    if cache is not None:
        cache[key] = found
    return found


def local_initializers(fn: Any, before: int, path: str, read, cache: dict[Any, Any] | None = None) -> dict[str, str]:
    """name -> initializer text of the variables declared in `fn` before offset `before` of `path`
    (`dim3 grid(a, b);` gives `dim3(a, b)`); the last declaration of a name wins."""
    out: dict[str, str] = {}
    data = read(path)
    for c, fname, start, end in _var_decls(fn, cache):
        if fname is None or end > before or start >= before:
            continue
        if fname != path and not path.endswith(fname.lstrip(".")):
            continue
        text = data[start:end].decode("utf-8", "replace")
        m = re.search(rf"\b{re.escape(c.spelling)}\s*(=|\(|\{{)", text)
        if not m:
            continue
        init = text[m.end():].strip() if m.group(1) == "=" else text[m.start(1) + 1:].rstrip().rstrip(")}").strip()
        if m.group(1) != "=":
            ctype = c.type.spelling
            init = f"dim3({init})" if "dim3" in ctype else f"({init})"
        if init:
            out[c.spelling] = init
    return out


def formula(expr: str | None, locals_: dict[str, str], macros: dict[str, macro_text.MacroDef],
            keep: set[str]) -> str | None:
    """`expr` with locals and macros put in, leaving the names in `keep` (the launch's arguments)."""
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
        if not grow and not used:
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
    out = {}
    for key in ("grid", "block", "shared_mem"):
        f = formula(config.get(key), locals_, cache["macros"], keep)
        if f is not None:
            out[key] = f
    return out
