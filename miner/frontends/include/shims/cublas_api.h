/* kernel-miner parse shim for cuBLAS: the types, enums and calls CUDA code commonly uses.
 * Declarations only, for libclang (this machine's toolkit has no cuBLAS headers). */
#ifndef KM_CUBLAS_API_H
#define KM_CUBLAS_API_H
#include "cuda_fp16.h"
typedef struct cublasContext *cublasHandle_t;
typedef enum { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_NOT_INITIALIZED = 1, CUBLAS_STATUS_ALLOC_FAILED = 3,
  CUBLAS_STATUS_INVALID_VALUE = 7, CUBLAS_STATUS_ARCH_MISMATCH = 8, CUBLAS_STATUS_MAPPING_ERROR = 11,
  CUBLAS_STATUS_EXECUTION_FAILED = 13, CUBLAS_STATUS_INTERNAL_ERROR = 14, CUBLAS_STATUS_NOT_SUPPORTED = 15,
  CUBLAS_STATUS_LICENSE_ERROR = 16 } cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1, CUBLAS_OP_C = 2, CUBLAS_OP_HERMITAN = 2,
  CUBLAS_OP_CONJG = 3 } cublasOperation_t;
typedef enum { CUBLAS_FILL_MODE_LOWER = 0, CUBLAS_FILL_MODE_UPPER = 1, CUBLAS_FILL_MODE_FULL = 2 } cublasFillMode_t;
typedef enum { CUBLAS_DIAG_NON_UNIT = 0, CUBLAS_DIAG_UNIT = 1 } cublasDiagType_t;
typedef enum { CUBLAS_SIDE_LEFT = 0, CUBLAS_SIDE_RIGHT = 1 } cublasSideMode_t;
typedef enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 } cublasPointerMode_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TENSOR_OP_MATH = 1, CUBLAS_PEDANTIC_MATH = 2,
  CUBLAS_TF32_TENSOR_OP_MATH = 3, CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16 } cublasMath_t;
typedef enum { CUBLAS_COMPUTE_16F = 64, CUBLAS_COMPUTE_16F_PEDANTIC = 65, CUBLAS_COMPUTE_32F = 68,
  CUBLAS_COMPUTE_32F_PEDANTIC = 69, CUBLAS_COMPUTE_32F_FAST_16F = 74, CUBLAS_COMPUTE_32F_FAST_16BF = 75,
  CUBLAS_COMPUTE_32F_FAST_TF32 = 77, CUBLAS_COMPUTE_64F = 70, CUBLAS_COMPUTE_64F_PEDANTIC = 71,
  CUBLAS_COMPUTE_32I = 72, CUBLAS_COMPUTE_32I_PEDANTIC = 73 } cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1, CUBLAS_GEMM_DFALT = -1, CUBLAS_GEMM_DEFAULT_TENSOR_OP = 99,
  CUBLAS_GEMM_DFALT_TENSOR_OP = 99 } cublasGemmAlgo_t;
typedef cudaDataType cublasDataType_t;
extern "C" {
cublasStatus_t cublasCreate(cublasHandle_t *);
cublasStatus_t cublasCreate_v2(cublasHandle_t *);
cublasStatus_t cublasDestroy(cublasHandle_t);
cublasStatus_t cublasDestroy_v2(cublasHandle_t);
cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t);
cublasStatus_t cublasGetStream(cublasHandle_t, cudaStream_t *);
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t);
cublasStatus_t cublasSetPointerMode(cublasHandle_t, cublasPointerMode_t);
cublasStatus_t cublasSetWorkspace(cublasHandle_t, void *, size_t);
const char *cublasGetStatusString(cublasStatus_t);
const char *cublasGetStatusName(cublasStatus_t);
#define KM_GEMM(P, T)                                                                            \
  cublasStatus_t cublas##P##gemm(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, \
      const T *, const T *, int, const T *, int, const T *, T *, int);                          \
  cublasStatus_t cublas##P##gemmStridedBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, \
      int, int, const T *, const T *, int, long long, const T *, int, long long, const T *, T *, int, long long, int); \
  cublasStatus_t cublas##P##gemmBatched(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, \
      const T *, const T *const[], int, const T *const[], int, const T *, T *const[], int, int);  \
  cublasStatus_t cublas##P##gemv(cublasHandle_t, cublasOperation_t, int, int, const T *, const T *, int, \
      const T *, int, const T *, T *, int);                                                      \
  cublasStatus_t cublas##P##axpy(cublasHandle_t, int, const T *, const T *, int, T *, int);      \
  cublasStatus_t cublas##P##scal(cublasHandle_t, int, const T *, T *, int);                      \
  cublasStatus_t cublas##P##dot(cublasHandle_t, int, const T *, int, const T *, int, T *);
KM_GEMM(S, float) KM_GEMM(D, double) KM_GEMM(H, __half)
#undef KM_GEMM
cublasStatus_t cublasGemmEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void *,
    const void *, cudaDataType, int, const void *, cudaDataType, int, const void *, void *, cudaDataType, int,
    cublasComputeType_t, cublasGemmAlgo_t);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
    const void *, const void *, cudaDataType, int, long long, const void *, cudaDataType, int, long long,
    const void *, void *, cudaDataType, int, long long, int, cublasComputeType_t, cublasGemmAlgo_t);
cublasStatus_t cublasGemmBatchedEx(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
    const void *, const void *const[], cudaDataType, int, const void *const[], cudaDataType, int, const void *,
    void *const[], cudaDataType, int, int, cublasComputeType_t, cublasGemmAlgo_t);
}
#endif
