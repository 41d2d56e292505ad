/* GELU, erf form: y = x Phi(x), dx = dy (Phi(x) + x phi(x)); in double, rounded once, as the CPU
 * reference computes it. */
#include "kernels/cuda_ops.h"

static __global__ void gelu_fwd_kernel(size_t n, const float *x, float *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        double v = x[i];
        y[i] = (float)(0.5 * v * (1.0 + erf(v * 0.70710678118654752440)));
    }
}

static __global__ void gelu_bwd_kernel(size_t n, const float *x, const float *dy, float *dx) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        double v = x[i];
        double cdf = 0.5 * (1.0 + erf(v * 0.70710678118654752440));
        double pdf = 0.3989422804014327 * exp(-0.5 * v * v);
        dx[i] = (float)((double)dy[i] * (cdf + v * pdf));
    }
}

void cuda_gelu_fwd(cudaStream_t stream, size_t n, const float *x, float *y) {
    gelu_fwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, x, y);
    cudaCheck(cudaGetLastError());
}

void cuda_gelu_bwd(cudaStream_t stream, size_t n, const float *x, const float *dy, float *dx) {
    gelu_bwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, x, dy, dx);
    cudaCheck(cudaGetLastError());
}
