"""Files the original compiles in nvcc's device pass only: reached through an `#include` written in a branch that
the host pass (`__CUDA_ARCH__` undefined) does not take, `#if defined(__CUDA_ARCH__) #include "impl_device.cuh"
#else #include "impl_host.h" #endif`, a library with one implementation per pass.

The parse defines `__CUDA_ARCH__` and so reads the device implementation; the unit copies it bare, and nvcc's host
pass of the unit reads it too, where the original's read the other implementation. That pass checks the names of
templates nothing instantiates, which the device pass leaves unchecked: a name such a template declares nowhere
fails the unit and not the original (the unit's failure is the miner's, not a reason the original states)."""

from __future__ import annotations

from miner.units.closure.arch_branches import _host_value, chains_open_at
from miner.units.closure.context import TUContext


def _host_skips(data: bytes, offset: int) -> bool:
    """Whether nvcc's host pass skips the line at `offset`: a branch around it is false there (`#if
    defined(__CUDA_ARCH__)`, `#ifdef __CUDA_ARCH__`), or an earlier branch of its chain is true there (the `#else` of
    `#ifndef __CUDA_ARCH__`). Conditions on other macros count as taken."""
    return any(_host_value(*branches[-1]) is False or any(_host_value(k, c) is True for k, c in branches[:-1])
               for branches in chains_open_at(data, offset))


def device_only_include(ctx: TUContext, path: str) -> tuple[str, int] | None:
    """(including file, line) of the `#include` through which only the device pass reaches `path`, where every
    inclusion of it is such; None for a file the host pass reads too (the main file, or any inclusion it takes)."""
    def walk(p: str, seen: frozenset[str]) -> tuple[str, int] | None:
        found: tuple[str, int] | None = None
        for src, off in ctx.included_at.get(p) or ():
            data = ctx.read(src)
            if _host_skips(data, off):
                found = found or (src, data.count(b"\n", 0, off) + 1)
                continue
            up = walk(src, seen | {p}) if src not in seen else None
            if up is None:
                return None
            found = found or up
        return found
    return ctx.memo(f"_device_only:{path}", lambda: walk(path, frozenset()))
