"""A kernel of CUB itself (the mined tree is a CUB checkout, or the kernel lies in a project's copy of CUB): why its
unit cannot build with this toolkit, stated only where the original translation unit cannot either.

CUB's own headers before CCCL 3 include thrust (`<thrust/system/cuda/detail/core/triple_chevron_launch.h>` in the
device dispatch headers), and the toolkit's thrust (CCCL 3.0) accepts only its own CUB: `thrust/system/cuda/
config.h` stops with "The version of CUB in your include path is not compatible with this release of Thrust". A CUB
release needs the thrust of the same release, which a CUB checkout does not contain. A kernel whose file includes no
thrust (`grid/grid_queue.cuh`) compiles with the checkout's own headers: no reason is stated for it."""

from __future__ import annotations

import os
import re

from miner import lazy_re

_VERSION = lazy_re.compile(rb"^[ \t]*#[ \t]*define[ \t]+CUB_VERSION[ \t]+(\d+)", re.M)
_THRUST_INCLUDE = lazy_re.compile(rb'^[ \t]*#[ \t]*include[ \t]*[<"](thrust/[^>"\n]+)[>"]', re.M)


def cub_version(cub_dir: str) -> str | None:
    """`2.2.0` from the tree's `version.cuh` (`#define CUB_VERSION 200200`), None without one."""
    try:
        with open(os.path.join(cub_dir, "version.cuh"), "rb") as f:
            m = _VERSION.search(f.read())
    except OSError:
        return None
    if m is None:
        return None
    v = int(m.group(1))
    return f"{v // 100000}.{v // 100 % 1000}.{v % 100}"


def own_kernel_reason(kernel_file: str, cub_dir: str, shown: str, toolkit_release: str) -> str | None:
    """The stated reason for a kernel defined in `kernel_file` inside the CUB tree `cub_dir` (`shown` as the
    record spells it), or None where the kernel's own file includes no thrust."""
    try:
        with open(kernel_file, "rb") as f:
            m = _THRUST_INCLUDE.search(f.read())
    except OSError:
        return None
    if m is None:
        return None
    version = cub_version(cub_dir)
    release = f"CUB {version}" if version else "a CUB release"
    return (f"the kernel is CUB's own ({release}, {shown}) and its file includes <{m.group(1).decode()}>: this "
            f"toolkit's thrust ({toolkit_release}) accepts only the toolkit's own CUB (\"The version of CUB in your "
            f"include path is not compatible with this release of Thrust\"), and {release} needs the thrust of its "
            "own release, which the tree does not contain: the original source does not compile with this toolkit "
            "either")
