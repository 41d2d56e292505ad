/* 2x2 max pooling, stride 2, NHWC; one thread per output element. The backward pass gives the
 * gradient to the first maximum of the window (order 00, 01, 10, 11), like the CPU reference.
 * I: the index type, 32 bits where the input fits (cuda_index32): an element's 64-bit divisions
 * cost more than its memory traffic. */
#include "kernels/cuda_ops.h"

template <typename I>
static __global__ void maxpool_fwd_kernel(int batch, int h, int w, int c, const float *x,
                                          float *y) {
    const I oh_n = h / 2, ow_n = w / 2, n = (I)batch * oh_n * ow_n * c;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        const I k = i % (I)c, pix = i / (I)c, ow = pix % ow_n, rest = pix / ow_n;
        const I oh = rest % oh_n, b = rest / oh_n;
        const float *p = x + ((b * h + 2 * oh) * w + 2 * ow) * c + k;
        float a = p[0], q = p[c], e = p[(I)w * c], f = p[(I)w * c + c];
        float m0 = a > q ? a : q, m1 = e > f ? e : f;
        y[i] = m0 > m1 ? m0 : m1;
    }
}

template <typename I>
static __global__ void maxpool_bwd_kernel(int batch, int h, int w, int c, const float *x,
                                          const float *dy, float *dx) {
    const I oh_n = h / 2, ow_n = w / 2, n = (I)batch * oh_n * ow_n * c;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        const I k = i % (I)c, pix = i / (I)c, ow = pix % ow_n, rest = pix / ow_n;
        const I oh = rest % oh_n, b = rest / oh_n;
        const I base = ((b * h + 2 * oh) * w + 2 * ow) * c + k;
        const I off[4] = {0, (I)c, (I)w * c, (I)w * c + c};
        float m = x[base];
        int at = 0;
        for (int j = 1; j < 4; j++) {
            float v = x[base + off[j]];
            if (v > m) m = v, at = j;
        }
        for (int j = 0; j < 4; j++)
            dx[base + off[j]] = j == at ? dy[i] : 0.0f;
    }
}

void cuda_maxpool_fwd(cudaStream_t stream, int batch, int h, int w, int c, const float *x,
                      float *y) {
    const size_t n = (size_t)batch * (h / 2) * (w / 2) * c;
    if (cuda_index32((size_t)batch * h * w * c))
        maxpool_fwd_kernel<unsigned><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(batch, h, w, c, x, y);
    else
        maxpool_fwd_kernel<size_t><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(batch, h, w, c, x, y);
    cudaCheck(cudaGetLastError());
}

void cuda_maxpool_bwd(cudaStream_t stream, int batch, int h, int w, int c, const float *x,
                      const float *dy, float *dx) {
    /* odd sizes leave a last row/column that no window covers: it gets zero */
    if ((h & 1) || (w & 1))
        cudaCheck(cudaMemsetAsync(dx, 0, (size_t)batch * h * w * c * sizeof(float), stream));
    const size_t n = (size_t)batch * (h / 2) * (w / 2) * c;
    if (cuda_index32((size_t)batch * h * w * c))
        maxpool_bwd_kernel<unsigned>
            <<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(batch, h, w, c, x, dy, dx);
    else
        maxpool_bwd_kernel<size_t>
            <<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(batch, h, w, c, x, dy, dx);
    cudaCheck(cudaGetLastError());
}
