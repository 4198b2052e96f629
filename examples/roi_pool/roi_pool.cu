// kernel-miner example: the torch-extension launcher of the roi_pool kernels.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>

#include "roi_pool_kernel.cuh"

void roi_pool_forward(at::Tensor input, at::Tensor rois, at::Tensor output, at::Tensor argmax,
                      float spatial_scale) {
  const int output_size = output.numel();
  const int channels = input.size(1), height = input.size(2), width = input.size(3);
  const int pooled_h = output.size(2), pooled_w = output.size(3);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(input.scalar_type(), "roi_pool_forward", [&] {
    roi_pool_forward_kernel<scalar_t><<<blocks_for(output_size), THREADS_PER_BLOCK, 0, stream>>>(
        output_size, input.data_ptr<scalar_t>(), rois.data_ptr<scalar_t>(), output.data_ptr<scalar_t>(),
        argmax.data_ptr<int>(), static_cast<scalar_t>(spatial_scale), channels, height, width, pooled_h,
        pooled_w);
  });
}

void roi_pool_backward(at::Tensor grad_output, at::Tensor argmax, at::Tensor grad_input) {
  const int output_size = grad_output.numel();
  const int channels = grad_input.size(1), height = grad_input.size(2), width = grad_input.size(3);
  const int pooled_h = grad_output.size(2), pooled_w = grad_output.size(3);
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  AT_DISPATCH_FLOATING_TYPES(grad_output.scalar_type(), "roi_pool_backward", [&] {
    roi_pool_backward_kernel<scalar_t><<<blocks_for(output_size), THREADS_PER_BLOCK, 0, stream>>>(
        output_size, grad_output.data_ptr<scalar_t>(), argmax.data_ptr<int>(),
        grad_input.data_ptr<scalar_t>(), channels, height, width, pooled_h, pooled_w);
  });
}
