"""Harness API for Triton units: load a unit module from its file and check it against a PyTorch reference.

Used inside test processes (`kernel-miner validate` runs every test file in its own process group), so
the unit's code runs there, never in the miner. Launches of the unit's kernel are counted into
`miner.harness.RECORDS` like CUDA launches, so validate's pass_call means the same for both languages.
"""

from __future__ import annotations

import importlib.util
import inspect
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from miner import harness as cuda_harness
from miner.dataset.folder import KernelFolder

require_gpu = cuda_harness.require_gpu

# Shapes tried in order until the reference accepts the synthesized inputs: a flat vector, rows of
# a hidden size, (batch, tokens, hidden), (batch, tokens, heads, head_dim).
SHAPES: list[tuple[int, ...]] = [(4096,), (16, 256), (2, 64, 128), (2, 64, 4, 64)]
_VECTOR = {"weight", "bias", "gamma", "beta", "norm_weight", "norm_bias"}
_FLOATS = {"eps": 1e-5, "epsilon": 1e-5, "alpha": 0.5, "beta_": 0.5, "negative_slope": 0.01, "scale": 0.5,
           "temperature": 1.0, "p": 0.0, "momentum": 0.1}


@dataclass
class TritonUnit:
    kernel_dir: Path
    module: Any
    kernel: str
    meta: dict[str, Any]

    def function(self, name: str) -> Callable[..., Any]:
        fn = getattr(self.module, name, None)
        if fn is None:
            raise AttributeError(f"the unit of {self.kernel} defines no {name!r}")
        return fn


class _Counted:
    """Stands in for the kernel in the unit's namespace: `k[grid](...)` is counted, everything else is
    the kernel's own (autotune/heuristics wrappers and JITFunction alike)."""

    def __init__(self, fn: Any, symbol: str) -> None:
        self._fn, self._symbol = fn, symbol

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        inner = self._fn[grid]

        def launch(*args: Any, **kwargs: Any) -> Any:
            cuda_harness.RECORDS["launches"] += 1
            return inner(*args, **kwargs)

        return launch

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fn, name)


def load_triton_unit(kernel_dir: str | Path) -> TritonUnit:
    kdir = Path(kernel_dir).resolve()
    meta = KernelFolder(kdir).metadata()
    if meta.get("language") != "triton":
        raise ValueError(f"{kdir.name} is not a Triton kernel (language: {meta.get('language', 'cuda')})")
    inst = (meta.get("instantiations") or [None])[0]
    if not inst:
        raise FileNotFoundError(f"{kdir.name}: no unit was rendered")
    path = kdir / inst["unit"]
    name = f"km_triton_{meta['id'].replace('-', '_')}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # Triton looks the kernel's globals up through its module
    spec.loader.exec_module(mod)
    if meta["triton"]["compile"].get("role") == "kernel" and hasattr(mod, meta["name"]):
        setattr(mod, meta["name"], _Counted(getattr(mod, meta["name"]), meta["name"]))
    return TritonUnit(kdir, mod, meta["name"], meta)


def tolerance(unit: TritonUnit, rtol: float | None, atol: float | None) -> tuple[float, float]:
    """1e-3 (the projects' own tests use it for fp32), 1e-2 when the unit calls `tl.dot`: on fp32 operands
    it computes in TF32 (10-bit mantissa) unless the kernel says otherwise, and a reference in full fp32
    differs by more than 1e-3 on sums of a few dozen products."""
    dot = "tl.dot(" in (unit.kernel_dir / unit.meta["instantiations"][0]["unit"]).read_text(encoding="utf-8")
    default = 1e-2 if dot else 1e-3
    return (rtol if rtol is not None else default), (atol if atol is not None else default)


def _value(name: str, shape: tuple[int, ...], gen: Any) -> Any:
    import torch

    if name in _FLOATS:
        return _FLOATS[name]
    if name in _VECTOR:
        return torch.randn(shape[-1], device="cuda", generator=gen)
    return torch.randn(shape, device="cuda", generator=gen)


def _required(fn: Callable[..., Any]) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(fn).parameters.values()
            if p.default is inspect.Parameter.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def _inputs(ref_fn: Callable[..., Any], fn: Callable[..., Any], shape: tuple[int, ...],
            seed: int) -> tuple[list[Any], list[Any]]:
    """Positional arguments for the required parameters of the reference and of the tested function,
    matched by name: tensors of `shape` (vectors of its last dimension for weight-like names), floats for
    scalar-like names; a parameter only the tested function requires takes the reference's default."""
    import torch

    gen = torch.Generator(device="cuda").manual_seed(seed)
    ref_params = inspect.signature(ref_fn).parameters
    values = {p.name: _value(p.name, shape, gen) for p in _required(ref_fn)}
    ref_args = list(values.values())
    args = []
    for i, p in enumerate(_required(fn)):
        if p.name in values:
            args.append(values[p.name])
        elif p.name in ref_params and ref_params[p.name].default is not inspect.Parameter.empty:
            args.append(ref_params[p.name].default)
        elif i < len(ref_args) and not any(q.name in values for q in _required(fn)):
            args.append(ref_args[i])  # the two name their parameters differently: keep the order
        else:
            args.append(_value(p.name, shape, gen))
    return ref_args, args


def materialize(spec: dict[str, Any], seed: int, device: str = "cuda") -> tuple[list[Any], list[Any]]:
    """Arguments for the reference and the tested function from a solved inputs spec
    (`miner/triton/inputs.py`): the same objects where the two share an argument."""
    import torch

    gen = torch.Generator(device=device).manual_seed(seed)
    values: dict[str, Any] = {}
    for key, a in spec["args"].items():
        if a["kind"] == "tensor":
            values[key] = torch.randn(a["shape"], device=device, generator=gen)
        else:
            values[key] = a["value"]
    return [values[k] for k in spec["reference"]], [values[k] for k in spec["function"]]


def _candidates(unit: TritonUnit, ref_fn: Callable[..., Any], fn: Callable[..., Any],
                shapes: Sequence[tuple[int, ...]], seed: int) -> Any:
    """(label, reference args, function args): the inputs solved from the unit's source first (recorded
    at extract in triton.reference.inputs), then the generic shapes."""
    spec = ((unit.meta.get("triton") or {}).get("reference") or {}).get("inputs")
    if spec:
        ref_in, args = materialize(spec, seed)
        yield {k: a.get("shape", a.get("value")) for k, a in spec["args"].items()}, ref_in, args
    for shape in shapes:
        ref_in, args = _inputs(ref_fn, fn, shape, seed)
        yield list(shape), ref_in, args


def _tensors(value: Any) -> list[Any]:
    import torch

    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def check_against_reference(unit: TritonUnit, function: str, reference: str, *, seed: int = 0,
                            shapes: Sequence[tuple[int, ...]] = SHAPES, rtol: float | None = None,
                            atol: float | None = None) -> dict[str, Any]:
    """Call `reference` and `function` of the unit on the same synthesized inputs and assert that their
    tensor outputs agree. The inputs solved from the unit's source come first (`miner/triton/inputs.py`),
    then the generic shapes; the first inputs the reference accepts are used; the kernel must have been
    launched, and the compared outputs must not be the inputs returned unchanged (a test that cannot
    fail is not a test)."""
    import torch

    rtol, atol = tolerance(unit, rtol, atol)
    ref_fn, fn = unit.function(reference), unit.function(function)
    tried: list[str] = []
    for shape, ref_in, args in _candidates(unit, ref_fn, fn, shapes, seed):
        # The reference's copies stay alive until the kernel ran: freed, their blocks could come back
        # as the launcher's torch.empty output already holding the right numbers.
        ref_args = [a.clone() if isinstance(a, torch.Tensor) else a for a in ref_in]
        try:
            with torch.no_grad():
                expected = ref_fn(*ref_args)
        except Exception as exc:  # noqa: BLE001 - a shape the reference rejects: try the next one
            tried.append(f"{shape}: {type(exc).__name__}: {str(exc)[:120]}")
            continue
        pristine = [a.clone() if isinstance(a, torch.Tensor) else a for a in args]
        before = cuda_harness.RECORDS["launches"]
        with torch.no_grad():
            got = fn(*args)
        torch.cuda.synchronize()
        launched = cuda_harness.RECORDS["launches"] - before
        assert launched > 0, f"{function} did not launch {unit.kernel}"
        exp_t, got_t = _tensors(expected), _tensors(got)
        assert exp_t, f"{reference} returned no tensor"
        n = min(len(exp_t), len(got_t))
        assert n > 0, f"{function} returned no tensor"
        for i in range(n):
            e, g = exp_t[i].float(), got_t[i].float()
            assert e.shape == g.shape, f"output {i}: shape {tuple(g.shape)} != reference {tuple(e.shape)}"
            torch.testing.assert_close(g, e, rtol=rtol, atol=atol, msg=lambda m, i=i: f"output {i}: {m}")
        # An output that is an input left as it was cannot tell a working kernel from an idle one.
        idle = [any(isinstance(a, torch.Tensor) and g.data_ptr() == a.data_ptr() and torch.equal(a, p)
                    for a, p in zip(args, pristine, strict=True)) for g in got_t[:n]]
        assert not all(idle), "the outputs are unchanged inputs: the comparison would not depend on the kernel"
        del ref_args
        return {"inputs": shape, "launches": launched, "outputs": n, "rtol": rtol, "atol": atol}
    raise AssertionError(f"{reference} accepted none of the synthesized inputs: " + "; ".join(tried))
