/* out = (1/k) sum_j xs[j], summed j = 0..k-1 then scaled: the CPU reference's arithmetic. */
#include "kernels/cuda_ops.h"

static __global__ void mean_kernel(size_t n, int k, const float *const *xs, float inv_k,
                                   float *out) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float s = xs[0][i];
        for (int j = 1; j < k; j++)
            s += xs[j][i];
        out[i] = s * inv_k;
    }
}

void cuda_mean(cudaStream_t stream, size_t n, int k, const float *const *xs, float *out) {
    mean_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, k, xs, 1.0f / (float)k, out);
    cudaCheck(cudaGetLastError());
}
