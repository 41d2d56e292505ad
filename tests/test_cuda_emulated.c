/* CUDA kernels (kernels/cuda_conv_tiled.cu, cuda_conv.cu, cuda_conv_few.cu, cuda_im2col.cu,
 * cuda_batchnorm.cu) run on the CPU: their
 * sources rewritten into C++ by tests/emulate_cuda.cmake, each block's threads as CPU threads
 * that meet at __syncthreads (tests/emulated/). This checks the kernels' indexing and arithmetic
 * on any machine, GPU or none: the forward pass, the input and the weight gradient against a
 * direct sum in double, the bits of the forward pass for every tile size, and which geometries
 * each kernel takes. test_cuda runs the same kernels on a GPU, against the CPU device. */
#include "kernels/cuda_ops.h" /* with tests/emulated/kernels/cuda_common.h's stream */
#include "tests/ss_test.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* the forward kernel at a chosen tile size (tests/emulated/emulator.cpp) */
int ss_emu_conv_tiled_fwd_tiles(conv_geom g, int oc, int bn, int tm, const float *x, const float *w,
                                float *y);

typedef struct {
    int h, w, c, oc, k, pad, stride, batch;
} conv_case;

static conv_geom geom_of(conv_case c) {
    conv_geom g = {.batch = c.batch,
                   .in_h = c.h,
                   .in_w = c.w,
                   .in_c = c.c,
                   .kh = c.k,
                   .kw = c.k,
                   .pad = c.pad,
                   .stride = c.stride};
    const int st = c.stride > 1 ? c.stride : 1;
    g.out_h = (c.h + 2 * c.pad - c.k) / st + 1;
    g.out_w = (c.w + 2 * c.pad - c.k) / st + 1;
    return g;
}

/* n floats in [-1, 1), 64-byte aligned (the kernels read float4) */
static float *rand_floats(size_t n, uint32_t seed) {
    float *p = aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
    CU_ASSERT_FATAL(p != NULL);
    uint32_t s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)(s >> 8) / (float)(1u << 24) * 2.0f - 1.0f;
    }
    return p;
}

/* y, dx and dw of NHWC x (B, h, w, c), w (oc, k, k, c) and dy (B, out_h, out_w, oc), in double */
static void reference(conv_geom g, int oc, const float *x, const float *w, const float *dy,
                      double *y, double *dx, double *dw) {
    const int st = g.stride > 1 ? g.stride : 1;
    for (int b = 0; b < g.batch; b++)
        for (int oh = 0; oh < g.out_h; oh++)
            for (int ow = 0; ow < g.out_w; ow++)
                for (int ki = 0; ki < g.kh; ki++)
                    for (int kj = 0; kj < g.kw; kj++) {
                        const int ih = oh * st - g.pad + ki, iw = ow * st - g.pad + kj;
                        if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) continue;
                        const size_t p = ((size_t)b * g.out_h + oh) * g.out_w + ow;
                        const size_t xi = (((size_t)b * g.in_h + ih) * g.in_w + iw) * g.in_c;
                        for (int o = 0; o < oc; o++)
                            for (int c = 0; c < g.in_c; c++) {
                                const size_t wi =
                                    (((size_t)o * g.kh + ki) * g.kw + kj) * g.in_c + c;
                                y[p * oc + o] += (double)x[xi + c] * w[wi];
                                dx[xi + c] += (double)dy[p * oc + o] * w[wi];
                                dw[wi] += (double)dy[p * oc + o] * x[xi + c];
                            }
                    }
}

static double nmse(const float *a, const double *ref, size_t n) {
    double e = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        e += (a[i] - ref[i]) * (a[i] - ref[i]);
        r += ref[i] * ref[i];
    }
    return e / r;
}

/* Each case: whether the tiled kernels take its forward pass, input and weight gradients, and
 * whether the weight gradient sums in more than one slice of pixels. */
static const struct {
    conv_case c;
    int fwd, dx, dw, slices;
} cases[] = {
    {{28, 28, 16, 16, 3, 1, 1, 2}, 1, 1, 1, 1}, /* ResNet-20's first stage; 1,568 pixels */
    {{15, 14, 16, 32, 3, 1, 2, 2}, 1, 0, 1, 0}, /* stride 2: the input gradient is col2im's */
    {{8, 8, 32, 64, 3, 1, 1, 2}, 1, 1, 1, 0},   /* 64 channels a block */
    {{9, 9, 16, 32, 1, 0, 1, 2}, 1, 1, 1, 0},   /* 1x1 */
    {{10, 12, 16, 16, 5, 2, 1, 2}, 1, 1, 1, 0}, /* 5x5, padding 2 */
    {{9, 11, 16, 16, 3, 0, 1, 2}, 1, 1, 1, 0},  /* no padding: the gradient's padding is 2 */
    {{7, 7, 64, 64, 3, 1, 1, 5}, 1, 1, 1, 0},   /* 245 pixels: a partial block */
    {{9, 9, 8, 48, 3, 1, 1, 3}, 1, 0, 1, 0},    /* 3 tiles of 16 channels; in_c 8: no dx */
    {{10, 10, 16, 96, 3, 1, 1, 2}, 1, 1, 1, 0}, /* 3 tiles of 32 channels */
    {{9, 9, 4, 16, 3, 1, 1, 2}, 0, 0, 0, 0},    /* in_c % 8 != 0: not taken */
    {{9, 9, 16, 24, 3, 1, 1, 2}, 0, 0, 0, 0},   /* oc % 16 != 0: not taken */
};

static void test_tiled_against_reference(void) {
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        const conv_case c = cases[t].c;
        const conv_geom g = geom_of(c);
        const size_t nx = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
        const size_t ny = (size_t)g.batch * g.out_h * g.out_w * c.oc;
        const size_t nw = (size_t)c.oc * g.kh * g.kw * g.in_c;
        float *x = rand_floats(nx, 1 + t), *w = rand_floats(nw, 20 + t);
        float *dy = rand_floats(ny, 40 + t), *y = rand_floats(ny, 60 + t);
        float *dx = rand_floats(nx, 80 + t), *dw = rand_floats(nw, 100 + t);
        float *wt = rand_floats(nw, 120 + t);
        double *ry = calloc(ny, sizeof *ry), *rdx = calloc(nx, sizeof *rdx),
               *rdw = calloc(nw, sizeof *rdw);
        CU_ASSERT_FATAL(ry && rdx && rdw);
        reference(g, c.oc, x, w, dy, ry, rdx, rdw);
        const size_t partial_n = cuda_conv_tiled_dw_floats(g, c.oc);
        float *partial = partial_n ? rand_floats(partial_n, 140 + t) : NULL;
        const int f = cuda_conv_tiled_fwd(0, g, c.oc, x, w, y);
        const int d = cuda_conv_tiled_dx(0, g, c.oc, dy, w, wt, dx);
        const int k = cuda_conv_tiled_dw(0, g, c.oc, x, dy, partial, dw);
        CU_ASSERT_EQUAL(f, cases[t].fwd);
        CU_ASSERT_EQUAL(d, cases[t].dx);
        CU_ASSERT_EQUAL(k, cases[t].dw);
        CU_ASSERT_EQUAL(partial_n > 0, cases[t].slices);
        /* sums of up to 576 products in float against double: about 1e-14 */
        const double ey = f ? nmse(y, ry, ny) : 0, edx = d ? nmse(dx, rdx, nx) : 0,
                     edw = k ? nmse(dw, rdw, nw) : 0;
        fprintf(stderr,
                "\n  %dx%dx%d -> %d, %dx%d pad %d stride %d, batch %d: NMSE y %.1e dx %.1e "
                "dw %.1e",
                c.h, c.w, c.c, c.oc, c.k, c.k, c.pad, c.stride, c.batch, ey, edx, edw);
        CU_ASSERT(ey < 1e-12);
        CU_ASSERT(edx < 1e-12);
        CU_ASSERT(edw < 1e-12);
        float *bufs[] = {x, w, dy, y, dx, dw, wt, partial};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            free(bufs[i]);
        free(ry);
        free(rdx);
        free(rdw);
    }
}

/* every output is one chain of fused multiply-adds in the order of K, so 4 or 8 pixels a thread
 * and 16, 32 or 64 channels a block give the same bits */
static void test_tiled_tile_sizes_same_bits(void) {
    const conv_case c = {12, 10, 16, 64, 3, 1, 1, 3};
    const conv_geom g = geom_of(c);
    const size_t nx = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
    const size_t ny = (size_t)g.batch * g.out_h * g.out_w * c.oc;
    float *x = rand_floats(nx, 7), *w = rand_floats((size_t)c.oc * c.k * c.k * c.c, 8);
    float *first = rand_floats(ny, 9), *y = rand_floats(ny, 10);
    CU_ASSERT_FATAL(ss_emu_conv_tiled_fwd_tiles(g, c.oc, 16, 4, x, w, first));
    static const int tiles[][2] = {{16, 8}, {32, 4}, {32, 8}, {64, 4}, {64, 8}};
    for (size_t t = 0; t < sizeof tiles / sizeof tiles[0]; t++) {
        memset(y, 0xff, ny * sizeof *y);
        CU_ASSERT_FATAL(ss_emu_conv_tiled_fwd_tiles(g, c.oc, tiles[t][0], tiles[t][1], x, w, y));
        CU_ASSERT(memcmp(first, y, ny * sizeof *y) == 0);
    }
    free(x);
    free(w);
    free(first);
    free(y);
}

/* the one-pixel-a-thread kernel (cuda_conv.cu), which takes in_c % 4 == 0, and its input
 * gradient with in_c % 16 == 0 */
static void test_one_pixel_kernel(void) {
    static const conv_case one[] = {{9, 9, 4, 16, 3, 1, 1, 2}, {10, 8, 16, 32, 3, 1, 1, 2}};
    for (size_t t = 0; t < sizeof one / sizeof one[0]; t++) {
        const conv_case c = one[t];
        const conv_geom g = geom_of(c);
        const size_t nx = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
        const size_t ny = (size_t)g.batch * g.out_h * g.out_w * c.oc;
        const size_t nw = (size_t)c.oc * g.kh * g.kw * g.in_c;
        float *x = rand_floats(nx, 200 + t), *w = rand_floats(nw, 210 + t);
        float *dy = rand_floats(ny, 220 + t), *y = rand_floats(ny, 230 + t);
        float *dx = rand_floats(nx, 240 + t), *wt = rand_floats(nw, 250 + t);
        double *ry = calloc(ny, sizeof *ry), *rdx = calloc(nx, sizeof *rdx),
               *rdw = calloc(nw, sizeof *rdw);
        CU_ASSERT_FATAL(ry && rdx && rdw);
        reference(g, c.oc, x, w, dy, ry, rdx, rdw);
        CU_ASSERT_FATAL(cuda_conv_implicit_fwd(0, g, c.oc, x, w, y));
        CU_ASSERT(nmse(y, ry, ny) < 1e-12);
        const int d = cuda_conv_implicit_dx(0, g, c.oc, dy, w, wt, dx);
        CU_ASSERT_EQUAL(d, c.c % 16 == 0);
        if (d) CU_ASSERT(nmse(dx, rdx, nx) < 1e-12);
        float *bufs[] = {x, w, dy, y, dx, wt};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            free(bufs[i]);
        free(ry);
        free(rdx);
        free(rdw);
    }
}

/* the kernels of few input channels (cuda_conv_few.cu): forward pass and weight gradient against
 * double, one block of bands or several (their partial sums added), bands as wide as the
 * staging allows, and the geometries they refuse */
static void test_few_channels(void) {
    static const struct {
        conv_case c;
        int takes, partial, passes; /* passes: 1 forward, 2 weight gradient (the rest costs time) */
    } few[] = {
        {{28, 28, 1, 32, 5, 2, 1, 2}, 1, 1, 3},  /* the cnn's conv1: bands of 1 row */
        {{28, 28, 1, 16, 3, 1, 1, 2}, 1, 1, 3},  /* ResNet-20's first convolution */
        {{12, 10, 3, 64, 5, 2, 1, 6}, 1, 1, 3},  /* K = 75, 64 channels: 5 columns a thread */
        {{15, 14, 2, 20, 3, 1, 2, 3}, 1, 1, 3},  /* stride 2, 20 channels: 5 threads a pixel */
        {{12, 200, 1, 64, 3, 1, 1, 1}, 1, 1, 3}, /* 200 pixels a band: 4 stages of dy (64 ... 8) */
        {{6, 6, 1, 16, 3, 1, 1, 132}, 1, 1, 3},  /* 2 bands of 3 rows an image */
        {{3, 510, 4, 16, 3, 1, 1, 1}, 1, 1, 3},  /* 3 rows of 2,048 floats: the staging's limit */
        {{2, 2, 1, 16, 3, 1, 1, 1100}, 1, 1, 2}, /* an image a band, 2 a block of the dw */
        {{5, 6, 1, 16, 3, 1, 1, 1}, 1, 1, 3},    /* one image, a band a row */
        {{3, 1, 1, 16, 3, 1, 1, 1}, 1, 1, 3},    /* one column */
        {{9, 9, 4, 16, 5, 2, 1, 2}, 0, 0, 3},    /* K = 100 */
        {{9, 9, 5, 16, 1, 0, 1, 2}, 0, 0, 3},    /* 5 input channels */
        {{9, 9, 1, 8, 3, 1, 1, 2}, 0, 0, 3},     /* 8 output channels */
        {{9, 9, 1, 18, 3, 1, 1, 2}, 0, 0, 3},    /* oc % 4 != 0 */
        {{3, 511, 4, 16, 3, 1, 1, 1}, 0, 0, 3},  /* 3 rows of 2,052 floats outgrow it */
    };
    for (size_t t = 0; t < sizeof few / sizeof few[0]; t++) {
        const conv_case c = few[t].c;
        const conv_geom g = geom_of(c);
        const size_t nx = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
        const size_t ny = (size_t)g.batch * g.out_h * g.out_w * c.oc;
        const size_t nw = (size_t)c.oc * g.kh * g.kw * g.in_c;
        float *x = rand_floats(nx, 300 + t), *w = rand_floats(nw, 310 + t);
        float *dy = rand_floats(ny, 320 + t), *y = rand_floats(ny, 330 + t);
        float *dw = rand_floats(nw, 340 + t);
        double *ry = calloc(ny, sizeof *ry), *rdx = calloc(nx, sizeof *rdx),
               *rdw = calloc(nw, sizeof *rdw);
        CU_ASSERT_FATAL(ry && rdx && rdw);
        reference(g, c.oc, x, w, dy, ry, rdx, rdw);
        const size_t partial_n = cuda_conv_few_dw_floats(g, c.oc);
        float *partial = partial_n ? rand_floats(partial_n, 350 + t) : NULL;
        CU_ASSERT_EQUAL(cuda_conv_few_takes(g, c.oc, CUDA_CONV_DX), 0);
        CU_ASSERT_EQUAL(cuda_conv_few_takes(g, c.oc, CUDA_CONV_FWD), few[t].takes);
        CU_ASSERT_EQUAL(cuda_conv_few_takes(g, c.oc, CUDA_CONV_DW), few[t].takes);
        const int f = few[t].passes & 1 ? cuda_conv_few_fwd(0, g, c.oc, x, w, y) : 0;
        const int k = few[t].passes & 2 ? cuda_conv_few_dw(0, g, c.oc, x, dy, partial, dw) : 0;
        CU_ASSERT_EQUAL(f, few[t].takes && (few[t].passes & 1));
        CU_ASSERT_EQUAL(k, few[t].takes && (few[t].passes & 2));
        if (few[t].takes) CU_ASSERT_EQUAL(partial_n > 0, few[t].partial);
        const double ey = f ? nmse(y, ry, ny) : 0, edw = k ? nmse(dw, rdw, nw) : 0;
        fprintf(stderr, "\n  %dx%dx%d -> %d, %dx%d pad %d stride %d, batch %d: NMSE y %.1e dw %.1e",
                c.h, c.w, c.c, c.oc, c.k, c.k, c.pad, c.stride, c.batch, ey, edw);
        CU_ASSERT(ey < 1e-12);
        CU_ASSERT(edw < 1e-12);
        float *bufs[] = {x, w, dy, y, dw, partial};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            free(bufs[i]);
        free(ry);
        free(rdx);
        free(rdw);
    }
}

/* im2col (copies: exact, every channel count, 4 at a time or 1) and col2im (each input element's
 * sum of the column entries that read it, against double) */
static void test_im2col_col2im(void) {
    static const conv_case cols[] = {
        {7, 6, 2, 0, 3, 1, 1, 3},  {9, 9, 3, 0, 5, 0, 1, 2},    {14, 14, 32, 0, 5, 2, 1, 2},
        {7, 8, 16, 0, 3, 1, 2, 2}, {14, 14, 16, 0, 1, 0, 2, 2}, {6, 5, 1, 0, 3, 1, 1, 2},
    };
    for (size_t t = 0; t < sizeof cols / sizeof cols[0]; t++) {
        const conv_geom g = geom_of(cols[t]);
        const int st = g.stride > 1 ? g.stride : 1, kkc = g.kh * g.kw * g.in_c;
        const size_t nx = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
        const size_t ncol = (size_t)g.batch * g.out_h * g.out_w * kkc;
        float *x = rand_floats(nx, 300 + t), *col = rand_floats(ncol, 310 + t);
        float *ref = rand_floats(ncol, 320 + t), *dcol = rand_floats(ncol, 330 + t);
        float *dx = rand_floats(nx, 340 + t);
        double *rdx = calloc(nx, sizeof *rdx);
        CU_ASSERT_FATAL(rdx != NULL);
        for (int b = 0; b < g.batch; b++)
            for (int oh = 0; oh < g.out_h; oh++)
                for (int ow = 0; ow < g.out_w; ow++)
                    for (int ki = 0; ki < g.kh; ki++)
                        for (int kj = 0; kj < g.kw; kj++)
                            for (int c = 0; c < g.in_c; c++) {
                                const int ih = oh * st - g.pad + ki, iw = ow * st - g.pad + kj;
                                const size_t ci =
                                    (((size_t)b * g.out_h + oh) * g.out_w + ow) * kkc +
                                    (size_t)(ki * g.kw + kj) * g.in_c + c;
                                if (ih < 0 || ih >= g.in_h || iw < 0 || iw >= g.in_w) {
                                    ref[ci] = 0.0f;
                                    continue;
                                }
                                const size_t xi =
                                    (((size_t)b * g.in_h + ih) * g.in_w + iw) * g.in_c + c;
                                ref[ci] = x[xi];
                                rdx[xi] += dcol[ci];
                            }
        cuda_im2col(0, g, x, col);
        CU_ASSERT(memcmp(col, ref, ncol * sizeof *col) == 0);
        cuda_col2im(0, g, dcol, dx);
        CU_ASSERT(nmse(dx, rdx, nx) < 1e-12);
        free(x);
        free(col);
        free(ref);
        free(dcol);
        free(dx);
        free(rdx);
    }
}

/* batch normalization (training: the batch's statistics, the running ones and the output; the
 * backward pass; inference) against double, on one and several blocks of rows and one and two
 * tiles of columns */
static void test_batchnorm(void) {
    static const int shapes[][2] = {{300, 17}, {2 * 28 * 28, 16}, {5, 64}, {3000, 40}};
    const float momentum = 0.1f, eps = 1e-5f;
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const int rows = shapes[t][0], cols = shapes[t][1];
        const size_t n = (size_t)rows * cols;
        float *x = rand_floats(n, 400 + t), *dy = rand_floats(n, 410 + t);
        float *gamma = rand_floats(cols, 420 + t), *beta = rand_floats(cols, 430 + t);
        float *rm = rand_floats(cols, 440 + t), *rv = rand_floats(cols, 450 + t);
        float *y = rand_floats(n, 460 + t), *dx = rand_floats(n, 470 + t);
        float *mean = rand_floats(cols, 480 + t), *invstd = rand_floats(cols, 490 + t);
        float *dgamma = rand_floats(cols, 500 + t), *dbeta = rand_floats(cols, 510 + t);
        for (int c = 0; c < cols; c++)
            rv[c] = 1.0f + 0.5f * rv[c];
        double *r = calloc(n * 2 + (size_t)cols * 8, sizeof *r);
        CU_ASSERT_FATAL(r != NULL);
        double *ry = r, *rdx = r + n, *m = rdx + n, *v = m + cols, *rrm = v + cols,
               *rrv = rrm + cols, *rdg = rrv + cols, *rdb = rdg + cols, *is = rdb + cols;
        for (size_t i = 0; i < n; i++)
            m[i % cols] += x[i] / (double)rows;
        for (size_t i = 0; i < n; i++)
            v[i % cols] += (x[i] - m[i % cols]) * (x[i] - m[i % cols]) / rows;
        for (int c = 0; c < cols; c++) {
            is[c] = 1.0 / sqrt(v[c] + eps);
            rrm[c] = (1.0 - momentum) * rm[c] + momentum * m[c];
            rrv[c] = (1.0 - momentum) * rv[c] + momentum * v[c] * rows / (rows - 1);
        }
        for (size_t i = 0; i < n; i++) {
            const int c = (int)(i % cols);
            const double xh = (x[i] - m[c]) * is[c];
            ry[i] = xh * gamma[c] + beta[c];
            rdg[c] += dy[i] * xh;
            rdb[c] += dy[i];
        }
        for (size_t i = 0; i < n; i++) {
            const int c = (int)(i % cols);
            const double xh = (x[i] - m[c]) * is[c];
            rdx[i] = gamma[c] * is[c] / rows * (rows * (double)dy[i] - rdb[c] - xh * rdg[c]);
        }
        double *partial = calloc(cuda_bn_partial_doubles(rows, cols), sizeof *partial);
        CU_ASSERT_FATAL(partial != NULL);
        cuda_bn_fwd_train(0, rows, cols, x, gamma, beta, momentum, eps, rm, rv, mean, invstd,
                          partial, y);
        CU_ASSERT(nmse(y, ry, n) < 1e-12);
        CU_ASSERT(nmse(mean, m, cols) < 1e-12);
        CU_ASSERT(nmse(invstd, is, cols) < 1e-12);
        CU_ASSERT(nmse(rm, rrm, cols) < 1e-12);
        CU_ASSERT(nmse(rv, rrv, cols) < 1e-12);
        cuda_bn_bwd(0, rows, cols, x, dy, gamma, mean, invstd, partial, dgamma, dbeta, dx);
        CU_ASSERT(nmse(dgamma, rdg, cols) < 1e-12);
        CU_ASSERT(nmse(dbeta, rdb, cols) < 1e-12);
        CU_ASSERT(nmse(dx, rdx, n) < 1e-10);
        /* inference, with the running statistics just updated */
        for (int c = 0; c < cols; c++)
            is[c] = 1.0 / sqrt(rrv[c] + eps);
        for (size_t i = 0; i < n; i++)
            ry[i] = (x[i] - rrm[i % cols]) * is[i % cols] * gamma[i % cols] + beta[i % cols];
        cuda_bn_fwd_infer(0, rows, cols, x, gamma, beta, rm, rv, eps, y);
        CU_ASSERT(nmse(y, ry, n) < 1e-12);
        float *bufs[] = {x, dy, gamma, beta, rm, rv, y, dx, mean, invstd, dgamma, dbeta};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            free(bufs[i]);
        free(r);
        free(partial);
    }
}

int main(void) {
    CU_TestInfo tests[] = {
        {"tiled convolution: forward, input and weight gradients against double sums",
         test_tiled_against_reference},
        {"tiled convolution: the same bits for every tile size", test_tiled_tile_sizes_same_bits},
        {"one-pixel-a-thread convolution against double sums", test_one_pixel_kernel},
        {"few input channels: forward and weight gradient against double sums", test_few_channels},
        {"im2col exactly, col2im against double sums", test_im2col_col2im},
        {"batch normalization against double", test_batchnorm},
        CU_TEST_INFO_NULL,
    };
    CU_SuiteInfo suites[] = {
        {"cuda kernels emulated on the CPU", NULL, NULL, NULL, NULL, tests},
        CU_SUITE_INFO_NULL,
    };
    return ss_test_main(suites);
}
