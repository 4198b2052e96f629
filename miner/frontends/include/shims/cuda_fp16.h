/* kernel-miner parse shim for cuda_fp16.h */
#ifndef KM_CUDA_FP16_H
#define KM_CUDA_FP16_H
struct __half { unsigned short x; __host__ __device__ __half() {} __host__ __device__ __half(float) {}
  __host__ __device__ operator float() const; };
struct __half2 { __half x, y; };
typedef __half half;
typedef __half2 half2;
extern "C++" {
__host__ __device__ __half __float2half(float);
__host__ __device__ __half __float2half_rn(float);
__host__ __device__ float __half2float(__half);
__host__ __device__ __half2 __floats2half2_rn(float, float);
__host__ __device__ __half2 __float2half2_rn(float);
__host__ __device__ float2 __half22float2(__half2);
__device__ __half __hadd(__half, __half); __device__ __half __hsub(__half, __half);
__device__ __half __hmul(__half, __half); __device__ __half __hdiv(__half, __half);
__device__ __half2 __hadd2(__half2, __half2); __device__ __half2 __hmul2(__half2, __half2);
__device__ __half hexp(__half); __device__ __half hsqrt(__half);
__device__ __half __shfl_xor_sync(unsigned, __half, int, int = 32);
__device__ __half __shfl_down_sync(unsigned, __half, unsigned, int = 32);
__device__ __half atomicAdd(__half *, __half);
__device__ __half2 atomicAdd(__half2 *, __half2);
__device__ __half __ldg(const __half *);
}
#endif
