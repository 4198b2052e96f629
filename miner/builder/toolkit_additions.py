"""Names a later toolkit's libraries added: a unit that fails on one states why (metadata `build.toolkit_removed`).

A source written for a newer CUDA (`cuda::fast_mod_div<uint32_t>` from `<cuda/cmath>`, CCCL 3.1 / CUDA 13.1)
does not compile with an older toolkit (CUDA 13.0 ships CCCL 3.0): "namespace cuda has no member fast_mod_div".
No closure can supply a toolkit library's class, so the unit's failure is the original's, as for the names a toolkit
removed (`diagnostics.TOOLKIT_REMOVED`). The release each name came with is CCCL's table of its extended API
(libcudacxx "Math", "CCCL Availability"); the toolkit's own CCCL version is read from its `cuda/std/__cccl/version.h`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

from miner.frontends.config import numeric_define

# Name -> (CCCL version that added it, as a tuple, and the release to name).
TOOLKIT_ADDED: dict[str, tuple[tuple[int, int, int], str]] = {
    **{f"cuda::{n}": ((3, 1, 0), "CCCL 3.1.0 (CUDA 13.1)")
       for n in ("fast_mod_div", "ipow", "is_power_of_two", "isqrt", "neg", "next_power_of_two", "prev_power_of_two",
                 "uabs")},
    "cuda::mul_hi": ((3, 2, 0), "CCCL 3.2.0 (CUDA 13.2)"),
    "cuda::sincos": ((3, 3, 0), "CCCL 3.3.0 (CUDA 13.3)"),
}

def cccl_version(dirs: Iterable[str]) -> tuple[int, int, int] | None:
    """The CCCL version of the first include folder holding `cuda/std/__cccl/version.h` (3000001 -> (3, 0, 1))."""
    found = numeric_define("CCCL_VERSION", [os.path.join(d, "cuda", "std", "__cccl", "version.h") for d in dirs])
    if found is None:
        return None
    v = int(found)
    return v // 1000000, v // 1000 % 1000, v % 1000


def added_after_toolkit(symbol: str | None, toolkit_dirs: Callable[[], Iterable[str]]) -> str | None:
    """Why a missing toolkit-library name cannot be supplied: a later release added it, or None (a name not in the
    table, or one this toolkit's CCCL should have, where the failure is something else)."""
    found = TOOLKIT_ADDED.get((symbol or "").removeprefix("::"))
    if found is None:
        return None
    version = cccl_version(toolkit_dirs())
    if version is not None and version >= found[0]:
        return None
    have = f"this toolkit's CCCL is {'.'.join(map(str, version))}" if version else "this toolkit's CCCL lacks it"
    return (f"{symbol.removeprefix('::')} was added in {found[1]}; {have}: the original source does not compile "
            "with this toolkit either")
