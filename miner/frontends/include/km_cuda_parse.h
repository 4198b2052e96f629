/* kernel-miner parse stub: force-included when libclang parses CUDA sources.
 *
 * Parsing against the real CUDA toolkit costs ~1 s per file and needs the toolkit on the
 * machine; this stub declares just enough for the AST to be precise about kernels, device
 * functions and launches. Anything declared here is treated as a CUDA built-in by the closure,
 * so a repo's own overload of a built-in (declared in the repo) is still seen as repo code.
 * It is never part of a unit that nvcc compiles.
 */
#ifndef KM_CUDA_PARSE_H
#define KM_CUDA_PARSE_H

#define __KM_PARSE_STUB__ 1
#define __CUDACC__ 1
#define __NVCC__ 1
#define __CUDACC_VER_MAJOR__ 12
#define __CUDACC_VER_MINOR__ 4
#define CUDA_VERSION 12040
#define CUDART_VERSION 12040

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __grid_constant__
#define __forceinline__ __inline__ __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
#define __device_builtin__
#define __builtin_align__(n) __attribute__((aligned(n)))
#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_INF __builtin_huge_val()
#define CUDART_NAN_F __builtin_nanf("")

typedef unsigned long size_t;
typedef long ptrdiff_t;

struct uint3 { unsigned int x, y, z; };
struct dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};

#define KM_VEC2(T, N) struct N##2 { T x, y; };
#define KM_VEC3(T, N) struct N##3 { T x, y, z; };
#define KM_VEC4(T, N) struct N##4 { T x, y, z, w; };
#define KM_VECS(T, N) KM_VEC2(T, N) KM_VEC4(T, N)
KM_VECS(float, float) KM_VEC3(float, float) KM_VECS(double, double) KM_VEC3(double, double)
KM_VECS(int, int) KM_VEC3(int, int) KM_VECS(unsigned int, uint) KM_VECS(char, char)
KM_VECS(unsigned char, uchar) KM_VECS(short, short) KM_VECS(unsigned short, ushort)
KM_VECS(long, long) KM_VECS(long long, longlong) KM_VECS(unsigned long long, ulonglong)
struct char1 { char x; }; struct uchar1 { unsigned char x; }; struct int1 { int x; };
struct float1 { float x; };
#undef KM_VEC2
#undef KM_VEC3
#undef KM_VEC4
#undef KM_VECS

extern const __device__ uint3 threadIdx;
extern const __device__ uint3 blockIdx;
extern const __device__ dim3 blockDim;
extern const __device__ dim3 gridDim;
extern const __device__ int warpSize;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef enum cudaError { cudaSuccess = 0, cudaErrorInvalidValue = 1 } cudaError_t;
typedef cudaError_t CUresult;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                      cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
struct cudaDeviceProp { int multiProcessorCount; int maxThreadsPerBlock; size_t sharedMemPerBlock; int major; int minor; int warpSize; };
struct cudaLaunchConfig_t { dim3 gridDim; dim3 blockDim; size_t dynamicSmemBytes; cudaStream_t stream; void *attrs; unsigned int numAttrs; };
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8 };

/* The hook clang calls for every `<<<...>>>`: launches are CALL_EXPRs with a child call to it. */
extern "C" unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem = 0,
                                                cudaStream_t stream = 0);
extern "C" cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                                        size_t sharedMem, cudaStream_t stream);
extern "C" cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                                   void **args, size_t sharedMem, cudaStream_t stream);
template <typename... A>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *config, void (*kernel)(A...), A... args);
template <class T>
cudaError_t cudaLaunchKernel(T *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem = 0,
                             cudaStream_t stream = 0);
template <class T>
cudaError_t cudaFuncSetAttribute(T *entry, cudaFuncAttribute attr, int value);
template <class T>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, T func, int blockSize,
                                                          size_t dynamicSMemSize);
extern "C" {
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t error);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemset(void *devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp *prop, int device);
cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset,
                               cudaMemcpyKind kind);
}
template <class T>
cudaError_t cudaMalloc(T **devPtr, size_t size);

/* Device built-ins that kernels call; declared so calls resolve to the stub, not to the repo. */
extern "C" {
__device__ void __syncthreads(void);
__device__ int __syncthreads_count(int);
__device__ int __syncthreads_and(int);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned mask = 0xffffffff);
__device__ void __threadfence(void);
__device__ void __threadfence_block(void);
__device__ void __trap(void);
__device__ void __nanosleep(unsigned);
__device__ long long clock64(void);
__device__ int clock(void);
__device__ int __popc(unsigned);
__device__ int __popcll(unsigned long long);
__device__ int __clz(int);
__device__ int __ffs(int);
__device__ int __ffsll(long long);
__device__ unsigned __brev(unsigned);
__device__ float __expf(float);
__device__ float __logf(float);
__device__ float __fdividef(float, float);
__device__ float __frcp_rn(float);
__device__ float __saturatef(float);
__device__ int __float2int_rn(float);
__device__ int __float2int_rz(float);
__device__ int __float_as_int(float);
__device__ float __int_as_float(int);
__device__ unsigned __float_as_uint(float);
__device__ float __uint_as_float(unsigned);
__device__ unsigned __activemask(void);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ int __any_sync(unsigned, int);
__device__ int __all_sync(unsigned, int);
__device__ int printf(const char *, ...);
__device__ void *memset(void *, int, size_t);
__device__ void *memcpy(void *, const void *, size_t);
__device__ void __assertfail(const char *, const char *, unsigned, const char *, size_t);
}
#define KM_SHFL(T)                                                                               \
  __device__ T __shfl_sync(unsigned, T, int, int = 32);                                          \
  __device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);                                  \
  __device__ T __shfl_down_sync(unsigned, T, unsigned, int = 32);                                \
  __device__ T __shfl_xor_sync(unsigned, T, int, int = 32);                                      \
  __device__ T __shfl(T, int, int = 32);                                                         \
  __device__ T __shfl_down(T, unsigned, int = 32);                                               \
  __device__ T __shfl_xor(T, int, int = 32);                                                     \
  __device__ T __ldg(const T *);                                                                 \
  __device__ T atomicAdd(T *, T);                                                                \
  __device__ T atomicExch(T *, T);
KM_SHFL(int) KM_SHFL(unsigned) KM_SHFL(float) KM_SHFL(double) KM_SHFL(long long)
KM_SHFL(unsigned long long)
#undef KM_SHFL
#define KM_ATOMIC(T)                                                                             \
  __device__ T atomicSub(T *, T);                                                                \
  __device__ T atomicMax(T *, T);                                                                \
  __device__ T atomicMin(T *, T);                                                                \
  __device__ T atomicAnd(T *, T);                                                                \
  __device__ T atomicOr(T *, T);                                                                 \
  __device__ T atomicXor(T *, T);                                                                \
  __device__ T atomicCAS(T *, T, T);                                                             \
  __device__ T atomicInc(T *, T);                                                                \
  __device__ T atomicDec(T *, T);
KM_ATOMIC(int) KM_ATOMIC(unsigned) KM_ATOMIC(unsigned long long) KM_ATOMIC(long long)
#undef KM_ATOMIC

/* Math: the C library functions kernels call, host and device. */
#define KM_MATH1(f)                                                                              \
  __host__ __device__ float f##f(float);                                                         \
  __host__ __device__ double f(double);                                                          \
  __host__ __device__ float f(float);
extern "C++" {
KM_MATH1(sqrt) KM_MATH1(rsqrt) KM_MATH1(exp) KM_MATH1(exp2) KM_MATH1(expm1) KM_MATH1(log)
KM_MATH1(log2) KM_MATH1(log10) KM_MATH1(log1p) KM_MATH1(sin) KM_MATH1(cos) KM_MATH1(tan)
KM_MATH1(asin) KM_MATH1(acos) KM_MATH1(atan) KM_MATH1(sinh) KM_MATH1(cosh) KM_MATH1(tanh)
KM_MATH1(floor) KM_MATH1(ceil) KM_MATH1(round) KM_MATH1(trunc) KM_MATH1(fabs) KM_MATH1(erf)
KM_MATH1(erfc) KM_MATH1(cbrt) KM_MATH1(rint) KM_MATH1(lrint) KM_MATH1(lround)
__host__ __device__ float powf(float, float);
__host__ __device__ double pow(double, double);
__host__ __device__ float pow(float, float);
__host__ __device__ float atan2f(float, float);
__host__ __device__ double atan2(double, double);
__host__ __device__ float atan2(float, float);
__host__ __device__ float fmaxf(float, float);
__host__ __device__ float fminf(float, float);
__host__ __device__ double fmax(double, double);
__host__ __device__ double fmin(double, double);
__host__ __device__ float fmodf(float, float);
__host__ __device__ double fmod(double, double);
__host__ __device__ float fmaf(float, float, float);
__host__ __device__ double fma(double, double, double);
__host__ __device__ float copysignf(float, float);
__host__ __device__ void sincosf(float, float *, float *);
__host__ __device__ int isnan(double);
__host__ __device__ int isinf(double);
__host__ __device__ int isfinite(double);
__host__ __device__ int abs(int);
__host__ __device__ long long llabs(long long);
__host__ __device__ int min(int, int);
__host__ __device__ int max(int, int);
__host__ __device__ unsigned min(unsigned, unsigned);
__host__ __device__ unsigned max(unsigned, unsigned);
__host__ __device__ long long min(long long, long long);
__host__ __device__ long long max(long long, long long);
__host__ __device__ float min(float, float);
__host__ __device__ float max(float, float);
__host__ __device__ double min(double, double);
__host__ __device__ double max(double, double);
}
#undef KM_MATH1

#endif /* KM_CUDA_PARSE_H */
