"""Render units/<inst>/kernel_wrapper.py: call one instantiation with tensors, no grid arithmetic.

Grid and block come from the kernel's first recorded launch (metadata `launches`) when they are
integers or simple arithmetic over the kernel's own parameters (C integer `/` becomes `//`);
anything else falls back to a 1-D default: block 256, grid ceil(n / 256) with n the first
size-like integer parameter (else the first tensor's numel). Callers can always pass grid=/block=.
"""

from __future__ import annotations

import ast
import keyword
import re
from pathlib import Path
from typing import Any

from miner import lazy_re
from miner.dataset.atomic import write_text
from miner.dataset.folder import KernelFolder
from miner.resources import template_env

TEMPLATE = "kernel_wrapper.py.j2"
_INT_CTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"}
_SIZE_NAME = lazy_re.compile(r"^(n|size|count|total|len|length|numel|nthreads|num\w*|\w*_?(size|count|num|len))$",
                        re.I)


def _text(v: Any) -> str | None:
    if isinstance(v, dict):
        for key in ("value", "text", "expr"):
            if v.get(key) not in (None, ""):
                return _text(v[key])
        return None
    if isinstance(v, list | tuple):
        parts = [_text(x) for x in v]
        return None if any(p is None for p in parts) else "(" + ", ".join(parts) + ",)"  # type: ignore[arg-type]
    if v is None:
        return None
    return str(v)


_INT_TYPES = (r"(?:unsigned\s+|signed\s+)?(?:long\s+long|long|int|short|char)|unsigned|size_t|u?int(?:8|16|32|64)_t"
              r"|index_t|std::size_t")
_CEIL_DIV = lazy_re.compile(r"^(?:(?:at|c10|cuda|std)::)*(?:ceil_div|ceilDiv|div_up|divUp|DIVUP|DIV_UP|CEIL_DIV|cdiv"
                       r"|DivUp|ATenCeilDiv|THCCeilDiv)$")


class _ToPython(ast.NodeTransformer):
    """min/max calls stay, ceil-division helpers become -(-a // b), dim3(a, b) becomes (a, b)."""

    def visit_Call(self, node: ast.Call) -> ast.AST:
        self.generic_visit(node)
        name = node.func.id if isinstance(node.func, ast.Name) else ""
        if name == "KMcdiv" and len(node.args) == 2:
            a, b = node.args
            return ast.UnaryOp(ast.USub(), ast.BinOp(ast.UnaryOp(ast.USub(), a), ast.FloorDiv(), b))
        if name == "KMdim3" and 1 <= len(node.args) <= 3:
            return node.args[0] if len(node.args) == 1 else ast.Tuple(node.args, ast.Load())
        return node


def python_expr(c_expr: Any, names: set[str]) -> str | None:
    """A C launch expression as a Python expression over `names`, or None if it is not that simple.
    Integer casts are dropped, `std::min`/`max`, ceil-division helpers and `dim3(...)` are understood."""
    text = _text(c_expr)
    if text is None:
        return None
    text = re.sub(r"\bstatic_cast\s*<[^<>]*>", "", text.strip())
    text = re.sub(rf"\(\s*(?:const\s+)?(?:{_INT_TYPES})\s*\)", "", text)
    text = re.sub(r"(?:\bstd)?::\s*(min|max)\b", r"\1", text)
    text = re.sub(r"\b((?:\w+::)*\w+)(?=\s*\()",
                  lambda m: "KMcdiv" if _CEIL_DIV.match(m.group(1)) else "KMdim3" if m.group(1) == "dim3"
                  else m.group(1), text)
    text = re.sub(r"(?<![/])/(?![/])", "//", text)
    text = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", text)
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        return None
    allowed = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Constant, ast.Name, ast.Load, ast.Tuple, ast.Call,
               ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd, ast.LShift, ast.RShift)
    calls = {"min", "max", "KMcdiv", "KMdim3"}
    for node in ast.walk(tree):
        if not isinstance(node, allowed):
            return None
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in calls
                                               and not node.keywords):
            return None
        if isinstance(node, ast.Name) and node.id not in names | calls:
            return None
        if isinstance(node, ast.Constant) and not isinstance(node.value, int):
            return None
    if isinstance(tree.body, ast.Constant):
        return str(tree.body.value)
    if not any(isinstance(n, ast.Call) for n in ast.walk(tree)):
        return text
    return ast.unparse(ast.fix_missing_locations(_ToPython().visit(tree)))


def _pyname(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name) and name != "bound"


def launch_config(meta: dict[str, Any], params: list[dict[str, Any]]) -> dict[str, Any]:
    names = {p["name"] for p in params if _pyname(p["name"])}
    launches = meta.get("launches") or []
    rec = launches[0] if launches else {}
    # The launch stage nests the <<<>>> texts under `config` and its evaluated numbers under `values`.
    cfg = rec.get("config") if isinstance(rec.get("config"), dict) else rec
    values = rec.get("values") if isinstance(rec.get("values"), dict) else {}
    out: dict[str, Any] = {"recorded": bool(launches)}
    # The caller's variable passed as a parameter stands for that parameter in grid expressions.
    rename: dict[str, str] = {}
    exprs: dict[str, str] = {}  # an argument passed as an expression (`x.numel()`) stands for its parameter
    for i, arg in enumerate(rec.get("args") or rec.get("arguments") or []):
        pname = arg.get("param") if isinstance(arg, dict) and arg.get("param") else \
            (params[i]["name"] if i < len(params) else None)
        text = _text(arg)
        if pname and text and re.fullmatch(r"[A-Za-z_]\w*", text.strip()):
            rename[text.strip()] = pname
        elif pname and text and pname in names:
            exprs[re.sub(r"\s+", "", text)] = pname
    # The launch stage's formula (locals and macros put in, miner.launch_formula) where it has one.
    formula = rec.get("formula") if isinstance(rec.get("formula"), dict) else {}
    for key, alts in (("grid", ("grid", "grid_dim")), ("block", ("block", "block_dim")),
                      ("smem", ("smem", "shared_mem", "shared_memory"))):
        raw = next((cfg[a] for a in alts if a in cfg), None)
        out[f"{key}_text"] = _text(raw) if raw is not None else None
        out[key] = None
        for text in (next((formula[a] for a in alts if formula.get(a)), None), out[f"{key}_text"]):
            if text is None:
                continue
            for e in sorted(exprs, key=len, reverse=True):
                text = re.sub(r"\s+", "", text).replace(e, exprs[e]) if e in re.sub(r"\s+", "", text) else text
            if rename:
                text = re.sub(r"[A-Za-z_]\w*", lambda m: rename.get(m.group(0), m.group(0)), text)
            out[key] = python_expr(text, names)
            if out[key] is not None:
                break
        if out[key] is None:  # e.g. THREADS_PER_BLOCK, which the launch stage evaluated to 256
            num = next((values[a] for a in alts if isinstance(values.get(a), int)), None)
            out[key] = str(num) if num is not None else None
    out["block_int"] = int(out["block"]) if out["block"] and str(out["block"]).isdigit() else None
    ints = [p["name"] for p in params if p.get("ctype") in _INT_CTYPES and p["name"] in names]
    sized = [n for n in ints if _SIZE_NAME.match(n)]
    out["size_param"] = (sized or ints or [None])[0]
    return out


def render(kdir: Path, meta: dict[str, Any], inst: dict[str, Any]) -> str:
    launcher = inst.get("launcher") or {}
    params = list(launcher.get("params") or [])
    return template_env().get_template(TEMPLATE).render(
        kernel_id=meta.get("id", kdir.name), kernel_name=meta.get("name", kdir.name),
        inst=inst["id"], symbol=launcher.get("symbol", ""), params=params,
        local_params=[p for p in params if _pyname(p["name"])],
        cfg=launch_config(meta, params))


def write_wrappers(kdir: Path, meta: dict[str, Any]) -> list[Path]:
    written = []
    for inst in meta.get("instantiations") or []:
        if not (inst.get("launcher") or {}).get("symbol"):
            continue
        path = KernelFolder(kdir).unit_path(inst).with_name("kernel_wrapper.py")
        text = render(kdir, meta, inst)
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            write_text(path, text)
        written.append(path)
    return written
