/* kernel-miner parse shim for cuda_bf16.h: declarations only, for libclang. */
#ifndef KM_CUDA_BF16_H
#define KM_CUDA_BF16_H
#include "cuda_fp16.h"
struct __nv_bfloat16_raw { unsigned short x; };
struct __nv_bfloat162_raw { unsigned short x, y; };
struct __align__(2) __nv_bfloat16 {
  unsigned short __x;
  __nv_bfloat16() = default;
  __host__ __device__ __nv_bfloat16(const __nv_bfloat16_raw &);
  __host__ __device__ operator __nv_bfloat16_raw() const;
#if !defined(__CUDA_NO_BFLOAT16_CONVERSIONS__)
  __host__ __device__ __nv_bfloat16(float);
  __host__ __device__ __nv_bfloat16(double);
  __host__ __device__ __nv_bfloat16(int);
  __host__ __device__ __nv_bfloat16(unsigned int);
  __host__ __device__ __nv_bfloat16(short);
  __host__ __device__ __nv_bfloat16(unsigned short);
  __host__ __device__ __nv_bfloat16(long long);
  __host__ __device__ __nv_bfloat16(unsigned long long);
  __host__ __device__ operator float() const;
  __host__ __device__ explicit operator bool() const;
  __host__ __device__ __nv_bfloat16 &operator=(float);
#endif
};
struct __align__(4) __nv_bfloat162 {
  __nv_bfloat16 x, y;
  __nv_bfloat162() = default;
  __host__ __device__ __nv_bfloat162(const __nv_bfloat16 &, const __nv_bfloat16 &);
  __host__ __device__ __nv_bfloat162(const __nv_bfloat162_raw &);
  __host__ __device__ operator __nv_bfloat162_raw() const;
};
typedef __nv_bfloat16 nv_bfloat16;
typedef __nv_bfloat162 nv_bfloat162;
#define CUDART_ZERO_BF16 __ushort_as_bfloat16((unsigned short)0x0000U)
#define CUDART_ONE_BF16 __ushort_as_bfloat16((unsigned short)0x3F80U)
#define CUDART_INF_BF16 __ushort_as_bfloat16((unsigned short)0x7F80U)
#define KM_BOPS(H)                                                                               \
  __host__ __device__ H operator+(const H &, const H &); __host__ __device__ H operator-(const H &, const H &); \
  __host__ __device__ H operator*(const H &, const H &); __host__ __device__ H operator/(const H &, const H &); \
  __host__ __device__ H &operator+=(H &, const H &); __host__ __device__ H &operator-=(H &, const H &);       \
  __host__ __device__ H &operator*=(H &, const H &); __host__ __device__ H &operator/=(H &, const H &);       \
  __host__ __device__ H operator+(const H &); __host__ __device__ H operator-(const H &);                     \
  __host__ __device__ H &operator++(H &); __host__ __device__ H &operator--(H &);                             \
  __host__ __device__ H operator++(H &, int); __host__ __device__ H operator--(H &, int);                     \
  __host__ __device__ bool operator==(const H &, const H &); __host__ __device__ bool operator!=(const H &, const H &); \
  __host__ __device__ bool operator<(const H &, const H &); __host__ __device__ bool operator>(const H &, const H &);   \
  __host__ __device__ bool operator<=(const H &, const H &); __host__ __device__ bool operator>=(const H &, const H &);
extern "C++" {
#if !defined(__CUDA_NO_BFLOAT16_OPERATORS__)
KM_BOPS(__nv_bfloat16)
#endif
#if !defined(__CUDA_NO_BFLOAT162_OPERATORS__)
KM_BOPS(__nv_bfloat162)
#endif
__host__ __device__ __nv_bfloat16 __float2bfloat16(float);
__host__ __device__ __nv_bfloat16 __float2bfloat16_rn(float);
__host__ __device__ __nv_bfloat16 __float2bfloat16_rz(float);
__host__ __device__ __nv_bfloat16 __double2bfloat16(double);
__host__ __device__ float __bfloat162float(__nv_bfloat16);
__host__ __device__ __nv_bfloat162 __float2bfloat162_rn(float);
__host__ __device__ __nv_bfloat162 __floats2bfloat162_rn(float, float);
__host__ __device__ __nv_bfloat162 __float22bfloat162_rn(float2);
__host__ __device__ float2 __bfloat1622float2(__nv_bfloat162);
__host__ __device__ float __low2float(__nv_bfloat162);
__host__ __device__ float __high2float(__nv_bfloat162);
__host__ __device__ __nv_bfloat16 __low2bfloat16(__nv_bfloat162);
__host__ __device__ __nv_bfloat16 __high2bfloat16(__nv_bfloat162);
__host__ __device__ __nv_bfloat162 __halves2bfloat162(__nv_bfloat16, __nv_bfloat16);
__host__ __device__ __nv_bfloat162 __bfloat162bfloat162(__nv_bfloat16);
__host__ __device__ __nv_bfloat162 __lowhigh2highlow(__nv_bfloat162);
__host__ __device__ __nv_bfloat162 make_bfloat162(__nv_bfloat16, __nv_bfloat16);
__host__ __device__ __nv_bfloat16 __int2bfloat16_rn(int); __host__ __device__ __nv_bfloat16 __uint2bfloat16_rn(unsigned);
__host__ __device__ __nv_bfloat16 __short2bfloat16_rn(short); __host__ __device__ __nv_bfloat16 __ll2bfloat16_rn(long long);
__host__ __device__ int __bfloat162int_rn(__nv_bfloat16); __host__ __device__ int __bfloat162int_rz(__nv_bfloat16);
__host__ __device__ unsigned __bfloat162uint_rz(__nv_bfloat16); __host__ __device__ short __bfloat162short_rz(__nv_bfloat16);
__host__ __device__ __nv_bfloat16 __ushort_as_bfloat16(unsigned short);
__host__ __device__ unsigned short __bfloat16_as_ushort(__nv_bfloat16);
__host__ __device__ __nv_bfloat16 __short_as_bfloat16(short);
__host__ __device__ short __bfloat16_as_short(__nv_bfloat16);
#define KM_BBIN(f) __host__ __device__ __nv_bfloat16 f(__nv_bfloat16, __nv_bfloat16);           \
  __host__ __device__ __nv_bfloat162 f##2(__nv_bfloat162, __nv_bfloat162);
KM_BBIN(__hadd) KM_BBIN(__hsub) KM_BBIN(__hmul) KM_BBIN(__hmax) KM_BBIN(__hmin) KM_BBIN(__hadd_sat)
KM_BBIN(__hmul_sat) KM_BBIN(__hmax_nan) KM_BBIN(__hmin_nan) KM_BBIN(__hadd_rn) KM_BBIN(__hmul_rn)
#undef KM_BBIN
__host__ __device__ __nv_bfloat16 __hdiv(__nv_bfloat16, __nv_bfloat16);
__host__ __device__ __nv_bfloat162 __h2div(__nv_bfloat162, __nv_bfloat162);
__host__ __device__ __nv_bfloat16 __hfma(__nv_bfloat16, __nv_bfloat16, __nv_bfloat16);
__host__ __device__ __nv_bfloat162 __hfma2(__nv_bfloat162, __nv_bfloat162, __nv_bfloat162);
__host__ __device__ __nv_bfloat16 __hneg(__nv_bfloat16); __host__ __device__ __nv_bfloat162 __hneg2(__nv_bfloat162);
__host__ __device__ __nv_bfloat16 __habs(__nv_bfloat16); __host__ __device__ __nv_bfloat162 __habs2(__nv_bfloat162);
#define KM_BCMP(s) __host__ __device__ bool __h##s(__nv_bfloat16, __nv_bfloat16);               \
  __host__ __device__ bool __hb##s##2(__nv_bfloat162, __nv_bfloat162);                          \
  __host__ __device__ __nv_bfloat162 __h##s##2(__nv_bfloat162, __nv_bfloat162);
KM_BCMP(eq) KM_BCMP(ne) KM_BCMP(lt) KM_BCMP(le) KM_BCMP(gt) KM_BCMP(ge)
#undef KM_BCMP
__host__ __device__ bool __hisnan(__nv_bfloat16); __host__ __device__ int __hisinf(__nv_bfloat16);
__device__ __nv_bfloat16 hexp(__nv_bfloat16); __device__ __nv_bfloat162 h2exp(__nv_bfloat162);
__device__ __nv_bfloat16 hlog(__nv_bfloat16); __device__ __nv_bfloat162 h2log(__nv_bfloat162);
__device__ __nv_bfloat16 hsqrt(__nv_bfloat16); __device__ __nv_bfloat162 h2sqrt(__nv_bfloat162);
__device__ __nv_bfloat16 hrsqrt(__nv_bfloat16); __device__ __nv_bfloat162 h2rsqrt(__nv_bfloat162);
__device__ __nv_bfloat16 hrcp(__nv_bfloat16); __device__ __nv_bfloat16 hsin(__nv_bfloat16);
__device__ __nv_bfloat16 hcos(__nv_bfloat16); __device__ __nv_bfloat16 htanh(__nv_bfloat16);
__device__ __nv_bfloat16 hfloor(__nv_bfloat16); __device__ __nv_bfloat16 hceil(__nv_bfloat16);
__device__ __nv_bfloat16 htrunc(__nv_bfloat16); __device__ __nv_bfloat16 hrint(__nv_bfloat16);
#define KM_BSHFL(T)                                                                              \
  __device__ T __shfl_sync(unsigned, T, int, int = 32);                                          \
  __device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);                                  \
  __device__ T __shfl_down_sync(unsigned, T, unsigned, int = 32);                                \
  __device__ T __shfl_xor_sync(unsigned, T, int, int = 32);                                      \
  __device__ T __ldg(const T *); __device__ T __ldcg(const T *); __device__ T __ldca(const T *);  \
  __device__ T __ldcs(const T *); __device__ T __ldlu(const T *); __device__ T __ldcv(const T *); \
  __device__ void __stwb(T *, T); __device__ void __stcg(T *, T); __device__ void __stcs(T *, T); \
  __device__ void __stwt(T *, T); __device__ T atomicAdd(T *, T);
KM_BSHFL(__nv_bfloat16) KM_BSHFL(__nv_bfloat162)
#undef KM_BSHFL
}
#undef KM_BOPS
#endif
