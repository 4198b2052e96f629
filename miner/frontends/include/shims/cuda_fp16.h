/* kernel-miner parse shim for cuda_fp16.h: declarations only, for libclang. */
#ifndef KM_CUDA_FP16_H
#define KM_CUDA_FP16_H
struct __half_raw { unsigned short x; };
struct __half2_raw { unsigned short x, y; };
struct __align__(2) __half {
  unsigned short __x;
  __half() = default;
  __host__ __device__ __half(const __half_raw &);
  __host__ __device__ operator __half_raw() const;
#if !defined(__CUDA_NO_HALF_CONVERSIONS__)
  __host__ __device__ __half(float);
  __host__ __device__ __half(double);
  __host__ __device__ __half(int);
  __host__ __device__ __half(unsigned int);
  __host__ __device__ __half(short);
  __host__ __device__ __half(unsigned short);
  __host__ __device__ __half(long long);
  __host__ __device__ __half(unsigned long long);
  __host__ __device__ operator float() const;
  __host__ __device__ explicit operator bool() const;
  __host__ __device__ __half &operator=(float);
#endif
};
struct __align__(4) __half2 {
  __half x, y;
  __half2() = default;
  __host__ __device__ __half2(const __half &, const __half &);
  __host__ __device__ __half2(const __half2_raw &);
  __host__ __device__ operator __half2_raw() const;
};
typedef __half half;
typedef __half2 half2;
typedef __half __nv_half;
typedef __half2 __nv_half2;
typedef __half_raw __nv_half_raw;
typedef __half2_raw __nv_half2_raw;
typedef __half nv_half;
typedef __half2 nv_half2;
#define CUDART_ZERO_FP16 __ushort_as_half((unsigned short)0x0000U)
#define CUDART_ONE_FP16 __ushort_as_half((unsigned short)0x3C00U)
#define CUDART_INF_FP16 __ushort_as_half((unsigned short)0x7C00U)
#define CUDART_MAX_NORMAL_FP16 __ushort_as_half((unsigned short)0x7BFFU)
#define KM_HOPS(H)                                                                               \
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
/* Torch extensions build with __CUDA_NO_HALF_OPERATORS__ and friends: c10::Half's own arithmetic
 * would be ambiguous with these. */
#if !defined(__CUDA_NO_HALF_OPERATORS__)
KM_HOPS(__half)
#endif
#if !defined(__CUDA_NO_HALF2_OPERATORS__)
KM_HOPS(__half2)
#endif
__host__ __device__ __half __float2half(float);
__host__ __device__ __half __float2half_rn(float);
__host__ __device__ __half __float2half_rz(float);
__host__ __device__ __half __float2half_rd(float);
__host__ __device__ __half __float2half_ru(float);
__host__ __device__ __half __double2half(double);
__host__ __device__ float __half2float(__half);
__host__ __device__ __half2 __float2half2_rn(float);
__host__ __device__ __half2 __floats2half2_rn(float, float);
__host__ __device__ __half2 __float22half2_rn(float2);
__host__ __device__ float2 __half22float2(__half2);
__host__ __device__ float __low2float(__half2);
__host__ __device__ float __high2float(__half2);
__host__ __device__ __half __low2half(__half2);
__host__ __device__ __half __high2half(__half2);
__host__ __device__ __half2 __halves2half2(__half, __half);
__host__ __device__ __half2 __half2half2(__half);
__host__ __device__ __half2 __lowhigh2highlow(__half2);
__host__ __device__ __half2 __low2half2(__half2);
__host__ __device__ __half2 __high2half2(__half2);
__host__ __device__ __half2 __lows2half2(__half2, __half2);
__host__ __device__ __half2 __highs2half2(__half2, __half2);
__host__ __device__ __half2 make_half2(__half, __half);
__host__ __device__ __half __int2half_rn(int); __host__ __device__ __half __int2half_rz(int);
__host__ __device__ __half __uint2half_rn(unsigned); __host__ __device__ __half __short2half_rn(short);
__host__ __device__ __half __ushort2half_rn(unsigned short); __host__ __device__ __half __ll2half_rn(long long);
__host__ __device__ __half __ull2half_rn(unsigned long long);
__host__ __device__ int __half2int_rn(__half); __host__ __device__ int __half2int_rz(__half);
__host__ __device__ int __half2int_rd(__half); __host__ __device__ int __half2int_ru(__half);
__host__ __device__ unsigned __half2uint_rn(__half); __host__ __device__ unsigned __half2uint_rz(__half);
__host__ __device__ short __half2short_rn(__half); __host__ __device__ short __half2short_rz(__half);
__host__ __device__ unsigned short __half2ushort_rz(__half); __host__ __device__ long long __half2ll_rz(__half);
__host__ __device__ __half __ushort_as_half(unsigned short); __host__ __device__ unsigned short __half_as_ushort(__half);
__host__ __device__ __half __short_as_half(short); __host__ __device__ short __half_as_short(__half);
#define KM_HBIN(f) __host__ __device__ __half f(__half, __half); __host__ __device__ __half2 f##2(__half2, __half2);
KM_HBIN(__hadd) KM_HBIN(__hsub) KM_HBIN(__hmul) KM_HBIN(__hmax) KM_HBIN(__hmin) KM_HBIN(__hadd_sat)
KM_HBIN(__hsub_sat) KM_HBIN(__hmul_sat) KM_HBIN(__hmax_nan) KM_HBIN(__hmin_nan) KM_HBIN(__hadd_rn)
KM_HBIN(__hmul_rn)
#undef KM_HBIN
__host__ __device__ __half __hdiv(__half, __half); __host__ __device__ __half2 __h2div(__half2, __half2);
__host__ __device__ __half __hfma(__half, __half, __half); __host__ __device__ __half2 __hfma2(__half2, __half2, __half2);
__host__ __device__ __half __hfma_sat(__half, __half, __half); __host__ __device__ __half2 __hfma2_sat(__half2, __half2, __half2);
__host__ __device__ __half __hneg(__half); __host__ __device__ __half2 __hneg2(__half2);
__host__ __device__ __half __habs(__half); __host__ __device__ __half2 __habs2(__half2);
/* __heq(a, b) and __hbeq2(a2, b2) answer bool; __heq2 answers a __half2 of 0/1. */
#define KM_HCMP(s) __host__ __device__ bool __h##s(__half, __half);                             \
  __host__ __device__ bool __hb##s##2(__half2, __half2); __host__ __device__ __half2 __h##s##2(__half2, __half2);
KM_HCMP(eq) KM_HCMP(ne) KM_HCMP(lt) KM_HCMP(le) KM_HCMP(gt) KM_HCMP(ge) KM_HCMP(equ) KM_HCMP(neu)
KM_HCMP(ltu) KM_HCMP(leu) KM_HCMP(gtu) KM_HCMP(geu)
#undef KM_HCMP
__host__ __device__ bool __hisnan(__half); __host__ __device__ __half2 __hisnan2(__half2); __host__ __device__ int __hisinf(__half);
#define KM_HMATH(f) __device__ __half f(__half); __device__ __half2 h2##f(__half2);
__device__ __half hexp(__half); __device__ __half2 h2exp(__half2); __device__ __half hexp2(__half); __device__ __half2 h2exp2(__half2);
__device__ __half hexp10(__half); __device__ __half2 h2exp10(__half2);
__device__ __half hlog(__half); __device__ __half2 h2log(__half2); __device__ __half hlog2(__half); __device__ __half2 h2log2(__half2);
__device__ __half hlog10(__half); __device__ __half2 h2log10(__half2);
__device__ __half hsqrt(__half); __device__ __half2 h2sqrt(__half2); __device__ __half hrsqrt(__half); __device__ __half2 h2rsqrt(__half2);
__device__ __half hrcp(__half); __device__ __half2 h2rcp(__half2); __device__ __half hsin(__half); __device__ __half2 h2sin(__half2);
__device__ __half hcos(__half); __device__ __half2 h2cos(__half2); __device__ __half htanh(__half); __device__ __half2 h2tanh(__half2);
__device__ __half hfloor(__half); __device__ __half2 h2floor(__half2); __device__ __half hceil(__half); __device__ __half2 h2ceil(__half2);
__device__ __half htrunc(__half); __device__ __half2 h2trunc(__half2); __device__ __half hrint(__half); __device__ __half2 h2rint(__half2);
#undef KM_HMATH
#define KM_HSHFL(T)                                                                              \
  __device__ T __shfl_sync(unsigned, T, int, int = 32);                                          \
  __device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);                                  \
  __device__ T __shfl_down_sync(unsigned, T, unsigned, int = 32);                                \
  __device__ T __shfl_xor_sync(unsigned, T, int, int = 32);                                      \
  __device__ T __ldg(const T *); __device__ T __ldcg(const T *); __device__ T __ldca(const T *);  \
  __device__ T __ldcs(const T *); __device__ T __ldlu(const T *); __device__ T __ldcv(const T *); \
  __device__ void __stwb(T *, T); __device__ void __stcg(T *, T); __device__ void __stcs(T *, T); \
  __device__ void __stwt(T *, T); __device__ T atomicAdd(T *, T);
KM_HSHFL(__half) KM_HSHFL(__half2)
#undef KM_HSHFL
}
#undef KM_HOPS
#endif
