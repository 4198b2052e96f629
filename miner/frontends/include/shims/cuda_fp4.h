/* kernel-miner parse shim for cuda_fp4.h: declarations only, for libclang. */
#ifndef KM_CUDA_FP4_H
#define KM_CUDA_FP4_H
#include "cuda_fp8.h"
typedef __nv_fp8_storage_t __nv_fp4_storage_t;
typedef __nv_fp8_storage_t __nv_fp4x2_storage_t;
typedef __nv_fp8x2_storage_t __nv_fp4x4_storage_t;
enum __nv_fp4_interpretation_t { __NV_E2M1 };
struct __nv_fp4_e2m1 {
  __nv_fp4_storage_t __x;
  __nv_fp4_e2m1() = default;
  __host__ __device__ explicit __nv_fp4_e2m1(float); __host__ __device__ explicit __nv_fp4_e2m1(double);
  __host__ __device__ explicit __nv_fp4_e2m1(__half); __host__ __device__ explicit __nv_fp4_e2m1(__nv_bfloat16);
  __host__ __device__ explicit __nv_fp4_e2m1(int);
  __host__ __device__ explicit operator float() const; __host__ __device__ explicit operator __half() const;
  __host__ __device__ explicit operator __nv_bfloat16() const; __host__ __device__ explicit operator bool() const;
};
struct __nv_fp4x2_e2m1 {
  __nv_fp4x2_storage_t __x;
  __nv_fp4x2_e2m1() = default;
  __host__ __device__ explicit __nv_fp4x2_e2m1(float2);
  __host__ __device__ explicit __nv_fp4x2_e2m1(__half2); __host__ __device__ explicit __nv_fp4x2_e2m1(__nv_bfloat162);
  __host__ __device__ explicit operator float2() const; __host__ __device__ explicit operator __half2() const;
};
struct __nv_fp4x4_e2m1 {
  __nv_fp4x4_storage_t __x;
  __nv_fp4x4_e2m1() = default;
  __host__ __device__ explicit __nv_fp4x4_e2m1(float4);
  __host__ __device__ explicit __nv_fp4x4_e2m1(__half2, __half2);
  __host__ __device__ explicit __nv_fp4x4_e2m1(__nv_bfloat162, __nv_bfloat162);
  __host__ __device__ explicit operator float4() const;
};
extern "C++" {
__host__ __device__ __nv_fp4_storage_t __nv_cvt_float_to_fp4(float, __nv_fp4_interpretation_t, cudaRoundMode);
__host__ __device__ __nv_fp4x2_storage_t __nv_cvt_float2_to_fp4x2(float2, __nv_fp4_interpretation_t, cudaRoundMode);
__host__ __device__ __nv_fp4x2_storage_t __nv_cvt_halfraw2_to_fp4x2(__half2_raw, __nv_fp4_interpretation_t,
                                                                    cudaRoundMode);
__host__ __device__ __nv_fp4x2_storage_t __nv_cvt_bfloat16raw2_to_fp4x2(__nv_bfloat162_raw, __nv_fp4_interpretation_t,
                                                                        cudaRoundMode);
__host__ __device__ __half_raw __nv_cvt_fp4_to_halfraw(__nv_fp4_storage_t, __nv_fp4_interpretation_t);
__host__ __device__ __half2_raw __nv_cvt_fp4x2_to_halfraw2(__nv_fp4x2_storage_t, __nv_fp4_interpretation_t);
}
#endif
