// kernel-miner example: launch helpers shared by the example kernels.
#ifndef KM_EXAMPLE_GRID_HELPERS_CUH
#define KM_EXAMPLE_GRID_HELPERS_CUH

#define GRID_STRIDE_LOOP(i, n) \
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)

#define THREADS_PER_BLOCK 256

inline int blocks_for(const int n, const int threads = THREADS_PER_BLOCK) {
  int blocks = (n + threads - 1) / threads;
  return blocks < 1024 ? blocks : 1024;
}

#endif  // KM_EXAMPLE_GRID_HELPERS_CUH
