/* dst[i] = src[i] where mask[i] != 0 */
#include "kernels/cuda_ops.h"

static __global__ void masked_copy_kernel(size_t n, const uint8_t *mask, const float *src,
                                          float *dst) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (mask[i]) dst[i] = src[i];
}

void cuda_masked_copy(cudaStream_t stream, size_t n, const uint8_t *mask, const float *src,
                      float *dst) {
    masked_copy_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, mask, src, dst);
    cudaCheck(cudaGetLastError());
}
