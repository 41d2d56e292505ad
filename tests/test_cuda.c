/* CUDA backend against the CPU reference (ggml's test-backend-ops idea): every op of the device
 * table and one full training step of each model run on both devices from the same inputs, and
 * the results are compared by normalized mean squared error
 *     NMSE = sum (cuda - cpu)^2 / sum cpu^2
 * with a tolerance per case, commented where it is set. The first mismatching elements are
 * printed. Without a usable GPU the program says so on one line and exits 77 (ctest: skipped). */
#include "ss_test.h"

#include "common/rng.h"
#include "common/status.h"
#include "kernels/conv_winograd.h"
#include "kernels/device_impl.h"
#include "kernels/layers.h"
#include "kernels/model.h"
#include "kernels/optim.h"

#include <pthread.h>
#include <string.h>

static device *cpu_dev, *gpu_dev; /* opened by the suite's init */

static int suite_init(void) {
    char notice[256];
    if (device_open("cpu", &cpu_dev, notice, sizeof notice) != SS_OK) return 1;
    if (device_open("cuda", &gpu_dev, notice, sizeof notice) != SS_OK) {
        fprintf(stderr, "test_cuda: %s\n", ss_error_message());
        return 1;
    }
    printf("test_cuda: %s vs %s\n", device_name(gpu_dev), device_name(cpu_dev));
    return 0;
}

static int suite_clean(void) {
    device_close(gpu_dev);
    device_close(cpu_dev);
    return 0;
}

static float *rand_host(size_t n, uint64_t seed, float lo, float hi) {
    float *x = ss_malloc((n ? n : 1) * sizeof(float));
    rng r;
    rng_seed(&r, seed, RNG_STREAM_DATA);
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)rng_uniform(&r);
    return x;
}

/* A host array's copy on the GPU / on the CPU device. */
static float *on_gpu(const float *host, size_t n) {
    float *p = device_alloc(gpu_dev, n);
    device_upload(gpu_dev, p, host, n);
    return p;
}

static float *on_cpu(const float *host, size_t n) {
    float *p = device_alloc(cpu_dev, n);
    memcpy(p, host, n * sizeof(float));
    return p;
}

/* Downloads a GPU buffer and compares it with the CPU result; prints the first mismatches.
 * Returns the NMSE. */
/* sum (got - ref)^2 / sum ref^2 over n floats (the plain sum where ref is all zeros) */
static double nmse_of(const float *got, const float *ref, size_t n) {
    double num = 0.0, den = 0.0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)got[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? num / den : num;
}

static double check_nmse(const char *what, const float *cpu, const float *gpu_buf, size_t n,
                         double max_nmse) {
    float *got = ss_malloc(n * sizeof(float));
    device_download(gpu_dev, got, gpu_buf, n);
    double max_diff = 0.0;
    int shown = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)got[i] - cpu[i];
        if (fabs(d) > max_diff) max_diff = fabs(d);
        if (fabs(d) > 1e-5 + 1e-3 * fabs(cpu[i]) && shown < 5) {
            fprintf(stderr, "\n  %s[%zu]: cpu %.8g cuda %.8g", what, i, (double)cpu[i],
                    (double)got[i]);
            shown++;
        }
    }
    const double nmse = nmse_of(got, cpu, n);
    if (!(nmse <= max_nmse))
        fprintf(stderr, "\n  %s: NMSE %.3g > %.3g (largest difference %.3g)", what, nmse, max_nmse,
                max_diff);
    CU_ASSERT(nmse <= max_nmse);
    free(got);
    return nmse;
}

/* ---- GEMM: FP32 on both sides (cuBLAS without TF32); only the summation order differs, so
 * each element is off by a few ulps of its partial sums: NMSE ~1e-14, tolerance 1e-10. ---- */
static void test_gemm(void) {
    const int m = 37, n = 29, k = 53;
    for (int ta = 0; ta < 2; ta++) {
        for (int tb = 0; tb < 2; tb++) {
            float *a = rand_host((size_t)m * k, 1, -1, 1), *b = rand_host((size_t)k * n, 2, -1, 1);
            float *c = rand_host((size_t)m * n, 3, -1, 1);
            int lda = ta ? m : k, ldb = tb ? k : n;
            float *ga = on_gpu(a, (size_t)m * k), *gb = on_gpu(b, (size_t)k * n);
            float *gc = on_gpu(c, (size_t)m * n);
            cpu_dev->ops->gemm(cpu_dev, ta, tb, m, n, k, 0.7f, a, lda, b, ldb, 0.3f, c, n);
            gpu_dev->ops->gemm(gpu_dev, ta, tb, m, n, k, 0.7f, ga, lda, gb, ldb, 0.3f, gc, n);
            char what[32];
            snprintf(what, sizeof what, "gemm %c%c", ta ? 'T' : 'N', tb ? 'T' : 'N');
            check_nmse(what, c, gc, (size_t)m * n, 1e-10);
            device_free(gpu_dev, ga);
            device_free(gpu_dev, gb);
            device_free(gpu_dev, gc);
            free(a);
            free(b);
            free(c);
        }
    }
}

/* ---- bias add (one add per element: exact) and bias grad (the GPU sums each column in double
 * over row blocks, the CPU in float row by row: relative error ~ sqrt(rows) ulps of the CPU's
 * float sum: 1e-11 for 300 rows, 1e-8 for 50,000 rows in 196 row blocks and two column tiles) */
static void test_bias(void) {
    static const struct {
        int rows, cols;
        double tol;
    } shapes[] = {{300, 17, 1e-11}, {50000, 40, 1e-8}};
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const int rows = shapes[t].rows, cols = shapes[t].cols;
        const size_t n = (size_t)rows * cols;
        float *y = rand_host(n, 4 + t, -1, 1), *bias = rand_host(cols, 5 + t, -1, 1);
        float *gy = on_gpu(y, n), *gbias = on_gpu(bias, cols);
        cpu_dev->ops->bias_add(cpu_dev, rows, cols, bias, y);
        gpu_dev->ops->bias_add(gpu_dev, rows, cols, gbias, gy);
        check_nmse("bias_add", y, gy, n, 0.0);
        float *db = rand_host(cols, 6 + t, -1, 1), *gdb = on_gpu(db, cols);
        cpu_dev->ops->bias_grad(cpu_dev, rows, cols, y, 1.0f, db); /* accumulate */
        gpu_dev->ops->bias_grad(gpu_dev, rows, cols, gy, 1.0f, gdb);
        check_nmse("bias_grad beta=1", db, gdb, cols, shapes[t].tol);
        cpu_dev->ops->bias_grad(cpu_dev, rows, cols, y, 0.0f, db);
        gpu_dev->ops->bias_grad(gpu_dev, rows, cols, gy, 0.0f, gdb);
        check_nmse("bias_grad beta=0", db, gdb, cols, shapes[t].tol);
        device_free(gpu_dev, gy);
        device_free(gpu_dev, gbias);
        device_free(gpu_dev, gdb);
        free(y);
        free(bias);
        free(db);
    }
}

/* ---- ReLU: selections only, exact (tolerance 0); an odd count (one element a thread) and a
 * multiple of 4 (four a thread) ---- */
static void test_relu(void) {
    static const size_t counts[] = {10007, 10008};
    for (size_t t = 0; t < 2; t++) {
        const size_t n = counts[t];
        float *x = rand_host(n, 7, -1, 1), *dy = rand_host(n, 8, -1, 1);
        float *y = on_cpu(x, n), *dx = on_cpu(x, n);
        float *gx = on_gpu(x, n), *gy = on_gpu(x, n), *gdy = on_gpu(dy, n), *gdx = on_gpu(x, n);
        cpu_dev->ops->relu_fwd(cpu_dev, n, x, y);
        gpu_dev->ops->relu_fwd(gpu_dev, n, gx, gy);
        check_nmse("relu_fwd", y, gy, n, 0.0);
        cpu_dev->ops->relu_bwd(cpu_dev, n, y, dy, dx);
        gpu_dev->ops->relu_bwd(gpu_dev, n, gy, gdy, gdx);
        check_nmse("relu_bwd", dx, gdx, n, 0.0);
        device_free(cpu_dev, y);
        device_free(cpu_dev, dx);
        device_free(gpu_dev, gx);
        device_free(gpu_dev, gy);
        device_free(gpu_dev, gdy);
        device_free(gpu_dev, gdx);
        free(x);
        free(dy);
    }
}

/* ---- im2col (copies: exact) and col2im (sums of up to kh*kw entries in another order than
 * the CPU's scatter: 1e-12) for padded, unpadded and the cnn's shapes ---- */
static void test_im2col(void) {
    static const conv_geom geoms[] = {
        {.batch = 3, .in_h = 7, .in_w = 6, .in_c = 2, .kh = 3, .kw = 3, .pad = 1},
        {.batch = 2, .in_h = 9, .in_w = 9, .in_c = 3, .kh = 5, .kw = 5, .pad = 0},
        {.batch = 4, .in_h = 14, .in_w = 14, .in_c = 32, .kh = 5, .kw = 5, .pad = 2},
        /* strided: the ResNets' downsampling 3x3 and 1x1 projection, odd and even sizes */
        {.batch = 2, .in_h = 7, .in_w = 8, .in_c = 16, .kh = 3, .kw = 3, .pad = 1, .stride = 2},
        {.batch = 2, .in_h = 14, .in_w = 14, .in_c = 16, .kh = 1, .kw = 1, .pad = 0, .stride = 2},
    };
    for (size_t t = 0; t < sizeof geoms / sizeof geoms[0]; t++) {
        conv_geom g = geoms[t];
        g.out_h = (g.in_h + 2 * g.pad - g.kh) / conv_stride(&g) + 1;
        g.out_w = (g.in_w + 2 * g.pad - g.kw) / conv_stride(&g) + 1;
        size_t nx = (size_t)g.batch * g.in_h * g.in_w * g.in_c;
        size_t ncol = (size_t)g.batch * g.out_h * g.out_w * g.kh * g.kw * g.in_c;
        float *x = rand_host(nx, 9 + t, -1, 1), *col = device_alloc(cpu_dev, ncol);
        float *gx = on_gpu(x, nx), *gcol = device_alloc(gpu_dev, ncol);
        cpu_dev->ops->im2col(cpu_dev, &g, x, col);
        gpu_dev->ops->im2col(gpu_dev, &g, gx, gcol);
        check_nmse("im2col", col, gcol, ncol, 0.0);
        float *dcol = rand_host(ncol, 20 + t, -1, 1), *dx = on_cpu(x, nx);
        float *gdcol = on_gpu(dcol, ncol);
        cpu_dev->ops->col2im(cpu_dev, &g, dcol, dx);
        gpu_dev->ops->col2im(gpu_dev, &g, gdcol, gx);
        check_nmse("col2im", dx, gx, nx, 1e-12);
        device_free(cpu_dev, col);
        device_free(cpu_dev, dx);
        device_free(gpu_dev, gx);
        device_free(gpu_dev, gcol);
        device_free(gpu_dev, gdcol);
        free(x);
        free(dcol);
    }
}

/* ---- a conv layer on the GPU (the implicit-GEMM kernels for every geometry they compute: the
 * forward pass, the input gradient at stride 1 and the weight gradient) against the CPU's
 * im2col + SGEMM: sums of up to 576 products, and weight gradients over up to 35,280 pixels, in
 * other orders, 1e-10 ---- */
static void test_conv_implicit(void) {
    static const struct {
        int h, w, c, oc, k, pad, stride, bias, batch;
    } cases[] = {
        {28, 28, 16, 16, 3, 1, 1, 0, 3}, /* ResNet-20's first stage */
        {15, 14, 16, 32, 3, 1, 2, 0, 2}, /* downsampling: the input gradient by col2im */
        {8, 8, 32, 64, 3, 1, 1, 1, 2},   /* with a bias */
        {9, 9, 16, 32, 1, 0, 1, 1, 2},   /* 1x1 */
        {10, 12, 16, 16, 5, 2, 1, 1, 2}, /* 5x5, padding 2 */
        {9, 11, 16, 16, 3, 0, 1, 0, 2},  /* no padding: the gradient's padding is 2 */
        {14, 14, 16, 32, 1, 0, 2, 0, 3}, /* a projection shortcut */
        {7, 7, 64, 64, 3, 1, 1, 0, 5},   /* ResNet-20's last stage; 245 pixels: a partial group */
        /* 276 blocks of 128 pixels by 64 channels: 8 pixels a thread; the weight gradient in 35
         * slices of pixels */
        {14, 14, 32, 64, 3, 1, 1, 1, 180},
        /* in_c % 8 != 0: the one-pixel-a-thread kernel forward, im2col for the gradients */
        {9, 9, 4, 16, 3, 1, 1, 0, 2},
        /* several tiles of output channels: 3 of 16 (in_c = 8, one stage a tap; the input
         * gradient by col2im), 3 of 32 (its input gradient in tiles of 16) */
        {9, 9, 8, 48, 3, 1, 1, 1, 3},
        {10, 10, 16, 96, 3, 1, 1, 0, 2},
        /* 1 to 3 input channels (cuda_conv_few.cu: forward and weight gradient; the input
         * gradient by col2im): the cnn's conv1 with its bias (84 bands of one row), ResNet-20's
         * first convolution, 5x5x3 into 64 channels, bands of 5 rows as wide as the staging
         * allows, and 1,100 bands summed 2 a block */
        {28, 28, 1, 32, 5, 2, 1, 1, 3},
        {28, 28, 1, 16, 3, 1, 1, 0, 3},
        {12, 10, 3, 64, 5, 2, 1, 0, 6},
        {9, 300, 2, 16, 3, 1, 1, 0, 132},
        {2, 2, 1, 16, 3, 1, 1, 1, 1100},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        layer lc, lg;
        layer_init_conv2d_ex(&lc, "conv", cases[t].h, cases[t].w, cases[t].c, cases[t].oc,
                             cases[t].k, cases[t].pad, cases[t].stride, cases[t].bias);
        lg = lc;
        lc.conv_im2col_only = 1;
        lg.conv_implicit_always = 1;
        const int b = cases[t].batch;
        const size_t np = lc.weight_count + lc.bias_count, nin = layer_in_size(&lc) * b,
                     nout = layer_out_size(&lc) * b;
        float *params = rand_host(np, 80 + t, -0.5f, 0.5f), *x = rand_host(nin, 90 + t, -1, 1);
        float *dy = rand_host(nout, 100 + t, -1, 1);
        float *pc = on_cpu(params, np), *gc = device_alloc(cpu_dev, np);
        float *pg = on_gpu(params, np), *gg = device_alloc(gpu_dev, np);
        layer_bind(&lc, pc, gc, 0);
        layer_bind(&lg, pg, gg, 0);
        layer_alloc_scratch(cpu_dev, &lc, b);
        layer_alloc_scratch(gpu_dev, &lg, b);
        float *xc = on_cpu(x, nin), *dyc = on_cpu(dy, nout), *yc = device_alloc(cpu_dev, nout),
              *dxc = device_alloc(cpu_dev, nin);
        float *xg = on_gpu(x, nin), *dyg = on_gpu(dy, nout), *yg = device_alloc(gpu_dev, nout),
              *dxg = device_alloc(gpu_dev, nin);
        layer_forward(cpu_dev, &lc, b, xc, yc);
        layer_forward(gpu_dev, &lg, b, xg, yg);
        check_nmse("conv y", yc, yg, nout, 1e-10);
        layer_backward(cpu_dev, &lc, b, xc, yc, dyc, dxc);
        layer_backward(gpu_dev, &lg, b, xg, yg, dyg, dxg);
        check_nmse("conv dx", dxc, dxg, nin, 1e-10);
        check_nmse("conv dw, db", gc, gg, np, 1e-10);
        layer_free_scratch(cpu_dev, &lc);
        layer_free_scratch(gpu_dev, &lg);
        float *cpu_bufs[] = {pc, gc, xc, dyc, yc, dxc}, *gpu_bufs[] = {pg, gg, xg, dyg, yg, dxg};
        for (size_t i = 0; i < 6; i++) {
            device_free(cpu_dev, cpu_bufs[i]);
            device_free(gpu_dev, gpu_bufs[i]);
        }
        free(params);
        free(x);
        free(dy);
    }
}

/* ---- batch normalization: statistics in double on both sides, in other orders; the outputs
 * are float expressions of them: 1e-12 (running statistics, outputs) and 1e-10 (gradients,
 * whose dx subtracts nearly equal terms) ---- */
static void test_batchnorm(void) {
    /* the last: 196 row blocks and a column tile of 8 after one of 32 */
    static const int shapes[][2] = {{300, 17}, {2 * 28 * 28, 16}, {5, 64}, {50000, 40}};
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        const int rows = shapes[t][0], cols = shapes[t][1];
        const size_t n = (size_t)rows * cols;
        float *x = rand_host(n, 50 + t, -1, 3), *dy = rand_host(n, 60 + t, -1, 1);
        float *gamma = rand_host(cols, 70 + t, 0.5f, 1.5f), *beta = rand_host(cols, 71 + t, -1, 1);
        float *rm = rand_host(cols, 72 + t, -0.1f, 0.1f), *rv = rand_host(cols, 73 + t, 0.5f, 2);
        float *gx = on_gpu(x, n), *gdy = on_gpu(dy, n), *ggamma = on_gpu(gamma, cols);
        float *gbeta = on_gpu(beta, cols), *grm = on_gpu(rm, cols), *grv = on_gpu(rv, cols);
        float *y = on_cpu(x, n), *gy = device_alloc(gpu_dev, n);
        float *save2 = device_alloc(cpu_dev, 2 * (size_t)cols),
              *gsave = device_alloc(gpu_dev, 2 * (size_t)cols);
        cpu_dev->ops->bn_fwd_train(cpu_dev, rows, cols, x, gamma, beta, 0.1f, 1e-5f, rm, rv, save2,
                                   save2 + cols, y);
        gpu_dev->ops->bn_fwd_train(gpu_dev, rows, cols, gx, ggamma, gbeta, 0.1f, 1e-5f, grm, grv,
                                   gsave, gsave + cols, gy);
        check_nmse("bn_fwd_train y", y, gy, n, 1e-12);
        check_nmse("bn_fwd_train saved", save2, gsave, 2 * (size_t)cols, 1e-12);
        check_nmse("bn running mean", rm, grm, cols, 1e-12);
        check_nmse("bn running var", rv, grv, cols, 1e-12);
        float *dx = on_cpu(x, n), *gdx = device_alloc(gpu_dev, n);
        float *dg = on_cpu(gamma, cols), *db = on_cpu(beta, cols);
        float *gdg = device_alloc(gpu_dev, cols), *gdb = device_alloc(gpu_dev, cols);
        cpu_dev->ops->bn_bwd(cpu_dev, rows, cols, x, dy, gamma, save2, save2 + cols, dg, db, dx);
        gpu_dev->ops->bn_bwd(gpu_dev, rows, cols, gx, gdy, ggamma, gsave, gsave + cols, gdg, gdb,
                             gdx);
        check_nmse("bn_bwd dgamma", dg, gdg, cols, 1e-12);
        check_nmse("bn_bwd dbeta", db, gdb, cols, 1e-12);
        check_nmse("bn_bwd dx", dx, gdx, n, 1e-10);
        cpu_dev->ops->bn_fwd_infer(cpu_dev, rows, cols, x, gamma, beta, rm, rv, 1e-5f, y);
        gpu_dev->ops->bn_fwd_infer(gpu_dev, rows, cols, gx, ggamma, gbeta, grm, grv, 1e-5f, gy);
        check_nmse("bn_fwd_infer y", y, gy, n, 1e-12);
        float *bufs[] = {gx, gdy, ggamma, gbeta, grm, grv, gy, gsave, gdx, gdg, gdb};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            device_free(gpu_dev, bufs[i]);
        float *host[] = {x, dy, gamma, beta, rm, rv};
        for (size_t i = 0; i < sizeof host / sizeof host[0]; i++)
            free(host[i]);
        float *cpu[] = {y, save2, dx, dg, db};
        for (size_t i = 0; i < sizeof cpu / sizeof cpu[0]; i++)
            device_free(cpu_dev, cpu[i]);
    }
}

/* ---- global average pooling (sums in double: 1e-14) and the residual shortcut, identity and
 * option A (adds and copies: exact) ---- */
static void test_avgpool_shortcut(void) {
    const int b = 3, hw = 49, c = 20;
    float *x = rand_host((size_t)b * hw * c, 90, -1, 1), *dy = rand_host((size_t)b * c, 91, -1, 1);
    float *y = device_alloc(cpu_dev, (size_t)b * c),
          *dx = device_alloc(cpu_dev, (size_t)b * hw * c);
    float *gx = on_gpu(x, (size_t)b * hw * c), *gdy = on_gpu(dy, (size_t)b * c);
    float *gy = device_alloc(gpu_dev, (size_t)b * c),
          *gdx = device_alloc(gpu_dev, (size_t)b * hw * c);
    cpu_dev->ops->avgpool_fwd(cpu_dev, b, hw, c, x, y);
    gpu_dev->ops->avgpool_fwd(gpu_dev, b, hw, c, gx, gy);
    check_nmse("avgpool_fwd", y, gy, (size_t)b * c, 1e-14);
    cpu_dev->ops->avgpool_bwd(cpu_dev, b, hw, c, dy, dx);
    gpu_dev->ops->avgpool_bwd(gpu_dev, b, hw, c, gdy, gdx);
    check_nmse("avgpool_bwd", dx, gdx, (size_t)b * hw * c, 0.0);
    device_free(cpu_dev, y), device_free(cpu_dev, dx);
    device_free(gpu_dev, gx), device_free(gpu_dev, gdy), device_free(gpu_dev, gy);
    device_free(gpu_dev, gdx);
    free(x), free(dy);
    static const shortcut_geom geoms[] = {
        {.batch = 2,
         .in_h = 6,
         .in_w = 6,
         .in_c = 16,
         .out_h = 6,
         .out_w = 6,
         .out_c = 16,
         .stride = 1,
         .c_lo = 0},
        {.batch = 2,
         .in_h = 14,
         .in_w = 14,
         .in_c = 16,
         .out_h = 7,
         .out_w = 7,
         .out_c = 32,
         .stride = 2,
         .c_lo = 8},
        {.batch = 3,
         .in_h = 7,
         .in_w = 5,
         .in_c = 4,
         .out_h = 4,
         .out_w = 3,
         .out_c = 8,
         .stride = 2,
         .c_lo = 2},
    };
    for (size_t t = 0; t < 3; t++) {
        const shortcut_geom *g = &geoms[t];
        size_t nin = (size_t)g->batch * g->in_h * g->in_w * g->in_c;
        size_t nout = (size_t)g->batch * g->out_h * g->out_w * g->out_c;
        float *sx = rand_host(nin, 100 + t, -1, 1), *sy = rand_host(nout, 110 + t, -1, 1);
        float *gsx = on_gpu(sx, nin), *gsy = on_gpu(sy, nout);
        cpu_dev->ops->shortcut_fwd(cpu_dev, g, sx, sy);
        gpu_dev->ops->shortcut_fwd(gpu_dev, g, gsx, gsy);
        check_nmse("shortcut_fwd", sy, gsy, nout, 0.0);
        cpu_dev->ops->shortcut_bwd(cpu_dev, g, sy, sx);
        gpu_dev->ops->shortcut_bwd(gpu_dev, g, gsy, gsx);
        check_nmse("shortcut_bwd", sx, gsx, nin, 0.0);
        device_free(gpu_dev, gsx), device_free(gpu_dev, gsy);
        free(sx), free(sy);
    }
}

/* ---- max pooling: selections only, exact; even and odd sizes ---- */
static void test_maxpool(void) {
    static const int shapes[][4] = {{3, 8, 6, 5}, {2, 7, 5, 3}, {4, 28, 28, 32}};
    for (size_t t = 0; t < 3; t++) {
        int b = shapes[t][0], h = shapes[t][1], w = shapes[t][2], c = shapes[t][3];
        size_t nx = (size_t)b * h * w * c, ny = (size_t)b * (h / 2) * (w / 2) * c;
        float *x = rand_host(nx, 30 + t, -1, 1), *dy = rand_host(ny, 40 + t, -1, 1);
        float *y = on_cpu(dy, ny), *dx = on_cpu(x, nx);
        float *gx = on_gpu(x, nx), *gy = device_alloc(gpu_dev, ny), *gdy = on_gpu(dy, ny);
        float *gdx = on_gpu(x, nx);
        cpu_dev->ops->maxpool_fwd(cpu_dev, b, h, w, c, x, y);
        gpu_dev->ops->maxpool_fwd(gpu_dev, b, h, w, c, gx, gy);
        check_nmse("maxpool_fwd", y, gy, ny, 0.0);
        cpu_dev->ops->maxpool_bwd(cpu_dev, b, h, w, c, x, dy, dx);
        gpu_dev->ops->maxpool_bwd(gpu_dev, b, h, w, c, gx, gdy, gdx);
        check_nmse("maxpool_bwd", dx, gdx, nx, 0.0);
        device_free(cpu_dev, y);
        device_free(cpu_dev, dx);
        device_free(gpu_dev, gx);
        device_free(gpu_dev, gy);
        device_free(gpu_dev, gdy);
        device_free(gpu_dev, gdx);
        free(x);
        free(dy);
    }
}

/* ---- softmax cross-entropy: the loss is computed in double on both sides (relative 1e-12);
 * the gradient uses expf, whose GPU and CPU versions differ by an ulp or two: 1e-10 ---- */
static void test_softmax_xent(void) {
    const int batch = 77, classes = 10;
    size_t n = (size_t)batch * classes;
    float *z = rand_host(n, 50, -4, 4), *d = on_cpu(z, n);
    uint8_t y[77];
    for (int b = 0; b < batch; b++)
        y[b] = (uint8_t)((b * 7) % classes);
    float *gz = on_gpu(z, n), *gd = device_alloc(gpu_dev, n);
    int c_cpu = -1, c_gpu = -2;
    double l_cpu = cpu_dev->ops->softmax_xent(cpu_dev, batch, classes, z, y, d, &c_cpu);
    double l_gpu = gpu_dev->ops->softmax_xent(gpu_dev, batch, classes, gz, y, gd, &c_gpu);
    SS_CHECK_CLOSE(l_gpu, l_cpu, 0, 1e-12);
    CU_ASSERT_EQUAL(c_gpu, c_cpu);
    check_nmse("softmax_xent dlogits", d, gd, n, 1e-10);
    double l_eval = gpu_dev->ops->softmax_xent(gpu_dev, batch, classes, gz, y, NULL, NULL);
    SS_CHECK_CLOSE(l_eval, l_cpu, 0, 1e-12);
    device_free(cpu_dev, d);
    device_free(gpu_dev, gz);
    device_free(gpu_dev, gd);
    free(z);
}

/* ---- SGD: three multiply-adds per element; nvcc contracts them into FMAs, the CPU build
 * does not: a few ulps, 1e-12. Plain, momentum and Nesterov forms. ---- */
static void test_sgd(void) {
    const size_t n = 4099;
    static const char *const names[] = {"sgd w (plain)", "sgd w (momentum)", "sgd w (nesterov)"};
    for (int form = 0; form < 3; form++) {
        float *w = rand_host(n, 60, -1, 1), *g = rand_host(n, 61, -1, 1),
              *v = rand_host(n, 62, -1, 1);
        float *gw = on_gpu(w, n), *gg = on_gpu(g, n), *gv = on_gpu(v, n);
        float mu = form ? 0.9f : 0.0f;
        for (int step = 0; step < 3; step++) {
            cpu_dev->ops->sgd(cpu_dev, n, w, g, v, 0.05f, mu, 5e-4f, form == 2);
            gpu_dev->ops->sgd(gpu_dev, n, gw, gg, gv, 0.05f, mu, 5e-4f, form == 2);
        }
        check_nmse(names[form], w, gw, n, 1e-12);
        check_nmse("sgd v", v, gv, n, 1e-12);
        device_free(gpu_dev, gw);
        device_free(gpu_dev, gg);
        device_free(gpu_dev, gv);
        free(w);
        free(g);
        free(v);
    }
}

/* ---- vector ops: mean sums in the same order with one final multiply (exact); axpy and
 * scale may be contracted (1e-12); nrm2 accumulates in double (relative 1e-12); masked copy
 * exact ---- */
static void test_vector_ops(void) {
    const size_t n = 100003;
    enum { K = 5 };
    float *xs[K], *gxs[K];
    for (int j = 0; j < K; j++) {
        xs[j] = rand_host(n, 70 + j, -2, 2);
        gxs[j] = on_gpu(xs[j], n);
    }
    float *out = on_cpu(xs[0], n), *gout = device_alloc(gpu_dev, n);
    cpu_dev->ops->mean(cpu_dev, n, K, (const float *const *)xs, out);
    gpu_dev->ops->mean(gpu_dev, n, K, (const float *const *)gxs, gout);
    check_nmse("mean", out, gout, n, 0.0);
    cpu_dev->ops->axpy(cpu_dev, n, 0.3f, xs[1], xs[2]);
    gpu_dev->ops->axpy(gpu_dev, n, 0.3f, gxs[1], gxs[2]);
    check_nmse("axpy", xs[2], gxs[2], n, 1e-12);
    cpu_dev->ops->scale(cpu_dev, n, -1.7f, xs[3]);
    gpu_dev->ops->scale(gpu_dev, n, -1.7f, gxs[3]);
    check_nmse("scale", xs[3], gxs[3], n, 0.0);
    SS_CHECK_CLOSE(device_nrm2(gpu_dev, n, gxs[4]), device_nrm2(cpu_dev, n, xs[4]), 0, 1e-12);
    uint8_t *mask = ss_malloc(n);
    for (size_t i = 0; i < n; i++)
        mask[i] = (uint8_t)(i % 3 == 0);
    device_masked_copy(cpu_dev, n, mask, xs[1], out);
    device_masked_copy(gpu_dev, n, mask, gxs[1], gout);
    check_nmse("masked_copy", out, gout, n, 0.0);
    free(mask);
    for (int j = 0; j < K; j++) {
        free(xs[j]);
        device_free(gpu_dev, gxs[j]);
    }
    device_free(cpu_dev, out);
    device_free(gpu_dev, gout);
}

/* ---- device_share_with_host: what the host writes into a vector the kernels read, and what
 * the kernels write the host reads, with no copy (real mode's MPI works on such vectors).
 * Scaling by 2 is exact, so both directions must agree to the bit; device_place moves all or
 * part of it without changing it ---- */
static void test_share_with_host(void) {
    char notice[256];
    device *shared;
    CU_ASSERT_FATAL(device_open("cuda", &shared, notice, sizeof notice) == SS_OK);
    int rc = device_share_with_host(shared);
    if (rc != SS_OK) { /* a GPU without concurrent managed access: refused with its reason */
        CU_ASSERT_EQUAL(rc, SS_EDEVICE);
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "concurrentManagedAccess"));
        device_close(shared);
        SS_SKIP("this GPU cannot share memory with the host while kernels run");
    }
    const size_t n = 100003;
    float *x = rand_host(n, 90, -2, 2);
    float *v = device_alloc(shared, n);
    device_sync(shared);
    memcpy(v, x, n * sizeof(float)); /* the host writes device memory in place */
    device_scale(shared, n, 2.0f, v);
    device_sync(shared);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += v[i] != 2.0f * x[i]; /* the host reads the kernel's result in place */
    CU_ASSERT_EQUAL(bad, 0);
    for (size_t i = 0; i < n; i++)
        x[i] *= 2.0f;
    SS_CHECK_CLOSE(device_nrm2(shared, n, v), device_nrm2(cpu_dev, n, x), 0, 1e-12);
    float *back = ss_malloc(n * sizeof(float));
    device_download(shared, back, v, n);
    CU_ASSERT_EQUAL(memcmp(back, x, n * sizeof(float)), 0);
    free(back);
    /* device_place: the whole vector, then a part of it, to the host and back; the host's
     * writes reach the kernels, the kernels' results the host. */
    device_place(shared, v, n, 1);
    for (size_t i = 0; i < n; i++)
        v[i] = x[i] + 1.0f;
    const size_t lo = 1000, count = 5000;
    device_place(shared, v, n, 0);
    device_scale(shared, n, 0.5f, v);
    device_place(shared, v + lo, count, 1);
    for (size_t i = lo; i < lo + count; i++)
        v[i] += 3.0f;
    device_place(shared, v + lo, count, 0);
    device_scale(shared, n, 2.0f, v);
    device_place(shared, v, n, 1);
    bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += v[i] != x[i] + 1.0f + (i >= lo && i < lo + count ? 6.0f : 0.0f);
    CU_ASSERT_EQUAL(bad, 0);
    free(x);
    device_free(shared, v);
    device_close(shared);
}

/* ---- one training step of each model from the same initial parameters: the loss agrees to
 * 1e-5 relative; gradients go through several GEMMs in different summation orders, NMSE 1e-8
 * (deep ReLU networks more: test_step_resnet); the SGD step of the GPU's gradients agrees with
 * the CPU's step of the same gradients to NMSE 1e-12, and the stepped model evaluates on both to
 * 1e-5 relative ---- */
static void model_step_of(const model_spec *s, const char *name, double grad_nmse);

static void model_step_case(model_arch arch) {
    model_spec spec;
    model_spec_default(&spec, arch, 1, 28, 28, 10);
    model_step_of(&spec, model_arch_name(arch), 1e-8);
}

/* The views (layers' tensors) of cpu's vector whose CUDA counterpart is off by more than
 * max_nmse, named: where a model's disagreement starts. */
static void show_views_off(const model *m, const float *cpu, const float *gpu_buf, size_t n,
                           double max_nmse) {
    float *got = ss_malloc(n * sizeof(float));
    device_download(gpu_dev, got, gpu_buf, n);
    for (int v = 0; v < model_view_count(m); v++) {
        const model_view *mv = model_view_at(m, v);
        if (mv->offset >= n) continue;
        const size_t count = mv->count < n - mv->offset ? mv->count : n - mv->offset;
        const double nmse = nmse_of(got + mv->offset, cpu + mv->offset, count);
        if (!(nmse <= max_nmse)) fprintf(stderr, "\n    %s: NMSE %.3g", mv->name, nmse);
    }
    free(got);
}

/* The CPU's reference runs its 3 x 3 layers on the direct passes, not by Winograd
 * (kernels/conv_winograd.h): Winograd's transforms round about 1e-5 of the terms' magnitudes,
 * which flips a ReLU whose input lies that close to zero and moves the gradients below it (on
 * this batch, Winograd against the direct passes on the CPU alone: vgg:11 at width 16 NMSE 2.7e-4,
 * resnet:20,proj 2.5e-7, and 1.3e-4 on data seed 82; 2026-11-28). tests/test_kernels_winograd.c
 * checks Winograd against sums in double. */
static void model_step_of(const model_spec *s, const char *name, double grad_nmse) {
    const int batch = 16;
    const model_spec spec = *s;
    const size_t d = (size_t)spec.in_c * spec.in_h * spec.in_w;
    model *mc, *mg;
    conv_winograd_enable(0);
    CU_ASSERT_FATAL(model_create(cpu_dev, &spec, 5, batch, &mc) == SS_OK);
    CU_ASSERT_FATAL(model_create(gpu_dev, &spec, 5, batch, &mg) == SS_OK);
    size_t np = model_param_count(mc);
    float *x = rand_host((size_t)batch * d, 80, 0, 1);
    uint8_t y[16];
    for (int b = 0; b < batch; b++)
        y[b] = (uint8_t)(b % 10);
    check_nmse("initial params", model_params(mc), model_params(mg), np, 0.0);
    double lc = model_forward_backward(mc, x, y, batch);
    double lg = model_forward_backward(mg, x, y, batch);
    SS_CHECK_CLOSE(lg, lc, 0, 1e-5);
    char what[64];
    snprintf(what, sizeof what, "%s grads", name);
    const double g_nmse = check_nmse(what, model_grads(mc), model_grads(mg), np, grad_nmse);
    fprintf(stderr, "\n  %s: NMSE %.3g", what, g_nmse);
    if (!(g_nmse <= grad_nmse)) show_views_off(mc, model_grads(mc), model_grads(mg), np, grad_nmse);
    const size_t nb = model_buffer_count(mc);
    snprintf(what, sizeof what, "%s running statistics", name);
    if (nb) check_nmse(what, model_buffers(mc), model_buffers(mg), nb, 1e-10);
    /* the step on the GPU against the CPU's step of the GPU's gradients: the optimizer alone,
     * whatever the gradients' differences (on the CPU backend device pointers are host ones) */
    float *p_ref = device_alloc(cpu_dev, np), *g_gpu = device_alloc(cpu_dev, np);
    memcpy(p_ref, model_params(mc), np * sizeof(float));
    device_download(gpu_dev, g_gpu, model_grads(mg), np);
    sgd_state *sc = sgd_create(cpu_dev, np), *sg = sgd_create(gpu_dev, np);
    sgd_step(sc, p_ref, g_gpu, 0.1f, 0.9f, 5e-4f);
    sgd_step(sg, model_params(mg), model_grads(mg), 0.1f, 0.9f, 5e-4f);
    snprintf(what, sizeof what, "%s params after sgd_step", name);
    check_nmse(what, p_ref, model_params(mg), np, 1e-12);
    /* the stepped GPU model's parameters evaluated on both devices */
    device_download(gpu_dev, model_params(mc), model_params(mg), np);
    double el_c, el_g;
    size_t ok_c, ok_g;
    model_evaluate(mc, x, y, (size_t)batch, &el_c, &ok_c);
    model_evaluate(mg, x, y, (size_t)batch, &el_g, &ok_g);
    SS_CHECK_CLOSE(el_g, el_c, 0, 1e-5);
    sgd_destroy(sc);
    sgd_destroy(sg);
    device_free(cpu_dev, p_ref);
    device_free(cpu_dev, g_gpu);
    model_destroy(mc);
    model_destroy(mg);
    free(x);
    conv_winograd_enable(1);
}

static void test_step_logreg(void) {
    model_step_case(MODEL_ARCH_LOGREG);
}

static void test_step_mlp(void) {
    model_step_case(MODEL_ARCH_MLP);
}

static void test_step_cnn(void) {
    model_step_case(MODEL_ARCH_CNN);
}

/* LeNet-5 (unpadded 5x5, two hidden dense layers) on CIFAR's shape: as the cnn, 1e-8 */
static void test_step_lenet(void) {
    model_spec spec;
    CU_ASSERT_FATAL(model_spec_parse(&spec, "cnn:lenet", 3, 32, 32, 10) == SS_OK);
    model_step_of(&spec, "cnn:lenet", 1e-8);
}

/* ResNets with batch norm: the normalization divides by batch standard deviations, which
 * magnifies the GEMMs' rounding differences in channels of small variance; NMSE 1e-7. Option A
 * on CIFAR's shape (3x32x32), option B on Fashion-MNIST's (1x28x28).
 * Deeper networks hold more ReLUs whose input lies within rounding of zero (batch norm centres
 * them there): a summation order that flips one of them moves the gradients below it. resnet:8
 * on this batch moves by NMSE 7.3e-6 between two CPU runs whose only difference is OpenBLAS's
 * kernels (Prescott against SkylakeX), 8.1e-6 when the input is scaled by 1 +- 5e-7; the H100
 * gave 7.3e-6 (2026-11-26). resnet:20,proj on the CPU alone, its stride-2 convolutions on the
 * direct passes against im2col + SGEMM on OpenBLAS's Haswell, Sandybridge or Prescott kernels:
 * NMSE 1.36e-5 on this batch (data seed 80), 2.0e-12 and 2.96e-5 on those of seeds 81 and 82.
 * The H200 against the direct passes gave 1.36e-5 (2026-11-27; 8.0e-13 with every convolution
 * on its implicit-GEMM kernels, SYNCSIM_CUDA_CONV=implicit), and 1.4e-12 the day before, when
 * the CPU's stride-2 convolutions were im2col + SGEMM too.
 * Tolerance 1e-4 for both, where the blocks' shortcut gradients left out of the sum move resnet:8
 * by NMSE 0.13. These small batches keep the GPU's convolutions on im2col + SGEMM (the implicit-
 * GEMM kernels take 2^14 output pixels and more, 12,544 here: test_conv_implicit checks them).
 * The forward pass, the running statistics, the optimizer step and the evaluation stay tight:
 * a flipped ReLU changes only the backward pass. */
static void test_step_resnet(void) {
    model_spec spec;
    CU_ASSERT_FATAL(model_spec_parse(&spec, "resnet:8", 3, 32, 32, 10) == SS_OK);
    model_step_of(&spec, "resnet:8", 1e-4);
    CU_ASSERT_FATAL(model_spec_parse(&spec, "resnet:20,proj", 1, 28, 28, 10) == SS_OK);
    model_step_of(&spec, "resnet:20,proj", 1e-4);
    /* VGG-11 with batch norm at a quarter of its width (16 ... 128 channels), CIFAR's shape */
    CU_ASSERT_FATAL(model_spec_parse(&spec, "vgg:11", 3, 32, 32, 10) == SS_OK);
    spec.vgg_width = 16;
    model_step_of(&spec, "vgg:11", 1e-7);
}

/* ---- Transformer ops ---- */

/* strided batched GEMM over 3 matrices with row strides wider than the matrix (heads side by
 * side, as attention reads them): FP32 both sides, NMSE 1e-10 as gemm */
static void test_gemm_batched(void) {
    const int m = 11, n = 7, k = 9, count = 3, ld = 40;
    const long long stride = 13LL * ld;
    const size_t total = (size_t)stride * count;
    for (int ta = 0; ta < 2; ta++)
        for (int tb = 0; tb < 2; tb++) {
            float *a = rand_host(total, 101, -1, 1), *b = rand_host(total, 102, -1, 1);
            float *c = rand_host(total, 103, -1, 1);
            float *ga = on_gpu(a, total), *gb = on_gpu(b, total), *gc = on_gpu(c, total);
            cpu_dev->ops->gemm_batched(cpu_dev, ta, tb, m, n, k, 0.6f, a + 3, ld, stride, b + 5, ld,
                                       stride, 0.4f, c + 2, ld, stride, count);
            gpu_dev->ops->gemm_batched(gpu_dev, ta, tb, m, n, k, 0.6f, ga + 3, ld, stride, gb + 5,
                                       ld, stride, 0.4f, gc + 2, ld, stride, count);
            check_nmse("gemm_batched", c, gc, total, 1e-10);
            device_free(gpu_dev, ga);
            device_free(gpu_dev, gb);
            device_free(gpu_dev, gc);
            free(a);
            free(b);
            free(c);
        }
}

/* layer norm: statistics in double on both sides, the rest float ops in one order; the CUDA
 * kernels round each product (__fmul_rn), the CPU build does not contract: a few ulps, 1e-12;
 * dgamma, dbeta sum the rows in another order (a tree), 1e-12 */
static void test_layernorm(void) {
    const int rows = 70, cols = 200;
    const size_t n = (size_t)rows * cols;
    float *x = rand_host(n, 110, -3, 3), *dy = rand_host(n, 111, -1, 1);
    float *gamma = rand_host(cols, 112, 0.5f, 1.5f), *beta = rand_host(cols, 113, -1, 1);
    float *y = on_cpu(x, n), *st = device_alloc(cpu_dev, 2 * (size_t)rows), *dx = on_cpu(x, n);
    float *dg = device_alloc(cpu_dev, cols), *db = device_alloc(cpu_dev, cols);
    float *gx = on_gpu(x, n), *gdy = on_gpu(dy, n), *gg = on_gpu(gamma, cols);
    float *gb = on_gpu(beta, cols), *gy = device_alloc(gpu_dev, n);
    float *gst = device_alloc(gpu_dev, 2 * (size_t)rows), *gdx = device_alloc(gpu_dev, n);
    float *gdg = device_alloc(gpu_dev, cols), *gdb = device_alloc(gpu_dev, cols);
    cpu_dev->ops->ln_fwd(cpu_dev, rows, cols, x, gamma, beta, 1e-5f, st, st + rows, y);
    gpu_dev->ops->ln_fwd(gpu_dev, rows, cols, gx, gg, gb, 1e-5f, gst, gst + rows, gy);
    check_nmse("ln_fwd y", y, gy, n, 1e-12);
    check_nmse("ln_fwd mean, rstd", st, gst, 2 * (size_t)rows, 1e-12);
    cpu_dev->ops->ln_bwd(cpu_dev, rows, cols, x, dy, gamma, st, st + rows, dg, db, dx);
    gpu_dev->ops->ln_bwd(gpu_dev, rows, cols, gx, gdy, gg, gst, gst + rows, gdg, gdb, gdx);
    check_nmse("ln_bwd dx", dx, gdx, n, 1e-10);
    check_nmse("ln_bwd dgamma", dg, gdg, cols, 1e-12);
    check_nmse("ln_bwd dbeta", db, gdb, cols, 1e-12);
    float *frees_cpu[] = {y, st, dx, dg, db};
    for (int i = 0; i < 5; i++)
        device_free(cpu_dev, frees_cpu[i]);
    float *frees_gpu[] = {gx, gdy, gg, gb, gy, gst, gdx, gdg, gdb};
    for (int i = 0; i < 9; i++)
        device_free(gpu_dev, frees_gpu[i]);
    free(x), free(dy), free(gamma), free(beta);
}

/* GELU in double on both sides, rounded once: CUDA's and glibc's erf/exp may differ by an ulp
 * of a double, which the rounding to float hides but for rare ties: 1e-13 */
static void test_gelu(void) {
    const size_t n = 10007;
    float *x = rand_host(n, 120, -6, 6), *dy = rand_host(n, 121, -1, 1);
    float *y = on_cpu(x, n), *dx = on_cpu(x, n);
    float *gx = on_gpu(x, n), *gdy = on_gpu(dy, n), *gy = device_alloc(gpu_dev, n);
    cpu_dev->ops->gelu_fwd(cpu_dev, n, x, y);
    gpu_dev->ops->gelu_fwd(gpu_dev, n, gx, gy);
    check_nmse("gelu_fwd", y, gy, n, 1e-13);
    cpu_dev->ops->gelu_bwd(cpu_dev, n, x, dy, dx);
    gpu_dev->ops->gelu_bwd(gpu_dev, n, gx, gdy, gdy); /* in place */
    check_nmse("gelu_bwd", dx, gdy, n, 1e-13);
    device_free(cpu_dev, y), device_free(cpu_dev, dx);
    device_free(gpu_dev, gx), device_free(gpu_dev, gdy), device_free(gpu_dev, gy);
    free(x), free(dy);
}

/* embeddings: the same float operations in the same order (each CUDA thread walks its column's
 * rows as the CPU loop does): equal bit for bit; with repeated tokens, accumulate on and off,
 * with learned positions */
static void test_embedding(void) {
    const int batch = 6, t = 9, d = 48, vocab = 13, ld = t + 1;
    const size_t nt = (size_t)batch * ld, ny = (size_t)batch * t * d, nv = (size_t)vocab * d;
    float *tok = ss_malloc(nt * sizeof(float));
    for (size_t i = 0; i < nt; i++)
        tok[i] = (float)((i * 7 + i / 3) % vocab);
    float *wte = rand_host(nv, 130, -1, 1), *pos = rand_host((size_t)t * d, 131, -1, 1);
    float *dy = rand_host(ny, 132, -1, 1), *dwte = rand_host(nv, 133, -1, 1);
    float *y = device_alloc(cpu_dev, ny), *dpos = device_alloc(cpu_dev, (size_t)t * d);
    float *gtok = on_gpu(tok, nt), *gwte = on_gpu(wte, nv), *gpos = on_gpu(pos, (size_t)t * d);
    float *gdy = on_gpu(dy, ny), *gdwte = on_gpu(dwte, nv), *gy = device_alloc(gpu_dev, ny);
    float *gdpos = device_alloc(gpu_dev, (size_t)t * d);
    cpu_dev->ops->embed_fwd(cpu_dev, batch, t, d, tok, ld, wte, 1.7f, pos, y);
    gpu_dev->ops->embed_fwd(gpu_dev, batch, t, d, gtok, ld, gwte, 1.7f, gpos, gy);
    check_nmse("embed_fwd", y, gy, ny, 0.0);
    for (int acc = 1; acc >= 0; acc--) {
        cpu_dev->ops->embed_bwd(cpu_dev, batch, t, d, tok, ld, dy, 1.7f, vocab, acc, dwte, dpos);
        gpu_dev->ops->embed_bwd(gpu_dev, batch, t, d, gtok, ld, gdy, 1.7f, vocab, acc, gdwte,
                                gdpos);
        check_nmse(acc ? "embed_bwd dwte (accumulated)" : "embed_bwd dwte", dwte, gdwte, nv, 0.0);
        check_nmse("embed_bwd dpos", dpos, gdpos, (size_t)t * d, 0.0);
    }
    device_free(cpu_dev, y), device_free(cpu_dev, dpos);
    float *g[] = {gtok, gwte, gpos, gdy, gdwte, gy, gdpos};
    for (int i = 0; i < 7; i++)
        device_free(gpu_dev, g[i]);
    free(tok), free(wte), free(pos), free(dy), free(dwte);
}

/* causal softmax: exp in double for the sum, expf for the probabilities (CUDA's expf is within
 * 2 ulps of glibc's), sums in another order: 1e-12; above the diagonal exactly 0 on both */
static void test_attn_softmax(void) {
    const int t = 35, rows = 4 * 2 * t;
    const size_t n = (size_t)rows * t;
    float *x = rand_host(n, 140, -5, 5), *dy = rand_host(n, 141, -1, 1);
    float *y = on_cpu(x, n), *dx = on_cpu(dy, n);
    float *gx = on_gpu(x, n), *gdy = on_gpu(dy, n), *gy = device_alloc(gpu_dev, n);
    cpu_dev->ops->attn_softmax_fwd(cpu_dev, rows, t, x, y);
    gpu_dev->ops->attn_softmax_fwd(gpu_dev, rows, t, gx, gy);
    check_nmse("attn_softmax_fwd", y, gy, n, 1e-12);
    cpu_dev->ops->attn_softmax_bwd(cpu_dev, rows, t, y, dx, dx);
    gpu_dev->ops->attn_softmax_bwd(gpu_dev, rows, t, gy, gdy, gdy);
    check_nmse("attn_softmax_bwd", dx, gdy, n, 1e-10);
    device_free(cpu_dev, y), device_free(cpu_dev, dx);
    device_free(gpu_dev, gx), device_free(gpu_dev, gdy), device_free(gpu_dev, gy);
    free(x), free(dy);
}

/* dropout: one counter-based mask on both, one multiply: equal bit for bit */
static void test_dropout(void) {
    const size_t n = 100003;
    float *x = rand_host(n, 150, -1, 1), *y = on_cpu(x, n);
    float *gx = on_gpu(x, n), *gy = device_alloc(gpu_dev, n);
    cpu_dev->ops->dropout(cpu_dev, n, 0.2f, 12345, x, y);
    gpu_dev->ops->dropout(gpu_dev, n, 0.2f, 12345, gx, gy);
    check_nmse("dropout", y, gy, n, 0.0);
    gpu_dev->ops->dropout(gpu_dev, n, 0.2f, 12345, gx, gx); /* in place */
    check_nmse("dropout in place", y, gx, n, 0.0);
    device_free(cpu_dev, y);
    device_free(gpu_dev, gx), device_free(gpu_dev, gy);
    free(x);
}

/* the language model's cross-entropy over a vocabulary of 5,003: loss 1e-12 relative, argmax
 * hits equal, dlogits (in place and not) 1e-10 */
static void test_xent_tokens(void) {
    const int batch = 3, t = 7, vocab = 5003, rows = batch * t, ld = t + 1;
    const size_t n = (size_t)rows * vocab;
    float *tok = ss_malloc((size_t)batch * ld * sizeof(float));
    for (int i = 0; i < batch * ld; i++)
        tok[i] = (float)((i * 977) % vocab);
    float *z = rand_host(n, 160, -6, 6), *d = on_cpu(z, n);
    float *gtok = on_gpu(tok, (size_t)batch * ld), *gz = on_gpu(z, n);
    float *gd = device_alloc(gpu_dev, n);
    int cc = -1, cg = -2;
    double lc = cpu_dev->ops->xent_tokens(cpu_dev, rows, vocab, z, tok, ld, t, d, &cc);
    double lg = gpu_dev->ops->xent_tokens(gpu_dev, rows, vocab, gz, gtok, ld, t, gd, &cg);
    SS_CHECK_CLOSE(lg, lc, 0, 1e-6);
    CU_ASSERT_EQUAL(cg, cc);
    check_nmse("xent_tokens dlogits", d, gd, n, 1e-10);
    lg = gpu_dev->ops->xent_tokens(gpu_dev, rows, vocab, gz, gtok, ld, t, gz, &cg);
    SS_CHECK_CLOSE(lg, lc, 0, 1e-6);
    check_nmse("xent_tokens dlogits in place", d, gz, n, 1e-10);
    device_free(cpu_dev, d);
    device_free(gpu_dev, gtok), device_free(gpu_dev, gz), device_free(gpu_dev, gd);
    free(tok), free(z);
}

/* one training step of a language model on both devices, dropout on (the same masks on both):
 * loss 1e-5 relative, gradients NMSE 1e-7 (layer norms and softmaxes divide by small spreads, as
 * batch norm does), parameters after the step 1e-12, evaluation loss 1e-5 */
static void gpt_step_case(const char *text, int vocab) {
    model_spec spec;
    CU_ASSERT_FATAL(model_spec_parse(&spec, text, 1, 1, 1, vocab) == SS_OK);
    const int batch = 4, ld = spec.gpt_seq + 1;
    model *mc, *mg;
    CU_ASSERT_FATAL(model_create(cpu_dev, &spec, 5, batch, &mc) == SS_OK);
    CU_ASSERT_FATAL(model_create(gpu_dev, &spec, 5, batch, &mg) == SS_OK);
    model_set_stream(mc, 3);
    model_set_stream(mg, 3);
    const size_t np = model_param_count(mc);
    float *x = ss_malloc((size_t)batch * ld * sizeof(float));
    for (int i = 0; i < batch * ld; i++)
        x[i] = (float)((i * 31 + i / 5) % vocab);
    check_nmse("gpt initial params", model_params(mc), model_params(mg), np, 0.0);
    for (int step = 0; step < 2; step++) {
        double lc = model_forward_backward(mc, x, NULL, batch);
        double lg = model_forward_backward(mg, x, NULL, batch);
        SS_CHECK_CLOSE(lg, lc, 0, 1e-5);
        char what[64];
        snprintf(what, sizeof what, "%s grads", text);
        check_nmse(what, model_grads(mc), model_grads(mg), np, 1e-7);
        sgd_state *sc = sgd_create(cpu_dev, np), *sg = sgd_create(gpu_dev, np);
        sgd_step(sc, model_params(mc), model_grads(mc), 0.1f, 0.0f, 0.0f);
        sgd_step(sg, model_params(mg), model_grads(mg), 0.1f, 0.0f, 0.0f);
        snprintf(what, sizeof what, "%s params after sgd_step", text);
        check_nmse(what, model_params(mc), model_params(mg), np, 1e-12);
        sgd_destroy(sc);
        sgd_destroy(sg);
    }
    double el_c, el_g;
    size_t ok_c, ok_g;
    model_evaluate(mc, x, NULL, (size_t)batch, &el_c, &ok_c);
    model_evaluate(mg, x, NULL, (size_t)batch, &el_g, &ok_g);
    SS_CHECK_CLOSE(el_g, el_c, 0, 1e-5);
    model_destroy(mc);
    model_destroy(mg);
    free(x);
}

static void test_step_gpt(void) {
    gpt_step_case("gpt:2,64,4,16,0.1", 300);
    gpt_step_case("gpt:wlm", 2000);
}

/* ---- lanes: replicas trained by threads at once, each on its own stream, end with the same
 * bits as the same replicas trained one after the other on the device's own stream, and that
 * twice (a run repeats bit for bit). Each replica starts from a copy queued on lane 0 just
 * before its thread enters its lane: the lane must wait for it. ---- */
enum { LANE_REPLICAS = 4, LANE_STEPS = 3, LANE_WAYS = 3 };

typedef struct lane_job {
    model *m;
    sgd_state *opt;
    const float *x;   /* (LANE_STEPS, batch, d) */
    const uint8_t *y; /* (LANE_STEPS, batch), or NULL for a language model */
    size_t d;
    int batch;
    int lane; /* 0: the caller's, no enter */
    double loss;
} lane_job;

static void *lane_train(void *arg) {
    lane_job *j = arg;
    if (j->lane) device_lane_enter(gpu_dev, j->lane);
    j->loss = 0;
    for (int s = 0; s < LANE_STEPS; s++) {
        j->loss += model_forward_backward(j->m, j->x + (size_t)s * j->batch * j->d,
                                          j->y ? j->y + (size_t)s * j->batch : NULL, j->batch);
        sgd_step(j->opt, model_params(j->m), model_grads(j->m), 0.05f, 0.9f, 5e-4f);
    }
    if (j->lane) device_lane_leave(gpu_dev);
    return NULL;
}

/* way 0 and way 2: one after the other on lane 0; way 1: at once, replica r on lane r + 1 */
static void lanes_case(const char *text, int in_c, int in_h, int in_w, int classes, int batch) {
    model_spec spec;
    CU_ASSERT_FATAL(model_spec_parse(&spec, text, in_c, in_h, in_w, classes) == SS_OK);
    const int lm = spec.arch == MODEL_ARCH_GPT;
    const size_t d = lm ? (size_t)spec.gpt_seq + 1 : (size_t)in_c * in_h * in_w;
    CU_ASSERT_FATAL(device_lanes_reserve(gpu_dev, LANE_REPLICAS) == SS_OK);
    model *start, *m[LANE_WAYS][LANE_REPLICAS];
    CU_ASSERT_FATAL(model_create(gpu_dev, &spec, 9, batch, &start) == SS_OK);
    const size_t np = model_param_count(start);
    const size_t n_in = (size_t)LANE_STEPS * batch;
    float *x[LANE_REPLICAS];
    uint8_t *y[LANE_REPLICAS];
    lane_job jobs[LANE_WAYS][LANE_REPLICAS];
    for (int r = 0; r < LANE_REPLICAS; r++) {
        x[r] = rand_host(n_in * d, 300 + (uint64_t)r, 0, 1);
        y[r] = ss_malloc(n_in);
        for (size_t i = 0; i < n_in; i++)
            y[r][i] = (uint8_t)((i * 7 + (size_t)r) % 10);
        if (lm)
            for (size_t i = 0; i < n_in * d; i++)
                x[r][i] = (float)(int)(x[r][i] * (float)(classes - 1));
        for (int way = 0; way < LANE_WAYS; way++) {
            CU_ASSERT_FATAL(model_create(gpu_dev, &spec, 100 + (uint64_t)r, batch, &m[way][r]) ==
                            SS_OK);
            model_set_stream(m[way][r], (uint64_t)r); /* each replica its dropout masks */
            jobs[way][r] = (lane_job){.m = m[way][r],
                                      .opt = sgd_create(gpu_dev, np),
                                      .x = x[r],
                                      .y = lm ? NULL : y[r],
                                      .d = d,
                                      .batch = batch,
                                      .lane = way == 1 ? r + 1 : 0};
        }
    }
    pthread_t th[LANE_REPLICAS];
    for (int way = 0; way < LANE_WAYS; way++)
        for (int r = 0; r < LANE_REPLICAS; r++) {
            device_copy(gpu_dev, model_params(m[way][r]), model_params(start), np);
            if (way == 1) {
                CU_ASSERT_FATAL(pthread_create(&th[r], NULL, lane_train, &jobs[1][r]) == 0);
            } else {
                lane_train(&jobs[way][r]);
            }
        }
    for (int r = 0; r < LANE_REPLICAS; r++)
        pthread_join(th[r], NULL);
    float *a = ss_malloc(np * sizeof(float)), *b = ss_malloc(np * sizeof(float));
    for (int r = 0; r < LANE_REPLICAS; r++) {
        device_download(gpu_dev, a, model_params(m[0][r]), np);
        for (int way = 1; way < LANE_WAYS; way++) {
            device_download(gpu_dev, b, model_params(m[way][r]), np);
            const int same =
                jobs[way][r].loss == jobs[0][r].loss && !memcmp(a, b, np * sizeof(float));
            if (!same)
                fprintf(stderr, "\n  %s replica %d: %s differs from one stream (loss %.17g, %.17g)",
                        text, r, way == 1 ? "its own stream at once" : "a second run on one stream",
                        jobs[way][r].loss, jobs[0][r].loss);
            CU_ASSERT(same);
        }
        for (int way = 0; way < LANE_WAYS; way++) {
            sgd_destroy(jobs[way][r].opt);
            model_destroy(m[way][r]);
        }
        free(x[r]);
        free(y[r]);
    }
    free(a);
    free(b);
    model_destroy(start);
}

static void test_lanes(void) {
    lanes_case("resnet:8", 1, 28, 28, 10, 16);
}

/* the Transformer, dropout on: its kernels (strided batched GEMMs, layer norm, attention,
 * embeddings, dropout, token cross-entropy) repeat bit for bit, on one stream and on several */
static void test_lanes_gpt(void) {
    lanes_case("gpt:wlm", 1, 1, 1, 2000, 4);
}

static CU_TestInfo cuda_tests[] = {
    {"gemm NN/NT/TN/TT", test_gemm},
    {"bias_add, bias_grad", test_bias},
    {"relu_fwd, relu_bwd", test_relu},
    {"im2col, col2im", test_im2col},
    {"conv layer: implicit GEMM against im2col + SGEMM", test_conv_implicit},
    {"maxpool_fwd, maxpool_bwd", test_maxpool},
    {"bn_fwd_train, bn_fwd_infer, bn_bwd", test_batchnorm},
    {"avgpool_fwd/bwd, shortcut_fwd/bwd", test_avgpool_shortcut},
    {"softmax_xent", test_softmax_xent},
    {"sgd", test_sgd},
    {"mean, axpy, scale, nrm2, masked_copy", test_vector_ops},
    {"memory shared with the host", test_share_with_host},
    {"gemm_batched (strided)", test_gemm_batched},
    {"ln_fwd, ln_bwd", test_layernorm},
    {"gelu_fwd, gelu_bwd (erf)", test_gelu},
    {"embed_fwd, embed_bwd", test_embedding},
    {"attn_softmax_fwd, attn_softmax_bwd (causal)", test_attn_softmax},
    {"dropout (counter-based mask)", test_dropout},
    {"xent_tokens", test_xent_tokens},
    {"training step logreg", test_step_logreg},
    {"training step mlp", test_step_mlp},
    {"training step cnn", test_step_cnn},
    {"training step cnn:lenet", test_step_lenet},
    {"training step resnet:8 (option A), resnet:20,proj, vgg:11", test_step_resnet},
    {"training step gpt:2,64,4,16,0.1 and gpt:wlm (dropout on)", test_step_gpt},
    {"lanes: 4 replicas on 4 streams at once equal one at a time", test_lanes},
    {"lanes: gpt:wlm repeats bit for bit, on one stream and on 4", test_lanes_gpt},
    CU_TEST_INFO_NULL,
};

int main(void) {
    char reason[256];
    if (!device_cuda_available(reason, sizeof reason)) {
        int n = 0;
        while (cuda_tests[n].pName)
            n++;
        printf("test_cuda: SKIPPED all %d CUDA-vs-CPU cases: %s\n", n, reason);
        return 77;
    }
    CU_SuiteInfo suites[] = {
        {"cuda_vs_cpu", suite_init, suite_clean, NULL, NULL, cuda_tests},
        CU_SUITE_INFO_NULL,
    };
    return ss_test_main(suites);
}
