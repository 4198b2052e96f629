"""kernel-miner: mine CUDA/HIP kernels from real code into a standalone, tested dataset."""

__version__ = "0.1.0"
