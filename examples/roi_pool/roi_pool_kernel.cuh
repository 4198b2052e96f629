// kernel-miner example: max pooling of regions of interest (written for this project).
#ifndef KM_EXAMPLE_ROI_POOL_KERNEL_CUH
#define KM_EXAMPLE_ROI_POOL_KERNEL_CUH

#include <float.h>
#include "grid_helpers.cuh"

template <typename T>
__device__ inline T clamp_coord(T v, T lo, T hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// rois: [num_rois, 5] = (batch, x1, y1, x2, y2); output: [num_rois, channels, pooled_h, pooled_w]
template <typename T>
__global__ void roi_pool_forward_kernel(const int nthreads, const T* input, const T* rois,
                                        T* output, int* argmax, const T spatial_scale,
                                        const int channels, const int height, const int width,
                                        const int pooled_h, const int pooled_w) {
  GRID_STRIDE_LOOP(index, nthreads) {
    int pw = index % pooled_w;
    int ph = (index / pooled_w) % pooled_h;
    int c = (index / pooled_w / pooled_h) % channels;
    int n = index / pooled_w / pooled_h / channels;
    const T* roi = rois + n * 5;
    int batch = static_cast<int>(roi[0]);
    int x1 = static_cast<int>(roi[1] * spatial_scale);
    int y1 = static_cast<int>(roi[2] * spatial_scale);
    int x2 = static_cast<int>(roi[3] * spatial_scale);
    int y2 = static_cast<int>(roi[4] * spatial_scale);
    T bin_h = static_cast<T>(max(y2 - y1 + 1, 1)) / static_cast<T>(pooled_h);
    T bin_w = static_cast<T>(max(x2 - x1 + 1, 1)) / static_cast<T>(pooled_w);
    int hstart = static_cast<int>(clamp_coord<T>(floor(ph * bin_h) + y1, 0, height));
    int hend = static_cast<int>(clamp_coord<T>(ceil((ph + 1) * bin_h) + y1, 0, height));
    int wstart = static_cast<int>(clamp_coord<T>(floor(pw * bin_w) + x1, 0, width));
    int wend = static_cast<int>(clamp_coord<T>(ceil((pw + 1) * bin_w) + x1, 0, width));
    const T* plane = input + (batch * channels + c) * height * width;
    T best = hend <= hstart || wend <= wstart ? T(0) : T(-FLT_MAX);
    int best_idx = -1;
    for (int h = hstart; h < hend; ++h) {
      for (int w = wstart; w < wend; ++w) {
        if (plane[h * width + w] > best) {
          best = plane[h * width + w];
          best_idx = h * width + w;
        }
      }
    }
    output[index] = best;
    argmax[index] = best_idx;
  }
}

template <typename T>
__global__ void roi_pool_backward_kernel(const int nthreads, const T* grad_output, const int* argmax,
                                         T* grad_input, const int channels, const int height,
                                         const int width, const int pooled_h, const int pooled_w) {
  GRID_STRIDE_LOOP(index, nthreads) {
    int c = (index / pooled_w / pooled_h) % channels;
    int n = index / pooled_w / pooled_h / channels;
    int idx = argmax[index];
    if (idx >= 0) {
      atomicAdd(grad_input + (n * channels + c) * height * width + idx, grad_output[index]);
    }
  }
}

#endif  // KM_EXAMPLE_ROI_POOL_KERNEL_CUH
