"""Faithful ports of code written for an older Triton, applied in the build child when the compile asks.

Some kernels fail on the installed Triton only because their project targets an older release, in two
ways the newer release kept the meaning of:
- an API that was renamed, nothing else (`tl._experimental_make_tensor_descriptor` became
  `tl.make_tensor_descriptor`: same arguments, same descriptor): the old name is bound to the new
  function in the child's `triton.language`, so the kernel's text stays as the project wrote it;
- a plain module-level number the kernel reads (`EPSILON = 1e-12`): Triton before 3.0 folded such
  globals in as constants, Triton 3.x refuses any global that is not a `tl.constexpr`; the unit's global
  is wrapped in `tl.constexpr` with the same value, which is what the older compiler did.
APIs whose replacement changes the call (`tl._experimental_descriptor_load(desc_ptr, offsets, shape,
dtype)` became a method of a typed descriptor, `desc.load(offsets)`, and the launcher must build the
descriptor differently) are not ported: those kernels stay `removed_triton_api`. Every port applied is
listed in the build record (`ports`), so a unit built this way is never mistaken for one that builds as
written.
"""

from __future__ import annotations

from typing import Any

from miner import lazy_re

# old name in triton.language -> its replacement, for pure renames only (same signature, same result).
RENAMES = {"_experimental_make_tensor_descriptor": "make_tensor_descriptor"}

_MISSING = lazy_re.compile(r"module 'triton\.language' has no attribute '(\w+)'")
_GLOBAL = lazy_re.compile(r"Cannot access global variable (\w+)")


def port(error: str, namespace: dict[str, Any], done: list[str]) -> str | None:
    """Apply the port the compiler's error asks for (at most once each) to `triton.language` or to the
    kernel's globals `namespace`; its description, or None."""
    import triton.language as tl

    m = _MISSING.search(error)
    if m and m.group(1) in RENAMES and hasattr(tl, RENAMES[m.group(1)]):
        old, new = m.group(1), RENAMES[m.group(1)]
        desc = f"tl.{old} -> tl.{new} (renamed)"
        if desc in done:
            return None
        setattr(tl, old, getattr(tl, new))
        return desc
    m = _GLOBAL.search(error)
    if m:
        name = m.group(1)
        value = namespace.get(name)
        # numbers only: a tensor, a list or an object global has no constexpr meaning in older Triton either
        if isinstance(value, (bool, int, float)):
            desc = f"global {name} = tl.constexpr({value!r}) (Triton < 3.0 folded plain globals in)"
            if desc in done:
                return None
            namespace[name] = tl.constexpr(value)
            return desc
    return None
