/* Sum of squares in double: each block reduces a fixed slice pattern into one partial, so the
 * result does not depend on scheduling (no atomics). */
#include "kernels/cuda_ops.h"

static __global__ void nrm2_kernel(size_t n, const float *x, double *partials) {
    __shared__ double acc[CUDA_BLOCK];
    double s = 0.0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        s += (double)x[i] * x[i];
    acc[threadIdx.x] = s;
    __syncthreads();
    for (int half = CUDA_BLOCK / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) acc[threadIdx.x] += acc[threadIdx.x + half];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = acc[0];
}

void cuda_nrm2_partials(cudaStream_t stream, size_t n, const float *x, double *partials,
                        int blocks) {
    nrm2_kernel<<<blocks, CUDA_BLOCK, 0, stream>>>(n, x, partials);
    cudaCheck(cudaGetLastError());
}
