/* kernel-miner parse shim for NVTX (header-only in the toolkit): declarations only. */
#ifndef KM_NVTX_H
#define KM_NVTX_H
extern "C" {
int nvtxRangePushA(const char *);
int nvtxRangePop(void);
typedef unsigned long long nvtxRangeId_t;
nvtxRangeId_t nvtxRangeStartA(const char *);
void nvtxRangeEnd(nvtxRangeId_t);
void nvtxMarkA(const char *);
void nvtxNameOsThreadA(unsigned, const char *);
void nvtxNameCudaStreamA(cudaStream_t, const char *);
void nvtxNameCudaEventA(cudaEvent_t, const char *);
void nvtxNameCudaDeviceA(int, const char *);
}
#define nvtxRangePush nvtxRangePushA
#define nvtxRangeStart nvtxRangeStartA
#define nvtxMark nvtxMarkA
#define nvtxNameCudaStream nvtxNameCudaStreamA
#define nvtxNameCudaEvent nvtxNameCudaEventA
#endif
