"""PyTorch reference functions a project keeps beside its Triton launchers, paired by naming convention.

Projects write `layer_norm_ref` beside `layer_norm`, `naive_retention` beside `retention`,
`torch_rope` beside `rope`. For a kernel launched from `L`, the bases tried are `L` and `L` without a
`_fwd`/`_forward`/`_triton`/`_impl` suffix or a `_`/`fused_`/`triton_` prefix; a module-level function
named like a reference of a base is the reference, and the function to compare with it is the base
itself when the module defines it (the public API), else the launcher.
"""

from __future__ import annotations

import ast

from miner import lazy_re
from miner.triton.project import Module

_SUFFIX = lazy_re.compile(r"(_fwd|_forward|_triton|_impl|_kernel|_launcher|_op)$")
_PREFIX = lazy_re.compile(r"^(_+|fused_|triton_)")


def bases(launcher: str) -> list[str]:
    out = [launcher]
    name = launcher
    for _ in range(3):
        name = _PREFIX.sub("", _SUFFIX.sub("", name))
        if name and name not in out:
            out.append(name)
    return out


def candidates(base: str) -> list[str]:
    return [f"{base}_ref", f"{base}_reference", f"ref_{base}", f"reference_{base}", f"naive_{base}",
            f"{base}_naive", f"{base}_torch", f"torch_{base}", f"{base}_ref_torch", f"{base}_pytorch"]


def _function(mod: Module, name: str) -> ast.FunctionDef | None:
    stmt = mod.binding(name)
    return stmt if isinstance(stmt, ast.FunctionDef) else None


def pair(mod: Module, launcher: str) -> dict[str, str] | None:
    """{"function": the one to test, "reference": its PyTorch reference}, or None."""
    for base in bases(launcher):
        for cand in candidates(base):
            ref = _function(mod, cand)
            if ref is None:
                continue
            tested = base if _function(mod, base) is not None else launcher
            return {"function": tested, "reference": cand}
    return None


TEST_FILE = "tests/test_reference.py"
_TEST = """\
# Written by kernel-miner: the unit's {function}() against the project's own PyTorch reference {reference}().
from pathlib import Path

from miner.triton import harness

harness.require_gpu()
KDIR = Path(__file__).resolve().parents[1]


def test_matches_project_reference():
    unit = harness.load_triton_unit(KDIR)
    result = harness.check_against_reference(unit, {function!r}, {reference!r})
    print(result)
"""


def test_text(pair: dict[str, str]) -> str:
    return _TEST.format(**pair)
