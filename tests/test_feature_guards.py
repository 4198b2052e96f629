"""miner.source.feature_guards: which `#ifdef` switches a project's guarded explicit instantiations need."""

from __future__ import annotations

from miner.source import feature_guards

_KERNEL = b"""
#define INST(T) template void launch<T>(T *, int);
#define STUB(C) template <typename D> void C<D>::run_gpu() {}
INST(float)
#ifdef HAVE_BF16
INST(__nv_bfloat16)
#endif
#ifndef NO_DOUBLE
INST(double)
#else
INST(long)
#endif
#ifdef ONLY_CPU
STUB(Layer)
#endif
#if defined(USE_CUDA_GRAPHS)
INST(int)
#endif
#ifdef HAVE_FP8
template __global__ void k<__nv_fp8_e4m3>(__nv_fp8_e4m3 *);
#endif
"""


def test_switches_of_guarded_explicit_instantiations() -> None:
    got = feature_guards.switches({"/p/k.cu": _KERNEL})
    # NO_DOUBLE would turn INST(double) off while turning INST(long) on: a choice, the default side stays;
    # ONLY_CPU writes definitions, not instantiations; USE_CUDA_GRAPHS names a platform.
    assert got == {"/p/k.cu": {"HAVE_BF16", "HAVE_FP8"}}, got


def test_a_switch_some_source_defines_or_a_host_file_is_left_alone() -> None:
    assert feature_guards.switches({"/p/k.cu": _KERNEL, "/p/cfg.h": b"#define HAVE_BF16\n"}) == {
        "/p/k.cu": {"HAVE_FP8"}}
    assert feature_guards.switches({"/p/k.cpp": _KERNEL}) == {}
