/* kernel-miner parse shim for hip/hip_runtime.h, as HIP's NVIDIA platform sees it: HIP names are
 * the CUDA runtime's under another spelling, and hipLaunchKernelGGL is a `<<<...>>>` launch, so
 * libclang parses HIP sources in CUDA mode with their launches visible. Declarations only. */
#ifndef KM_HIP_RUNTIME_H
#define KM_HIP_RUNTIME_H
#if !defined(__HIP_PLATFORM_AMD__) && !defined(__HIP_PLATFORM_HCC__)
#ifndef __HIP_PLATFORM_NVIDIA__
#define __HIP_PLATFORM_NVIDIA__ 1
#endif
#ifndef __HIP_PLATFORM_NVCC__
#define __HIP_PLATFORM_NVCC__ 1
#endif
#endif
#ifndef __HIPCC__
#define __HIPCC__ 1
#endif
#define HIP_VERSION_MAJOR 6
#define HIP_VERSION_MINOR 0
#define HIP_VERSION 60000000
#include "../cuda_fp16.h"
#include "../cuda_bf16.h"

#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define HIP_SYMBOL(X) X
#define hipLaunchKernelGGL(kernelName, numBlocks, numThreads, memPerBlock, streamId, ...)           \
  do {                                                                                           \
    kernelName<<<(numBlocks), (numThreads), (memPerBlock), (streamId)>>>(__VA_ARGS__);           \
  } while (0)
#define hipThreadIdx_x (threadIdx.x)
#define hipThreadIdx_y (threadIdx.y)
#define hipThreadIdx_z (threadIdx.z)
#define hipBlockIdx_x (blockIdx.x)
#define hipBlockIdx_y (blockIdx.y)
#define hipBlockIdx_z (blockIdx.z)
#define hipBlockDim_x (blockDim.x)
#define hipBlockDim_y (blockDim.y)
#define hipBlockDim_z (blockDim.z)
#define hipGridDim_x (gridDim.x)
#define hipGridDim_y (gridDim.y)
#define hipGridDim_z (gridDim.z)

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaDeviceProp hipDeviceProp_t;
typedef cudaFuncAttributes hipFuncAttributes;
typedef enum cudaMemcpyKind hipMemcpyKind;
typedef enum cudaDeviceAttr hipDeviceAttribute_t;
typedef enum cudaFuncAttribute hipFuncAttribute;
typedef enum cudaFuncCache hipFuncCache_t;
typedef enum cudaLimit hipLimit_t;
typedef struct cudaPointerAttributes hipPointerAttribute_t;
typedef cudaLaunchConfig_t hipLaunchConfig_t;
typedef CUdeviceptr hipDeviceptr_t;
#define hipSuccess cudaSuccess
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipErrorNotReady cudaErrorNotReady
#define hipErrorInvalidDevice cudaErrorInvalidDevice
#define hipErrorNoDevice cudaErrorNoDevice
#define hipErrorLaunchFailure cudaErrorLaunchFailure
#define hipErrorNotSupported cudaErrorNotSupported
#define hipErrorUnknown cudaErrorUnknown
#define hipMemcpyHostToHost cudaMemcpyHostToHost
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemcpyDefault cudaMemcpyDefault
#define hipStreamDefault cudaStreamDefault
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipEventDefault cudaEventDefault
#define hipEventDisableTiming cudaEventDisableTiming
#define hipHostMallocDefault cudaHostAllocDefault
#define hipHostMallocMapped cudaHostAllocMapped
#define hipDeviceAttributeMultiprocessorCount cudaDevAttrMultiProcessorCount
#define hipDeviceAttributeMaxThreadsPerBlock cudaDevAttrMaxThreadsPerBlock
#define hipDeviceAttributeMaxSharedMemoryPerBlock cudaDevAttrMaxSharedMemoryPerBlock
#define hipDeviceAttributeWarpSize cudaDevAttrWarpSize
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize

extern "C" {
hipError_t hipGetLastError(void);
hipError_t hipPeekAtLastError(void);
const char *hipGetErrorString(hipError_t);
const char *hipGetErrorName(hipError_t);
hipError_t hipDeviceSynchronize(void);
hipError_t hipDeviceReset(void);
hipError_t hipGetDevice(int *);
hipError_t hipSetDevice(int);
hipError_t hipGetDeviceCount(int *);
hipError_t hipGetDeviceProperties(hipDeviceProp_t *, int);
hipError_t hipDeviceGetAttribute(int *, hipDeviceAttribute_t, int);
hipError_t hipMalloc(void **, size_t);
hipError_t hipMallocManaged(void **, size_t, unsigned int);
hipError_t hipHostMalloc(void **, size_t, unsigned int);
hipError_t hipMallocAsync(void **, size_t, hipStream_t);
hipError_t hipFree(void *);
hipError_t hipFreeAsync(void *, hipStream_t);
hipError_t hipHostFree(void *);
hipError_t hipMemcpy(void *, const void *, size_t, hipMemcpyKind);
hipError_t hipMemcpyAsync(void *, const void *, size_t, hipMemcpyKind, hipStream_t);
hipError_t hipMemcpyHtoD(hipDeviceptr_t, void *, size_t);
hipError_t hipMemcpyDtoH(void *, hipDeviceptr_t, size_t);
hipError_t hipMemset(void *, int, size_t);
hipError_t hipMemsetAsync(void *, int, size_t, hipStream_t);
hipError_t hipMemGetInfo(size_t *, size_t *);
hipError_t hipStreamCreate(hipStream_t *);
hipError_t hipStreamCreateWithFlags(hipStream_t *, unsigned int);
hipError_t hipStreamDestroy(hipStream_t);
hipError_t hipStreamSynchronize(hipStream_t);
hipError_t hipStreamWaitEvent(hipStream_t, hipEvent_t, unsigned int);
hipError_t hipEventCreate(hipEvent_t *);
hipError_t hipEventCreateWithFlags(hipEvent_t *, unsigned int);
hipError_t hipEventRecord(hipEvent_t, hipStream_t);
hipError_t hipEventSynchronize(hipEvent_t);
hipError_t hipEventElapsedTime(float *, hipEvent_t, hipEvent_t);
hipError_t hipEventDestroy(hipEvent_t);
hipError_t hipLaunchKernel(const void *, dim3, dim3, void **, size_t, hipStream_t);
hipError_t hipLaunchCooperativeKernel(const void *, dim3, dim3, void **, unsigned int, hipStream_t);
hipError_t hipMemcpyToSymbol(const void *, const void *, size_t, size_t, hipMemcpyKind);
hipError_t hipMemcpyToSymbolAsync(const void *, const void *, size_t, size_t, hipMemcpyKind, hipStream_t);
hipError_t hipFuncGetAttributes(hipFuncAttributes *, const void *);
hipError_t hipFuncSetAttribute(const void *, hipFuncAttribute, int);
hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int *, const void *, int, size_t);
hipError_t hipOccupancyMaxPotentialBlockSize(int *, int *, const void *, size_t, int);
}
template <class T> hipError_t hipMalloc(T **, size_t);
template <class T> hipError_t hipHostMalloc(T **, size_t, unsigned int = 0);
template <class T> hipError_t hipLaunchKernel(T *, dim3, dim3, void **, size_t = 0, hipStream_t = 0);
template <class T> hipError_t hipLaunchCooperativeKernel(T *, dim3, dim3, void **, unsigned int = 0, hipStream_t = 0);
template <class T> hipError_t hipFuncSetAttribute(T *, hipFuncAttribute, int);
template <class T> hipError_t hipOccupancyMaxActiveBlocksPerMultiprocessor(int *, T, int, size_t);
#endif
