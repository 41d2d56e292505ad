/* Bias add: y (rows, cols) += b (cols) on every row. (The bias gradient is a column sum in
 * cuda_batchnorm.cu.) */
#include "kernels/cuda_ops.h"

static __global__ void bias_add_kernel(size_t n, int cols, const float *bias, float *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] += bias[i % cols];
}

void cuda_bias_add(cudaStream_t stream, int rows, int cols, const float *bias, float *y) {
    size_t n = (size_t)rows * cols;
    bias_add_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, cols, bias, y);
    cudaCheck(cudaGetLastError());
}
