"""Launch configurations held in objects: the grid, block and shared memory a launch reads out of a value built
elsewhere, put back as the expressions it was built from.

- A launch helper that reads its configuration out of a parameter (`kernel<<<cfg.dims.grid, cfg.dims.block,
  cfg.smem>>>`), called with an object made by a constructor or a `make_config(grid, block, smem)`-like call
  (`launch(k, make_config((n + 255) / 256, 256), x, n)`, or a local variable initialized so): the object's
  arguments, taken in launch order (grid, block, shared memory), are the launch's.
- `cudaLaunchKernelEx(&cfg, kernel, args...)` with a local `cudaLaunchConfig_t cfg`: the values its fields
  `gridDim`, `blockDim`, `dynamicSmemBytes` and `stream` were last given before the launch (assignments, or a
  positional initializer list).
Where neither reads, the configuration stays as written (a member of an object) and the launch says so.
"""

from __future__ import annotations

import re
from typing import Any

import clang.cindex as ci

from miner import lazy_re
from miner.units.launches.record import K
from miner.units.launches.text import _src

_SLOTS = ("grid", "block", "shared_mem", "stream")
_FUNCTIONS = (K.FUNCTION_DECL, K.FUNCTION_TEMPLATE, K.CXX_METHOD, K.CONSTRUCTOR)
_INTS = {"INT", "UINT", "LONG", "ULONG", "LONGLONG", "ULONGLONG", "SHORT", "USHORT", "CHAR_S", "CHAR_U", "SCHAR",
         "UCHAR", "BOOL"}


def _member_of(text: str | None) -> str | None:
    """The object a configuration text reads a member of: `(cfg).dims.grid` -> `cfg`."""
    m = re.fullmatch(r"[\s(]*([A-Za-z_]\w*)[\s)]*(?:\.|->)\s*[A-Za-z_][\w\s.>()-]*", text or "")
    return m.group(1) if m else None


def object_config(st: Any, helper: Any, call: ci.Cursor, cfg: list[str | None],
                  given: list[ci.Cursor] | None = None) -> list[str | None]:
    """`cfg` (the helper's configuration with the call's arguments put in) with the slots the helper reads out
    of one configuration parameter replaced by that object's construction arguments. `given`: the call's
    arguments where `call.get_arguments()` does not list them as the helper's parameters (a method's call)."""
    fixed = helper.params[:-1] if helper.pack else helper.params
    objs = [_member_of(c) for c in helper.config[:3]]
    if objs[0] is None or objs[0] != objs[1] or objs[0] not in fixed:
        return cfg  # grid and block must both come out of the same parameter
    j = fixed.index(objs[0])
    args = list(call.get_arguments()) if given is None else given
    if j >= len(args):
        return cfg
    parts = construction_args(st, args[j])
    if parts is None:
        return cfg
    out = list(cfg)
    for i in range(3):
        if objs[i] == objs[0]:
            out[i] = parts[i] if i < len(parts) else "0" if i == 2 else out[i]
    return out


def object_parts(st: Any, call: ci.Cursor, j: int, cfg: list[str | None], offset: int = 0) -> list[str | None]:
    """`cfg` with grid, block and shared memory of the configuration object the call passes as its argument `j`
    (after `offset` leading ones: a method call's object), where its construction reads."""
    args = list(call.get_arguments())[offset:]
    parts = construction_args(st, args[j]) if j < len(args) else None
    if parts is None:
        return cfg
    return [parts[0], parts[1], parts[2] if len(parts) > 2 else "0", cfg[3]]


def _dims_like(t: ci.Type) -> bool:
    """An integer, or a class whose name says it holds dimensions (`dim3`, `grid::dimensions_t`)."""
    c = t.get_canonical()
    if c.kind.name in _INTS:
        return True
    return bool(re.search(r"dim", c.spelling, re.I)) and c.kind == ci.TypeKind.RECORD


def construction_args(st: Any, arg: ci.Cursor) -> list[str] | None:
    """The arguments an object was built from, in launch order: a temporary's constructor or maker call, or the
    initializer of the local variable the argument names (one assigned again later is not read). Two to four
    arguments, the first two integers or dimensions; None otherwise."""
    root: ci.Cursor = arg
    ref = arg.referenced if arg.kind in (K.DECL_REF_EXPR, K.UNEXPOSED_EXPR) else None
    if re.fullmatch(r"\s*\w+\s*", _src(st.ctx, arg)):
        # (a variable passed by value is a copy constructor's call around its name)
        ref = next((d.referenced for d in arg.walk_preorder() if d.kind == K.DECL_REF_EXPR), ref)
    if ref is not None and ref.kind == K.VAR_DECL:
        fn = ref.semantic_parent
        if fn is None or fn.kind not in _FUNCTIONS or _assigned(st, fn, ref):
            return None
        root = ref
    if (built := _builder_parts(st, root)) is not None:
        return built
    for c in root.walk_preorder():
        if c.kind == K.CALL_EXPR and (d := c.referenced) is not None and d.kind in _FUNCTIONS:
            kids = [a for a in c.get_arguments() if _src(st.ctx, a).strip()]
            if len(kids) < 2:
                continue  # a copy, or a wrapper around the maker call inside it
        elif c.kind == K.INIT_LIST_EXPR:
            kids = list(c.get_children())
        else:
            continue
        if not 2 <= len(kids) <= 4 or not all(_dims_like(a.type) for a in kids[:2]):
            return None
        return [_src(st.ctx, a).strip() for a in kids]
    return None


# A builder's setters, by what their names say they set (`.grid_size(g)`, `.block_dimensions(b)`,
# `.dynamic_shared_memory_size(s)`; `.overall_size(n)`: the total number of threads, the grid being n over the block).
_SETTERS = (("grid", lazy_re.compile(r"(?:grid|num_blocks|blocks)(?:_(?:size|dim|dims|dimensions))?", re.I)),
            ("block", lazy_re.compile(r"(?:block|threads)(?:_(?:size|dim|dims|dimensions)|_per_block)?", re.I)),
            ("overall", lazy_re.compile(r"(?:overall|total)_(?:size|dim|dims|dimensions|threads)", re.I)),
            ("shared_mem", lazy_re.compile(r"\w*(?:shared_mem|smem|shmem)\w*", re.I)))


def _builder_parts(st: Any, root: ci.Cursor) -> list[str] | None:
    """grid, block, shared memory of an object a chain of setters built: `builder().overall_size(n).block_size(256)
    .build()` is grid `((n) + (256) - 1) / (256)`, block `256`. None unless the chain sets both (a setter that
    sizes the launch at run time, `saturate_with_active_blocks()`, is not one of those names: nothing is read)."""
    call = next((c for c in root.walk_preorder() if c.kind == K.CALL_EXPR and c.spelling), None)
    found: dict[str, str] = {}
    names: list[str] = []
    c = call
    while c is not None and c.kind == K.CALL_EXPR:
        head = next(iter(c.get_children()), None)
        if head is None or head.kind != K.MEMBER_REF_EXPR:
            break
        names.append(c.spelling)
        args = [a for a in c.get_arguments() if _src(st.ctx, a).strip()]
        part = next((k for k, rx in _SETTERS if rx.fullmatch(c.spelling)), None)
        if part is not None and 1 <= len(args) <= 3:
            texts = [_src(st.ctx, a).strip() for a in args]
            # (the last call in the chain wins: the walk starts at the outermost)
            found.setdefault(part, texts[0] if len(texts) == 1 else f"dim3({', '.join(texts)})")
        elif c.spelling.startswith("no_") and "shared" in c.spelling:
            found.setdefault("shared_mem", "0")
        c = next(iter(head.get_children()), None)
        while c is not None and c.kind == K.UNEXPOSED_EXPR:
            c = next(iter(c.get_children()), None)
    if "block" not in found or len(names) < 2:
        return None
    grid = found.get("grid")
    if grid is None and "overall" in found:
        grid = f"(({found['overall']}) + ({found['block']}) - 1) / ({found['block']})"
    if grid is None:
        return None
    return [grid, found["block"], found.get("shared_mem", "0")]


def _is(a: ci.Cursor | None, b: ci.Cursor) -> bool:
    return a is not None and a == b  # (libclang's comparison fails on None)


def _assigned(st: Any, fn: ci.Cursor, var: ci.Cursor) -> bool:
    """Whether `fn` assigns `var` anywhere (`cfg = other;`): its initializer is then not what a launch reads."""
    for c in fn.walk_preorder():
        if c.kind == K.BINARY_OPERATOR or (c.kind == K.CALL_EXPR and c.spelling == "operator="):
            first = next(iter(c.get_children()), None)
            if first is None or not _is(first.referenced, var):
                continue
            if c.kind == K.CALL_EXPR or re.match(r"\s*=(?!=)", _src(st.ctx, c)[len(_src(st.ctx, first)):]):
                return True
    return False


_FIELDS = {"gridDim": 0, "blockDim": 1, "dynamicSmemBytes": 2, "stream": 3}


def launch_config_fields(st: Any, fn: ci.Cursor, call: ci.Cursor, cfg_arg: ci.Cursor) -> dict[str, str | None]:
    """grid, block, shared memory, stream of `cudaLaunchKernelEx(&cfg, ...)` from the local `cfg`'s initializer
    list and the assignments to its fields before the launch (None where the parse shows none)."""
    out: dict[str, str | None] = dict.fromkeys(_SLOTS)
    var = next((d.referenced for d in cfg_arg.walk_preorder() if d.kind == K.DECL_REF_EXPR
                and d.referenced is not None and d.referenced.kind == K.VAR_DECL), None)
    if var is None:
        return out
    init = next((c for c in var.get_children() if c.kind == K.INIT_LIST_EXPR), None)
    if init is not None:
        for i, c in enumerate(list(init.get_children())[:4]):
            text = _src(st.ctx, c).strip()
            if text and not text.startswith("."):
                out[_SLOTS[i]] = text
    end = call.extent.start.offset
    for c in fn.walk_preorder():
        # (`cfg.gridDim = dim3(g)` assigns a class: an `operator=` call listing the field, the operator, the value)
        if c.kind not in (K.BINARY_OPERATOR, K.CALL_EXPR) or c.extent.start.offset >= end:
            continue
        if c.kind == K.CALL_EXPR and c.spelling != "operator=":
            continue
        kids = list(c.get_children())
        if len(kids) not in (2, 3) or kids[0].kind != K.MEMBER_REF_EXPR or kids[0].spelling not in _FIELDS:
            continue
        if not any(_is(d.referenced, var) for d in kids[0].walk_preorder() if d.kind == K.DECL_REF_EXPR):
            continue
        whole, lhs = _src(st.ctx, c), _src(st.ctx, kids[0])
        if not re.match(r"\s*=(?!=)", whole[len(lhs):]):
            continue
        out[_SLOTS[_FIELDS[kids[0].spelling]]] = _src(st.ctx, kids[-1]).strip()
    return out
