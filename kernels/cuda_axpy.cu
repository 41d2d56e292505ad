/* y += a x */
#include "kernels/cuda_ops.h"

static __global__ void axpy_kernel(size_t n, float a, const float *x, float *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] += a * x[i];
}

void cuda_axpy(cudaStream_t stream, size_t n, float a, const float *x, float *y) {
    axpy_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, a, x, y);
    cudaCheck(cudaGetLastError());
}
