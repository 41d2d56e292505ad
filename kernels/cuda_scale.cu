/* x *= a */
#include "kernels/cuda_ops.h"

static __global__ void scale_kernel(size_t n, float a, float *x) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] *= a;
}

void cuda_scale(cudaStream_t stream, size_t n, float a, float *x) {
    scale_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, a, x);
    cudaCheck(cudaGetLastError());
}
