/* im2col and col2im on NHWC tensors (zero padding, any stride). col2im gathers: one thread per
 * input element sums the column entries that read it (taps in row-major order), so no atomics
 * and a fixed order.
 *
 * Both are bound by memory, so each thread moves V = 4 channels at once (16-byte loads and stores)
 * when the channel count and the pointers allow it, else one; and the index arithmetic is done in
 * 32 bits when the element count fits (a 64-bit division is several times the instructions of a
 * 32-bit one, and there are five a element). */
#include "kernels/cuda_ops.h"

#include <stdint.h>

template <int V> struct vec;
template <> struct vec<1> {
    typedef float type;
    static __device__ type zero() {
        return 0.0f;
    }
    static __device__ void add(type &a, type b) {
        a += b;
    }
};
template <> struct vec<4> {
    typedef float4 type;
    static __device__ type zero() {
        return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    }
    static __device__ void add(type &a, type b) {
        a.x += b.x, a.y += b.y, a.z += b.z, a.w += b.w;
    }
};

/* element i of col in groups of V channels: col[i] = x at the pixel and channel it reads */
template <typename I, int V>
static __global__ void im2col_kernel(conv_geom g, const float *x, float *col) {
    typedef typename vec<V>::type T;
    const I cv = (I)(g.in_c / V), row = (I)g.kh * g.kw * cv;
    const I n = (I)g.batch * g.out_h * g.out_w * row;
    const int st = g.stride > 1 ? g.stride : 1;
    const T *xv = (const T *)x;
    T *colv = (T *)col;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I pix = i / row, r = i - pix * row;
        I tap = r / cv, c = r - tap * cv;
        int kj = (int)(tap % g.kw), ki = (int)(tap / g.kw);
        I pb = pix / g.out_w;
        int ow = (int)(pix - pb * g.out_w);
        int oh = (int)(pb % g.out_h);
        I b = pb / g.out_h;
        int ih = oh * st - g.pad + ki, iw = ow * st - g.pad + kj;
        T v = vec<V>::zero();
        if (ih >= 0 && ih < g.in_h && iw >= 0 && iw < g.in_w)
            v = xv[((b * g.in_h + ih) * g.in_w + iw) * cv + c];
        colv[i] = v;
    }
}

template <typename I, int V>
static __global__ void col2im_kernel(conv_geom g, const float *col, float *dx) {
    typedef typename vec<V>::type T;
    const I cv = (I)(g.in_c / V), row = (I)g.kh * g.kw * cv;
    const I n = (I)g.batch * g.in_h * g.in_w * cv;
    const int st = g.stride > 1 ? g.stride : 1;
    const T *colv = (const T *)col;
    T *dxv = (T *)dx;
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I p = i / cv, c = i - p * cv;
        I pb = p / g.in_w;
        int iw = (int)(p - pb * g.in_w);
        int ih = (int)(pb % g.in_h);
        I b = pb / g.in_h;
        T s = vec<V>::zero();
        for (int ki = 0; ki < g.kh; ki++) {
            int oh = ih + g.pad - ki;
            if (oh < 0 || oh % st || oh / st >= g.out_h) continue;
            oh /= st;
            for (int kj = 0; kj < g.kw; kj++) {
                int ow = iw + g.pad - kj;
                if (ow < 0 || ow % st || ow / st >= g.out_w) continue;
                ow /= st;
                I pix = (b * g.out_h + oh) * g.out_w + ow;
                vec<V>::add(s, colv[pix * row + (I)(ki * g.kw + kj) * cv + c]);
            }
        }
        dxv[i] = s;
    }
}

/* V = 4 when the channels come in fours and both pointers are 16-byte aligned */
static int vec4(conv_geom g, const void *a, const void *b) {
    return g.in_c % 4 == 0 && ((uintptr_t)a | (uintptr_t)b) % 16 == 0;
}

template <int V>
static void launch_im2col(cudaStream_t stream, conv_geom g, const float *x, float *col) {
    size_t n = (size_t)g.batch * g.out_h * g.out_w * g.kh * g.kw * (g.in_c / V);
    size_t nx = (size_t)g.batch * g.in_h * g.in_w * (g.in_c / V);
    if (n < (1u << 31) && nx < (1u << 31))
        im2col_kernel<uint32_t, V><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, x, col);
    else
        im2col_kernel<size_t, V><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, x, col);
    cudaCheck(cudaGetLastError());
}

template <int V>
static void launch_col2im(cudaStream_t stream, conv_geom g, const float *col, float *dx) {
    size_t n = (size_t)g.batch * g.in_h * g.in_w * (g.in_c / V);
    size_t ncol = (size_t)g.batch * g.out_h * g.out_w * g.kh * g.kw * (g.in_c / V);
    if (n < (1u << 31) && ncol < (1u << 31))
        col2im_kernel<uint32_t, V><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, col, dx);
    else
        col2im_kernel<size_t, V><<<cuda_grid(n), CUDA_BLOCK, 0, stream>>>(g, col, dx);
    cudaCheck(cudaGetLastError());
}

void cuda_im2col(cudaStream_t stream, conv_geom g, const float *x, float *col) {
    if (vec4(g, x, col))
        launch_im2col<4>(stream, g, x, col);
    else
        launch_im2col<1>(stream, g, x, col);
}

void cuda_col2im(cudaStream_t stream, conv_geom g, const float *col, float *dx) {
    if (vec4(g, col, dx))
        launch_col2im<4>(stream, g, col, dx);
    else
        launch_col2im<1>(stream, g, col, dx);
}
