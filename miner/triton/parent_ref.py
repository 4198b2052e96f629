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

from miner.triton.project import Module

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


def layers(mod: Module, launcher_top: str) -> list[dict[str, str]]:
    """[{"layer": class name, "parent": torch dotted name}] for every top-level class of the launcher's
    module that subclasses a torch.nn layer and whose own `forward` names the launcher's top-level
    definition (the autograd Function or the launcher function), in source order."""
    out = []
    for stmt in mod.tree.body:
        if not isinstance(stmt, ast.ClassDef) or stmt.name == launcher_top:
            continue
        parent = torch_parent(mod, stmt)
        fwd = _forward(stmt)
        if parent is None or fwd is None:
            continue
        if any(isinstance(n, ast.Name) and n.id == launcher_top for n in ast.walk(fwd)):
            out.append({"layer": stmt.name, "parent": parent})
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


def test_text(found: list[dict[str, str]]) -> str:
    return _HEAD + "".join(_TEST.format(layer=f["layer"], short=f["parent"].rsplit(".", 1)[-1]) for f in found)
