/* CPU backend: GEMM through cblas (OpenBLAS, multi-threaded); convolutions direct where the CPU
 * has AVX-512 or AVX2 (conv_direct.h), by Winograd's F(4 x 4, 3 x 3) for wide 3 x 3 ones
 * (conv_winograd.h); the other ops are plain loops written so that the compiler
 * vectorizes them, split over OpenBLAS's thread count where each output depends on its own
 * element, row, sample or column only (cpu_par.h: the bits of one thread). These are the
 * reference implementations. */
#include "kernels/device_impl.h"

#include "common/status.h"
#include "kernels/conv_direct.h"
#include "kernels/conv_winograd.h"
#include "kernels/cpu_par.h"
#include "kernels/cpu_vec.h"

#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float *cpu_alloc(device *dev, size_t count) {
    (void)dev;
    /* 64-byte alignment for the vector loops and OpenBLAS */
    size_t bytes = ((count ? count : 1) * sizeof(float) + 63) / 64 * 64;
    float *p = aligned_alloc(64, bytes);
    if (!p) {
        fprintf(stderr, "syncsim: out of memory allocating %zu floats on the CPU\n", count);
        abort();
    }
    memset(p, 0, bytes);
    return p;
}

static void cpu_free(device *dev, float *p) {
    (void)dev;
    free(p);
}

static void memmove_loop(device *dev, float *dst, const float *src, size_t count) {
    (void)dev;
    memmove(dst, src, count * sizeof(float));
}

static void cpu_sync(device *dev) {
    (void)dev;
}

static void cpu_gemm(device *dev, int trans_a, int trans_b, int m, int n, int k, float alpha,
                     const float *a, int lda, const float *b, int ldb, float beta, float *c,
                     int ldc) {
    (void)dev;
    cpu_par_quiet();
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

static SS_CPU_CLONES void bias_add_loop(device *dev, int rows, int cols, const float *bias,
                                        float *y) {
    (void)dev;
    for (int r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * cols;
        for (int c = 0; c < cols; c++)
            yr[c] += bias[c];
    }
}

/* db's columns [c0, c1): each the sum of its column over the rows, in row order */
static SS_CPU_CLONES void bias_grad_cols(int rows, int cols, const float *dy, float beta, float *db,
                                         int c0, int c1) {
    if (beta == 0.0f)
        for (int c = c0; c < c1; c++)
            db[c] = 0.0f;
    for (int r = 0; r < rows; r++) {
        const float *dyr = dy + (size_t)r * cols;
        for (int c = c0; c < c1; c++)
            db[c] += dyr[c];
    }
}

static SS_CPU_CLONES void bias_relu_loop(device *dev, int rows, int cols, const float *bias,
                                         float *y) {
    (void)dev;
    for (int r = 0; r < rows; r++) {
        float *yr = y + (size_t)r * cols;
        for (int c = 0; c < cols; c++) {
            float v = yr[c] + bias[c];
            yr[c] = v > 0.0f ? v : 0.0f;
        }
    }
}

static SS_CPU_CLONES void relu_fwd_loop(device *dev, size_t n, const float *x, float *y) {
    (void)dev;
    for (size_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

static SS_CPU_CLONES void relu_bwd_loop(device *dev, size_t n, const float *y, const float *dy,
                                        float *dx) {
    (void)dev;
    for (size_t i = 0; i < n; i++) {
        float g = dy[i]; /* loaded unconditionally so that the loop vectorizes */
        dx[i] = y[i] > 0.0f ? g : 0.0f;
    }
}

/* For output column ow, the kernel columns kj with 0 <= ow stride - pad + kj < in_w form one
 * contiguous run [kj0, kj1), which is also contiguous in NHWC input: copy it in one go. */
static void conv_col_range(const conv_geom *g, int ow, int *kj0, int *kj1) {
    int iw0 = ow * conv_stride(g) - g->pad;
    *kj0 = iw0 < 0 ? -iw0 : 0;
    int end = g->in_w - iw0;
    *kj1 = end < g->kw ? end : g->kw;
    if (*kj1 < *kj0) *kj1 = *kj0;
}

/* Copies and zero fills as plain loops rather than memcpy/memset calls: the runs are short
 * (kw * in_c floats: 5 for the cnn's conv1, 160 for conv2) and a call costs more than the copy.
 * GCC would turn the loops back into those calls (loop distribution), hence the attribute. */
#if defined(__GNUC__) && !defined(__clang__)
#define SS_NO_LIBCALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define SS_NO_LIBCALLS
#endif

SS_INLINE void copy_floats(float *restrict dst, const float *restrict src, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i];
}

SS_INLINE void zero_floats(float *restrict dst, size_t n) {
    for (size_t i = 0; i < n; i++)
        dst[i] = 0.0f;
}

/* One row of col: output pixel (oh, ow) of sample xb, kernel rows one after the other. */
SS_INLINE void im2col_row(const conv_geom *g, const float *xb, int oh, int ow, float *row) {
    const int c = g->in_c;
    const size_t run = (size_t)g->kw * c;
    int kj0, kj1;
    conv_col_range(g, ow, &kj0, &kj1);
    for (int ki = 0; ki < g->kh; ki++) {
        float *dst = row + (size_t)ki * run;
        const int s = conv_stride(g);
        int ih = oh * s - g->pad + ki;
        if (ih < 0 || ih >= g->in_h || kj1 == kj0) {
            zero_floats(dst, run);
            continue;
        }
        zero_floats(dst, (size_t)kj0 * c);
        const float *src = xb + ((size_t)ih * g->in_w + (ow * s - g->pad + kj0)) * c;
        copy_floats(dst + (size_t)kj0 * c, src, (size_t)(kj1 - kj0) * c);
        zero_floats(dst + (size_t)kj1 * c, (size_t)(g->kw - kj1) * c);
    }
}

static SS_CPU_CLONES SS_NO_LIBCALLS void im2col_loop(device *dev, const conv_geom *g,
                                                     const float *x, float *col) {
    (void)dev;
    const size_t row_len = (size_t)g->kh * g->kw * g->in_c;
    for (int b = 0; b < g->batch; b++) {
        const float *xb = x + (size_t)b * g->in_h * g->in_w * g->in_c;
        for (int oh = 0; oh < g->out_h; oh++)
            for (int ow = 0; ow < g->out_w; ow++)
                im2col_row(g, xb, oh, ow,
                           col + (((size_t)b * g->out_h + oh) * g->out_w + ow) * row_len);
    }
}

/* dx at input pixel (ih, iw) of one sample: the sum of the col entries that read it (with a
 * stride, the kernel offsets that land on an output pixel), gathered
 * in registers and written once (no zeroing pass, no read-modify-write of dx). The terms are
 * added in the order of their output pixels (oh, ow) ascending, i.e. kernel offsets descending,
 * starting from 0: the same sums, bit for bit, as scattering every col row into a zeroed dx. */
SS_INLINE void col2im_pixel(const conv_geom *g, const float *colb, int ih, int iw, float *out) {
    enum { BLOCK = 64 };
    const int c = g->in_c, s = conv_stride(g);
    const size_t row_len = (size_t)g->kh * g->kw * c;
    for (int c0 = 0; c0 < c; c0 += BLOCK) {
        const int n = c - c0 < BLOCK ? c - c0 : BLOCK;
        float acc[BLOCK];
        zero_floats(acc, (size_t)n);
        for (int ki = g->kh - 1; ki >= 0; ki--) {
            int oh = ih + g->pad - ki;
            if (oh < 0 || oh % s || oh / s >= g->out_h) continue;
            oh /= s;
            for (int kj = g->kw - 1; kj >= 0; kj--) {
                int ow = iw + g->pad - kj;
                if (ow < 0 || ow % s || ow / s >= g->out_w) continue;
                ow /= s;
                const float *src = colb + ((size_t)oh * g->out_w + ow) * row_len +
                                   ((size_t)ki * g->kw + kj) * c + c0;
                for (int i = 0; i < n; i++)
                    acc[i] += src[i];
            }
        }
        copy_floats(out + c0, acc, (size_t)n);
    }
}

static SS_CPU_CLONES SS_NO_LIBCALLS void col2im_loop(device *dev, const conv_geom *g,
                                                     const float *col, float *dx) {
    (void)dev;
    const size_t in_pixels = (size_t)g->in_h * g->in_w, out_pixels = (size_t)g->out_h * g->out_w;
    const size_t row_len = (size_t)g->kh * g->kw * g->in_c;
    for (int b = 0; b < g->batch; b++) {
        const float *colb = col + (size_t)b * out_pixels * row_len;
        float *xb = dx + (size_t)b * in_pixels * g->in_c;
        for (int ih = 0; ih < g->in_h; ih++)
            for (int iw = 0; iw < g->in_w; iw++)
                col2im_pixel(g, colb, ih, iw, xb + ((size_t)ih * g->in_w + iw) * g->in_c);
    }
}

static SS_CPU_CLONES void maxpool_fwd_loop(device *dev, int batch, int h, int w, int c,
                                           const float *x, float *y) {
    (void)dev;
    const int oh_n = h / 2, ow_n = w / 2;
    for (int b = 0; b < batch; b++) {
        for (int oh = 0; oh < oh_n; oh++) {
            for (int ow = 0; ow < ow_n; ow++) {
                const float *p00 = x + (((size_t)b * h + 2 * oh) * w + 2 * ow) * c;
                const float *p01 = p00 + c, *p10 = p00 + (size_t)w * c, *p11 = p10 + c;
                float *out = y + (((size_t)b * oh_n + oh) * ow_n + ow) * c;
                for (int k = 0; k < c; k++) {
                    float m0 = p00[k] > p01[k] ? p00[k] : p01[k];
                    float m1 = p10[k] > p11[k] ? p10[k] : p11[k];
                    out[k] = m0 > m1 ? m0 : m1;
                }
            }
        }
    }
}

/* One 2x2 window over c channels: the first maximum in the order 00, 01, 10, 11 takes the
 * gradient (r is what is left to hand out). Selects only, so that the loop vectorizes. */
SS_INLINE void maxpool_bwd_window(int c, const float *restrict p00, const float *restrict p01,
                                  const float *restrict p10, const float *restrict p11,
                                  const float *restrict g, float *restrict d00, float *restrict d01,
                                  float *restrict d10, float *restrict d11) {
    for (int k = 0; k < c; k++) {
        float a = p00[k], q = p01[k], e = p10[k], f = p11[k], r = g[k];
        float m0 = a > q ? a : q, m1 = e > f ? e : f;
        float m = m0 > m1 ? m0 : m1;
        d00[k] = a == m ? r : 0.0f;
        r = a == m ? 0.0f : r;
        d01[k] = q == m ? r : 0.0f;
        r = q == m ? 0.0f : r;
        d10[k] = e == m ? r : 0.0f;
        r = e == m ? 0.0f : r;
        d11[k] = r;
    }
}

/* The same window followed by the ReLU's backward pass (the inputs are a ReLU's outputs): each
 * gradient is kept only where its input is positive, as relu_bwd would. */
SS_INLINE void maxpool_relu_bwd_window(int c, const float *restrict p00, const float *restrict p01,
                                       const float *restrict p10, const float *restrict p11,
                                       const float *restrict g, float *restrict d00,
                                       float *restrict d01, float *restrict d10,
                                       float *restrict d11) {
    for (int k = 0; k < c; k++) {
        float a = p00[k], q = p01[k], e = p10[k], f = p11[k], r = g[k];
        float m0 = a > q ? a : q, m1 = e > f ? e : f;
        float m = m0 > m1 ? m0 : m1;
        float v00 = a == m ? r : 0.0f;
        r = a == m ? 0.0f : r;
        float v01 = q == m ? r : 0.0f;
        r = q == m ? 0.0f : r;
        float v10 = e == m ? r : 0.0f;
        r = e == m ? 0.0f : r;
        d00[k] = a > 0.0f ? v00 : 0.0f;
        d01[k] = q > 0.0f ? v01 : 0.0f;
        d10[k] = e > 0.0f ? v10 : 0.0f;
        d11[k] = f > 0.0f ? r : 0.0f;
    }
}

typedef void (*pool_window_fn)(int c, const float *restrict p00, const float *restrict p01,
                               const float *restrict p10, const float *restrict p11,
                               const float *restrict g, float *restrict d00, float *restrict d01,
                               float *restrict d10, float *restrict d11);

SS_INLINE void maxpool_bwd_with(pool_window_fn window, int batch, int h, int w, int c,
                                const float *x, const float *dy, float *dx) {
    const int oh_n = h / 2, ow_n = w / 2;
    const size_t row = (size_t)w * c;
    if ((h & 1) || (w & 1)) memset(dx, 0, (size_t)batch * h * row * sizeof(float));
    for (int b = 0; b < batch; b++) {
        for (int oh = 0; oh < oh_n; oh++) {
            for (int ow = 0; ow < ow_n; ow++) {
                size_t base = (((size_t)b * h + 2 * oh) * w + 2 * ow) * c;
                const float *g = dy + (((size_t)b * oh_n + oh) * ow_n + ow) * c;
                window(c, x + base, x + base + c, x + base + row, x + base + row + c, g, dx + base,
                       dx + base + c, dx + base + row, dx + base + row + c);
            }
        }
    }
}

static SS_CPU_CLONES void maxpool_bwd_loop(device *dev, int batch, int h, int w, int c,
                                           const float *x, const float *dy, float *dx) {
    (void)dev;
    maxpool_bwd_with(maxpool_bwd_window, batch, h, w, c, x, dy, dx);
}

static SS_CPU_CLONES void maxpool_relu_bwd_loop(device *dev, int batch, int h, int w, int c,
                                                const float *x, const float *dy, float *dx) {
    (void)dev;
    maxpool_bwd_with(maxpool_relu_bwd_window, batch, h, w, c, x, dy, dx);
}

/* The conv -> ReLU -> max-pool block, sample by sample, through the direct convolution's hooks:
 * the forward pass pools a sample's conv output while it is in cache (the output itself stays in
 * the workspace) and keeps, per pooled value, a code: which input of the window took the maximum
 * (the first in the order 00, 01, 10, 11, as maxpool_bwd does) or 4 where that maximum is not
 * positive (the ReLU's mask). The backward pass turns the pooling's output gradient into the
 * conv's from the codes: 1 byte read per pooled value instead of 4 floats of conv output, the
 * same values as maxpool_relu_bwd. */
enum { POOL_CODE_NONE = 4 };

SS_INLINE void pool_codes_fwd_window(int c, const float *restrict p00, const float *restrict p01,
                                     const float *restrict p10, const float *restrict p11,
                                     float *restrict out, uint8_t *restrict codes) {
    for (int k = 0; k < c; k++) {
        float a = p00[k], q = p01[k], e = p10[k], f = p11[k];
        float m0 = a > q ? a : q, m1 = e > f ? e : f;
        float m = m0 > m1 ? m0 : m1;
        uint8_t code = a == m ? 0 : q == m ? 1 : e == m ? 2 : 3;
        out[k] = m;
        codes[k] = m > 0.0f ? code : (uint8_t)POOL_CODE_NONE;
    }
}

static SS_CPU_CLONES void pool_codes_fwd(int h, int w, int c, const float *y, float *pooled,
                                         uint8_t *codes) {
    const size_t row = (size_t)w * c;
    for (int oh = 0; oh < h / 2; oh++)
        for (int ow = 0; ow < w / 2; ow++) {
            const float *p00 = y + 2 * oh * row + (size_t)2 * ow * c, *p10 = p00 + row;
            const size_t o = ((size_t)oh * (w / 2) + ow) * c;
            pool_codes_fwd_window(c, p00, p00 + c, p10, p10 + c, pooled + o, codes + o);
        }
}

SS_INLINE void pool_codes_bwd_window(int c, const uint8_t *restrict codes, const float *restrict g,
                                     float *restrict d00, float *restrict d01, float *restrict d10,
                                     float *restrict d11) {
    for (int k = 0; k < c; k++) {
        uint8_t code = codes[k];
        float r = g[k];
        d00[k] = code == 0 ? r : 0.0f;
        d01[k] = code == 1 ? r : 0.0f;
        d10[k] = code == 2 ? r : 0.0f;
        d11[k] = code == 3 ? r : 0.0f;
    }
}

static SS_CPU_CLONES void pool_codes_bwd(int h, int w, int c, const uint8_t *codes,
                                         const float *dpooled, float *dy) {
    const size_t row = (size_t)w * c;
    if ((h & 1) || (w & 1)) memset(dy, 0, (size_t)h * row * sizeof(float));
    for (int oh = 0; oh < h / 2; oh++)
        for (int ow = 0; ow < w / 2; ow++) {
            float *d00 = dy + 2 * oh * row + (size_t)2 * ow * c, *d10 = d00 + row;
            const size_t o = ((size_t)oh * (w / 2) + ow) * c;
            pool_codes_bwd_window(c, codes + o, dpooled + o, d00, d00 + c, d10, d10 + c);
        }
}

typedef struct pool_hook {
    const conv_geom *g;
    int oc;
    uint8_t *codes_out;      /* (B, out_h/2, out_w/2, oc): the forward pass's */
    const uint8_t *codes_in; /* the same, read by the backward pass */
    const float *pool_dy;
    float *pool_y;
} pool_hook;

static size_t pooled_size(const conv_geom *g, int oc) {
    return (size_t)(g->out_h / 2) * (g->out_w / 2) * oc;
}

static void pool_output_done(void *ctx, int b, const float *y_b) {
    pool_hook *h = ctx;
    const size_t n = pooled_size(h->g, h->oc);
    pool_codes_fwd(h->g->out_h, h->g->out_w, h->oc, y_b, h->pool_y + b * n, h->codes_out + b * n);
}

static void pool_output_grad(void *ctx, int b, float *dy_b) {
    pool_hook *h = ctx;
    const size_t n = pooled_size(h->g, h->oc);
    pool_codes_bwd(h->g->out_h, h->g->out_w, h->oc, h->codes_in + b * n, h->pool_dy + b * n, dy_b);
}

/* The stride-1 layers' passes: by F(4 x 4, 3 x 3) Winograd where it applies (conv_winograd.h),
 * else direct; a conv -> ReLU -> max-pool block (pool_y, pool_dy) stays direct, whose passes
 * pool and unpool each sample while it is in cache. vgg:11's 14 x 14 and 7 x 7 convolutions at
 * batch 64 on one thread, forward + backward, direct -> Winograd: 48.3 -> 32.4, 42.6 -> 35.2 and
 * 84.7 -> 63.4 ms; with the products on the register tiles, resnet's 16-, 32- and 64-channel
 * ones too (docs/PERFORMANCE.md, "Winograd's minimal filtering"). */
static size_t conv_ws_floats(const conv_geom *g, int oc) {
    const size_t d = conv_direct_workspace_floats(g, oc);
    if (!conv_winograd_supports(g, oc)) return d;
    const size_t w = conv_winograd_workspace_floats(g, oc);
    return w > d ? w : d;
}

static size_t cpu_conv_direct_floats(device *dev, const conv_geom *g, int oc, int need_dx) {
    (void)dev;
    return conv_direct_supports(g, oc, need_dx) ? conv_ws_floats(g, oc) : 0;
}

static void cpu_bias_grad(device *dev, int rows, int cols, const float *dy, float beta, float *db);

static void cpu_conv_fwd(device *dev, const conv_geom *g, int oc, const float *x, const float *w,
                         const float *bias, int relu, float *ws, uint8_t *codes, float *y,
                         float *pool_y) {
    (void)dev;
    if (!pool_y && conv_winograd_supports(g, oc)) {
        conv_winograd_forward(g, oc, x, w, bias, relu, ws, y, openblas_get_num_threads());
        return;
    }
    pool_hook h = {g, oc, codes, NULL, NULL, pool_y};
    conv_direct_hooks hooks = {&h, 1, pool_output_done, NULL};
    conv_direct_forward(g, oc, x, w, bias, relu, ws, y, pool_y ? &hooks : NULL,
                        openblas_get_num_threads());
}

static void cpu_conv_bwd(device *dev, const conv_geom *g, int oc, const float *x, const float *y,
                         const float *dy, const float *pool_dy, const float *w, float *ws,
                         const uint8_t *codes, float *dw, float *db, float *dx) {
    (void)y;
    if (!pool_dy && conv_winograd_supports(g, oc)) {
        conv_winograd_backward(g, oc, x, dy, w, ws, dw, dx, openblas_get_num_threads());
        cpu_bias_grad(dev, g->batch * g->out_h * g->out_w, oc, dy, 0.0f, db);
        return;
    }
    pool_hook h = {g, oc, NULL, codes, pool_dy, NULL};
    conv_direct_hooks hooks = {&h, 0, NULL, pool_output_grad};
    conv_direct_backward(g, oc, x, dy, w, ws, dw, db, dx, pool_dy ? &hooks : NULL,
                         openblas_get_num_threads());
}

/* Strided convolutions (the im2col path's, whose layers need the data gradient, which the direct
 * passes compute at stride 1 only): the forward pass and the filter gradient by the direct passes
 * at the stride (conv_direct_supports_strided), without columns; the data gradient stays a GEMM
 * and col2im. ResNet-20's two stride-2 convolutions ran at 55 and 49 % of the SGEMM's rate on one
 * thread that way, and slower on two than on one. A workspace per call (a few hundred KB). */
static float *strided_ws(const conv_geom *g, int oc) {
    const size_t bytes = (conv_direct_workspace_floats(g, oc) * sizeof(float) + 63) / 64 * 64;
    float *ws = aligned_alloc(64, bytes);
    SS_ASSERT(ws != NULL);
    return ws;
}

static int cpu_conv_implicit(device *dev, const conv_geom *g, int oc, const float *x,
                             const float *w, float *y, int always) {
    (void)dev, (void)always;
    if (conv_stride(g) == 1 || !conv_direct_supports_strided(g, oc)) return 0;
    float *ws = strided_ws(g, oc);
    conv_direct_forward(g, oc, x, w, NULL, 0, ws, y, NULL, openblas_get_num_threads());
    free(ws);
    return 1;
}

/* The strided data gradient without columns (conv_direct_data_strided): ResNet-20's two stride-2
 * convolutions took 3.6 and 2.7 ms for it through a GEMM of 32 or 64 output channels and col2im,
 * twice their forward passes, at batch 64 on one thread. */
static int cpu_conv_implicit_dx(device *dev, const conv_geom *g, int oc, const float *dy,
                                const float *w, float *dx, int always) {
    (void)dev, (void)always;
    if (!conv_direct_supports_strided_dx(g, oc)) return 0;
    conv_direct_data_strided(g, oc, dy, w, dx, openblas_get_num_threads());
    return 1;
}

static int cpu_conv_implicit_dw(device *dev, const conv_geom *g, int oc, const float *x,
                                const float *dy, float *dw, int always) {
    (void)dev, (void)always;
    if (conv_stride(g) == 1 || !conv_direct_supports_strided(g, oc)) return 0;
    float *ws = strided_ws(g, oc), *db = ss_malloc((size_t)oc * sizeof(float));
    conv_direct_backward(g, oc, x, dy, NULL, ws, dw, db, NULL, NULL, openblas_get_num_threads());
    free(db);
    free(ws);
    return 1;
}

/* ---- batch normalization: per column of (rows, cols), sums in double over blocks of rows ---- */

/* Batch norm's affine pass, y = x scale + shift per column, then the ReLU when relu (written as
 * relu_fwd writes it, so that a fused ReLU gives the bits of the two layers). */
SS_INLINE void bn_affine(int rows, int cols, const float *x, const float *scale, const float *shift,
                         int relu, float *y) {
    if (relu)
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++) {
                const float v = x[(size_t)r * cols + c] * scale[c] + shift[c];
                y[(size_t)r * cols + c] = v > 0.0f ? v : 0.0f;
            }
    else
        for (int r = 0; r < rows; r++)
            for (int c = 0; c < cols; c++)
                y[(size_t)r * cols + c] = x[(size_t)r * cols + c] * scale[c] + shift[c];
}

/* dy at element i, or (masked, a constant at each call) 0 where the fused ReLU's output is not
 * positive (relu_bwd's rule). */
SS_INLINE float bn_grad_at(const float *dy, const float *y_mask, int masked, size_t i) {
    float g = dy[i];
    if (!masked) return g;
    /* the select as a bitwise and (+0 where dropped, as relu_bwd), which the sums' loop
     * vectorizes where a conditional became a branch */
    uint32_t bits;
    memcpy(&bits, &g, sizeof bits);
    bits &= y_mask[i] > 0.0f ? 0xffffffffu : 0u;
    memcpy(&g, &bits, sizeof g);
    return g;
}

/* Narrow batch norms (16 and 32 channels: resnet's first stages) with the sums of a whole row's
 * columns held in vector registers over a block's rows (bn_block_sums). A column's terms are added
 * in row order, as in the loop over the columns of each row, so the sums are the same bits; that
 * loop keeps them in memory (GCC does not vectorize it with the sums in registers), and on 16 or
 * 32 columns each row then waits on the stores of the one before: 2 to 2.5x slower. From 64
 * columns on, a row's columns are enough independent chains and the plain loop is as fast. */
typedef double bn_v8d __attribute__((vector_size(64)));
typedef float bn_v8f __attribute__((vector_size(32)));
typedef int32_t bn_v8i __attribute__((vector_size(32)));
#define BN_NARROW_MAX 4 /* vectors of 8 columns */
/* the pooled sums' vectors of 8 columns at most: 32 columns, with their means and deviations 16
 * registers (64 columns spilled) */
#define BN_POOL_NV 4

/* 8 floats from p, widened (a macro: a function returning the vector warns of its ABI) */
#define BN_LOAD8(v, p)                                                                             \
    do {                                                                                           \
        bn_v8f f_;                                                                                 \
        memcpy(&f_, (p), sizeof f_);                                                               \
        (v) = __builtin_convertvector(f_, bn_v8d);                                                 \
    } while (0)

/* sum[c] and sq[c] = the sums of x and x^2 over the rows, in double; nv = cols / 8, a constant at
 * each call */
SS_INLINE void bn_sums_narrow(int rows, int nv, const float *x, double *sum, double *sq) {
    bn_v8d s[BN_NARROW_MAX] = {{0}}, q[BN_NARROW_MAX] = {{0}};
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < nv; j++) {
            bn_v8d v;
            BN_LOAD8(v, x + ((size_t)r * nv + j) * 8);
            s[j] += v;
            q[j] += v * v;
        }
    for (int j = 0; j < nv; j++) {
        memcpy(sum + 8 * j, &s[j], sizeof s[j]);
        memcpy(sq + 8 * j, &q[j], sizeof q[j]);
    }
}

/* sum_dy[c] and sum_dyx[c] = the sums of g and g x-hat over the rows, in double, g being dy or
 * (masked) +0 where y_mask is not positive (bn_grad_at); as bn_sums_narrow */
SS_INLINE void bn_bwd_sums_narrow(int rows, int nv, const float *x, const float *dy,
                                  const float *y_mask, int masked, const float *save_mean,
                                  const float *save_invstd, double *sum_dy, double *sum_dyx) {
    bn_v8d mean[BN_NARROW_MAX], invstd[BN_NARROW_MAX];
    bn_v8d s[BN_NARROW_MAX] = {{0}}, q[BN_NARROW_MAX] = {{0}};
    for (int j = 0; j < nv; j++) {
        BN_LOAD8(mean[j], save_mean + 8 * j);
        BN_LOAD8(invstd[j], save_invstd + 8 * j);
    }
    const bn_v8f zero = {0};
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < nv; j++) {
            const size_t i = ((size_t)r * nv + j) * 8;
            bn_v8f gf;
            memcpy(&gf, dy + i, sizeof gf);
            if (masked) {
                bn_v8f m;
                memcpy(&m, y_mask + i, sizeof m);
                gf = (bn_v8f)((bn_v8i)gf & (m > zero));
            }
            const bn_v8d g = __builtin_convertvector(gf, bn_v8d);
            bn_v8d xv;
            BN_LOAD8(xv, x + i);
            s[j] += g;
            q[j] += g * ((xv - mean[j]) * invstd[j]);
        }
    for (int j = 0; j < nv; j++) {
        memcpy(sum_dy + 8 * j, &s[j], sizeof s[j]);
        memcpy(sum_dyx + 8 * j, &q[j], sizeof q[j]);
    }
}

/* ---- batch norm's passes split over threads: the sums by blocks of rows, the affine and
 * data-gradient passes by rows ---- */

/* The sums over the rows are taken in blocks of rows whose size depends on the row count only
 * (cpu_bn_block_rows, device_impl.h): each block's sums in row order, then the blocks' sums added
 * in block order. A part of the pass takes whole items, an item being a block's rows of up to
 * BN_GROUP_COLS columns (so that wide rows split by columns too), so any number of threads gives
 * the same bits. Sums over all the rows in order (the earlier form) kept every batch norm of
 * ResNet-20 (16 to 64 columns) on one thread: 11.7 ms of an 80.5 ms step on 2 threads. */
enum { BN_BLOCK_ROWS = 256, BN_MAX_BLOCKS = 1024, BN_GROUP_COLS = 128 };

int cpu_bn_block_rows(int rows) {
    const int unit = BN_BLOCK_ROWS * BN_MAX_BLOCKS;
    return BN_BLOCK_ROWS * ((rows + unit - 1) / unit);
}

typedef struct bn_job {
    int rows, cols, relu, masked;
    const float *x, *dy, *y_mask, *scale, *shift, *mean, *invstd, *k, *a, *b;
    double *s1, *s2;
    float *y;
    int block_rows, groups, bwd;
    double *part; /* (blocks, 2, cols): each block's two sums */
    /* a max-pool after (bn_pool_*): the rows are (batch, h, w) pixels, and the output gradient
     * comes from the pooling's, pool_dy, through the codes: a pixel takes its window's value
     * where its window's code names it, +0 elsewhere (maxpool_bwd's values masked as relu_bwd
     * masks them), and +0 where no window covers it (odd h or w) */
    const float *pool_dy;
    const uint8_t *codes;
    int h, w;
} bn_job;

/* The pixel of row r (b, hh, ww) and the window that covers it: *win the offset of its pooled
 * values (cols each), *pos its place in the window (00, 01, 10, 11: 0 to 3); 0 where no window
 * covers it (odd h or w). */
typedef struct bn_pixel {
    size_t b;
    int hh, ww;
} bn_pixel;

SS_INLINE bn_pixel bn_pixel_of(const bn_job *j, size_t r) {
    const size_t hw = (size_t)j->h * j->w;
    const int p = (int)(r % hw);
    return (bn_pixel){r / hw, p / j->w, p % j->w};
}

SS_INLINE void bn_pixel_next(const bn_job *j, bn_pixel *px) {
    if (++px->ww == j->w) {
        px->ww = 0;
        if (++px->hh == j->h) px->hh = 0, px->b++;
    }
}

SS_INLINE int bn_pixel_window(const bn_job *j, const bn_pixel *px, size_t *win, int *pos) {
    const int oh_n = j->h / 2, ow_n = j->w / 2;
    if (px->hh >= 2 * oh_n || px->ww >= 2 * ow_n) return 0;
    *win = ((px->b * oh_n + (size_t)(px->hh / 2)) * ow_n + (size_t)(px->ww / 2)) * j->cols;
    *pos = (px->hh & 1) * 2 + (px->ww & 1);
    return 1;
}

/* bn_bwd_sums_narrow's sums for the pooled gradient (bn_job), formed row by row: rows [r0, r0 +
 * rows) of a block, columns [c0, c0 + 8 nv), nv a constant at each call; each column's terms in
 * row order, so the same bits as bn_bwd_sums_cols over the gradient formed in memory */
SS_INLINE void bn_pool_bwd_sums_narrow(const bn_job *j, size_t r0, int rows, int c0, int nv,
                                       double *sum_dy, double *sum_dyx) {
    bn_v8d mean[BN_POOL_NV], invstd[BN_POOL_NV];
    bn_v8d s[BN_POOL_NV] = {{0}}, q[BN_POOL_NV] = {{0}};
    for (int v = 0; v < nv; v++) {
        BN_LOAD8(mean[v], j->mean + c0 + 8 * v);
        BN_LOAD8(invstd[v], j->invstd + c0 + 8 * v);
    }
    bn_pixel px = bn_pixel_of(j, r0);
    for (int r = 0; r < rows; r++) {
        size_t win = 0;
        int pos = 0;
        const int covered = bn_pixel_window(j, &px, &win, &pos);
        const float *xr = j->x + (r0 + (size_t)r) * j->cols + c0;
        const float *restrict d = j->pool_dy + win + c0;
        const uint8_t *restrict code = j->codes + win + c0;
        /* the row's gradient formed by a loop the compiler vectorizes (the bytes widened in
         * registers; as a vector extension, GCC widened them one by one) */
        float gr[8 * BN_POOL_NV];
        if (covered)
            for (int c = 0; c < 8 * nv; c++)
                gr[c] = code[c] == pos ? d[c] : 0.0f;
        else
            for (int c = 0; c < 8 * nv; c++)
                gr[c] = 0.0f;
        for (int v = 0; v < nv; v++) {
            bn_v8f gf;
            memcpy(&gf, gr + 8 * v, sizeof gf);
            const bn_v8d g = __builtin_convertvector(gf, bn_v8d);
            bn_v8d xv;
            BN_LOAD8(xv, xr + 8 * v);
            s[v] += g;
            q[v] += g * ((xv - mean[v]) * invstd[v]);
        }
        bn_pixel_next(j, &px);
    }
    for (int v = 0; v < nv; v++) {
        memcpy(sum_dy + c0 + 8 * v, &s[v], sizeof s[v]);
        memcpy(sum_dyx + c0 + 8 * v, &q[v], sizeof q[v]);
    }
}

/* dx rows [r0, r1) from the pooled gradient, as bn_dx_rows computes them from a formed one */
SS_INLINE void bn_pool_dx_rows(const bn_job *j, size_t r0, size_t r1) {
    const int cols = j->cols;
    bn_pixel px = bn_pixel_of(j, r0);
    for (size_t r = r0; r < r1; r++) {
        size_t win = 0;
        int pos = 0;
        const float *restrict xr = j->x + r * cols;
        float *restrict dxr = j->y + r * cols;
        if (bn_pixel_window(j, &px, &win, &pos)) {
            const float *restrict d = j->pool_dy + win;
            const uint8_t *restrict code = j->codes + win;
            for (int c = 0; c < cols; c++) {
                const float g = code[c] == pos ? d[c] : 0.0f;
                const float xhat = (xr[c] - j->mean[c]) * j->invstd[c];
                dxr[c] = j->k[c] * (g - j->a[c] - xhat * j->b[c]);
            }
        } else {
            for (int c = 0; c < cols; c++) {
                const float xhat = (xr[c] - j->mean[c]) * j->invstd[c];
                dxr[c] = j->k[c] * (0.0f - j->a[c] - xhat * j->b[c]);
            }
        }
        bn_pixel_next(j, &px);
    }
}

/* s1[c] and s2[c] = the sums of x and x^2 over rows, columns [c0, c1), rows in order */
SS_INLINE void bn_sums_cols(int rows, int cols, int c0, int c1, const float *x, double *s1,
                            double *s2) {
    for (int r = 0; r < rows; r++)
        for (int c = c0; c < c1; c++) {
            const double v = x[(size_t)r * cols + c];
            s1[c] += v;
            s2[c] += v * v;
        }
}

/* s1[c] and s2[c] = the sums of g and g x-hat over rows, columns [c0, c1), rows in order; masked:
 * a constant at each call, so that each loop is compiled for it */
SS_INLINE void bn_bwd_sums_cols(int rows, int cols, int c0, int c1, const float *x, const float *dy,
                                const float *y_mask, int masked, const float *mean,
                                const float *invstd, double *s1, double *s2) {
    for (int r = 0; r < rows; r++)
        for (int c = c0; c < c1; c++) {
            size_t i = (size_t)r * cols + c;
            const float g = bn_grad_at(dy, y_mask, masked, i);
            double xhat = ((double)x[i] - mean[c]) * invstd[c];
            s1[c] += g;
            s2[c] += g * xhat;
        }
}

/* one block's sums of one column group, into the block's row of j->part */
SS_INLINE void bn_item_sums(const bn_job *j, size_t item) {
    const int blk = (int)(item / (size_t)j->groups), grp = (int)(item % (size_t)j->groups);
    const int cols = j->cols, r0 = blk * j->block_rows;
    const int nr = j->rows - r0 < j->block_rows ? j->rows - r0 : j->block_rows;
    const int c0 = grp * BN_GROUP_COLS, c1 = c0 + BN_GROUP_COLS < cols ? c0 + BN_GROUP_COLS : cols;
    const size_t at = (size_t)r0 * cols;
    double *s1 = j->part + (size_t)blk * 2 * cols, *s2 = s1 + cols;
    const float *x = j->x + at;
    if (!j->bwd) {
        if (cols == 16)
            bn_sums_narrow(nr, 2, x, s1, s2);
        else if (cols == 32)
            bn_sums_narrow(nr, 4, x, s1, s2);
        else
            bn_sums_cols(nr, cols, c0, c1, x, s1, s2);
        return;
    }
    if (j->pool_dy) { /* 32 or 16 columns at a time (bn_pool_* take multiples of 16) */
        int c = c0;
        for (; c + 32 <= c1; c += 32)
            bn_pool_bwd_sums_narrow(j, (size_t)r0, nr, c, 4, s1, s2);
        for (; c < c1; c += 16)
            bn_pool_bwd_sums_narrow(j, (size_t)r0, nr, c, 2, s1, s2);
        return;
    }
    const float *dy = j->dy + at, *mask = j->masked ? j->y_mask + at : NULL;
    if (cols == 16 && j->masked)
        bn_bwd_sums_narrow(nr, 2, x, dy, mask, 1, j->mean, j->invstd, s1, s2);
    else if (cols == 16)
        bn_bwd_sums_narrow(nr, 2, x, dy, mask, 0, j->mean, j->invstd, s1, s2);
    else if (cols == 32 && j->masked)
        bn_bwd_sums_narrow(nr, 4, x, dy, mask, 1, j->mean, j->invstd, s1, s2);
    else if (cols == 32)
        bn_bwd_sums_narrow(nr, 4, x, dy, mask, 0, j->mean, j->invstd, s1, s2);
    else if (j->masked)
        bn_bwd_sums_cols(nr, cols, c0, c1, x, dy, mask, 1, j->mean, j->invstd, s1, s2);
    else
        bn_bwd_sums_cols(nr, cols, c0, c1, x, dy, mask, 0, j->mean, j->invstd, s1, s2);
}

static SS_CPU_CLONES void bn_sums_part(void *ctx, size_t i0, size_t i1) {
    for (size_t i = i0; i < i1; i++)
        bn_item_sums(ctx, i);
}

/* j->s1[c] and j->s2[c] += the blocks' sums (of x and x^2, or with j->bwd of g and g x-hat), the
 * blocks in order */
static void bn_block_sums(bn_job *j) {
    const int cols = j->cols;
    j->block_rows = cpu_bn_block_rows(j->rows);
    j->groups = (cols + BN_GROUP_COLS - 1) / BN_GROUP_COLS;
    const int blocks = (j->rows + j->block_rows - 1) / j->block_rows;
    j->part = ss_calloc((size_t)blocks * 2 * cols, sizeof(double));
    const int item_cols = cols < BN_GROUP_COLS ? cols : BN_GROUP_COLS;
    cpu_par_for(0, (size_t)blocks * j->groups,
                cpu_par_grain((size_t)j->block_rows * item_cols * (j->bwd ? 2 : 1)), 1,
                bn_sums_part, j);
    for (int b = 0; b < blocks; b++) {
        const double *p1 = j->part + (size_t)b * 2 * cols, *p2 = p1 + cols;
        for (int c = 0; c < cols; c++) {
            j->s1[c] += p1[c];
            j->s2[c] += p2[c];
        }
    }
    free(j->part);
}

/* sum[c] and sq[c] += x and x^2 over the rows, in double */
static void bn_sums_par(int rows, int cols, const float *x, double *sum, double *sq) {
    bn_job j = {.rows = rows, .cols = cols, .x = x, .s1 = sum, .s2 = sq};
    bn_block_sums(&j);
}

static SS_CPU_CLONES void bn_affine_part(void *ctx, size_t r0, size_t r1) {
    const bn_job *j = ctx;
    const size_t at = r0 * (size_t)j->cols;
    bn_affine((int)(r1 - r0), j->cols, j->x + at, j->scale, j->shift, j->relu, j->y + at);
}

static void bn_affine_par(int rows, int cols, const float *x, const float *scale,
                          const float *shift, int relu, float *y) {
    bn_job j = {
        .rows = rows, .cols = cols, .relu = relu, .x = x, .scale = scale, .shift = shift, .y = y};
    cpu_par_for(0, (size_t)rows, cpu_par_grain((size_t)cols), 1, bn_affine_part, &j);
}

/* The batch's statistics in one pass over x: the sums of x and of x^2 per column in double (each
 * square exact there), the biased variance E[x^2] - E[x]^2; the running statistics updated and the
 * affine pass's scale and shift (cols each). Inline: its float arithmetic is compiled in each
 * variant of the caller, as before it was split out. */
SS_INLINE void bn_train_stats(int rows, int cols, const float *x, const float *gamma,
                              const float *beta, float momentum, float eps, float *run_mean,
                              float *run_var, float *save_mean, float *save_invstd, float *scale,
                              float *shift) {
    double *sum = ss_calloc(2 * (size_t)cols, sizeof(double)), *sq = sum + cols;
    bn_sums_par(rows, cols, x, sum, sq);
    for (int c = 0; c < cols; c++) {
        const double mean = sum[c] / rows, var = fmax(sq[c] / rows - mean * mean, 0.0);
        save_mean[c] = (float)mean;
        save_invstd[c] = (float)(1.0 / sqrt(var + eps));
        scale[c] = gamma[c] * save_invstd[c];
        shift[c] = beta[c] - save_mean[c] * scale[c];
        double unbiased = rows > 1 ? var * rows / (rows - 1) : var;
        run_mean[c] = (float)((1.0 - momentum) * run_mean[c] + momentum * (double)save_mean[c]);
        run_var[c] = (float)((1.0 - momentum) * run_var[c] + momentum * unbiased);
    }
    free(sum);
}

static SS_CPU_CLONES void cpu_bn_fwd_train_act(device *dev, int rows, int cols, const float *x,
                                               const float *gamma, const float *beta,
                                               float momentum, float eps, float *run_mean,
                                               float *run_var, float *save_mean, float *save_invstd,
                                               int relu, float *y) {
    (void)dev;
    float *scale = ss_malloc(2 * (size_t)cols * sizeof(float)), *shift = scale + cols;
    bn_train_stats(rows, cols, x, gamma, beta, momentum, eps, run_mean, run_var, save_mean,
                   save_invstd, scale, shift);
    bn_affine_par(rows, cols, x, scale, shift, relu, y);
    free(scale);
}

static void cpu_bn_fwd_train(device *dev, int rows, int cols, const float *x, const float *gamma,
                             const float *beta, float momentum, float eps, float *run_mean,
                             float *run_var, float *save_mean, float *save_invstd, float *y) {
    cpu_bn_fwd_train_act(dev, rows, cols, x, gamma, beta, momentum, eps, run_mean, run_var,
                         save_mean, save_invstd, 0, y);
}

/* inference's scale and shift from the running statistics (inline: as bn_train_stats) */
SS_INLINE void bn_infer_scale(int cols, const float *gamma, const float *beta,
                              const float *run_mean, const float *run_var, float eps, float *scale,
                              float *shift) {
    for (int c = 0; c < cols; c++) {
        scale[c] = gamma[c] * (float)(1.0 / sqrt((double)run_var[c] + eps));
        shift[c] = beta[c] - run_mean[c] * scale[c];
    }
}

static SS_CPU_CLONES void cpu_bn_fwd_infer_act(device *dev, int rows, int cols, const float *x,
                                               const float *gamma, const float *beta,
                                               const float *run_mean, const float *run_var,
                                               float eps, int relu, float *y) {
    (void)dev;
    float *scale = ss_malloc(2 * (size_t)cols * sizeof(float)), *shift = scale + cols;
    bn_infer_scale(cols, gamma, beta, run_mean, run_var, eps, scale, shift);
    bn_affine_par(rows, cols, x, scale, shift, relu, y);
    free(scale);
}

static void cpu_bn_fwd_infer(device *dev, int rows, int cols, const float *x, const float *gamma,
                             const float *beta, const float *run_mean, const float *run_var,
                             float eps, float *y) {
    cpu_bn_fwd_infer_act(dev, rows, cols, x, gamma, beta, run_mean, run_var, eps, 0, y);
}

/* where the output gradient comes from a max-pool after (bn_pool_bwd): NULL otherwise */
typedef struct bn_pool_src {
    const float *pool_dy;
    const uint8_t *codes;
    int h, w;
} bn_pool_src;

static void bn_job_pool(bn_job *j, const bn_pool_src *ps) {
    if (!ps) return;
    j->pool_dy = ps->pool_dy;
    j->codes = ps->codes;
    j->h = ps->h;
    j->w = ps->w;
}

/* sum_dy[c] and sum_dyx[c] += g and g x-hat over the rows, in double */
static void bn_bwd_sums_par(int rows, int cols, const float *x, const float *dy,
                            const float *y_mask, int masked, const bn_pool_src *ps,
                            const float *save_mean, const float *save_invstd, double *sum_dy,
                            double *sum_dyx) {
    bn_job j = {.rows = rows,
                .cols = cols,
                .masked = masked,
                .bwd = 1,
                .x = x,
                .dy = dy,
                .y_mask = y_mask,
                .mean = save_mean,
                .invstd = save_invstd,
                .s1 = sum_dy,
                .s2 = sum_dyx};
    bn_job_pool(&j, ps);
    bn_block_sums(&j);
}

SS_INLINE void bn_dx_rows(const bn_job *j, size_t r0, size_t r1, int masked) {
    const int cols = j->cols;
    for (size_t r = r0; r < r1; r++)
        for (int c = 0; c < cols; c++) {
            size_t i = r * cols + c;
            float xhat = (j->x[i] - j->mean[c]) * j->invstd[c];
            j->y[i] =
                j->k[c] * (bn_grad_at(j->dy, j->y_mask, masked, i) - j->a[c] - xhat * j->b[c]);
        }
}

static SS_CPU_CLONES void bn_dx_part(void *ctx, size_t r0, size_t r1) {
    const bn_job *j = ctx;
    if (j->pool_dy) {
        bn_pool_dx_rows(j, r0, r1);
        return;
    }
    if (j->masked)
        bn_dx_rows(j, r0, r1, 1);
    else
        bn_dx_rows(j, r0, r1, 0);
}

/* dx = k (g - a - x-hat b) per element */
static void bn_dx_par(int rows, int cols, const float *x, const float *dy, const float *y_mask,
                      int masked, const bn_pool_src *ps, const float *save_mean,
                      const float *save_invstd, const float *k, const float *a, const float *b,
                      float *dx) {
    bn_job j = {.rows = rows,
                .cols = cols,
                .masked = masked,
                .x = x,
                .dy = dy,
                .y_mask = y_mask,
                .mean = save_mean,
                .invstd = save_invstd,
                .k = k,
                .a = a,
                .b = b,
                .y = dx};
    bn_job_pool(&j, ps);
    cpu_par_for(0, (size_t)rows, cpu_par_grain((size_t)cols), 1, bn_dx_part, &j);
}

SS_INLINE void bn_bwd_body(int rows, int cols, const float *x, const float *dy, const float *y_mask,
                           int masked, const bn_pool_src *ps, const float *gamma,
                           const float *save_mean, const float *save_invstd, float *dgamma,
                           float *dbeta, float *dx) {
    double *sum_dy = ss_calloc(2 * (size_t)cols, sizeof(double)), *sum_dyx = sum_dy + cols;
    bn_bwd_sums_par(rows, cols, x, dy, y_mask, masked, ps, save_mean, save_invstd, sum_dy, sum_dyx);
    for (int c = 0; c < cols; c++) {
        dgamma[c] = (float)sum_dyx[c];
        dbeta[c] = (float)sum_dy[c];
    }
    if (dx) {
        float *k = ss_malloc(3 * (size_t)cols * sizeof(float)), *a = k + cols, *b = a + cols;
        for (int c = 0; c < cols; c++) {
            k[c] = gamma[c] * save_invstd[c];
            a[c] = (float)(sum_dy[c] / rows);
            b[c] = (float)(sum_dyx[c] / rows);
        }
        bn_dx_par(rows, cols, x, dy, y_mask, masked, ps, save_mean, save_invstd, k, a, b, dx);
        free(k);
    }
    free(sum_dy);
}

static SS_CPU_CLONES void cpu_bn_bwd(device *dev, int rows, int cols, const float *x,
                                     const float *dy, const float *gamma, const float *save_mean,
                                     const float *save_invstd, float *dgamma, float *dbeta,
                                     float *dx) {
    (void)dev;
    bn_bwd_body(rows, cols, x, dy, NULL, 0, NULL, gamma, save_mean, save_invstd, dgamma, dbeta, dx);
}

static SS_CPU_CLONES void cpu_bn_bwd_masked(device *dev, int rows, int cols, const float *x,
                                            const float *dy, const float *y_mask,
                                            const float *gamma, const float *save_mean,
                                            const float *save_invstd, float *dgamma, float *dbeta,
                                            float *dx) {
    (void)dev;
    bn_bwd_body(rows, cols, x, dy, y_mask, 1, NULL, gamma, save_mean, save_invstd, dgamma, dbeta,
                dx);
}

/* ---- batch norm, its ReLU and the 2x2 max-pool after them as one block (vgg's stages): the
 * affine pass pools its outputs as it forms them and writes the pooled values and a code each;
 * the backward passes form the batch norm's output gradient from the codes as they go. On
 * vgg:11's first stage at batch 64 (64 channels of 28 x 28, 12.8 MB an activation) that leaves
 * out writing the batch norm's output and reading it back, the pooling's backward pass, and
 * reading its input gradient and the ReLU's mask in each of the batch norm's two backward
 * passes. ---- */

/* One window of four pixels over c channels: bn_affine's values with the ReLU, pooled as
 * maxpool_fwd_loop pools them (BN_POOL_VALUES, shared by the two forms below). */
#define BN_POOL_VALUES                                                                             \
    const float v00 = p00[k] * scale[k] + shift[k], v01 = p01[k] * scale[k] + shift[k];            \
    const float v10 = p10[k] * scale[k] + shift[k], v11 = p11[k] * scale[k] + shift[k];            \
    const float a = v00 > 0.0f ? v00 : 0.0f, q = v01 > 0.0f ? v01 : 0.0f;                          \
    const float e = v10 > 0.0f ? v10 : 0.0f, f = v11 > 0.0f ? v11 : 0.0f;                          \
    const float m0 = a > q ? a : q, m1 = e > f ? e : f;                                            \
    const float m = m0 > m1 ? m0 : m1

SS_INLINE void bn_pool_window(int c, const float *restrict p00, const float *restrict p01,
                              const float *restrict p10, const float *restrict p11,
                              const float *restrict scale, const float *restrict shift,
                              float *restrict out) {
    for (int k = 0; k < c; k++) {
        BN_POOL_VALUES;
        out[k] = m;
    }
}

/* the same with the codes of pool_codes_fwd_window, as selects (so that the loop vectorizes) */
SS_INLINE void bn_pool_window_codes(int c, const float *restrict p00, const float *restrict p01,
                                    const float *restrict p10, const float *restrict p11,
                                    const float *restrict scale, const float *restrict shift,
                                    float *restrict out, uint8_t *restrict codes) {
    for (int k = 0; k < c; k++) {
        BN_POOL_VALUES;
        out[k] = m;
        int code = e == m ? 2 : 3;
        code = q == m ? 1 : code;
        code = a == m ? 0 : code;
        codes[k] = (uint8_t)(m > 0.0f ? code : POOL_CODE_NONE);
    }
}

typedef struct bn_pool_job {
    int h, w, cols;
    const float *x, *scale, *shift;
    float *pool_y;
    uint8_t *codes;
} bn_pool_job;

/* pooled rows [t0, t1) of the batch (an item: one sample's row of windows) */
SS_INLINE void bn_pool_rows(const bn_pool_job *j, size_t t0, size_t t1, int with_codes) {
    const int oh_n = j->h / 2, ow_n = j->w / 2, c = j->cols;
    const size_t row = (size_t)j->w * c;
    for (size_t t = t0; t < t1; t++) {
        const size_t b = t / (size_t)oh_n, oh = t % (size_t)oh_n;
        for (int ow = 0; ow < ow_n; ow++) {
            const float *p00 = j->x + ((b * j->h + 2 * oh) * j->w + 2 * (size_t)ow) * c;
            const size_t at = (t * ow_n + (size_t)ow) * c;
            if (with_codes)
                bn_pool_window_codes(c, p00, p00 + c, p00 + row, p00 + row + c, j->scale, j->shift,
                                     j->pool_y + at, j->codes + at);
            else
                bn_pool_window(c, p00, p00 + c, p00 + row, p00 + row + c, j->scale, j->shift,
                               j->pool_y + at);
        }
    }
}

static SS_CPU_CLONES void bn_pool_part(void *ctx, size_t t0, size_t t1) {
    const bn_pool_job *j = ctx;
    if (j->codes)
        bn_pool_rows(j, t0, t1, 1);
    else
        bn_pool_rows(j, t0, t1, 0);
}

static void bn_pool_par(int batch, int h, int w, int cols, const float *x, const float *scale,
                        const float *shift, float *pool_y, uint8_t *codes) {
    bn_pool_job j = {h, w, cols, x, scale, shift, pool_y, codes};
    const size_t items = (size_t)batch * (size_t)(h / 2);
    cpu_par_for(0, items, cpu_par_grain(4 * (size_t)(w / 2) * cols), 1, bn_pool_part, &j);
}

static SS_CPU_CLONES void cpu_bn_pool_fwd_train(device *dev, int batch, int h, int w, int cols,
                                                const float *x, const float *gamma,
                                                const float *beta, float momentum, float eps,
                                                float *run_mean, float *run_var, float *save_mean,
                                                float *save_invstd, float *pool_y, uint8_t *codes) {
    (void)dev;
    float *scale = ss_malloc(2 * (size_t)cols * sizeof(float)), *shift = scale + cols;
    bn_train_stats(batch * h * w, cols, x, gamma, beta, momentum, eps, run_mean, run_var, save_mean,
                   save_invstd, scale, shift);
    bn_pool_par(batch, h, w, cols, x, scale, shift, pool_y, codes);
    free(scale);
}

static SS_CPU_CLONES void cpu_bn_pool_fwd_infer(device *dev, int batch, int h, int w, int cols,
                                                const float *x, const float *gamma,
                                                const float *beta, const float *run_mean,
                                                const float *run_var, float eps, float *pool_y) {
    (void)dev;
    float *scale = ss_malloc(2 * (size_t)cols * sizeof(float)), *shift = scale + cols;
    bn_infer_scale(cols, gamma, beta, run_mean, run_var, eps, scale, shift);
    bn_pool_par(batch, h, w, cols, x, scale, shift, pool_y, NULL);
    free(scale);
}

static SS_CPU_CLONES void cpu_bn_pool_bwd(device *dev, int batch, int h, int w, int cols,
                                          const float *x, const float *pool_dy,
                                          const uint8_t *codes, const float *gamma,
                                          const float *save_mean, const float *save_invstd,
                                          float *dgamma, float *dbeta, float *dx) {
    (void)dev;
    SS_ASSERT(cols % 16 == 0); /* the sums take 32 or 16 columns at a time (bn_item_sums) */
    const bn_pool_src ps = {pool_dy, codes, h, w};
    bn_bwd_body(batch * h * w, cols, x, NULL, NULL, 0, &ps, gamma, save_mean, save_invstd, dgamma,
                dbeta, dx);
}

/* ---- global average pooling: sums in double, pixels in order ---- */

static void cpu_avgpool_fwd(device *dev, int batch, int hw, int c, const float *x, float *y) {
    (void)dev;
    double *acc = ss_malloc((size_t)c * sizeof(double));
    for (int b = 0; b < batch; b++) {
        const float *xb = x + (size_t)b * hw * c;
        for (int k = 0; k < c; k++)
            acc[k] = 0.0;
        for (int p = 0; p < hw; p++)
            for (int k = 0; k < c; k++)
                acc[k] += xb[(size_t)p * c + k];
        for (int k = 0; k < c; k++)
            y[(size_t)b * c + k] = (float)(acc[k] / hw);
    }
    free(acc);
}

static SS_CPU_CLONES void cpu_avgpool_bwd(device *dev, int batch, int hw, int c, const float *dy,
                                          float *dx) {
    (void)dev;
    const float inv = 1.0f / (float)hw;
    for (int b = 0; b < batch; b++)
        for (int p = 0; p < hw; p++)
            for (int k = 0; k < c; k++)
                dx[((size_t)b * hw + p) * c + k] = dy[(size_t)b * c + k] * inv;
}

/* ---- residual shortcut (identity or option A) ---- */

static void shortcut_fwd_loop(device *dev, const shortcut_geom *g, const float *x, float *y) {
    (void)dev;
    for (int b = 0; b < g->batch; b++)
        for (int oh = 0; oh < g->out_h; oh++)
            for (int ow = 0; ow < g->out_w; ow++) {
                const float *src =
                    x +
                    (((size_t)b * g->in_h + oh * g->stride) * g->in_w + ow * g->stride) * g->in_c;
                float *dst = y + (((size_t)b * g->out_h + oh) * g->out_w + ow) * g->out_c + g->c_lo;
                for (int c = 0; c < g->in_c; c++)
                    dst[c] += src[c];
            }
}

static void shortcut_bwd_loop(device *dev, const shortcut_geom *g, const float *dy, float *dx) {
    (void)dev;
    for (int b = 0; b < g->batch; b++)
        for (int ih = 0; ih < g->in_h; ih++)
            for (int iw = 0; iw < g->in_w; iw++) {
                float *dst = dx + (((size_t)b * g->in_h + ih) * g->in_w + iw) * g->in_c;
                const int oh = ih / g->stride, ow = iw / g->stride;
                if (ih % g->stride || iw % g->stride || oh >= g->out_h || ow >= g->out_w) {
                    memset(dst, 0, (size_t)g->in_c * sizeof(float));
                    continue;
                }
                const float *src =
                    dy + (((size_t)b * g->out_h + oh) * g->out_w + ow) * g->out_c + g->c_lo;
                memcpy(dst, src, (size_t)g->in_c * sizeof(float));
            }
}

/* The channels [c_lo, c_lo + in_c) of each output pixel get the sampled skip pixel's; every value
 * then as relu_fwd writes it when relu. The sums are shortcut_fwd's (x + skip, rounded once). */
static SS_CPU_CLONES void add_fwd_loop(device *dev, const shortcut_geom *g, const float *x,
                                       const float *skip, int relu, float *y) {
    (void)dev;
    const int oc = g->out_c, lo = g->c_lo, hi = g->c_lo + g->in_c;
    for (int b = 0; b < g->batch; b++)
        for (int oh = 0; oh < g->out_h; oh++)
            for (int ow = 0; ow < g->out_w; ow++) {
                const size_t at = (((size_t)b * g->out_h + oh) * g->out_w + ow) * oc;
                const float *xs = x + at;
                float *ys = y + at;
                const float *src =
                    skip +
                    (((size_t)b * g->in_h + oh * g->stride) * g->in_w + ow * g->stride) * g->in_c;
                for (int c = 0; c < lo; c++)
                    ys[c] = xs[c];
                for (int c = lo; c < hi; c++)
                    ys[c] = xs[c] + src[c - lo];
                for (int c = hi; c < oc; c++)
                    ys[c] = xs[c];
                if (relu)
                    for (int c = 0; c < oc; c++)
                        ys[c] = ys[c] > 0.0f ? ys[c] : 0.0f;
            }
}

static double cpu_softmax_xent(device *dev, int batch, int classes, const float *logits,
                               const uint8_t *labels, float *dlogits, int *correct) {
    (void)dev;
    double loss_sum = 0.0;
    int right = 0;
    const float inv_batch = 1.0f / (float)batch;
    for (int b = 0; b < batch; b++) {
        const float *z = logits + (size_t)b * classes;
        int arg = 0;
        for (int k = 1; k < classes; k++)
            if (z[k] > z[arg]) arg = k;
        float zmax = z[arg];
        double sum = 0.0;
        for (int k = 0; k < classes; k++)
            sum += exp((double)(z[k] - zmax));
        int y = labels[b];
        loss_sum += log(sum) - (double)(z[y] - zmax);
        right += arg == y;
        if (dlogits) {
            float *d = dlogits + (size_t)b * classes;
            float inv_sum = (float)(1.0 / sum);
            for (int k = 0; k < classes; k++) {
                float p = expf(z[k] - zmax) * inv_sum;
                d[k] = (p - (k == y ? 1.0f : 0.0f)) * inv_batch;
            }
        }
    }
    if (correct) *correct = right;
    return loss_sum;
}

static SS_CPU_CLONES void sgd_loop(device *dev, size_t n, float *w, const float *g, float *v,
                                   float lr, float mu, float wd, int nesterov) {
    (void)dev;
    if (mu != 0.0f && nesterov) {
        for (size_t i = 0; i < n; i++) {
            float gi = g[i] + wd * w[i];
            v[i] = mu * v[i] + gi;
            w[i] -= lr * (gi + mu * v[i]);
        }
    } else if (mu != 0.0f) {
        for (size_t i = 0; i < n; i++) {
            float gi = g[i] + wd * w[i];
            v[i] = mu * v[i] + gi;
            w[i] -= lr * v[i];
        }
    } else {
        for (size_t i = 0; i < n; i++)
            w[i] -= lr * (g[i] + wd * w[i]);
    }
}

static SS_CPU_CLONES void axpy_loop(device *dev, size_t n, float a, const float *x, float *y) {
    (void)dev;
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

static SS_CPU_CLONES void scale_loop(device *dev, size_t n, float a, float *x) {
    (void)dev;
    for (size_t i = 0; i < n; i++)
        x[i] *= a;
}

/* Per element: s = x0 + x1 + ... + x(k-1) in that order, then out = s * (1/k). Blocked so that
 * the running sums stay in cache; the CUDA kernel does the same arithmetic in the same order. */
static SS_CPU_CLONES void cpu_mean(device *dev, size_t n, int k, const float *const *xs,
                                   float *out) {
    (void)dev;
    enum { BLOCK = 2048 };
    float acc[BLOCK];
    const float inv_k = 1.0f / (float)k;
    for (size_t i0 = 0; i0 < n; i0 += BLOCK) {
        size_t len = n - i0 < BLOCK ? n - i0 : BLOCK;
        memcpy(acc, xs[0] + i0, len * sizeof(float));
        for (int j = 1; j < k; j++) {
            const float *x = xs[j] + i0;
            for (size_t i = 0; i < len; i++)
                acc[i] += x[i];
        }
        for (size_t i = 0; i < len; i++)
            out[i0 + i] = acc[i] * inv_k;
    }
}

static double cpu_nrm2(device *dev, size_t n, const float *x) {
    (void)dev;
    double s[4] = {0, 0, 0, 0};
    size_t i = 0;
    for (; i + 4 <= n; i += 4)
        for (int j = 0; j < 4; j++)
            s[j] += (double)x[i + j] * x[i + j];
    for (; i < n; i++)
        s[0] += (double)x[i] * x[i];
    return sqrt((s[0] + s[1]) + (s[2] + s[3]));
}

static void cpu_masked_copy(device *dev, size_t n, const uint8_t *mask, const float *src,
                            float *dst) {
    (void)dev;
    for (size_t i = 0; i < n; i++)
        if (mask[i]) dst[i] = src[i];
}

/* ---- the passes above split over threads (cpu_par.h): each part runs the loop on its own
 * elements, rows, samples or columns, so the bits are those of one thread ---- */

typedef struct par_job {
    device *dev;
    const float *x, *x2;
    float *y;
    float a;
    int rows, cols, chans, flag;
    const conv_geom *g;
    const shortcut_geom *sg;
} par_job;

static int ptrs_apart(const float *p, const float *q, size_t n) {
    const uintptr_t a = (uintptr_t)p, b = (uintptr_t)q, bytes = n * sizeof(float);
    return a + bytes <= b || b + bytes <= a;
}

static void copy_part(void *ctx, size_t i0, size_t i1) {
    const par_job *j = ctx;
    memcpy(j->y + i0, j->x + i0, (i1 - i0) * sizeof(float));
}

static void cpu_copy(device *dev, float *dst, const float *src, size_t count) {
    if (!ptrs_apart(dst, src, count)) {
        memmove_loop(dev, dst, src, count);
        return;
    }
    par_job j = {.x = src, .y = dst};
    cpu_par_for(0, count, CPU_PAR_GRAIN, 16, copy_part, &j);
}

static void zero_part(void *ctx, size_t i0, size_t i1) {
    const par_job *j = ctx;
    memset(j->y + i0, 0, (i1 - i0) * sizeof(float));
}

static void cpu_zero(device *dev, float *dst, size_t count) {
    (void)dev;
    par_job j = {.y = dst};
    cpu_par_for(0, count, CPU_PAR_GRAIN, 16, zero_part, &j);
}

static void bias_add_part(void *ctx, size_t r0, size_t r1) {
    const par_job *j = ctx;
    bias_add_loop(j->dev, (int)(r1 - r0), j->cols, j->x, j->y + r0 * j->cols);
}

static void cpu_bias_add(device *dev, int rows, int cols, const float *bias, float *y) {
    par_job j = {.dev = dev, .x = bias, .y = y, .cols = cols};
    cpu_par_for(0, (size_t)rows, cpu_par_grain((size_t)cols), 1, bias_add_part, &j);
}

static void bias_relu_part(void *ctx, size_t r0, size_t r1) {
    const par_job *j = ctx;
    bias_relu_loop(j->dev, (int)(r1 - r0), j->cols, j->x, j->y + r0 * j->cols);
}

static void cpu_bias_relu(device *dev, int rows, int cols, const float *bias, float *y) {
    par_job j = {.dev = dev, .x = bias, .y = y, .cols = cols};
    cpu_par_for(0, (size_t)rows, cpu_par_grain((size_t)cols), 1, bias_relu_part, &j);
}

/* A sum over the rows is split by columns, each part reading its columns of every row. Parts
 * narrower than 128 columns (512 bytes) would share cache lines, every thread streaming the whole
 * matrix. */
enum { COLS_ALIGN = 128 };

static void bias_grad_part(void *ctx, size_t c0, size_t c1) {
    const par_job *j = ctx;
    bias_grad_cols(j->rows, j->cols, j->x, j->a, j->y, (int)c0, (int)c1);
}

static void cpu_bias_grad(device *dev, int rows, int cols, const float *dy, float beta, float *db) {
    (void)dev;
    par_job j = {.x = dy, .y = db, .a = beta, .rows = rows, .cols = cols};
    cpu_par_for(0, (size_t)cols, cpu_par_grain((size_t)rows), COLS_ALIGN, bias_grad_part, &j);
}

static void relu_fwd_part(void *ctx, size_t i0, size_t i1) {
    const par_job *j = ctx;
    relu_fwd_loop(j->dev, i1 - i0, j->x + i0, j->y + i0);
}

static void cpu_relu_fwd(device *dev, size_t n, const float *x, float *y) {
    par_job j = {.dev = dev, .x = x, .y = y};
    cpu_par_for(0, n, CPU_PAR_GRAIN, 16, relu_fwd_part, &j);
}

static void relu_bwd_part(void *ctx, size_t i0, size_t i1) {
    const par_job *j = ctx;
    relu_bwd_loop(j->dev, i1 - i0, j->x + i0, j->x2 + i0, j->y + i0);
}

static void cpu_relu_bwd(device *dev, size_t n, const float *y, const float *dy, float *dx) {
    par_job j = {.dev = dev, .x = y, .x2 = dy, .y = dx};
    cpu_par_for(0, n, CPU_PAR_GRAIN, 16, relu_bwd_part, &j);
}

static void axpy_part(void *ctx, size_t i0, size_t i1) {
    const par_job *j = ctx;
    axpy_loop(j->dev, i1 - i0, j->a, j->x + i0, j->y + i0);
}

static void cpu_axpy(device *dev, size_t n, float a, const float *x, float *y) {
    par_job j = {.dev = dev, .x = x, .y = y, .a = a};
    cpu_par_for(0, n, CPU_PAR_GRAIN, 16, axpy_part, &j);
}

static void scale_part(void *ctx, size_t i0, size_t i1) {
    const par_job *j = ctx;
    scale_loop(j->dev, i1 - i0, j->a, j->y + i0);
}

static void cpu_scale(device *dev, size_t n, float a, float *x) {
    par_job j = {.dev = dev, .y = x, .a = a};
    cpu_par_for(0, n, CPU_PAR_GRAIN, 16, scale_part, &j);
}

typedef struct sgd_job {
    device *dev;
    float *w, *v;
    const float *g;
    float lr, mu, wd;
    int nesterov;
} sgd_job;

static void sgd_part(void *ctx, size_t i0, size_t i1) {
    const sgd_job *j = ctx;
    sgd_loop(j->dev, i1 - i0, j->w + i0, j->g + i0, j->v ? j->v + i0 : NULL, j->lr, j->mu, j->wd,
             j->nesterov);
}

static void cpu_sgd(device *dev, size_t n, float *w, const float *g, float *v, float lr, float mu,
                    float wd, int nesterov) {
    sgd_job j = {dev, w, v, g, lr, mu, wd, nesterov};
    cpu_par_for(0, n, CPU_PAR_GRAIN, 16, sgd_part, &j);
}

/* ---- by samples ---- */

static void im2col_part(void *ctx, size_t b0, size_t b1) {
    const par_job *j = ctx;
    conv_geom g = *j->g;
    g.batch = (int)(b1 - b0);
    im2col_loop(j->dev, &g, j->x + b0 * g.in_h * g.in_w * g.in_c,
                j->y + b0 * g.out_h * g.out_w * ((size_t)g.kh * g.kw * g.in_c));
}

static void cpu_im2col(device *dev, const conv_geom *g, const float *x, float *col) {
    par_job j = {.dev = dev, .x = x, .y = col, .g = g};
    const size_t per = (size_t)g->out_h * g->out_w * g->kh * g->kw * g->in_c;
    cpu_par_for(0, (size_t)g->batch, cpu_par_grain(per), 1, im2col_part, &j);
}

static void col2im_part(void *ctx, size_t b0, size_t b1) {
    const par_job *j = ctx;
    conv_geom g = *j->g;
    g.batch = (int)(b1 - b0);
    col2im_loop(j->dev, &g, j->x + b0 * g.out_h * g.out_w * ((size_t)g.kh * g.kw * g.in_c),
                j->y + b0 * g.in_h * g.in_w * g.in_c);
}

static void cpu_col2im(device *dev, const conv_geom *g, const float *col, float *dx) {
    par_job j = {.dev = dev, .x = col, .y = dx, .g = g};
    const size_t per = (size_t)g->out_h * g->out_w * g->kh * g->kw * g->in_c;
    cpu_par_for(0, (size_t)g->batch, cpu_par_grain(per), 1, col2im_part, &j);
}

/* x (batch, h, w, c) in, y (batch, h / 2, w / 2, c) or (flag: the backward passes) dx (batch, h,
 * w, c) out */
static void pool_part(void *ctx, size_t b0, size_t b1) {
    const par_job *j = ctx;
    const int h = j->rows, w = j->cols, c = j->chans, nb = (int)(b1 - b0);
    const size_t in = (size_t)h * w * c, out = (size_t)(h / 2) * (w / 2) * c;
    if (j->flag == 0)
        maxpool_fwd_loop(j->dev, nb, h, w, c, j->x + b0 * in, j->y + b0 * out);
    else if (j->flag == 1)
        maxpool_bwd_loop(j->dev, nb, h, w, c, j->x + b0 * in, j->x2 + b0 * out, j->y + b0 * in);
    else
        maxpool_relu_bwd_loop(j->dev, nb, h, w, c, j->x + b0 * in, j->x2 + b0 * out,
                              j->y + b0 * in);
}

static void pool_par(device *dev, int which, int batch, int h, int w, int c, const float *x,
                     const float *dy, float *y) {
    par_job j = {
        .dev = dev, .x = x, .x2 = dy, .y = y, .rows = h, .cols = w, .chans = c, .flag = which};
    cpu_par_for(0, (size_t)batch, cpu_par_grain((size_t)h * w * c), 1, pool_part, &j);
}

static void cpu_maxpool_fwd(device *dev, int batch, int h, int w, int c, const float *x, float *y) {
    pool_par(dev, 0, batch, h, w, c, x, NULL, y);
}

static void cpu_maxpool_bwd(device *dev, int batch, int h, int w, int c, const float *x,
                            const float *dy, float *dx) {
    pool_par(dev, 1, batch, h, w, c, x, dy, dx);
}

static void cpu_maxpool_relu_bwd(device *dev, int batch, int h, int w, int c, const float *x,
                                 const float *dy, float *dx) {
    pool_par(dev, 2, batch, h, w, c, x, dy, dx);
}

/* the residual's passes (shortcut_geom): x and the skip per sample */
static size_t skip_floats(const shortcut_geom *g) {
    return (size_t)g->in_h * g->in_w * g->in_c;
}

static size_t sum_floats(const shortcut_geom *g) {
    return (size_t)g->out_h * g->out_w * g->out_c;
}

static void shortcut_part(void *ctx, size_t b0, size_t b1) {
    const par_job *j = ctx;
    shortcut_geom g = *j->sg;
    g.batch = (int)(b1 - b0);
    if (j->flag == 0)
        shortcut_fwd_loop(j->dev, &g, j->x + b0 * skip_floats(&g), j->y + b0 * sum_floats(&g));
    else if (j->flag == 1)
        shortcut_bwd_loop(j->dev, &g, j->x + b0 * sum_floats(&g), j->y + b0 * skip_floats(&g));
    else
        add_fwd_loop(j->dev, &g, j->x + b0 * sum_floats(&g), j->x2 + b0 * skip_floats(&g),
                     j->flag == 3, j->y + b0 * sum_floats(&g));
}

static void shortcut_par(device *dev, int which, const shortcut_geom *g, const float *x,
                         const float *skip, float *y) {
    par_job j = {.dev = dev, .x = x, .x2 = skip, .y = y, .sg = g, .flag = which};
    cpu_par_for(0, (size_t)g->batch, cpu_par_grain(sum_floats(g)), 1, shortcut_part, &j);
}

static void cpu_shortcut_fwd(device *dev, const shortcut_geom *g, const float *x, float *y) {
    shortcut_par(dev, 0, g, x, NULL, y);
}

static void cpu_shortcut_bwd(device *dev, const shortcut_geom *g, const float *dy, float *dx) {
    shortcut_par(dev, 1, g, dy, NULL, dx);
}

static void cpu_add_fwd(device *dev, const shortcut_geom *g, const float *x, const float *skip,
                        int relu, float *y) {
    shortcut_par(dev, relu ? 3 : 2, g, x, skip, y);
}

static const device_ops cpu_ops = {
    .alloc = cpu_alloc,
    .free = cpu_free,
    .upload = cpu_copy,
    .download = cpu_copy,
    .copy = cpu_copy,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .gemm = cpu_gemm,
    .bias_add = cpu_bias_add,
    .bias_grad = cpu_bias_grad,
    .bias_relu = cpu_bias_relu,
    .relu_fwd = cpu_relu_fwd,
    .relu_bwd = cpu_relu_bwd,
    .im2col = cpu_im2col,
    .col2im = cpu_col2im,
    .maxpool_fwd = cpu_maxpool_fwd,
    .maxpool_bwd = cpu_maxpool_bwd,
    .maxpool_relu_bwd = cpu_maxpool_relu_bwd,
    .conv_direct_floats = cpu_conv_direct_floats,
    .conv_fwd = cpu_conv_fwd,
    .conv_bwd = cpu_conv_bwd,
    .conv_implicit = cpu_conv_implicit,
    .conv_implicit_dx = cpu_conv_implicit_dx,
    .conv_implicit_dw = cpu_conv_implicit_dw,
    .bn_fwd_train = cpu_bn_fwd_train,
    .bn_fwd_infer = cpu_bn_fwd_infer,
    .bn_bwd = cpu_bn_bwd,
    .avgpool_fwd = cpu_avgpool_fwd,
    .avgpool_bwd = cpu_avgpool_bwd,
    .shortcut_fwd = cpu_shortcut_fwd,
    .shortcut_bwd = cpu_shortcut_bwd,
    .add_fwd = cpu_add_fwd,
    .bn_fwd_train_act = cpu_bn_fwd_train_act,
    .bn_fwd_infer_act = cpu_bn_fwd_infer_act,
    .bn_bwd_masked = cpu_bn_bwd_masked,
    .bn_pool_fwd_train = cpu_bn_pool_fwd_train,
    .bn_pool_fwd_infer = cpu_bn_pool_fwd_infer,
    .bn_pool_bwd = cpu_bn_pool_bwd,
    .softmax_xent = cpu_softmax_xent,
    .sgd = cpu_sgd,
    .gemm_batched = cpu_gemm_batched,
    .ln_fwd = cpu_ln_fwd,
    .ln_bwd = cpu_ln_bwd,
    .gelu_fwd = cpu_gelu_fwd,
    .gelu_bwd = cpu_gelu_bwd,
    .embed_fwd = cpu_embed_fwd,
    .embed_bwd = cpu_embed_bwd,
    .attn_softmax_fwd = cpu_attn_softmax_fwd,
    .attn_softmax_bwd = cpu_attn_softmax_bwd,
    .dropout = cpu_dropout,
    .xent_tokens = cpu_xent_tokens,
    .axpy = cpu_axpy,
    .scale = cpu_scale,
    .mean = cpu_mean,
    .nrm2 = cpu_nrm2,
    .masked_copy = cpu_masked_copy,
    .close = NULL,
};

int device_cpu_init(device *dev) {
    dev->ops = &cpu_ops;
    dev->kind = DEVICE_KIND_CPU;
    dev->ctx = NULL;
    snprintf(dev->name, sizeof dev->name, "cpu (OpenBLAS %s, %d threads)", openblas_get_corename(),
             openblas_get_num_threads());
    return SS_OK;
}
