/* kernel-miner parse stub: force-included when libclang parses CUDA sources.
 *
 * Parsing against the real CUDA toolkit costs ~1 s per file and needs the toolkit on the
 * machine; this stub declares just enough for the AST to be precise about kernels, device
 * functions and launches. Anything declared here is treated as a CUDA built-in by the closure,
 * so a repo's own overload of a built-in (declared in the repo) is still seen as repo code.
 * It is never part of a unit that nvcc compiles.
 *
 * nvcc's cuda_runtime.h brings <math.h>, <cmath>, <stdlib.h>, <cstdlib>, <stdio.h>, <string.h>,
 * <time.h>, <assert.h> and <new> into every .cu file, and real code relies on it (expf, int64_t,
 * printf, assert without an #include). They are included here the same way, marked __host__
 * __device__ as CUDA's headers mark them, so host and device code both resolve the C library.
 */
#ifndef KM_CUDA_PARSE_H
#define KM_CUDA_PARSE_H

#define __KM_PARSE_STUB__ 1
/* nvcc's host compiler is GCC; clang says __GNUC__ 4 for compatibility, and code that tests it
 * (`#if __GNUC__ < 6` turning a whole op off) would hide its host code, launches included. Not 11
 * or later: glibc then uses GCC-only attribute forms (`__malloc__(dealloc)`). */
#if defined(__clang__) && __GNUC__ < 9
#undef __GNUC__
#undef __GNUC_MINOR__
#undef __GNUC_PATCHLEVEL__
#define __GNUC__ 10
#define __GNUC_MINOR__ 5
#define __GNUC_PATCHLEVEL__ 0
#endif
#define __CUDACC__ 1
#define __NVCC__ 1
/* The installed toolkit's versions come as -D (frontends/config.toolkit_versions); these stand without nvcc. */
#ifndef __CUDACC_VER_MAJOR__
#define __CUDACC_VER_MAJOR__ 12
#define __CUDACC_VER_MINOR__ 4
#endif
#define __CUDACC_VER_BUILD__ 0
#ifndef CUDA_VERSION
#define CUDA_VERSION 12040
#endif
#ifndef CUDART_VERSION
#define CUDART_VERSION 12040
#endif
#ifndef __CUDA_API_VERSION
#define __CUDA_API_VERSION 12040
#endif

#define __host__ __attribute__((host))
#define __device__ __attribute__((device))
#define __global__ __attribute__((global))
#define __shared__ __attribute__((shared))
#define __constant__ __attribute__((constant))
#define __managed__ __attribute__((managed))
#define __launch_bounds__(...) __attribute__((launch_bounds(__VA_ARGS__)))
#define __grid_constant__
#define __forceinline__ __inline__ __attribute__((always_inline))
/* __noinline__ is a keyword of clang's CUDA mode: a macro would break libstdc++'s
 * __attribute__((__noinline__)). */
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
#define __device_builtin__
#define __builtin_align__(n) __attribute__((aligned(n)))
#define __cudart_builtin__
#define __CUDA_ALIGN__(n) __attribute__((aligned(n)))
#define CUDARTAPI
#define CUDART_CB
#define __CUDA_DEPRECATED
/* CCCL's execution-space and inlining macros (cuda/std/__cccl/execution_space.h, visibility.h), which code
 * written against modern Thrust/CUB spells instead of __device__ (`static _CCCL_DEVICE __forceinline__ T
 * Add(...)`): without them such members parse as host code that names an unknown type, and are left out. */
#ifndef _CCCL_DEVICE
#define _CCCL_HOST __host__
#define _CCCL_DEVICE __device__
#define _CCCL_HOST_DEVICE __host__ __device__
#define _CCCL_FORCEINLINE __forceinline__
#endif

/* The C library as device code sees it. The C headers themselves are left to the files that include
 * them (torch's shim brings the STL): with glibc's and libstdc++'s macros a translation unit holds
 * ~8000 more top-level cursors, which every AST walk pays for. What is declared here is compatible
 * with those headers when they come later: the same typedefs, the same macro definitions, and
 * __device__ functions beside the host ones (a target overload, not a redeclaration). */
#if __has_include(<stddef.h>)
#include <stddef.h>
#else
typedef unsigned long size_t;
typedef long ptrdiff_t;
#define NULL 0
#endif
typedef signed char int8_t;
typedef short int int16_t;
typedef int int32_t;
typedef long int int64_t;
typedef unsigned char uint8_t;
typedef unsigned short int uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long int uint64_t;
typedef long int intptr_t;
typedef unsigned long int uintptr_t;
typedef long int clock_t;
#ifndef assert
#define assert(e) ((void)(e))
#endif
#define INFINITY (__builtin_inff ())
#define NAN (__builtin_nanf (""))
#define HUGE_VALF (__builtin_huge_valf ())
#define HUGE_VAL (__builtin_huge_val ())
#define M_PI 3.14159265358979323846
#define M_PI_2 1.57079632679489661923
#define M_PI_4 0.78539816339744830962
#define M_E 2.7182818284590452354
#define M_LN2 0.69314718055994530942
#define M_SQRT2 1.41421356237309504880
#define M_SQRT1_2 0.70710678118654752440
#define M_2_SQRTPI 1.12837916709551257390
#define isnan(x) __builtin_isnan (x)
#define isinf(x) __builtin_isinf_sign (x)
#define isfinite(x) __builtin_isfinite (x)
#define signbit(x) __builtin_signbit (x)
/* Device-side C library, as clang's own CUDA headers declare it: __device__ overloads beside the
 * host declarations (same signatures may differ by target), so each side resolves its own. */
#define KM_DMATH1(F)                                                                             \
  extern "C" __device__ double F(double);                                                        \
  extern "C" __device__ float F##f(float);                                                       \
  __device__ float F(float);
#define KM_DMATH2(F)                                                                             \
  extern "C" __device__ double F(double, double);                                                \
  extern "C" __device__ float F##f(float, float);                                                \
  __device__ float F(float, float);
KM_DMATH1(acos) KM_DMATH1(acosh) KM_DMATH1(asin) KM_DMATH1(asinh) KM_DMATH1(atan) KM_DMATH1(atanh)
KM_DMATH1(cbrt) KM_DMATH1(ceil) KM_DMATH1(cos) KM_DMATH1(cosh) KM_DMATH1(erf) KM_DMATH1(erfc)
KM_DMATH1(exp) KM_DMATH1(exp2) KM_DMATH1(expm1) KM_DMATH1(fabs) KM_DMATH1(floor) KM_DMATH1(lgamma)
KM_DMATH1(log) KM_DMATH1(log10) KM_DMATH1(log1p) KM_DMATH1(log2) KM_DMATH1(logb) KM_DMATH1(nearbyint)
KM_DMATH1(rint) KM_DMATH1(round) KM_DMATH1(sin) KM_DMATH1(sinh) KM_DMATH1(sqrt) KM_DMATH1(tan)
KM_DMATH1(tanh) KM_DMATH1(tgamma) KM_DMATH1(trunc)
KM_DMATH2(atan2) KM_DMATH2(copysign) KM_DMATH2(fdim) KM_DMATH2(fmax) KM_DMATH2(fmin) KM_DMATH2(fmod)
KM_DMATH2(hypot) KM_DMATH2(nextafter) KM_DMATH2(pow) KM_DMATH2(remainder)
#undef KM_DMATH1
#undef KM_DMATH2
extern "C" {
__device__ double fma(double, double, double);
__device__ float fmaf(float, float, float);
__device__ double frexp(double, int *);
__device__ float frexpf(float, int *);
__device__ double ldexp(double, int);
__device__ float ldexpf(float, int);
__device__ double modf(double, double *);
__device__ float modff(float, float *);
__device__ double scalbn(double, int);
__device__ float scalbnf(float, int);
__device__ int ilogb(double);
__device__ int ilogbf(float);
__device__ long lrint(double);
__device__ long lrintf(float);
__device__ long lround(double);
__device__ long lroundf(float);
__device__ long long llrint(double);
__device__ long long llrintf(float);
__device__ long long llround(double);
__device__ long long llroundf(float);
__device__ double nan(const char *);
__device__ float nanf(const char *);
__device__ void sincos(double, double *, double *);
__device__ void sincosf(float, float *, float *);
__device__ double exp10(double);
__device__ float exp10f(float);
__device__ int abs(int);
__device__ long labs(long);
__device__ long long llabs(long long);
__device__ int printf(const char *, ...);
__device__ void *memset(void *, int, size_t);
__device__ void *memcpy(void *, const void *, size_t);
__device__ void *malloc(size_t);
__device__ void free(void *);
__device__ clock_t clock(void);
__device__ void __assert_fail(const char *, const char *, unsigned int, const char *);
}
__device__ float fma(float, float, float);
__device__ float pow(float, int);
__device__ double pow(double, int);
__device__ float ldexp(float, int);
__device__ float frexp(float, int *);
__device__ long abs(long);
__device__ long long abs(long long);
__device__ float abs(float);
__device__ double abs(double);
/* isnan, isinf, isfinite and signbit stay the C library's macros (builtins, fine on both sides)
 * until <cmath> replaces them. */

/* ---- vector types (vector_types.h) and their make_* functions (vector_functions.h) ---- */
#define KM_VEC1(T, N) struct __device_builtin__ N##1 { T x; };
#define KM_VEC2(T, N, A) struct __device_builtin__ __align__(A) N##2 { T x, y; };
#define KM_VEC3(T, N) struct __device_builtin__ N##3 { T x, y, z; };
#define KM_VEC4(T, N, A) struct __device_builtin__ __align__(A) N##4 { T x, y, z, w; };
#define KM_MAKE(T, N)                                                                            \
  static __inline__ __host__ __device__ N##1 make_##N##1(T x) { N##1 r; r.x = x; return r; }        \
  static __inline__ __host__ __device__ N##2 make_##N##2(T x, T y) { N##2 r; r.x = x; r.y = y; return r; } \
  static __inline__ __host__ __device__ N##3 make_##N##3(T x, T y, T z) {                        \
    N##3 r; r.x = x; r.y = y; r.z = z; return r; }                                               \
  static __inline__ __host__ __device__ N##4 make_##N##4(T x, T y, T z, T w) {                   \
    N##4 r; r.x = x; r.y = y; r.z = z; r.w = w; return r; }
#define KM_VECS(T, N, S)                                                                         \
  KM_VEC1(T, N) KM_VEC2(T, N, 2 * S) KM_VEC3(T, N) KM_VEC4(T, N, 4 * S) KM_MAKE(T, N)
KM_VECS(signed char, char, 1) KM_VECS(unsigned char, uchar, 1)
KM_VECS(short, short, 2) KM_VECS(unsigned short, ushort, 2)
KM_VECS(int, int, 4) KM_VECS(unsigned int, uint, 4)
KM_VECS(long, long, 8) KM_VECS(unsigned long, ulong, 8)
KM_VECS(float, float, 4)
/* 8-byte element types align their 4-vectors to 16 bytes, like CUDA's. */
KM_VEC1(long long, longlong) KM_VEC2(long long, longlong, 16) KM_VEC3(long long, longlong)
KM_VEC4(long long, longlong, 16) KM_MAKE(long long, longlong)
KM_VEC1(unsigned long long, ulonglong) KM_VEC2(unsigned long long, ulonglong, 16)
KM_VEC3(unsigned long long, ulonglong) KM_VEC4(unsigned long long, ulonglong, 16)
KM_MAKE(unsigned long long, ulonglong)
KM_VEC1(double, double) KM_VEC2(double, double, 16) KM_VEC3(double, double)
KM_VEC4(double, double, 16) KM_MAKE(double, double)
#undef KM_VEC1
#undef KM_VEC2
#undef KM_VEC3
#undef KM_VEC4
#undef KM_MAKE
#undef KM_VECS

struct __device_builtin__ dim3 {
  unsigned int x, y, z;
  __host__ __device__ constexpr dim3(unsigned int vx = 1, unsigned int vy = 1, unsigned int vz = 1)
      : x(vx), y(vy), z(vz) {}
  __host__ __device__ constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  __host__ __device__ constexpr operator uint3() const { return uint3{x, y, z}; }
};

extern const __device__ uint3 threadIdx;
extern const __device__ uint3 blockIdx;
extern const __device__ dim3 blockDim;
extern const __device__ dim3 gridDim;
extern const __device__ int warpSize;

/* ---- runtime types (driver_types.h) ---- */
typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;
typedef struct CUfunc_st *cudaFunction_t;
typedef struct cudaArray *cudaArray_t;
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;
/* texture_types.h's modes (still in CUDA 13): a legacy texture reference names them in its template arguments. */
enum cudaTextureAddressMode { cudaAddressModeWrap, cudaAddressModeClamp, cudaAddressModeMirror, cudaAddressModeBorder };
enum cudaTextureFilterMode { cudaFilterModePoint, cudaFilterModeLinear };
enum cudaTextureReadMode { cudaReadModeElementType, cudaReadModeNormalizedFloat };
typedef enum cudaError {
  cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
  cudaErrorInitializationError = 3, cudaErrorCudartUnloading = 4, cudaErrorInvalidConfiguration = 9,
  cudaErrorInvalidPitchValue = 12, cudaErrorInvalidSymbol = 13, cudaErrorInvalidDevicePointer = 17,
  cudaErrorInvalidMemcpyDirection = 21, cudaErrorInvalidDeviceFunction = 98, cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101, cudaErrorNoKernelImageForDevice = 209, cudaErrorInvalidSource = 300,
  cudaErrorInvalidResourceHandle = 400, cudaErrorNotReady = 600, cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701, cudaErrorLaunchTimeout = 702,
  cudaErrorPeerAccessAlreadyEnabled = 704, cudaErrorPeerAccessNotEnabled = 705,
  cudaErrorAssert = 710, cudaErrorLaunchFailure = 719, cudaErrorCooperativeLaunchTooLarge = 720,
  cudaErrorNotSupported = 801, cudaErrorUnknown = 999
} cudaError_t;
/* The driver API's result type, where the toolkit's own cuda.h is not at hand (shims/cuda.h includes it when
 * it is, and nvcc, too, declares CUresult only for code that includes <cuda.h>). */
#ifndef KM_TOOLKIT_CUDA_H
typedef enum cudaError_enum { CUDA_SUCCESS = 0, CUDA_ERROR_INVALID_VALUE = 1 } CUresult;
#endif
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef unsigned long long CUdeviceptr;
enum cudaMemcpyKind { cudaMemcpyHostToHost, cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost,
                      cudaMemcpyDeviceToDevice, cudaMemcpyDefault };
enum cudaFuncCache { cudaFuncCachePreferNone, cudaFuncCachePreferShared, cudaFuncCachePreferL1,
                     cudaFuncCachePreferEqual };
enum cudaSharedMemConfig { cudaSharedMemBankSizeDefault, cudaSharedMemBankSizeFourByte,
                           cudaSharedMemBankSizeEightByte };
enum cudaLimit { cudaLimitStackSize, cudaLimitPrintfFifoSize, cudaLimitMallocHeapSize,
                 cudaLimitDevRuntimeSyncDepth, cudaLimitDevRuntimePendingLaunchCount,
                 cudaLimitMaxL2FetchGranularity, cudaLimitPersistingL2CacheSize };
enum cudaMemoryAdvise { cudaMemAdviseSetReadMostly = 1, cudaMemAdviseUnsetReadMostly,
                        cudaMemAdviseSetPreferredLocation, cudaMemAdviseUnsetPreferredLocation,
                        cudaMemAdviseSetAccessedBy, cudaMemAdviseUnsetAccessedBy };
enum cudaMemoryType { cudaMemoryTypeUnregistered, cudaMemoryTypeHost, cudaMemoryTypeDevice,
                      cudaMemoryTypeManaged };
enum cudaDeviceAttr {
  cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxBlockDimX = 2, cudaDevAttrMaxGridDimX = 5,
  cudaDevAttrMaxSharedMemoryPerBlock = 8, cudaDevAttrWarpSize = 10, cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrComputeCapabilityMajor = 75, cudaDevAttrComputeCapabilityMinor = 76,
  cudaDevAttrMaxThreadsPerMultiProcessor = 39, cudaDevAttrL2CacheSize = 38,
  cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
  cudaDevAttrMaxRegistersPerBlock = 12, cudaDevAttrClockRate = 13, cudaDevAttrCooperativeLaunch = 95
};
enum cudaFuncAttribute { cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
                         cudaFuncAttributePreferredSharedMemoryCarveout = 9,
                         cudaFuncAttributeRequiredClusterWidth = 11, cudaFuncAttributeNonPortableClusterSizeAllowed = 16 };
enum cudaLaunchAttributeID { cudaLaunchAttributeIgnore = 0, cudaLaunchAttributeAccessPolicyWindow = 1,
                             cudaLaunchAttributeCooperative = 2, cudaLaunchAttributeClusterDimension = 4,
                             cudaLaunchAttributeProgrammaticStreamSerialization = 6 };
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal,
                             cudaStreamCaptureModeRelaxed };
enum cudaDataType_t { CUDA_R_16F = 2, CUDA_C_16F = 6, CUDA_R_16BF = 14, CUDA_C_16BF = 15, CUDA_R_32F = 0,
                      CUDA_C_32F = 4, CUDA_R_64F = 1, CUDA_C_64F = 5, CUDA_R_8I = 3, CUDA_R_8U = 8,
                      CUDA_R_32I = 10, CUDA_R_8F_E4M3 = 28, CUDA_R_8F_E5M2 = 29 };
typedef enum cudaDataType_t cudaDataType;
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaMemAttachGlobal 0x01
#define cudaCpuDeviceId ((int)-1)
#define cudaInvalidDeviceId ((int)-2)
struct cudaDeviceProp {
  char name[256]; size_t totalGlobalMem; size_t sharedMemPerBlock; int regsPerBlock; int warpSize;
  size_t memPitch; int maxThreadsPerBlock; int maxThreadsDim[3]; int maxGridSize[3]; int clockRate;
  size_t totalConstMem; int major; int minor; size_t textureAlignment; int deviceOverlap;
  int multiProcessorCount; int kernelExecTimeoutEnabled; int integrated; int canMapHostMemory;
  int computeMode; int concurrentKernels; int ECCEnabled; int pciBusID; int pciDeviceID;
  int memoryClockRate; int memoryBusWidth; int l2CacheSize; int persistingL2CacheMaxSize;
  int maxThreadsPerMultiProcessor; int streamPrioritiesSupported; size_t sharedMemPerMultiprocessor;
  int regsPerMultiprocessor; int managedMemory; int isMultiGpuBoard; int cooperativeLaunch;
  size_t sharedMemPerBlockOptin; int maxBlocksPerMultiProcessor; int accessPolicyMaxWindowSize;
};
struct cudaFuncAttributes {
  size_t sharedSizeBytes; size_t constSizeBytes; size_t localSizeBytes; int maxThreadsPerBlock;
  int numRegs; int ptxVersion; int binaryVersion; int cacheModeCA; int maxDynamicSharedSizeBytes;
  int preferredShmemCarveout;
};
struct cudaPointerAttributes { enum cudaMemoryType type; int device; void *devicePointer; void *hostPointer; };
union cudaLaunchAttributeValue { dim3 clusterDim; int cooperative; int programmaticStreamSerializationAllowed;
  struct { unsigned x, y, z; } clusterDimStruct; };
struct cudaLaunchAttribute { enum cudaLaunchAttributeID id; char pad[4]; union cudaLaunchAttributeValue val; };
typedef struct cudaLaunchAttribute cudaLaunchAttribute;
struct cudaLaunchConfig_t { dim3 gridDim; dim3 blockDim; size_t dynamicSmemBytes; cudaStream_t stream;
  cudaLaunchAttribute *attrs; unsigned int numAttrs; };
typedef struct cudaLaunchConfig_t cudaLaunchConfig_t;
typedef void (*cudaHostFn_t)(void *userData);
typedef void (*cudaStreamCallback_t)(cudaStream_t stream, cudaError_t status, void *userData);
struct cudaMemcpy3DParms;
struct cudaExtent { size_t width, height, depth; };
struct cudaChannelFormatDesc { int x, y, z, w; int f; };

/* ---- runtime API ---- */
/* The hook clang calls for every `<<<...>>>`: launches are CALL_EXPRs with a child call to it. */
extern "C" unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem = 0,
                                                cudaStream_t stream = 0);
extern "C" {
cudaError_t cudaLaunchKernel(const void *func, dim3 gridDim, dim3 blockDim, void **args,
                             size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 gridDim, dim3 blockDim,
                                        void **args, size_t sharedMem, cudaStream_t stream);
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
const char *cudaGetErrorString(cudaError_t error);
const char *cudaGetErrorName(cudaError_t error);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t value);
cudaError_t cudaDeviceGetLimit(size_t *value, enum cudaLimit limit);
cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache config);
cudaError_t cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig config);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice);
cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaDriverGetVersion(int *driverVersion);
cudaError_t cudaRuntimeGetVersion(int *runtimeVersion);
cudaError_t cudaMalloc(void **devPtr, size_t size);
cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream);
cudaError_t cudaMallocHost(void **ptr, size_t size);
cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags);
cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height);
cudaError_t cudaFree(void *devPtr);
cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream);
cudaError_t cudaFreeHost(void *ptr);
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void *ptr);
cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
cudaError_t cudaMemAdvise(const void *devPtr, size_t count, enum cudaMemoryAdvise advice, int device);
cudaError_t cudaMemPrefetchAsync(const void *devPtr, size_t count, int dstDevice, cudaStream_t stream);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream);
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                         size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                              size_t height, enum cudaMemcpyKind kind, cudaStream_t stream);
cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count);
cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice, size_t count,
                                cudaStream_t stream);
cudaError_t cudaMemset(void *devPtr, int value, size_t count);
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream);
cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height);
cudaError_t cudaStreamCreate(cudaStream_t *pStream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags = 0);
cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback, void *userData,
                                  unsigned int flags);
cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph);
cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t graphExec);
cudaError_t cudaEventCreate(cudaEvent_t *event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t count, size_t offset = 0,
                               enum cudaMemcpyKind kind = cudaMemcpyHostToDevice);
cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t count, size_t offset = 0,
                                    enum cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t stream = 0);
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t count, size_t offset = 0,
                                 enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost);
cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t count, size_t offset = 0,
                                      enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost, cudaStream_t stream = 0);
cudaError_t cudaGetSymbolAddress(void **devPtr, const void *symbol);
cudaError_t cudaGetSymbolSize(size_t *size, const void *symbol);
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func);
cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache cacheConfig);
cudaError_t cudaFuncSetSharedMemConfig(const void *func, enum cudaSharedMemConfig config);
cudaError_t cudaProfilerStart(void);
cudaError_t cudaProfilerStop(void);
}
/* C++ overloads of the runtime API (cuda_runtime.h): kernels and symbols passed as themselves. */
template <typename... A>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *config, void (*kernel)(A...), A... args);
template <class T>
cudaError_t cudaLaunchKernel(T *func, dim3 gridDim, dim3 blockDim, void **args, size_t sharedMem = 0,
                             cudaStream_t stream = 0);
template <class T>
cudaError_t cudaLaunchCooperativeKernel(T *func, dim3 gridDim, dim3 blockDim, void **args,
                                        size_t sharedMem = 0, cudaStream_t stream = 0);
template <class T>
cudaError_t cudaFuncSetAttribute(T *entry, enum cudaFuncAttribute attr, int value);
template <class T>
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, T *entry);
template <class T>
cudaError_t cudaFuncSetCacheConfig(T *func, enum cudaFuncCache cacheConfig);
template <class T>
cudaError_t cudaFuncSetSharedMemConfig(T *func, enum cudaSharedMemConfig config);
template <class T>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, T func, int blockSize,
                                                          size_t dynamicSMemSize);
template <class T>
cudaError_t cudaOccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, T func,
                                               size_t dynamicSMemSize = 0, int blockSizeLimit = 0);
template <class T>
cudaError_t cudaMalloc(T **devPtr, size_t size);
template <class T>
cudaError_t cudaMallocHost(T **ptr, size_t size, unsigned int flags = 0);
template <class T>
cudaError_t cudaHostAlloc(T **ptr, size_t size, unsigned int flags);
template <class T>
cudaError_t cudaMallocManaged(T **devPtr, size_t size, unsigned int flags = cudaMemAttachGlobal);
template <class T>
cudaError_t cudaMallocAsync(T **devPtr, size_t size, cudaStream_t stream);
template <class T>
cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src, size_t count, size_t offset = 0,
                               enum cudaMemcpyKind kind = cudaMemcpyHostToDevice);
template <class T>
cudaError_t cudaMemcpyToSymbolAsync(const T &symbol, const void *src, size_t count, size_t offset = 0,
                                    enum cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t stream = 0);
template <class T>
cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t count, size_t offset = 0,
                                 enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost);
template <class T>
cudaError_t cudaGetSymbolAddress(void **devPtr, const T &symbol);

/* ---- device built-ins (device_functions.h, sm_*_intrinsics.h) ---- */
extern "C" {
__device__ void __syncthreads(void);
__device__ int __syncthreads_count(int);
__device__ int __syncthreads_and(int);
__device__ int __syncthreads_or(int);
__device__ void __syncwarp(unsigned mask = 0xffffffff);
__device__ void __threadfence(void);
__device__ void __threadfence_block(void);
__device__ void __threadfence_system(void);
__device__ void __trap(void);
__device__ void __brkpt(void);
__device__ void __nanosleep(unsigned);
__device__ long long clock64(void);
__device__ unsigned long long __globaltimer(void);
__device__ int __popc(unsigned);
__device__ int __popcll(unsigned long long);
__device__ int __clz(int);
__device__ int __clzll(long long);
__device__ int __ffs(int);
__device__ int __ffsll(long long);
__device__ unsigned __brev(unsigned);
__device__ unsigned long long __brevll(unsigned long long);
__device__ unsigned __byte_perm(unsigned, unsigned, unsigned);
__device__ unsigned __funnelshift_l(unsigned, unsigned, unsigned);
__device__ unsigned __funnelshift_r(unsigned, unsigned, unsigned);
__device__ unsigned __funnelshift_lc(unsigned, unsigned, unsigned);
__device__ unsigned __funnelshift_rc(unsigned, unsigned, unsigned);
__device__ int __mul24(int, int);
__device__ unsigned __umul24(unsigned, unsigned);
__device__ int __mulhi(int, int);
__device__ unsigned __umulhi(unsigned, unsigned);
__device__ long long __mul64hi(long long, long long);
__device__ unsigned long long __umul64hi(unsigned long long, unsigned long long);
__device__ unsigned __sad(int, int, unsigned);
__device__ unsigned __usad(unsigned, unsigned, unsigned);
__device__ int __hadd(int, int);
__device__ int __rhadd(int, int);
__device__ unsigned __uhadd(unsigned, unsigned);
__device__ int __dp2a_lo(int, int, int);
__device__ int __dp2a_hi(int, int, int);
__device__ float __expf(float);
__device__ float __exp10f(float);
__device__ float __logf(float);
__device__ float __log2f(float);
__device__ float __log10f(float);
__device__ float __sinf(float);
__device__ float __cosf(float);
__device__ float __tanf(float);
__device__ void __sincosf(float, float *, float *);
__device__ float __powf(float, float);
__device__ float __fdividef(float, float);
__device__ float __saturatef(float);
__device__ float __fadd_rn(float, float); __device__ float __fadd_rz(float, float);
__device__ float __fsub_rn(float, float); __device__ float __fmul_rn(float, float);
__device__ float __fmul_rz(float, float); __device__ float __fdiv_rn(float, float);
__device__ float __fmaf_rn(float, float, float); __device__ float __fmaf_rz(float, float, float);
__device__ float __frcp_rn(float); __device__ float __fsqrt_rn(float); __device__ float __frsqrt_rn(float);
__device__ double __dadd_rn(double, double); __device__ double __dmul_rn(double, double);
__device__ double __fma_rn(double, double, double); __device__ double __drcp_rn(double);
__device__ double __dsqrt_rn(double); __device__ double __ddiv_rn(double, double);
__device__ int __float2int_rn(float); __device__ int __float2int_rz(float);
__device__ int __float2int_rd(float); __device__ int __float2int_ru(float);
__device__ unsigned __float2uint_rn(float); __device__ unsigned __float2uint_rz(float);
__device__ unsigned __float2uint_rd(float); __device__ unsigned __float2uint_ru(float);
__device__ long long __float2ll_rn(float); __device__ long long __float2ll_rz(float);
__device__ unsigned long long __float2ull_rn(float); __device__ unsigned long long __float2ull_rz(float);
__device__ float __int2float_rn(int); __device__ float __int2float_rz(int);
__device__ float __uint2float_rn(unsigned); __device__ float __ll2float_rn(long long);
__device__ float __ull2float_rn(unsigned long long);
__device__ int __double2int_rn(double); __device__ int __double2int_rz(double);
__device__ long long __double2ll_rn(double); __device__ long long __double2ll_rz(double);
__device__ float __double2float_rn(double); __device__ float __double2float_rz(double);
__device__ double __int2double_rn(int); __device__ double __ll2double_rn(long long);
__device__ int __double2hiint(double); __device__ int __double2loint(double);
__device__ double __hiloint2double(int, int);
__device__ int __float_as_int(float);
__device__ float __int_as_float(int);
__device__ unsigned __float_as_uint(float);
__device__ float __uint_as_float(unsigned);
__device__ long long __double_as_longlong(double);
__device__ double __longlong_as_double(long long);
__device__ unsigned __activemask(void);
__device__ unsigned __lanemask_lt(void);
__device__ unsigned __lanemask_le(void);
__device__ unsigned __lanemask_eq(void);
__device__ unsigned __lanemask_gt(void);
__device__ unsigned __lanemask_ge(void);
__device__ unsigned __ballot_sync(unsigned, int);
__device__ int __any_sync(unsigned, int);
__device__ int __all_sync(unsigned, int);
__device__ unsigned __match_any_sync(unsigned, unsigned);
__device__ unsigned __reduce_add_sync(unsigned, unsigned);
__device__ unsigned __reduce_max_sync(unsigned, unsigned);
__device__ unsigned __reduce_min_sync(unsigned, unsigned);
__device__ unsigned __reduce_or_sync(unsigned, unsigned);
__device__ unsigned __reduce_and_sync(unsigned, unsigned);
__device__ int __ballot(int);
__device__ int __any(int);
__device__ int __all(int);
__device__ unsigned __vabsdiffu4(unsigned, unsigned);
__device__ unsigned __vadd4(unsigned, unsigned);
__device__ unsigned __vsub4(unsigned, unsigned);
__device__ unsigned __vmaxu4(unsigned, unsigned);
__device__ unsigned __vminu4(unsigned, unsigned);
__device__ unsigned __isGlobal(const void *);
__device__ unsigned __isShared(const void *);
__device__ unsigned __cvta_generic_to_shared(const void *);
__device__ unsigned long long __cvta_generic_to_global(const void *);
__device__ void *__cvta_shared_to_generic(unsigned);
__device__ void __prof_trigger(int);
__device__ void __assertfail(const char *, const char *, unsigned, const char *, size_t);
}
__device__ int __dp4a(int, int, int);
__device__ unsigned __dp4a(unsigned, unsigned, unsigned);
/* Overloaded built-ins, per element type. */
#define KM_SHFL(T)                                                                               \
  __device__ T __shfl_sync(unsigned, T, int, int = 32);                                          \
  __device__ T __shfl_up_sync(unsigned, T, unsigned, int = 32);                                  \
  __device__ T __shfl_down_sync(unsigned, T, unsigned, int = 32);                                \
  __device__ T __shfl_xor_sync(unsigned, T, int, int = 32);                                      \
  __device__ T __shfl(T, int, int = 32);                                                         \
  __device__ T __shfl_up(T, unsigned, int = 32);                                                 \
  __device__ T __shfl_down(T, unsigned, int = 32);                                               \
  __device__ T __shfl_xor(T, int, int = 32);                                                     \
  __device__ unsigned __match_any_sync(unsigned, T);                                             \
  __device__ unsigned __match_all_sync(unsigned, T, int *);
KM_SHFL(int) KM_SHFL(unsigned) KM_SHFL(long) KM_SHFL(unsigned long) KM_SHFL(long long)
KM_SHFL(unsigned long long) KM_SHFL(float) KM_SHFL(double)
#undef KM_SHFL
/* Cache-hinted loads and stores (__ldg, __ldcs, __stcs, ...) for every scalar and vector type. */
#define KM_LDST(T)                                                                               \
  __device__ T __ldg(const T *); __device__ T __ldcg(const T *); __device__ T __ldca(const T *);  \
  __device__ T __ldcs(const T *); __device__ T __ldlu(const T *); __device__ T __ldcv(const T *); \
  __device__ void __stwb(T *, T); __device__ void __stcg(T *, T); __device__ void __stcs(T *, T); \
  __device__ void __stwt(T *, T);
#define KM_LDST_VEC(B) KM_LDST(B##2) KM_LDST(B##4)
KM_LDST(char) KM_LDST(signed char) KM_LDST(unsigned char) KM_LDST(short) KM_LDST(unsigned short)
KM_LDST(int) KM_LDST(unsigned) KM_LDST(long) KM_LDST(unsigned long) KM_LDST(long long)
KM_LDST(unsigned long long) KM_LDST(float) KM_LDST(double)
KM_LDST_VEC(char) KM_LDST_VEC(uchar) KM_LDST_VEC(short) KM_LDST_VEC(ushort) KM_LDST_VEC(int)
KM_LDST_VEC(uint) KM_LDST_VEC(float) KM_LDST(longlong2) KM_LDST(ulonglong2) KM_LDST(double2)
#undef KM_LDST_VEC
#undef KM_LDST
#define KM_ATOMIC(T)                                                                             \
  __device__ T atomicAdd(T *, T);                                                                \
  __device__ T atomicExch(T *, T);                                                               \
  __device__ T atomicAdd_block(T *, T);                                                          \
  __device__ T atomicAdd_system(T *, T);
KM_ATOMIC(int) KM_ATOMIC(unsigned) KM_ATOMIC(unsigned long long) KM_ATOMIC(float) KM_ATOMIC(double)
#undef KM_ATOMIC
__device__ float2 atomicAdd(float2 *, float2);
__device__ float4 atomicAdd(float4 *, float4);
#define KM_ATOMIC_INT(T)                                                                         \
  __device__ T atomicSub(T *, T);                                                                \
  __device__ T atomicMax(T *, T);                                                                \
  __device__ T atomicMin(T *, T);                                                                \
  __device__ T atomicAnd(T *, T);                                                                \
  __device__ T atomicOr(T *, T);                                                                 \
  __device__ T atomicXor(T *, T);                                                                \
  __device__ T atomicCAS(T *, T, T);                                                             \
  __device__ T atomicMax_block(T *, T);                                                          \
  __device__ T atomicMin_block(T *, T);                                                          \
  __device__ T atomicCAS_block(T *, T, T);
KM_ATOMIC_INT(int) KM_ATOMIC_INT(unsigned) KM_ATOMIC_INT(unsigned long long) KM_ATOMIC_INT(long long)
#undef KM_ATOMIC_INT
__device__ unsigned short atomicCAS(unsigned short *, unsigned short, unsigned short);
__device__ unsigned atomicInc(unsigned *, unsigned);
__device__ unsigned atomicDec(unsigned *, unsigned);
__device__ long long atomicExch(long long *, long long);

/* CUDA math beyond the C library (math_functions.h): device functions. */
#define KM_CUDA_MATH1(F)                                                                         \
  extern "C" __device__ float F##f(float);                                                       \
  extern "C" __device__ double F(double);                                                        \
  __device__ float F(float);
KM_CUDA_MATH1(rsqrt) KM_CUDA_MATH1(rcbrt) KM_CUDA_MATH1(sinpi) KM_CUDA_MATH1(cospi)
KM_CUDA_MATH1(normcdf) KM_CUDA_MATH1(normcdfinv) KM_CUDA_MATH1(erfinv) KM_CUDA_MATH1(erfcinv)
KM_CUDA_MATH1(erfcx)
#undef KM_CUDA_MATH1
extern "C" {
__device__ void sincospif(float, float *, float *);
__device__ void sincospi(double, double *, double *);
__device__ float fdividef(float, float);
__device__ float saturate(float);
__device__ float norm3df(float, float, float);
__device__ float rnorm3df(float, float, float);
__device__ float norm4df(float, float, float, float);
__device__ float rhypotf(float, float);
__device__ double norm3d(double, double, double);
__device__ double rnorm3d(double, double, double);
__device__ double rhypot(double, double);
}
extern "C++" {
/* CUDA's global min/max overloads (the C library has none). */
#define KM_MINMAX(T)                                                                             \
  __host__ __device__ T min(T, T);                                                               \
  __host__ __device__ T max(T, T);
KM_MINMAX(int) KM_MINMAX(unsigned) KM_MINMAX(long) KM_MINMAX(unsigned long) KM_MINMAX(long long)
KM_MINMAX(unsigned long long) KM_MINMAX(float) KM_MINMAX(double)
#undef KM_MINMAX
__host__ __device__ unsigned min(int, unsigned);
__host__ __device__ unsigned min(unsigned, int);
__host__ __device__ unsigned max(int, unsigned);
__host__ __device__ unsigned max(unsigned, int);
__host__ __device__ double min(double, float);
__host__ __device__ double min(float, double);
__host__ __device__ double max(double, float);
__host__ __device__ double max(float, double);
__host__ __device__ long long min(long long, int);
__host__ __device__ long long max(long long, int);
}

/* math_constants.h */
#define CUDART_INF_F __builtin_huge_valf()
#define CUDART_INF __builtin_huge_val()
#define CUDART_NAN_F __builtin_nanf("")
#define CUDART_NAN __builtin_nan("")
#define CUDART_PI_F 3.141592654f
#define CUDART_PI 3.1415926535897931e+0
#define CUDART_SQRT_2PI_F 2.506628275f
#define CUDART_MIN_DENORM_F 1.40129846e-45f

#endif /* KM_CUDA_PARSE_H */
