#pragma once
// kernel-miner verify: stand-in for the header a CUDA build of torch installs and its CPU wheel does not.
// torch's own aten/src/THC/THCAtomics.cuh is this one include (kept for extensions that still use it).
#include <ATen/cuda/Atomic.cuh>
