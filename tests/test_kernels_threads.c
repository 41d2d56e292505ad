/* The CPU backend's passes on several threads (kernels/cpu_par.h): cpu_par_for covers every item
 * once in aligned parts, and every pass split over threads gives the bits of one thread, on sizes
 * where it does split (each over twice CPU_PAR_GRAIN items). */
#include "ss_test.h"

#include "common/rng.h"
#include "common/status.h"
#include "kernels/cpu_par.h"
#include "kernels/device_impl.h"

#include <cblas.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* ---- cpu_par_for ---- */

typedef struct cover {
    unsigned char *hits;
    size_t align, n;
    atomic_int parts, misaligned;
} cover;

static void mark(void *ctx, size_t i0, size_t i1) {
    cover *c = ctx;
    atomic_fetch_add(&c->parts, 1);
    if (i0 % c->align || (i1 % c->align && i1 != c->n)) atomic_fetch_add(&c->misaligned, 1);
    for (size_t i = i0; i < i1; i++)
        c->hits[i]++;
}

/* parts taken for n items, grain, align on `threads`; every item exactly once */
static int parts_for(int threads, size_t n, size_t grain, size_t align) {
    cover c = {ss_calloc(n + 1, 1), align, n, 0, 0};
    cpu_par_for(threads, n, grain, align, mark, &c);
    int once = 1;
    for (size_t i = 0; i < n; i++)
        once &= c.hits[i] == 1;
    CU_ASSERT(once);
    CU_ASSERT_EQUAL(atomic_load(&c.misaligned), 0);
    free(c.hits);
    return atomic_load(&c.parts);
}

static void test_par_for_parts(void) {
    CU_ASSERT_EQUAL(parts_for(4, 1000, 100, 1), 4);
    CU_ASSERT_EQUAL(parts_for(4, 1000, 300, 1), 3); /* 1000 / 300 parts of the grain */
    CU_ASSERT_EQUAL(parts_for(4, 1000, 600, 1), 1); /* under twice the grain: one thread */
    CU_ASSERT_EQUAL(parts_for(1, 1000, 1, 1), 1);
    CU_ASSERT_EQUAL(parts_for(3, 1001, 10, 16), 3);
    CU_ASSERT_EQUAL(parts_for(4, 40, 1, 16), 3); /* 3 units of 16 (the last one short) */
    CU_ASSERT_EQUAL(parts_for(8, 7, 1, 35), 1);
    CU_ASSERT_EQUAL(parts_for(64, 100000, 1, 1), 64);
    CU_ASSERT_EQUAL(parts_for(2, 0, 1, 1), 0);
}

/* A pool thread that watches for the next pass goes to sleep when cpu_par_quiet() is called (the
 * call before each SGEMM), not at the end of its watch: with a watch of 10 minutes, it must stop
 * within a minute of the call. */
static int wait_watching(int want, double limit_s) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        if (cpu_par_watching() == want) return 1;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec) > limit_s)
            return 0;
        const struct timespec nap = {0, 1000000};
        nanosleep(&nap, NULL);
    }
}

static void test_par_quiet(void) {
    cpu_par_set_watch_ns(600LL * 1000000000);
    CU_ASSERT_EQUAL(parts_for(2, 1000, 1, 1), 2); /* starts the pool's thread, which then watches */
    CU_ASSERT(wait_watching(1, 60.0));
    cpu_par_quiet();
    CU_ASSERT(wait_watching(0, 60.0));
    cpu_par_set_watch_ns(-1);
    CU_ASSERT_EQUAL(parts_for(2, 1000, 1, 1), 2);
    CU_ASSERT(wait_watching(0, 60.0)); /* a watch of the default span ends by itself */
}

/* ---- every split pass against one thread ---- */

enum { B = 8, H = 32, W = 32, C = 64, ROWS = B * H * W }; /* 8,192 rows of 64: 0.5 M floats */
enum { VOCAB = 3000, TOK_T = 35, SEQS = 32, LN_COLS = 200 };

typedef struct outputs {
    float *f;   /* every float output, one after the other */
    size_t n;   /* floats written */
    double *d;  /* the losses */
    int nd, nc; /* losses and correct counts written */
    int correct[4];
} outputs;

static float *next(outputs *o, size_t count) {
    float *p = o->f + o->n;
    o->n += count;
    return p;
}

static void fill(rng *r, float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)rng_uniform(r);
}

/* Runs every split pass of the CPU backend on fixed random inputs into o. */
static void run_passes(device *dev, outputs *o) {
    const device_ops *ops = dev->ops;
    const size_t n = (size_t)ROWS * C;
    rng r;
    rng_seed(&r, 11, RNG_STREAM_DATA);
    float *x = ss_malloc(n * sizeof(float)), *x2 = ss_malloc(n * sizeof(float));
    /* a bias of C and the layer norm's gamma and beta */
    float *v = ss_malloc((C + 2 * LN_COLS) * sizeof(float)), *gam = v + C, *bet = gam + LN_COLS;
    fill(&r, x, n, -1, 1);
    fill(&r, x2, n, -1, 1);
    fill(&r, v, C + 2 * LN_COLS, 0.5f, 1.5f);

    float *y = next(o, n);
    ops->copy(dev, y, x, n);
    y = next(o, n);
    ops->copy(dev, y, x, n);
    ops->zero(dev, y + 5, n - 9);
    y = next(o, n);
    ops->copy(dev, y, x, n);
    ops->bias_add(dev, ROWS, C, v, y);
    y = next(o, n);
    ops->copy(dev, y, x, n);
    ops->bias_relu(dev, ROWS, C, v, y);
    ops->bias_grad(dev, ROWS / 8, 8 * C, x, 0.0f, next(o, 8 * C)); /* 512 columns: split */
    ops->relu_fwd(dev, n, x, next(o, n));
    ops->relu_bwd(dev, n, x, x2, next(o, n));
    y = next(o, n);
    ops->copy(dev, y, x2, n);
    ops->axpy(dev, n, 0.75f, x, y);
    ops->scale(dev, n, 1.25f, y);
    float *p = next(o, n), *vel = next(o, n);
    ops->copy(dev, p, x, n);
    ops->zero(dev, vel, n);
    for (int nesterov = 0; nesterov < 2; nesterov++)
        ops->sgd(dev, n, p, x2, vel, 0.1f, 0.9f, 5e-4f, nesterov);

    /* convolution columns, pooling and the residual's passes */
    const conv_geom cg = {B, H, W, C / 2, H / 2, W / 2, 3, 3, 1, 2};
    const size_t ncol = (size_t)B * (H / 2) * (W / 2) * 9 * (C / 2);
    float *col = next(o, ncol);
    ops->im2col(dev, &cg, x, col);
    ops->col2im(dev, &cg, col, next(o, (size_t)B * H * W * (C / 2)));
    const size_t npool = n / 4;
    ops->maxpool_fwd(dev, B, H, W, C, x, next(o, npool));
    ops->maxpool_bwd(dev, B, H, W, C, x, x2, next(o, n));
    ops->maxpool_relu_bwd(dev, B, H, W, C, x, x2, next(o, n));
    const shortcut_geom sg = {B, H, W, C / 2, H / 2, W / 2, C, 2, C / 4};
    y = next(o, npool);
    ops->copy(dev, y, x2, npool);
    ops->shortcut_fwd(dev, &sg, x, y);
    ops->shortcut_bwd(dev, &sg, x2, next(o, (size_t)B * H * W * (C / 2)));
    for (int relu = 0; relu < 2; relu++)
        ops->add_fwd(dev, &sg, x2, x, relu, next(o, npool));

    /* batch norm: 16 and 32 columns (sums in registers), 64 and 512 (by groups of 128 columns):
     * the sums split by blocks of rows; then with the max-pool after it (bn_pool_*) */
    static const int widths[] = {16, 32, C, 8 * C};
    for (int k = 0; k < 4; k++) {
        const int cols = widths[k], rows = (int)(n / cols);
        float *rm = ss_calloc(4 * (size_t)cols, sizeof(float)), *rv = rm + cols, *sm = rv + cols;
        float *si = sm + cols, *bg = ss_malloc(2 * (size_t)cols * sizeof(float)), *bb = bg + cols;
        fill(&r, bg, 2 * (size_t)cols, 0.5f, 1.5f);
        for (int relu = 0; relu < 2; relu++) {
            float *yb = next(o, n);
            ops->bn_fwd_train_act(dev, rows, cols, x, bg, bb, 0.1f, 1e-5f, rm, rv, sm, si, relu,
                                  yb);
            float *dg = next(o, (size_t)cols), *db = next(o, (size_t)cols);
            if (relu)
                ops->bn_bwd_masked(dev, rows, cols, x, x2, yb, bg, sm, si, dg, db, next(o, n));
            else
                ops->bn_bwd(dev, rows, cols, x, x2, bg, sm, si, dg, db, next(o, n));
            ops->bn_fwd_infer_act(dev, rows, cols, x, bg, bb, rm, rv, 1e-5f, relu, next(o, n));
        }
        /* with the 2x2 max-pool after it, on odd maps (a row and a column no window covers) */
        static const int maps[][2] = {{63, 65}, {31, 65}, {31, 33}, {7, 17}};
        const int ph = maps[k][0], pw = maps[k][1];
        const size_t pooled = (size_t)B * (ph / 2) * (pw / 2) * cols;
        float *py = next(o, pooled);
        uint8_t *codes = (uint8_t *)next(o, (pooled + 3) / 4);
        memset(codes, 0, (pooled + 3) / 4 * sizeof(float));
        ops->bn_pool_fwd_train(dev, B, ph, pw, cols, x, bg, bb, 0.1f, 1e-5f, rm, rv, sm, si, py,
                               codes);
        float *dg = next(o, (size_t)cols), *db = next(o, (size_t)cols);
        ops->bn_pool_bwd(dev, B, ph, pw, cols, x, x2, codes, bg, sm, si, dg, db,
                         next(o, (size_t)B * ph * pw * cols));
        ops->bn_pool_fwd_infer(dev, B, ph, pw, cols, x, bg, bb, rm, rv, 1e-5f, next(o, pooled));
        memcpy(next(o, 4 * (size_t)cols), rm, 4 * (size_t)cols * sizeof(float));
        free(rm);
        free(bg);
    }

    /* the Transformer's passes */
    const int ln_rows = (int)(n / LN_COLS);
    float *mean = next(o, (size_t)ln_rows), *rstd = next(o, (size_t)ln_rows);
    ops->ln_fwd(dev, ln_rows, LN_COLS, x, gam, bet, 1e-5f, mean, rstd,
                next(o, (size_t)ln_rows * LN_COLS));
    ops->gelu_fwd(dev, n, x, next(o, n));
    ops->gelu_bwd(dev, n, x, x2, next(o, n));
    const int sm_rows = (int)(n / TOK_T) / TOK_T * TOK_T; /* whole (sample, head)s of T rows */
    float *att = next(o, (size_t)sm_rows * TOK_T);
    ops->attn_softmax_fwd(dev, sm_rows, TOK_T, x, att);
    ops->attn_softmax_bwd(dev, sm_rows, TOK_T, att, x2, next(o, (size_t)sm_rows * TOK_T));
    ops->dropout(dev, n, 0.2f, 12345, x, next(o, n));
    const int rows = SEQS * TOK_T;
    float *tokens = ss_malloc((size_t)SEQS * (TOK_T + 1) * sizeof(float));
    for (int i = 0; i < SEQS * (TOK_T + 1); i++)
        tokens[i] = (float)(rng_next(&r) % VOCAB);
    float *logits = ss_malloc((size_t)rows * VOCAB * sizeof(float));
    fill(&r, logits, (size_t)rows * VOCAB, -4, 4);
    o->d[o->nd++] = ops->xent_tokens(dev, rows, VOCAB, logits, tokens, TOK_T + 1, TOK_T,
                                     next(o, (size_t)rows * VOCAB), &o->correct[o->nc++]);
    o->d[o->nd++] = ops->xent_tokens(dev, rows, VOCAB, logits, tokens, TOK_T + 1, TOK_T, NULL,
                                     &o->correct[o->nc++]);
    free(tokens);
    free(logits);
    free(x);
    free(x2);
    free(v);
}

static void test_passes_threads(void) {
    device *dev = NULL;
    char notice[256];
    CU_ASSERT_FATAL(device_open("cpu", &dev, notice, sizeof notice) == SS_OK);
    const int before = openblas_get_num_threads();
    const size_t cap = (size_t)36 << 20; /* floats: more than every output together */
    outputs one = {ss_malloc(cap * sizeof(float)), 0, ss_calloc(8, sizeof(double)), 0, 0, {0}};
    openblas_set_num_threads(1);
    run_passes(dev, &one);
    CU_ASSERT_FATAL(one.n <= cap);
    for (int threads = 2; threads <= 3; threads++) {
        outputs many = {ss_malloc(cap * sizeof(float)), 0, ss_calloc(8, sizeof(double)), 0, 0, {0}};
        openblas_set_num_threads(threads);
        CU_ASSERT_EQUAL(cpu_par_threads(), threads);
        run_passes(dev, &many);
        CU_ASSERT_EQUAL(many.n, one.n);
        size_t first = one.n;
        for (size_t i = 0; i < one.n && first == one.n; i++)
            if (memcmp(&one.f[i], &many.f[i], sizeof(float))) first = i;
        if (first != one.n)
            fprintf(stderr, "\n  %d threads: output float %zu of %zu differs (%.9g vs %.9g)\n",
                    threads, first, one.n, one.f[first], many.f[first]);
        CU_ASSERT_EQUAL(first, one.n);
        CU_ASSERT_EQUAL(memcmp(one.d, many.d, 2 * sizeof(double)), 0);
        CU_ASSERT_EQUAL(one.correct[0], many.correct[0]);
        CU_ASSERT_EQUAL(one.correct[1], many.correct[1]);
        free(many.f);
        free(many.d);
    }
    openblas_set_num_threads(before);
    free(one.f);
    free(one.d);
    device_close(dev);
}

static CU_TestInfo par_tests[] = {
    /* first: the pool has one thread then, so one watches */
    {"cpu_par_quiet: a watching pool thread sleeps at once", test_par_quiet},
    {"cpu_par_for: every item once, aligned parts, at most the threads", test_par_for_parts},
    {"every pass split over 2 and 3 threads = one thread, bit for bit", test_passes_threads},
    CU_TEST_INFO_NULL,
};

int main(void) {
    CU_SuiteInfo suites[] = {
        {"threads", NULL, NULL, NULL, NULL, par_tests},
        CU_SUITE_INFO_NULL,
    };
    return ss_test_main(suites);
}
