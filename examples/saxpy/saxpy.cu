// kernel-miner example: a plain kernel with a host launcher and an explicit block size.
#include <cuda_runtime.h>

__global__ void __launch_bounds__(256) saxpy_kernel(int n, float a, const float* __restrict__ x,
                                                    float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

cudaError_t saxpy(int n, float a, const float* x, float* y, cudaStream_t stream) {
  saxpy_kernel<<<(n + 255) / 256, 256, 0, stream>>>(n, a, x, y);
  return cudaGetLastError();
}
