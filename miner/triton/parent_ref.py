"""Torch parents as references: a project layer that subclasses a `torch.nn` module and overrides its
`forward` with a call into the Triton launcher is checked against the parent's own `forward`.

Projects that re-implement PyTorch layers in Triton write `class LayerNorm(nn.LayerNorm)` whose
`forward` calls `LayerNormAutoGrad.apply(...)` (the launcher's autograd Function) and test it against
`nn.LayerNorm` built with the same arguments. The parent class is that reference, already in the unit's
imports: the same instance (same constructor arguments, same parameters) run through the parent's
`forward` is what the layer must compute, forward and backward. Found by AST at extract, in the
launcher's module; the harness side is `harness_parent.check_against_parent`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from typing import Any

from miner.triton.project import Module, Project

# torch.nn names that are containers or the generic base, not a layer with a computation to compare.
_NOT_LAYERS = {"Module", "ModuleList", "ModuleDict", "Sequential", "Parameter", "ParameterList",
               "ParameterDict", "Identity"}


def torch_parent(mod: Module, cls: ast.ClassDef) -> str | None:
    """Dotted name of the class's `torch.nn` layer base (`nn.LayerNorm` with `from torch import nn` ->
    "torch.nn.LayerNorm"), or None."""
    for base in cls.bases:
        dotted = mod.names.dotted(base)
        if not dotted or not dotted.startswith("torch.nn."):
            continue
        last = dotted.rsplit(".", 1)[-1]
        if last[:1].isupper() and last not in _NOT_LAYERS:
            return dotted
    return None


def _forward(cls: ast.ClassDef) -> ast.FunctionDef | None:
    return next((s for s in cls.body if isinstance(s, ast.FunctionDef) and s.name == "forward"), None)


def layers(project: Project, lmod: Module, launcher_top: str, others: Iterable[Module] = ()) -> list[dict[str, Any]]:
    """[{"layer": class name, "parent": torch dotted name, "_module": its Module}] for every top-level
    class that subclasses a torch.nn layer and whose own `forward` names the launcher's top-level
    definition or a definition of its module that names it (the autograd Function around a launcher
    function), in source order: in the launcher's module, else in the `others` that import one of those
    from it (a layers module beside an ops module)."""
    entries = {launcher_top} | _callers(lmod, launcher_top)
    found = _layers_in(lmod, entries)
    for other in others:
        if found:
            break
        if other.path != lmod.path and any(imports_from(project, other, e, lmod) for e in entries):
            found = _layers_in(other, entries)
    return found


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _callers(mod: Module, name: str) -> set[str]:
    """Top-level functions and classes of `mod` whose body names `name` (one level: an autograd Function
    whose forward calls the launcher function)."""
    return {s.name for s in mod.tree.body
            if isinstance(s, (ast.FunctionDef, ast.ClassDef)) and s.name != name and name in _names(s)
            and not (isinstance(s, ast.ClassDef) and torch_parent(mod, s))}  # the layers themselves


def imports_from(project: Project, mod: Module, name: str, source: Module, hops: int = 3) -> bool:
    """`mod` imports `name` from `source`, directly or through packages re-exporting it
    (`from pkg.ops import Fn` with `pkg/ops/__init__.py` importing it from the op module)."""
    stmt = mod.binding(name)
    if not isinstance(stmt, ast.ImportFrom) or hops == 0:
        return False
    target = project.resolve_module(stmt.module or "", stmt.level, mod)
    if target is None or target == source.path:
        return target is not None
    alias = next((a.name for a in stmt.names if (a.asname or a.name) == name), name)
    via = project.module(target)
    return via is not None and imports_from(project, via, alias, source, hops - 1)


def _layers_in(mod: Module, entries: set[str]) -> list[dict[str, Any]]:
    out = []
    for stmt in mod.tree.body:
        if not isinstance(stmt, ast.ClassDef) or stmt.name in entries:
            continue
        parent = torch_parent(mod, stmt)
        fwd = _forward(stmt)
        if parent is None or fwd is None:
            continue
        if _names(fwd) & entries:
            out.append({"layer": stmt.name, "parent": parent, "_module": mod})
    return out


TEST_FILE = "tests/test_reference.py"
_HEAD = """\
# Written by kernel-miner: the unit's layers against the torch.nn classes they subclass (their references).
from pathlib import Path

from miner.triton import harness, harness_parent

harness.require_gpu()
KDIR = Path(__file__).resolve().parents[1]
"""
_TEST = """

def test_{layer}_matches_{short}():
    unit = harness.load_triton_unit(KDIR)
    print(harness_parent.check_against_parent(unit, {layer!r}))
"""


def record(found: list[dict[str, Any]]) -> list[dict[str, str]]:
    """The JSON side of `layers`' answer (the module a layer lives in is for the unit's closure only)."""
    return [{k: v for k, v in f.items() if not k.startswith("_")} for f in found]


def test_text(found: list[dict[str, Any]]) -> str:
    return _HEAD + "".join(_TEST.format(layer=f["layer"], short=f["parent"].rsplit(".", 1)[-1]) for f in found)
