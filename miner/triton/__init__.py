"""Triton kernels: closure, launches, units and the ahead-of-time build (frontend: miner.frontends.triton_frontend)."""
