"""The one default CUDA target, in the spelling each stage needs.

The parse defines `__CUDA_ARCH__` so device-only branches are seen, the build compiles for the target
and embeds its PTX, and the validate/harness fallback build uses the build's flags: all three must
name the same GPU, so they derive from `CUDA_SM`. `--arch` (build, mine) and `KM_CUDA_ARCH` (a unit
built on demand) still override it per run.
"""

from __future__ import annotations

# Hopper: the GPUs validation runs on; nvcc 13 targets sm_75 ... sm_121.
CUDA_SM = 90

CUDA_ARCH_MACRO = CUDA_SM * 10
"""`__CUDA_ARCH__` as nvcc defines it in device code for CUDA_SM (900)."""

SM = f"sm_{CUDA_SM}"
"""One real target (Triton's ahead-of-time build)."""

NVCC_ARCH = f"{SM},compute_{CUDA_SM}"
"""nvcc's `--arch` list: a cubin for the target and its PTX, so newer GPUs can JIT the kernel."""

COMPUTE_FLAG = f"-arch=compute_{CUDA_SM}"
"""PTX for the target (verify's original translation units)."""
