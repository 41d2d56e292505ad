/* Dropout with the counter-based mask of dropout_hash.h: the CPU's mask, element for element. */
#include "kernels/cuda_ops.h"
#include "kernels/dropout_hash.h"

static __global__ void dropout_kernel(size_t n, uint32_t thr, float keep_scale, uint64_t seed,
                                      const float *x, float *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = dropout_draw(seed, i) < thr ? 0.0f : __fmul_rn(x[i], keep_scale);
}

void cuda_dropout(cudaStream_t stream, size_t n, float p, uint64_t seed, const float *x, float *y) {
    dropout_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, dropout_threshold(p),
                                                            1.0f / (1.0f - p), seed, x, y);
    cudaCheck(cudaGetLastError());
}
