/* 2x2 max pooling, stride 2, NHWC; one thread per output element. The backward pass gives the
 * gradient to the first maximum of the window (order 00, 01, 10, 11), like the CPU reference. */
#include "kernels/cuda_ops.h"

static __global__ void maxpool_fwd_kernel(int batch, int h, int w, int c, const float *x,
                                          float *y) {
    const int oh_n = h / 2, ow_n = w / 2;
    const size_t n = (size_t)batch * oh_n * ow_n * c;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int k = (int)(i % c);
        size_t pix = i / c;
        int ow = (int)(pix % ow_n), oh = (int)((pix / ow_n) % oh_n),
            b = (int)(pix / ((size_t)ow_n * oh_n));
        const float *p = x + (((size_t)b * h + 2 * oh) * w + 2 * ow) * c + k;
        float a = p[0], q = p[c], e = p[(size_t)w * c], f = p[(size_t)w * c + c];
        float m0 = a > q ? a : q, m1 = e > f ? e : f;
        y[i] = m0 > m1 ? m0 : m1;
    }
}

static __global__ void maxpool_bwd_kernel(int batch, int h, int w, int c, const float *x,
                                          const float *dy, float *dx) {
    const int oh_n = h / 2, ow_n = w / 2;
    const size_t n = (size_t)batch * oh_n * ow_n * c;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int k = (int)(i % c);
        size_t pix = i / c;
        int ow = (int)(pix % ow_n), oh = (int)((pix / ow_n) % oh_n),
            b = (int)(pix / ((size_t)ow_n * oh_n));
        size_t base = (((size_t)b * h + 2 * oh) * w + 2 * ow) * c + k;
        const size_t off[4] = {0, (size_t)c, (size_t)w * c, (size_t)w * c + c};
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
    size_t n = (size_t)batch * (h / 2) * (w / 2) * c;
    maxpool_fwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(batch, h, w, c, x, y);
    cudaCheck(cudaGetLastError());
}

void cuda_maxpool_bwd(cudaStream_t stream, int batch, int h, int w, int c, const float *x,
                      const float *dy, float *dx) {
    /* odd sizes leave a last row/column that no window covers: it gets zero */
    if ((h & 1) || (w & 1))
        cudaCheck(cudaMemsetAsync(dx, 0, (size_t)batch * h * w * c * sizeof(float), stream));
    size_t n = (size_t)batch * (h / 2) * (w / 2) * c;
    maxpool_bwd_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(batch, h, w, c, x, dy, dx);
    cudaCheck(cudaGetLastError());
}
