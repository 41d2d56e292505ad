/* Global average pooling, NHWC: one thread per (sample, channel) adds its hw pixels in order in
 * double (as the CPU does); the backward pass spreads dy / hw over the pixels. */
#include "kernels/cuda_ops.h"

static __global__ void avgpool_fwd_kernel(int batch, int hw, int c, const float *x, float *y) {
    const size_t n = (size_t)batch * c;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t b = i / c, k = i % c;
        const float *xb = x + b * hw * c + k;
        double acc = 0.0;
        for (int p = 0; p < hw; p++)
            acc += xb[(size_t)p * c];
        y[i] = (float)(acc / hw);
    }
}

static __global__ void avgpool_bwd_kernel(int batch, int hw, int c, const float *dy, float *dx) {
    const size_t n = (size_t)batch * hw * c;
    const float inv = 1.0f / (float)hw;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t b = i / ((size_t)hw * c), k = i % c;
        dx[i] = __fmul_rn(dy[b * c + k], inv);
    }
}

void cuda_avgpool_fwd(cudaStream_t stream, int batch, int hw, int c, const float *x, float *y) {
    size_t n = (size_t)batch * c;
    avgpool_fwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(batch, hw, c, x, y);
    cudaCheck(cudaGetLastError());
}

void cuda_avgpool_bwd(cudaStream_t stream, int batch, int hw, int c, const float *dy, float *dx) {
    size_t n = (size_t)batch * hw * c;
    avgpool_bwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(batch, hw, c, dy, dx);
    cudaCheck(cudaGetLastError());
}
