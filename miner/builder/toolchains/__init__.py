"""One module per compiler behind one interface (base.Toolchain): nvcc for CUDA, hipcc for HIP.

`--toolchain cuda,hip` names them; `--arch` items go to the toolchain whose targets they name
(sm_NN/compute_NN: cuda, gfxNNN: hip); a toolchain given no item builds for its default."""

from __future__ import annotations

from miner.builder.toolchains.base import Toolchain
from miner.builder.toolchains.hipcc import Hipcc
from miner.builder.toolchains.nvcc import Nvcc
from miner.errors import UsageError

TOOLCHAINS: dict[str, type[Toolchain]] = {"cuda": Nvcc, "hip": Hipcc}


def parse_names(text: str) -> list[str]:
    """`cuda,hip` -> ["cuda", "hip"] (order kept, duplicates dropped); a UsageError for unknown names."""
    names = list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
    if not names:
        raise UsageError("--toolchain is empty")
    for n in names:
        if n not in TOOLCHAINS:
            raise UsageError(f"--toolchain: unknown {n!r} (choose from {', '.join(TOOLCHAINS)})")
    return names


def split_arch(arch: str | None, names: list[str]) -> dict[str, str]:
    """Each toolchain's part of an --arch list, or its default when the list names none of its targets."""
    items = [a.strip() for a in (arch or "").split(",") if a.strip()]
    parts: dict[str, list[str]] = {n: [] for n in names}
    for item in items:
        owner = next((n for n, tc in TOOLCHAINS.items() if tc.owns_arch(item)), None)
        if owner is None and len(names) == 1:
            owner = names[0]  # its own flags() says what it expected
        if owner is None:
            raise UsageError(f"--arch: {item!r} is neither an nvcc target (sm_90, compute_90) nor a hipcc one (gfx90a)")
        if owner not in parts:
            raise UsageError(f"--arch: {item!r} is a {owner} target but --toolchain is {','.join(names)}")
        parts[owner].append(item)
    return {n: ",".join(parts[n]) or TOOLCHAINS[n].default_arch for n in names}


__all__ = ["TOOLCHAINS", "Hipcc", "Nvcc", "Toolchain", "parse_names", "split_arch"]
