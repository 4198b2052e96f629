/* kernel-miner parse shim for cuda_fp8.h: declarations only, for libclang. */
#ifndef KM_CUDA_FP8_H
#define KM_CUDA_FP8_H
#include "cuda_fp16.h"
#include "cuda_bf16.h"
typedef unsigned char __nv_fp8_storage_t;
typedef unsigned short __nv_fp8x2_storage_t;
typedef unsigned int __nv_fp8x4_storage_t;
enum __nv_saturation_t { __NV_NOSAT, __NV_SATFINITE };
enum __nv_fp8_interpretation_t { __NV_E4M3, __NV_E5M2 };
#define KM_FP8(N)                                                                                \
  struct N {                                                                                     \
    __nv_fp8_storage_t __x;                                                                      \
    N() = default;                                                                               \
    __host__ __device__ explicit N(float); __host__ __device__ explicit N(double);               \
    __host__ __device__ explicit N(__half); __host__ __device__ explicit N(__nv_bfloat16);       \
    __host__ __device__ explicit N(int);                                                         \
    __host__ __device__ explicit operator float() const; __host__ __device__ explicit operator __half() const; \
    __host__ __device__ explicit operator __nv_bfloat16() const; __host__ __device__ explicit operator bool() const; \
  };
KM_FP8(__nv_fp8_e4m3) KM_FP8(__nv_fp8_e5m2)
#undef KM_FP8
struct __nv_fp8x2_e4m3 { __nv_fp8x2_storage_t __x; };
struct __nv_fp8x4_e4m3 { __nv_fp8x4_storage_t __x; };
struct __nv_fp8x2_e5m2 { __nv_fp8x2_storage_t __x; };
struct __nv_fp8x4_e5m2 { __nv_fp8x4_storage_t __x; };
/* The power-of-two scale type of toolkit 12.8 and later. */
#ifndef KM_CUDA_ROUND_MODE
#define KM_CUDA_ROUND_MODE
enum cudaRoundMode { cudaRoundNearest, cudaRoundZero, cudaRoundPosInf, cudaRoundMinInf };
#endif
struct __nv_fp8_e8m0 {
  __nv_fp8_storage_t __x;
  __nv_fp8_e8m0() = default;
  __host__ __device__ explicit __nv_fp8_e8m0(float); __host__ __device__ explicit __nv_fp8_e8m0(double);
  __host__ __device__ explicit __nv_fp8_e8m0(__half); __host__ __device__ explicit __nv_fp8_e8m0(__nv_bfloat16);
  __host__ __device__ explicit operator float() const; __host__ __device__ explicit operator __nv_bfloat16() const;
};
struct __nv_fp8x2_e8m0 { __nv_fp8x2_storage_t __x; };
extern "C++" {
__host__ __device__ __nv_fp8_storage_t __nv_cvt_float_to_fp8(float, __nv_saturation_t, __nv_fp8_interpretation_t);
__host__ __device__ __nv_fp8x2_storage_t __nv_cvt_float2_to_fp8x2(float2, __nv_saturation_t, __nv_fp8_interpretation_t);
__host__ __device__ __half_raw __nv_cvt_fp8_to_halfraw(__nv_fp8_storage_t, __nv_fp8_interpretation_t);
__host__ __device__ __nv_fp8_storage_t __nv_cvt_float_to_e8m0(float, __nv_saturation_t, cudaRoundMode);
__host__ __device__ __nv_bfloat16_raw __nv_cvt_e8m0_to_bf16raw(__nv_fp8_storage_t);
}
#endif
