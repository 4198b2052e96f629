"""Harness side of `parent_ref`: a unit's torch.nn subclass against its parent's own forward and backward.

Runs in a test process (never in the miner). One instance is built from the layer's constructor
(sizes by parameter name), deep-copied, and the copy is run through the torch parent's `forward`: same
arguments, same parameters, same mode. Inputs are tried in a fixed order until the parent accepts them
and the layer runs on them (a layer may support fewer layouts than its parent: softmax over the last
dimension only); outputs, then the input's gradient and every parameter's gradient must agree, and the
unit's kernel must have been launched (by the forward, else by the backward: gradients are compared only for
a kernel the forward does not launch).
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

from miner import harness as cuda_harness
from miner.triton.harness import TritonUnit, _tensors, tolerance

SIZE = 16  # every feature-like constructor size; inputs put it where the parent expects it
_CTOR = {"kernel_size": 3, "stride": 1, "padding": 1, "dilation": 1, "groups": 1, "num_heads": 2,
         "dim": -1, "p": 0.0}
_SHAPES: list[tuple[int, ...]] = [(4, SIZE), (2, SIZE, 24), (2, 8, SIZE), (2, SIZE, 12, 12), (SIZE,)]


def _ctor_args(cls: type, device: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if p.name == "device":  # layers that allocate on a default device of their own
            out[p.name] = device
        elif p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        elif p.default is not inspect.Parameter.empty:
            if p.default is None and p.name in _CTOR:  # Softmax(dim=None): the parent's implicit choice
                out[p.name] = _CTOR[p.name]          # is deprecated, a layer may refuse it
            continue
        else:
            out[p.name] = _CTOR.get(p.name, SIZE)
    return out


def _parent(cls: type) -> type:
    for base in cls.__mro__[1:]:
        if base.__module__.startswith("torch.nn"):
            return base
    raise TypeError(f"{cls.__name__} has no torch.nn parent")


def _extra_inputs(forward: Callable[..., Any], x: Any, gen: Any) -> list[list[Any]]:
    """Candidates for the forward's other required arguments: class indices for a `target` (the loss
    layers' usual meaning), then a tensor of the input's shape in [0, 1); `key`/`value` are the input again."""
    import torch

    names = [p.name for p in list(inspect.signature(forward).parameters.values())[2:]
             if p.default is inspect.Parameter.empty and p.kind == p.POSITIONAL_OR_KEYWORD]
    if not names:
        return [[]]
    classes = x.shape[1] if x.ndim > 1 else x.shape[0]
    idx_shape = (x.shape[0], *x.shape[2:]) if x.ndim > 1 else ()
    indices = torch.randint(0, classes, idx_shape, device=x.device, generator=gen)
    # in [0, 1): a probability for the losses that take one (KL divergence, BCE), any value for the others
    like = torch.rand(x.shape, device=x.device, generator=gen)
    out = []
    for first in (indices, like):
        out.append([first if n == "target" else x.detach() if n in ("key", "value") else like for n in names])
    return out


def _close(got: Any, exp: Any, what: str, rtol: float, atol: float) -> None:
    import torch

    if got is None and exp is None:
        return
    assert got is not None and exp is not None, f"{what}: one side has no value"
    assert got.shape == exp.shape, f"{what}: shape {tuple(got.shape)} != reference {tuple(exp.shape)}"
    torch.testing.assert_close(got.float(), exp.float(), rtol=rtol, atol=atol, msg=lambda m: f"{what}: {m}")


def check_against_parent(unit: TritonUnit, layer: str, *, seed: int = 0, device: str = "cuda",
                         rtol: float | None = None, atol: float | None = None) -> dict[str, Any]:
    """Compare layer `layer` of the unit with its torch.nn parent; returns what was compared."""
    import torch

    rtol, atol = tolerance(unit, rtol, atol)
    cls = unit.function(layer)
    parent = _parent(cls)
    gen = torch.Generator(device=device).manual_seed(seed)
    torch.manual_seed(seed)
    mod = cls(**_ctor_args(cls, device)).to(device)
    tried: list[str] = []
    for shape in _SHAPES:
        x = torch.randn(shape, device=device, generator=gen)
        for extra in _extra_inputs(parent.forward, x, gen):
            ref_mod = copy.deepcopy(mod)
            xr = x.clone().requires_grad_(x.is_floating_point())
            try:
                expected = parent.forward(ref_mod, xr, *extra)
            except Exception as exc:  # noqa: BLE001 - a layout the parent refuses: try the next
                tried.append(f"{list(shape)}: reference: {type(exc).__name__}: {str(exc)[:100]}")
                continue
            test_mod = copy.deepcopy(mod)
            xt = x.clone().requires_grad_(x.is_floating_point())
            before = cuda_harness.RECORDS["launches"]
            try:
                got = test_mod(xt, *[e.clone() for e in extra])
            except Exception as exc:  # noqa: BLE001 - a layout the layer does not support
                tried.append(f"{list(shape)}: layer: {type(exc).__name__}: {str(exc)[:100]}")
                continue
            exp_t, got_t = _tensors(expected), _tensors(got)
            # (attention returns its weights only on request: the outputs both return are compared)
            n = min(len(got_t), len(exp_t))
            assert n, f"{layer} returned {len(got_t)} tensors, reference {len(exp_t)}"
            for i, (g, e) in enumerate(zip(got_t[:n], exp_t[:n], strict=True)):
                _close(g, e, f"output {i}", rtol, atol)
            grads, phase = 0, "forward"
            # The backward pass is compared only when the forward did not launch the kernel under test
            # (a backward kernel): each pass compiles its kernels, under autotune once per config.
            if cuda_harness.RECORDS["launches"] == before and exp_t[0].requires_grad and got_t[0].requires_grad:
                phase = "backward"
                grad = torch.randn(exp_t[0].shape, device=device, generator=gen)
                exp_t[0].backward(grad)
                got_t[0].backward(grad.clone())
                _close(xt.grad, xr.grad, "input gradient", rtol, atol)
                ref_params = dict(ref_mod.named_parameters())
                for name, p in test_mod.named_parameters():
                    _close(p.grad, ref_params[name].grad, f"gradient of {name}", rtol, atol)
                    grads += 1
            if device == "cuda":
                torch.cuda.synchronize()
            launched = cuda_harness.RECORDS["launches"] - before
            assert launched > 0, f"{layer} did not launch {unit.kernel}"
            return {"layer": layer, "parent": f"{parent.__module__}.{parent.__name__}", "input": list(shape),
                    "launches": launched, "checked": phase, "outputs": n, "parameter_grads": grads, "rtol": rtol}
    raise AssertionError(f"no input both {parent.__name__} and {layer} accept: " + "; ".join(tried))
