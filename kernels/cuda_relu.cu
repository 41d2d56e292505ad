/* ReLU forward y = max(x, 0) and backward dx = dy where y > 0; four elements a thread (float4)
 * where the count is a multiple of 4 and the buffers are 16-byte aligned */
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

static __global__ void relu_fwd4_kernel(size_t n4, const float4 *x, float4 *y) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
         i += (size_t)gridDim.x * blockDim.x) {
        const float4 v = x[i];
        y[i] = make_float4(v.x > 0.0f ? v.x : 0.0f, v.y > 0.0f ? v.y : 0.0f,
                           v.z > 0.0f ? v.z : 0.0f, v.w > 0.0f ? v.w : 0.0f);
    }
}

static __global__ void relu_bwd4_kernel(size_t n4, const float4 *y, const float4 *dy, float4 *dx) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n4;
         i += (size_t)gridDim.x * blockDim.x) {
        const float4 v = y[i], d = dy[i];
        dx[i] = make_float4(v.x > 0.0f ? d.x : 0.0f, v.y > 0.0f ? d.y : 0.0f,
                            v.z > 0.0f ? d.z : 0.0f, v.w > 0.0f ? d.w : 0.0f);
    }
}

static int quad(size_t n, const void *a, const void *b, const void *c) {
    return n % 4 == 0 && ((size_t)a & 15) == 0 && ((size_t)b & 15) == 0 && ((size_t)c & 15) == 0;
}

void cuda_relu_fwd(cudaStream_t stream, size_t n, const float *x, float *y) {
    if (quad(n, x, y, y)) {
        const size_t n4 = n / 4;
        const float4 *x4 = (const float4 *)x;
        float4 *y4 = (float4 *)y;
        relu_fwd4_kernel<<<cuda_grid(n4), CUDA_BLOCK, 0, stream>>>(n4, x4, y4);
    } else {
        relu_fwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, x, y);
    }
    cudaCheck(cudaGetLastError());
}

void cuda_relu_bwd(cudaStream_t stream, size_t n, const float *y, const float *dy, float *dx) {
    if (quad(n, y, dy, dx)) {
        const size_t n4 = n / 4;
        const float4 *y4 = (const float4 *)y, *dy4 = (const float4 *)dy;
        float4 *dx4 = (float4 *)dx;
        relu_bwd4_kernel<<<cuda_grid(n4), CUDA_BLOCK, 0, stream>>>(n4, y4, dy4, dx4);
    } else {
        relu_bwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(n, y, dy, dx);
    }
    cudaCheck(cudaGetLastError());
}
