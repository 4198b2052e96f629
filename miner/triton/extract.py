"""Extract for Triton: Python files -> `@triton.jit` kernels -> kernel folders with a standalone unit each.

The dataset shape is the CUDA one (metadata.json, index.jsonl, units/<inst>/), with `language: triton`,
the exact definition text in `kernel.py` and the unit in `units/default/unit.py`. Triton-only facts
(constexpr parameters, autotune configs, launches with their grid, the compile signature and where each
of its entries came from) sit under `triton`.
"""

from __future__ import annotations

import ast
import errno
import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from miner import dataset, lazy_re
from miner.dataset import atomic
from miner.dataset.schema import SCHEMA_VERSION
from miner.errors import UsageError
from miner.extract import ExtractReport
from miner.frontends import triton_frontend
from miner.frontends.triton_frontend import TritonKernel
from miner.source.provenance import Origin, origin_of
from miner.triton import closure as closure_mod
from miner.triton import inputs as ref_inputs
from miner.triton import launches as launch_mod
from miner.triton import parent_ref, reference, render, signature
from miner.triton.project import Module, Project

KERNEL_TEXT = "kernel.py"
UNIT_NAME = "unit.py"
_SKIP_DIRS = {".git", ".hg", ".svn", "__pycache__", "node_modules", ".tox", ".venv", "build", "dist"}
_CTYPE = {"i1": "bool", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8",
          "u32": "uint32", "u64": "uint64", "fp16": "half", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64"}


# The CUDA extract's report: both languages fill one, so a mixed tree reports as one run.
TritonReport = ExtractReport


def python_files(paths: list[str], report: TritonReport) -> tuple[list[tuple[str, bytes]], list[str]]:
    """(real path, bytes) of every .py file under `paths`, and the directories given (sorted, deduplicated)."""
    out: dict[str, bytes] = {}
    roots: list[str] = []

    def read(p: str) -> None:
        try:
            real = os.path.realpath(p, strict=True)
            with open(real, "rb") as fh:
                out.setdefault(real, fh.read())
        except OSError as exc:
            why = "symlink loop" if exc.errno == errno.ELOOP else (exc.strerror or str(exc))
            report.failures.append(f"{p}: cannot read: {why}")

    for p in paths:
        if os.path.isdir(p):
            roots.append(os.path.realpath(p))
            for dp, dns, fns in os.walk(p):
                dns[:] = sorted(d for d in dns if d not in _SKIP_DIRS and not d.startswith("."))
                for f in sorted(fns):
                    if f.endswith(".py"):
                        read(os.path.join(dp, f))
        elif os.path.lexists(p):
            if p.endswith(".py"):
                read(p)
        else:
            raise UsageError(f"{p}: no such file or directory")
    return sorted(out.items()), roots


def _input_root(path: str, roots: list[str]) -> str:
    for r in sorted(roots, key=len, reverse=True):
        if path == r or path.startswith(r + os.sep):
            return r
    return os.path.dirname(path)


def _function_node(mod: Module, k: TritonKernel) -> ast.FunctionDef | None:
    for node, _scope in triton_frontend.walk_statements(mod.tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.lineno == k.def_line:
            return node  # type: ignore[return-value]
    return None


def _signature_text(mod: Module, fn: ast.FunctionDef) -> str:
    start = mod.src.offset(fn.lineno, fn.col_offset)
    body_start = mod.src.offset(fn.body[0].lineno, fn.body[0].col_offset) if fn.body else start
    head = mod.data[start:body_start].decode("utf-8", "replace")
    head = head[: head.rfind(":") + 1] if ":" in head else head
    return " ".join(head.split())


_LAYER_CLASS = lazy_re.compile(rb"^class\s+\w+\s*\((?:torch\.)?nn\.[A-Z]", re.M)
_SUBSCRIPTED = lazy_re.compile(rb"([A-Za-z_][A-Za-z0-9_]*)\s*\[")


class LaunchIndex:
    """Which files subscript which names (`k[`), computed once: the per-kernel search for launches in
    other modules would otherwise scan every file again for every kernel."""

    def __init__(self, files: list[tuple[str, bytes]]) -> None:
        self.files = files
        self._by_name: dict[bytes, list[int]] | None = None
        self._layers: list[tuple[str, bytes]] | None = None

    def files_with_layers(self) -> list[tuple[str, bytes]]:
        """Files defining a class on a `nn.X` / `torch.nn.X` base (parent_ref reads only these)."""
        if self._layers is None:
            self._layers = [(p, d) for p, d in self.files if _LAYER_CLASS.search(d)]
        return self._layers

    def files_naming(self, name: str) -> list[tuple[str, bytes]]:
        if self._by_name is None:
            self._by_name = {}
            for i, (_path, data) in enumerate(self.files):
                for n in set(_SUBSCRIPTED.findall(data)):
                    self._by_name.setdefault(n, []).append(i)
        return [self.files[i] for i in self._by_name.get(name.encode(), [])]


def find_launches(project: Project, mod: Module, k: TritonKernel, index: LaunchIndex) -> list[dict]:
    """Launch sites in the kernel's own module first; else in project files that name the kernel and
    import it (`from .kernels import k` then `k[grid](...)`)."""
    found = launch_mod.find(mod, k.name, k.params)
    for r in found:
        r["_module"] = mod
    if found or k.nested:
        return found
    for path, data in index.files_naming(k.name):
        if path == mod.path:
            continue
        other = project.module(path, data)
        if other is None:
            continue
        stmt = other.binding(k.name)
        if not isinstance(stmt, ast.ImportFrom):
            continue
        target = project.resolve_module(stmt.module or "", stmt.level, other)
        if target != mod.path:
            continue
        for r in launch_mod.find(other, k.name, k.params):
            r["_module"] = other
            found.append(r)
    return found


def _launch_json(project: Project, r: dict[str, Any]) -> dict[str, Any]:
    return {"launcher": r["launcher"], "path": project.rel(r["_module"].path), "line": r["line"],
            "grid": r["grid"], "grid_kind": r["grid_kind"], "args": r["args"], "options": r["options"],
            "starred": r["starred"]}


def kernel_metadata(project: Project, mod: Module, k: TritonKernel, fn: ast.FunctionDef, kid: str,
                    origin, rel: str, text: bytes, launches: list[dict[str, Any]],
                    called: set[str] | frozenset[str] = frozenset()) -> dict[str, Any]:
    first = next((r for r in launches if r["_module"] is mod), launches[0] if launches else None)
    role = signature.role(fn, bool(launches), k.name in called)
    sig = signature.infer(k, fn, first, helper=role == "helper", module=mod.tree)
    params = []
    for p in k.params:
        ty = sig["signature"][p.name]
        params.append({"name": p.name, "type": p.annotation or ty, "pointer": ty.startswith("*"),
                       "const": False, "restrict": False})
    return {
        "schema_version": SCHEMA_VERSION,
        "id": kid,
        "name": k.name,
        "qualified_name": k.qualified_name,
        "language": "triton",
        "source": {"repo": origin.repo, "commit": origin.commit, "license": origin.license, "path": rel,
                   "start_line": k.start_line, "end_line": k.end_line,
                   "sha256": hashlib.sha256(text).hexdigest()},
        "signature": _signature_text(mod, fn),
        "params": params,
        "template_params": [],
        "attributes": [{"name": "decorator", "text": d} for d in k.decorators],
        "is_specialization": False,
        "frontend": k.frontend,
        "diagnostics": {"count": 0, "errors": 0, "messages": []},
        "parse_context": {"translation_unit": rel, "defines": [], "include_dirs": []},
        "triton": {
            "def_line": k.def_line,
            "nested": k.nested,
            "params": [vars(p) for p in k.params],
            "constexpr_params": [p.name for p in k.params if p.constexpr],
            "jit_options": k.jit_options,
            "autotune": k.autotune,
            "heuristics": k.heuristics,
            "launches": [_launch_json(project, r) for r in launches],
            "compile": sig,
        },
    }


def _unit(project: Project, mod: Module, k: TritonKernel, fn: ast.FunctionDef, launch: dict[str, Any] | None,
          header: list[str], pair: dict[str, str] | None) -> tuple[str, closure_mod.Closure]:
    """The unit of `k`: the kernel, its launcher and, when paired, the function to test and its reference,
    each closed over in the module that defines it (a launcher elsewhere pulls the kernel in by import)."""
    roots: dict[str, tuple[Module, list[tuple[ast.stmt, str]]]] = {mod.path: (mod, [(fn, k.name)])}
    if launch is not None and launch["_stmt"] is not None:
        lmod = launch["_module"]
        lst = roots.setdefault(lmod.path, (lmod, []))[1]
        lst.append((launch["_stmt"], launch["_top_name"]))
        if pair and "layers" in pair:  # torch.nn subclasses, in the launcher's module or one importing it
            for f in pair["layers"]:
                lst = roots.setdefault(f["_module"].path, (f["_module"], []))[1]
                lst.append((f["_module"].binding(f["layer"]), f["layer"]))
        else:
            for name in (pair or {}).values():
                stmt = lmod.binding(name)
                if stmt is not None:
                    lst.append((stmt, name))
    c = closure_mod.Closure()
    keys: set[tuple[str, int]] = set()
    for m, lst in roots.values():
        part = closure_mod.close(project, m, lst)
        c.pieces += [p for p in part.pieces if p.key not in keys]
        keys |= {p.key for p in part.pieces}
        c.imports += [i for i in part.imports if i not in c.imports]
        c.aliases += [a for a in part.aliases if a not in c.aliases]
        c.unresolved += [u for u in part.unresolved if u not in c.unresolved]
        c.dropped_decorators += part.dropped_decorators
        for path, names in part.renames.items():
            c.renames.setdefault(path, {}).update(names)
    return render.render(project, c, header), c


def _instantiation(meta: dict[str, Any], launch: dict[str, Any] | None) -> dict[str, Any]:
    sig = meta["triton"]["compile"]["signature"]
    params = [{"name": n, "type": t, "ctype": "pointer" if t.startswith("*") else _CTYPE.get(t, "int32")}
              for n, t in sig.items() if t != "constexpr"]
    return {"id": "default", "template_args": {}, "origin": "call_site" if launch else "inferred",
            "unit": f"{dataset.UNITS}/default/{UNIT_NAME}",
            "launcher": {"symbol": k_symbol(meta), "params": params},
            "python_launcher": launch["launcher"] if launch else None}


def k_symbol(meta: dict[str, Any]) -> str:
    return meta["name"]


def extract(paths: list[str], out_dir: Path, units: bool = True, project_root: str | None = None,
            files: list[tuple[str, bytes]] | None = None, roots: list[str] | None = None,
            origin_for: Callable[[str], Origin | None] | None = None) -> TritonReport:
    """Mine `paths` (or the given (path, bytes) `files`); `origin_for` overrides provenance per path
    (records imported from a list carry their own repo/commit/license)."""
    report = TritonReport()
    if files is None:
        files, roots = python_files(paths, report)
    roots = roots or []
    report.files = len(files)
    projects: dict[str, Project] = {}
    index = LaunchIndex(files)
    ordinals: dict[tuple[str, str], int] = {}
    metas: list[dict[str, Any]] = []
    replaced: set[tuple[str | None, str]] = set()
    for path, data in files:
        kernels, error = triton_frontend.parse_bytes(data, path)
        if error:
            report.failures.append(f"{error} (file skipped)")
            continue
        if not kernels:
            continue
        origin = (origin_for(path) if origin_for else None) or origin_of(path, _input_root(path, roots))
        root = project_root or origin.root
        project = projects.setdefault(root, Project(root))
        mod = project.module(path, data)
        rel = os.path.relpath(path, origin.root) if path.startswith(origin.root + os.sep) else path
        called = signature.called_by_jit([_function_node(mod, k) for k in kernels])
        for k in kernels:
            fn = _function_node(mod, k)
            key = (rel, k.qualified_name)
            kid = dataset.kernel_id(k.qualified_name, origin.repo, rel, ordinals.get(key, 0))
            ordinals[key] = ordinals.get(key, 0) + 1
            text = data[k.start_offset:k.end_offset]
            launches = find_launches(project, mod, k, index) if units else []
            meta = kernel_metadata(project, mod, k, fn, kid, origin, rel, text, launches, called)
            if units:
                launch = next((r for r in launches if r["_stmt"] is not None), None)
                pair = None
                if launch is not None and launch["launcher"] == launch["_top_name"]:
                    pair = reference.pair(launch["_module"], launch["launcher"])
                if launch is not None and pair is None and launch["_stmt"] is not None:
                    others = (project.module(p, d) for p, d in index.files_with_layers())
                    found = parent_ref.layers(project, launch["_module"], launch["_top_name"],
                                              (m for m in others if m is not None))
                    pair = {"kind": "torch_parent", "layers": found} if found else None
                header = [f"kernel-miner unit (language: triton): {k.qualified_name}",
                          f"from {origin.repo or '(no git remote)'} {rel}:{k.start_line}-{k.end_line}"
                          + (f" @ {origin.commit[:12]}" if origin.commit else "")]
                try:
                    unit_text, c = _unit(project, mod, k, fn, launch, header, pair)
                except SyntaxError as exc:  # a rendering bug must not cost the other kernels
                    report.failures.append(f"{path}:{k.def_line}: {k.name}: unit is not valid Python: {exc.msg}")
                    unit_text, c = None, closure_mod.Closure()
                kinds = {}
                for p in c.pieces:
                    kinds.setdefault(p.kind, []).append(p.name)
                meta["closure"] = {
                    "functions": [*kinds.get("jit", []), *kinds.get("function", [])],
                    "macros": [], "types": kinds.get("class", []),
                    "globals": [*kinds.get("assign", []), *kinds.get("block", [])],
                    "includes": c.imports, "shims": [], "chosen_defines": [],
                    "sources": sorted({project.rel(p.module) for p in c.pieces}),
                    "jit_functions": [p.name for p in c.pieces if p.kind == "jit" and p.name != k.name],
                    "dropped_decorators": c.dropped_decorators,
                    "renamed": [{"symbol": n, "as": new, "module": project.rel(path)}
                                for path, names in c.renames.items() for n, new in names.items()],
                }
                meta["unresolved"] = [{**u, "where": _rel_where(project, u["where"])} for u in c.unresolved]
                if unit_text is not None:
                    meta["instantiations"] = [_instantiation(meta, launch)]
                    atomic.write_text(out_dir / kid / dataset.UNITS / "default" / UNIT_NAME, unit_text)
                    if pair is not None and "layers" in pair:
                        meta["triton"]["reference"] = {"kind": pair["kind"], "test": parent_ref.TEST_FILE,
                                                       "layers": parent_ref.record(pair["layers"])}
                        atomic.write_text(out_dir / kid / parent_ref.TEST_FILE, parent_ref.test_text(pair["layers"]))
                    elif pair is not None:
                        meta["triton"]["reference"] = {**pair, "test": reference.TEST_FILE}
                        spec = ref_inputs.solve(unit_text, pair["function"], pair["reference"], k.name)
                        if spec is not None:  # sizes read from the source; the harness tries them first
                            meta["triton"]["reference"]["inputs"] = spec
                        atomic.write_text(out_dir / kid / reference.TEST_FILE, reference.test_text(pair))
                else:
                    meta["instantiations"] = []
            atomic.write_bytes(out_dir / kid / KERNEL_TEXT, text)
            atomic.write_json(out_dir / kid / dataset.METADATA, meta)
            metas.append(meta)
            replaced.add((origin.repo, rel))
    if metas:
        dataset.merge_index(out_dir, metas, replaced)
    report.kernels = metas
    return report


def _rel_where(project: Project, where: str) -> str:
    path, _, line = where.rpartition(":")
    return f"{project.rel(path)}:{line}" if path else where
