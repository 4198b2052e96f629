/* kernel-miner parse shim for cuda_runtime.h. Runtime declarations live in km_cuda_parse.h; like the
 * real header it brings the C library nvcc code relies on (math, stdio, stdlib, string, time, assert),
 * as the C headers themselves: libstdc++'s <cmath> wrapper costs several times more to parse. */
#ifndef KM_CUDA_RUNTIME_H
#define KM_CUDA_RUNTIME_H
#if __has_include(<math.h>)
#define _GLIBCXX_INCLUDE_NEXT_C_HEADERS 1
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <assert.h>
#undef _GLIBCXX_INCLUDE_NEXT_C_HEADERS
#endif
/* What nvcc's <cmath> brings along and code uses unasked: std::forward, std::integral_constant. */
#if defined(__cplusplus) && __has_include(<type_traits>)
#include <type_traits>
#include <utility>
#include <new>
#endif
#include "cuda_fp16.h"
#include "cuda_bf16.h"
#endif
