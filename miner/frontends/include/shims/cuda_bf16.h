/* kernel-miner parse shim for cuda_bf16.h */
#ifndef KM_CUDA_BF16_H
#define KM_CUDA_BF16_H
struct __nv_bfloat16 { unsigned short x; __host__ __device__ __nv_bfloat16() {}
  __host__ __device__ __nv_bfloat16(float) {} __host__ __device__ operator float() const; };
struct __nv_bfloat162 { __nv_bfloat16 x, y; };
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
extern "C++" {
__host__ __device__ __nv_bfloat16 __float2bfloat16(float);
__host__ __device__ __nv_bfloat16 __float2bfloat16_rn(float);
__host__ __device__ float __bfloat162float(__nv_bfloat16);
__device__ __nv_bfloat16 atomicAdd(__nv_bfloat16 *, __nv_bfloat16);
__device__ __nv_bfloat16 __ldg(const __nv_bfloat16 *);
__device__ __nv_bfloat16 __ldcs(const __nv_bfloat16 *);
__device__ float __ldcs(const float *);
__device__ void __stcs(__nv_bfloat16 *, __nv_bfloat16);
__device__ void __stcs(float *, float);
}
#endif
