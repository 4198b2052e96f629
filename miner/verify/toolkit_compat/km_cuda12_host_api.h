// kernel-miner verify: CUDA 12 runtime signatures that CUDA 13 replaced, declared for original TUs.
//
// Force-included (-include) into every original translation unit that verify compiles. CUDA 13 changed
// these host functions' parameters (a device number became a cudaMemLocation; graph edges gained
// edge data), so a project written for CUDA 12 stops compiling in its *host* code, and its kernels
// could not be compared. Declarations only, of host functions, as overloads beside the CUDA 13 ones:
// nothing here is defined, nothing reaches device code, so the PTX of the kernels cannot change
// (verify compiles to PTX and never links). Each declaration is the CUDA 12.x signature.
#pragma once
#include <cuda_runtime_api.h>
#if defined(CUDART_VERSION) && CUDART_VERSION >= 13000
extern __host__ cudaError_t CUDARTAPI cudaMemAdvise(const void *devPtr, size_t count, enum cudaMemoryAdvise advice,
                                                    int device);
extern __host__ cudaError_t CUDARTAPI cudaMemPrefetchAsync(const void *devPtr, size_t count, int dstDevice,
                                                           cudaStream_t stream = 0);
extern __host__ cudaError_t CUDARTAPI cudaGraphGetEdges(cudaGraph_t graph, cudaGraphNode_t *from, cudaGraphNode_t *to,
                                                        size_t *numEdges);
extern __host__ cudaError_t CUDARTAPI cudaGraphNodeGetDependencies(cudaGraphNode_t node, cudaGraphNode_t *pDependencies,
                                                                   size_t *pNumDependencies);
extern __host__ cudaError_t CUDARTAPI cudaGraphNodeGetDependentNodes(cudaGraphNode_t node,
                                                                     cudaGraphNode_t *pDependentNodes,
                                                                     size_t *pNumDependentNodes);
extern __host__ cudaError_t CUDARTAPI cudaGraphAddDependencies(cudaGraph_t graph, const cudaGraphNode_t *from,
                                                               const cudaGraphNode_t *to, size_t numDependencies);
extern __host__ cudaError_t CUDARTAPI cudaGraphRemoveDependencies(cudaGraph_t graph, const cudaGraphNode_t *from,
                                                                  const cudaGraphNode_t *to, size_t numDependencies);
#endif
