/* Bias add: y (rows, cols) += b (cols) on every row. (The bias gradient is a column sum in
 * cuda_batchnorm.cu.) */
#include "kernels/cuda_ops.h"

/* I: the index type, 32 bits where n and the grid's stride fit in 31 (a 64-bit modulo an element
 * cost more than the element's memory traffic) */
template <typename I>
static __global__ void bias_add_kernel(I n, int cols, const float *bias, float *y) {
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x)
        y[i] += bias[i % (I)cols];
}

void cuda_bias_add(cudaStream_t stream, int rows, int cols, const float *bias, float *y) {
    const size_t n = (size_t)rows * cols;
    const unsigned n32 = (unsigned)n;
    if (cuda_index32(n))
        bias_add_kernel<unsigned><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n32, cols, bias, y);
    else
        bias_add_kernel<size_t><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, cols, bias, y);
    cudaCheck(cudaGetLastError());
}
