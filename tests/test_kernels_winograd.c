/* F(4 x 4, 3 x 3) Winograd convolutions on the CPU (kernels/conv_winograd.h): the forward pass,
 * the filter gradient and the data gradient against sums in double, on maps whose tiles fall off
 * the image's edge, batches of several chunks, and as many input as output channels or not; the
 * same bits on 1, 2 and 3 threads and with the AVX-512 and AVX2 register tiles, and within the
 * bound with the BLAS's products; which geometries it takes; and a layer of vgg:11 through the
 * CPU device against the direct passes. */
#include "ss_test.h"

#include "common/rng.h"
#include "common/status.h"
#include "kernels/conv_direct.h"
#include "kernels/conv_winograd.h"
#include "kernels/device.h"
#include "kernels/layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void fill_uniform(rng *r, float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)rng_uniform(r);
}

typedef struct wg_case {
    conv_geom g;
    int oc;
    float *x, *w, *bias, *dy;
} wg_case;

static float at_x(const wg_case *c, int b, int i, int j, int ch) {
    const conv_geom *g = &c->g;
    if (i < 0 || j < 0 || i >= g->in_h || j >= g->in_w) return 0.0f;
    return c->x[(((size_t)b * g->in_h + i) * g->in_w + j) * g->in_c + ch];
}

static float at_dy(const wg_case *c, int b, int i, int j, int o) {
    const conv_geom *g = &c->g;
    if (i < 0 || j < 0 || i >= g->out_h || j >= g->out_w) return 0.0f;
    return c->dy[(((size_t)b * g->out_h + i) * g->out_w + j) * c->oc + o];
}

static float at_w(const wg_case *c, int o, int ki, int kj, int ch) {
    return c->w[(((size_t)o * 3 + ki) * 3 + kj) * c->g.in_c + ch];
}

/* |got - ref| within tol times the sum of the terms' magnitudes (the scale of float rounding in
 * any order of the sum), and a count of the elements outside it */
static int out_of_bound(float got, double ref, double abs_sum, double tol) {
    return !(fabs(got - ref) <= tol * abs_sum + 1e-30);
}

/* The mismatches of y (with bias, relu), dw and dx (NULL: not checked) against double sums. */
static int mismatches(const wg_case *c, const float *y, int relu, const float *dw, const float *dx,
                      double tol) {
    const conv_geom *g = &c->g;
    int bad = 0;
    for (int b = 0; b < g->batch; b++)
        for (int i = 0; i < g->out_h; i++)
            for (int j = 0; j < g->out_w; j++)
                for (int o = 0; o < c->oc; o++) {
                    double s = c->bias[o], a = fabs(c->bias[o]);
                    for (int ki = 0; ki < 3; ki++)
                        for (int kj = 0; kj < 3; kj++)
                            for (int ch = 0; ch < g->in_c; ch++) {
                                const double t = (double)at_x(c, b, i + ki - 1, j + kj - 1, ch) *
                                                 at_w(c, o, ki, kj, ch);
                                s += t;
                                a += fabs(t);
                            }
                    if (relu && s < 0) s = 0, a = fmax(a, 1e-3);
                    bad += out_of_bound(y[(((size_t)b * g->out_h + i) * g->out_w + j) * c->oc + o],
                                        s, a, tol);
                }
    for (int o = 0; o < c->oc && dw; o++)
        for (int ki = 0; ki < 3; ki++)
            for (int kj = 0; kj < 3; kj++)
                for (int ch = 0; ch < g->in_c; ch++) {
                    double s = 0, a = 0;
                    for (int b = 0; b < g->batch; b++)
                        for (int i = 0; i < g->out_h; i++)
                            for (int j = 0; j < g->out_w; j++) {
                                const double t = (double)at_x(c, b, i + ki - 1, j + kj - 1, ch) *
                                                 at_dy(c, b, i, j, o);
                                s += t;
                                a += fabs(t);
                            }
                    bad +=
                        out_of_bound(dw[(((size_t)o * 3 + ki) * 3 + kj) * g->in_c + ch], s, a, tol);
                }
    for (int b = 0; b < g->batch && dx; b++)
        for (int i = 0; i < g->in_h; i++)
            for (int j = 0; j < g->in_w; j++)
                for (int ch = 0; ch < g->in_c; ch++) {
                    double s = 0, a = 0;
                    for (int ki = 0; ki < 3; ki++)
                        for (int kj = 0; kj < 3; kj++)
                            for (int o = 0; o < c->oc; o++) {
                                const double t = (double)at_dy(c, b, i + 1 - ki, j + 1 - kj, o) *
                                                 at_w(c, o, ki, kj, ch);
                                s += t;
                                a += fabs(t);
                            }
                    bad += out_of_bound(
                        dx[(((size_t)b * g->in_h + i) * g->in_w + j) * g->in_c + ch], s, a, tol);
                }
    return bad;
}

/* A case's passes on `threads` threads; the results into y, dw, dx (allocated by the caller). */
static void run_case(const wg_case *c, int relu, int threads, float *y, float *dw, float *dx) {
    float *ws = ss_malloc(conv_winograd_workspace_floats(&c->g, c->oc) * sizeof(float));
    conv_winograd_forward(&c->g, c->oc, c->x, c->w, c->bias, relu, ws, y, threads);
    conv_winograd_backward(&c->g, c->oc, c->x, c->dy, c->w, ws, dw, dx, threads);
    free(ws);
}

/* F(4, 3)'s transforms take values up to 8 and 1/24 times their inputs: a bound of 1e-5 of the
 * terms' magnitudes (about 170 float epsilons) holds every element, and a wrong transform, tile
 * or chunk is off by the terms themselves */
#define WG_TOL 1e-5

/* One case on the products of `isa`'s register tiles (CONV_DIRECT_NONE: the BLAS's), where the
 * passes take the geometry with them (1), else 0. Its results stay in y, dw and dx[0] when
 * keep. */
static int check_isa(int batch, int h, int w, int c, int oc, conv_direct_isa isa, float **keep) {
    wg_case k = {{batch, h, w, c, h, w, 3, 3, 1, 1}, oc, NULL, NULL, NULL, NULL};
    conv_direct_cap_isa(isa);
    if (!conv_winograd_supports(&k.g, oc)) {
        conv_direct_cap_isa(CONV_DIRECT_AVX512);
        return 0;
    }
    const size_t nx = (size_t)batch * h * w * c, ny = (size_t)batch * h * w * oc;
    const size_t nw = (size_t)oc * 9 * c;
    k.x = ss_malloc(nx * sizeof(float));
    k.w = ss_malloc(nw * sizeof(float));
    k.bias = ss_malloc((size_t)oc * sizeof(float));
    k.dy = ss_malloc(ny * sizeof(float));
    rng r;
    rng_seed(&r, (uint64_t)(batch * 100000 + h * 1000 + w * 10 + oc), RNG_STREAM_DATA);
    fill_uniform(&r, k.x, nx, -1, 1);
    fill_uniform(&r, k.w, nw, -0.5f, 0.5f);
    fill_uniform(&r, k.bias, (size_t)oc, -0.2f, 0.2f);
    fill_uniform(&r, k.dy, ny, -1, 1);
    float *y[3], *dw[3], *dx[3];
    for (int t = 0; t < 3; t++) {
        y[t] = ss_malloc(ny * sizeof(float));
        dw[t] = ss_malloc(nw * sizeof(float));
        dx[t] = ss_malloc(nx * sizeof(float));
        memset(y[t], 0xff, ny * sizeof(float)); /* NaNs: every element must be written */
        memset(dx[t], 0xff, nx * sizeof(float));
    }
    int bad = 0, same = 1;
    for (int relu = 0; relu < 2; relu++) {
        for (int t = 0; t < 3; t++)
            run_case(&k, relu, t + 1, y[t], dw[t], dx[t]);
        bad += mismatches(&k, y[0], relu, relu ? NULL : dw[0], relu ? NULL : dx[0], WG_TOL);
        for (int t = 1; t < 3; t++)
            same &= !memcmp(y[t], y[0], ny * sizeof(float)) &&
                    !memcmp(dw[t], dw[0], nw * sizeof(float)) &&
                    !memcmp(dx[t], dx[0], nx * sizeof(float));
    }
    /* without the data gradient: the filter gradient alone, the same bits */
    run_case(&k, 0, 1, y[1], dw[1], NULL);
    same &= !memcmp(dw[1], dw[0], nw * sizeof(float));
    if (bad || !same)
        fprintf(stderr,
                "\n  winograd B%d %dx%dx%d -> %d, isa %d: %d out of bound, threads alike %d", batch,
                h, w, c, oc, (int)isa, bad, same);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(same);
    /* a mutation check of the reference bound: the direct sums' answer is not Winograd's with
     * one tap's weight changed */
    k.w[4 * c] += 0.25f;
    CU_ASSERT(mismatches(&k, y[0], 1, NULL, NULL, WG_TOL) > 0);
    if (keep) keep[0] = y[0], keep[1] = dw[0], keep[2] = dx[0], y[0] = dw[0] = dx[0] = NULL;
    for (int t = 0; t < 3; t++)
        free(y[t]), free(dw[t]), free(dx[t]);
    free(k.x), free(k.w), free(k.bias), free(k.dy);
    conv_direct_cap_isa(CONV_DIRECT_AVX512);
    return 1;
}

/* A case on every set of products this CPU runs: the widest register tiles, AVX2's (the same
 * bits: each product's element is one chain over the same terms in the same order) and the
 * BLAS's where the passes take the geometry without tiles. */
static void check_case(int batch, int h, int w, int c, int oc) {
    const conv_direct_isa best = conv_direct_best_isa();
    float *first[3] = {NULL, NULL, NULL}, *other[3] = {NULL, NULL, NULL};
    CU_ASSERT_FATAL(check_isa(batch, h, w, c, oc, best, first));
    if (best == CONV_DIRECT_AVX512 && check_isa(batch, h, w, c, oc, CONV_DIRECT_AVX2, other)) {
        const size_t n[3] = {(size_t)batch * h * w * oc, (size_t)oc * 9 * c,
                             (size_t)batch * h * w * c};
        for (int i = 0; i < 3; i++)
            CU_ASSERT(!memcmp(first[i], other[i], n[i] * sizeof(float)));
    }
    if (best != CONV_DIRECT_NONE) check_isa(batch, h, w, c, oc, CONV_DIRECT_NONE, NULL);
    for (int i = 0; i < 3; i++)
        free(first[i]), free(other[i]);
}

static void test_winograd_passes(void) {
    check_case(2, 14, 14, 64, 128); /* vgg:11's 14 x 14 map: 4 x 4 tiles, the last cut at 2 */
    check_case(3, 7, 7, 96, 96);    /* 7 x 7: 2 x 2 tiles of which 3 cut */
    check_case(2, 9, 11, 128, 64);  /* odd maps, rows and columns cut differently */
    check_case(1, 6, 6, 32, 256);   /* the smallest map taken, the narrowest input */
    check_case(1, 8, 8, 256, 32);   /* tiles that fit exactly */
    check_case(2, 28, 28, 16, 16);  /* resnet:20's stages: 16 channels, tile rows cut at 14 */
    check_case(2, 14, 14, 32, 32);
    check_case(3, 7, 7, 64, 64);
    check_case(1, 6, 6, 16, 48); /* 3 vectors of 16 output channels: tiles of 2 and of 1 */
    /* 3 samples of 9 tiles in chunks of 2 samples and 1 (chunks of 18 tiles): the filter
     * gradient adds them; the same bits as the default's single chunk would not be (other sums) */
    conv_winograd_set_chunk_tiles(18);
    check_case(3, 10, 9, 64, 128);
    conv_winograd_set_chunk_tiles(0);
}

static void test_winograd_supports(void) {
    const conv_geom vgg14 = {64, 14, 14, 64, 14, 14, 3, 3, 1, 1},
                    vgg7 = {64, 7, 7, 256, 7, 7, 3, 3, 1, 1},
                    map3 = {64, 3, 3, 256, 3, 3, 3, 3, 1, 1},
                    k5 = {2, 14, 14, 32, 14, 14, 5, 5, 2, 1},
                    st2 = {2, 14, 14, 32, 7, 7, 3, 3, 1, 2},
                    pad0 = {2, 14, 14, 32, 12, 12, 3, 3, 0, 1},
                    narrow = {2, 28, 28, 16, 28, 28, 3, 3, 1, 1};
    CU_ASSERT(conv_winograd_supports(&vgg14, 128));
    CU_ASSERT(conv_winograd_supports(&vgg7, 256));
    CU_ASSERT(!conv_winograd_supports(&map3, 512)); /* 3 x 3 maps: the direct passes */
    CU_ASSERT(!conv_winograd_supports(&k5, 64));
    CU_ASSERT(!conv_winograd_supports(&st2, 64));
    CU_ASSERT(!conv_winograd_supports(&pad0, 64));
    const conv_geom r7 = {64, 7, 7, 64, 7, 7, 3, 3, 1, 1},
                    r14 = {64, 14, 14, 32, 14, 14, 3, 3, 1, 1};
    CU_ASSERT(!conv_winograd_supports(&vgg7, 24)); /* not a multiple of 16 */
    /* resnet:20's stages: by the register tiles where the CPU has them, else the direct passes
     * (the BLAS's products on 16 to 64 channels lose to them) */
    const int tiles = conv_direct_available();
    CU_ASSERT_EQUAL(conv_winograd_supports(&narrow, 16), tiles);
    CU_ASSERT_EQUAL(conv_winograd_supports(&r14, 32), tiles);
    CU_ASSERT_EQUAL(conv_winograd_supports(&r7, 64), tiles);
    conv_direct_cap_isa(CONV_DIRECT_NONE);
    CU_ASSERT(!conv_winograd_supports(&narrow, 16));
    CU_ASSERT(!conv_winograd_supports(&r14, 32));
    CU_ASSERT(!conv_winograd_supports(&r7, 64));
    CU_ASSERT(conv_winograd_supports(&r7, 128)); /* 64 x 128 channel pairs */
    CU_ASSERT(conv_winograd_supports(&vgg14, 128));
    conv_direct_cap_isa(CONV_DIRECT_AVX512);
    conv_winograd_enable(0);
    CU_ASSERT(!conv_winograd_supports(&vgg14, 128));
    conv_winograd_enable(1);
    /* the workspace does not grow with the batch past a chunk */
    conv_geom big = vgg14;
    big.batch = 4096;
    CU_ASSERT_EQUAL(conv_winograd_workspace_floats(&big, 128),
                    conv_winograd_workspace_floats(&vgg14, 128));
}

/* A conv layer of vgg:11's second stage (14 x 14, 64 -> 128, batch 4) through the CPU device,
 * Winograd against the same layer on the direct passes: outputs, every gradient, within the
 * rounding of two orders of sums. */
static void test_winograd_layer(void) {
    device *dev = NULL;
    char notice[256];
    CU_ASSERT_FATAL(device_open("cpu", &dev, notice, sizeof notice) == SS_OK);
    const int batch = 4;
    float *out[2][4];
    size_t n[4] = {0};
    for (int on = 0; on < 2; on++) {
        conv_winograd_enable(on);
        layer l;
        layer_init_conv2d(&l, "stage2.conv1", 14, 14, 64, 128, 3, 1);
        l.need_dx = 1;
        const size_t np = l.weight_count + l.bias_count;
        float *params = device_alloc(dev, np), *grads = device_alloc(dev, np);
        layer_bind(&l, params, grads, 0);
        layer_alloc_scratch(dev, &l, batch);
        CU_ASSERT(l.conv_direct); /* the CPU's own passes, not im2col */
        rng r;
        rng_seed(&r, 5, RNG_STREAM_INIT);
        fill_uniform(&r, params, np, -0.1f, 0.1f);
        const size_t nin = (size_t)batch * layer_in_size(&l);
        const size_t nout = (size_t)batch * layer_out_size(&l);
        float *x = device_alloc(dev, nin), *y = device_alloc(dev, nout);
        float *dy = device_alloc(dev, nout), *dx = device_alloc(dev, nin);
        fill_uniform(&r, x, nin, -1, 1);
        fill_uniform(&r, dy, nout, -1, 1);
        layer_forward(dev, &l, batch, x, y);
        layer_backward(dev, &l, batch, x, y, dy, dx);
        n[0] = nout, n[1] = nin, n[2] = l.weight_count, n[3] = l.bias_count;
        const float *src[4] = {y, dx, l.dw, l.db};
        for (int i = 0; i < 4; i++) {
            out[on][i] = ss_malloc(n[i] * sizeof(float));
            memcpy(out[on][i], src[i], n[i] * sizeof(float));
        }
        device_free(dev, x), device_free(dev, y), device_free(dev, dy), device_free(dev, dx);
        layer_free_scratch(dev, &l);
        device_free(dev, params), device_free(dev, grads);
    }
    conv_winograd_enable(1);
    for (int i = 0; i < 4; i++) {
        double worst = 0, scale = 0;
        for (size_t k = 0; k < n[i]; k++)
            scale = fmax(scale, fabs(out[0][i][k]));
        for (size_t k = 0; k < n[i]; k++)
            worst = fmax(worst, fabs(out[1][i][k] - out[0][i][k]));
        CU_ASSERT(scale > 0);
        CU_ASSERT(worst <= 1e-5 * scale);
        /* two algorithms: not the same bits (else the switch did nothing), the bias gradient
         * (the same sums of dy's rows either way) excepted */
        /* two algorithms: not the same bits, else the switch did nothing (the bias gradient,
         * a sum of dy's rows either way, is not compared) */
        if (i < 3) CU_ASSERT(memcmp(out[0][i], out[1][i], n[i] * sizeof(float)) != 0);
        free(out[0][i]), free(out[1][i]);
    }
    device_close(dev);
}

static CU_TestInfo winograd_tests[] = {
    {"forward, filter and data gradients against double sums; 1-3 threads alike",
     test_winograd_passes},
    {"the geometries taken", test_winograd_supports},
    {"a vgg:11 layer through the CPU device: Winograd = direct within rounding",
     test_winograd_layer},
    CU_TEST_INFO_NULL,
};

int main(void) {
    CU_SuiteInfo suites[] = {
        {"winograd", NULL, NULL, NULL, NULL, winograd_tests},
        CU_SUITE_INFO_NULL,
    };
    return ss_test_main(suites);
}
