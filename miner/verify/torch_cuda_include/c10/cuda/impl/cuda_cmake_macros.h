#pragma once
// kernel-miner verify: stand-in for the file a CUDA build of torch generates from
// c10/cuda/impl/cuda_cmake_macros.h.in and its CPU wheel does not ship. Shared libraries are what
// the wheels build; the macro only chooses dllexport/dllimport on Windows.
#define C10_CUDA_BUILD_SHARED_LIBS
