/* im2col and col2im on NHWC tensors (zero padding, any stride). col2im gathers: one thread per
 * input element sums the column entries that read it, so no atomics and a fixed order. */
#include "kernels/cuda_ops.h"

static __global__ void im2col_kernel(conv_geom g, const float *x, float *col) {
    const size_t row_len = (size_t)g.kh * g.kw * g.in_c;
    const size_t n = (size_t)g.batch * g.out_h * g.out_w * row_len;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t pix = i / row_len;
        int r = (int)(i % row_len);
        int c = r % g.in_c, kj = (r / g.in_c) % g.kw, ki = r / (g.in_c * g.kw);
        int ow = (int)(pix % g.out_w), oh = (int)((pix / g.out_w) % g.out_h);
        int b = (int)(pix / ((size_t)g.out_w * g.out_h));
        const int st = g.stride > 1 ? g.stride : 1;
        int ih = oh * st - g.pad + ki, iw = ow * st - g.pad + kj;
        float v = 0.0f;
        if (ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w)
            v = x[(((size_t)b * g.in_h + ih) * g.in_w + iw) * g.in_c + c];
        col[i] = v;
    }
}

static __global__ void col2im_kernel(conv_geom g, const float *col, float *dx) {
    const size_t row_len = (size_t)g.kh * g.kw * g.in_c;
    const size_t n = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        int c = (int)(i % g.in_c);
        int iw = (int)((i / g.in_c) % g.in_w), ih = (int)((i / ((size_t)g.in_c * g.in_w)) % g.in_h);
        int b = (int)(i / ((size_t)g.in_c * g.in_w * g.in_h));
        const int st = g.stride > 1 ? g.stride : 1;
        float s = 0.0f;
        for (int ki = 0; ki < g.kh; ki++) {
            int oh = ih + g.pad - ki;
            if (oh < 0 || oh % st || oh / st >= g.out_h) continue;
            oh /= st;
            for (int kj = 0; kj < g.kw; kj++) {
                int ow = iw + g.pad - kj;
                if (ow < 0 || ow % st || ow / st >= g.out_w) continue;
                ow /= st;
                size_t pix = ((size_t)b * g.out_h + oh) * g.out_w + ow;
                s += col[pix * row_len + ((size_t)ki * g.kw + kj) * g.in_c + c];
            }
        }
        dx[i] = s;
    }
}

void cuda_im2col(cudaStream_t stream, conv_geom g, const float *x, float *col) {
    size_t n = (size_t)g.batch * g.out_h * g.out_w * g.kh * g.kw * g.in_c;
    im2col_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, x, col);
    cudaCheck(cudaGetLastError());
}

void cuda_col2im(cudaStream_t stream, conv_geom g, const float *col, float *dx) {
    size_t n = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
    col2im_kernel<<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, col, dx);
    cudaCheck(cudaGetLastError());
}
