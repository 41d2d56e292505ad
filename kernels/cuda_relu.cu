/* ReLU forward y = max(x, 0) and backward dx = dy where y > 0 */
#include "kernels/cuda_ops.h"

static __global__ void relu_fwd_kernel(size_t n, const float *x, float *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static __global__ void relu_bwd_kernel(size_t n, const float *y, const float *dy, float *dx) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

void cuda_relu_fwd(cudaStream_t stream, size_t n, const float *x, float *y) {
    relu_fwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, x, y);
    cudaCheck(cudaGetLastError());
}

void cuda_relu_bwd(cudaStream_t stream, size_t n, const float *y, const float *dy, float *dx) {
    relu_bwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, y, dy, dx);
    cudaCheck(cudaGetLastError());
}
