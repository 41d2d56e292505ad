/* Tests of the Transformer ops and the gpt models (kernels/gpt.h) on the CPU backend: each op's
 * gradient against central finite differences, dropout's mask, the models' gradients (the tied
 * output projection's included), parameter counts against the reference definitions, the
 * --model gpt forms, determinism and learning, and the dropout masks gpt_dropout_mask reports. */
#include "ss_test.h"

#include "common/rng.h"
#include "common/status.h"
#include "kernels/cpu_vec.h"
#include "kernels/device_impl.h"
#include "kernels/dropout_hash.h"
#include "kernels/gpt_internal.h"
#include "kernels/model.h"
#include "kernels/optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static device *open_cpu(void) {
    device *dev = NULL;
    char notice[256];
    CU_ASSERT_FATAL(device_open("cpu", &dev, notice, sizeof notice) == SS_OK);
    return dev;
}

static void fill(rng *r, float *x, size_t n, float lo, float hi) {
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)rng_uniform(r);
}

/* ---- op gradients: L = sum y r for fixed random r; each entry of each input perturbed by
 * +-eps, (L+ - L-) / 2 eps in double against the analytic gradient, |num - ana| <= 5e-4 + 1e-2
 * |ana| (the ops are smooth; eps 1e-2 keeps float rounding of L well under the bound). ---- */

typedef struct op_case {
    device *dev;
    int kind; /* OP_LN, OP_GELU, OP_EMBED, OP_SOFTMAX, OP_DROPOUT */
    int rows, cols;
    float *in[3]; /* the inputs perturbed: x, gamma, beta / x / wte, pos / x / x */
    size_t in_n[3];
    int n_in;
    float *tokens;
    float *y, *r, *stats;
} op_case;

enum { OP_LN, OP_GELU, OP_EMBED, OP_SOFTMAX, OP_DROPOUT };
enum { EMB_B = 2, EMB_T = 4, EMB_V = 5, EMB_D = 3 };

static void op_forward(op_case *c) {
    device *d = c->dev;
    const size_t n = (size_t)c->rows * c->cols;
    if (c->kind == OP_LN)
        d->ops->ln_fwd(d, c->rows, c->cols, c->in[0], c->in[1], c->in[2], 1e-5f, c->stats,
                       c->stats + c->rows, c->y);
    else if (c->kind == OP_GELU)
        d->ops->gelu_fwd(d, n, c->in[0], c->y);
    else if (c->kind == OP_EMBED)
        d->ops->embed_fwd(d, EMB_B, EMB_T, EMB_D, c->tokens, EMB_T + 1, c->in[0], 1.5f, c->in[1],
                          c->y);
    else if (c->kind == OP_SOFTMAX)
        d->ops->attn_softmax_fwd(d, c->rows, c->cols, c->in[0], c->y);
    else
        d->ops->dropout(d, n, 0.3f, 99, c->in[0], c->y);
}

static double op_loss(op_case *c) {
    op_forward(c);
    double s = 0.0;
    for (size_t i = 0; i < (size_t)c->rows * c->cols; i++)
        s += (double)c->y[i] * c->r[i];
    return s;
}

/* the analytic gradients of the inputs, into ana[k] */
static void op_backward(op_case *c, float **ana) {
    device *d = c->dev;
    const size_t n = (size_t)c->rows * c->cols;
    op_forward(c);
    if (c->kind == OP_LN)
        d->ops->ln_bwd(d, c->rows, c->cols, c->in[0], c->r, c->in[1], c->stats, c->stats + c->rows,
                       ana[1], ana[2], ana[0]);
    else if (c->kind == OP_GELU)
        d->ops->gelu_bwd(d, n, c->in[0], c->r, ana[0]);
    else if (c->kind == OP_EMBED)
        d->ops->embed_bwd(d, EMB_B, EMB_T, EMB_D, c->tokens, EMB_T + 1, c->r, 1.5f, EMB_V, 0,
                          ana[0], ana[1]);
    else if (c->kind == OP_SOFTMAX)
        d->ops->attn_softmax_bwd(d, c->rows, c->cols, c->y, c->r, ana[0]);
    else
        d->ops->dropout(d, n, 0.3f, 99, c->r, ana[0]);
}

static void run_op_check(op_case *c, const char *name) {
    rng r;
    rng_seed(&r, 5, RNG_STREAM_DATA);
    const size_t n = (size_t)c->rows * c->cols;
    c->y = device_alloc(c->dev, n);
    c->r = device_alloc(c->dev, n);
    c->stats = device_alloc(c->dev, 2 * (size_t)c->rows);
    fill(&r, c->r, n, -1.0f, 1.0f);
    float *ana[3];
    for (int k = 0; k < c->n_in; k++) {
        fill(&r, c->in[k], c->in_n[k], -1.5f, 1.5f);
        ana[k] = device_alloc(c->dev, c->in_n[k]);
    }
    if (c->kind == OP_LN) fill(&r, c->in[1], c->in_n[1], 0.5f, 1.5f);
    op_backward(c, ana);
    const float eps = 1e-2f;
    int bad = 0, checked = 0;
    for (int k = 0; k < c->n_in; k++)
        for (size_t i = 0; i < c->in_n[k]; i++) {
            float keep = c->in[k][i];
            c->in[k][i] = keep + eps;
            double lp = op_loss(c);
            c->in[k][i] = keep - eps;
            double lm = op_loss(c);
            c->in[k][i] = keep;
            double num = (lp - lm) / (2.0 * eps);
            checked++;
            if (fabs(num - ana[k][i]) > 5e-4 + 1e-2 * fabs(ana[k][i])) {
                if (bad < 3)
                    fprintf(stderr, "\n  %s input %d [%zu]: numeric %.6g analytic %.6g", name, k, i,
                            num, (double)ana[k][i]);
                bad++;
            }
        }
    CU_ASSERT(checked > 10);
    CU_ASSERT_EQUAL(bad, 0);
    for (int k = 0; k < c->n_in; k++)
        device_free(c->dev, ana[k]);
    device_free(c->dev, c->y);
    device_free(c->dev, c->r);
    device_free(c->dev, c->stats);
}

static void test_grad_layernorm(void) {
    op_case c = {.dev = open_cpu(), .kind = OP_LN, .rows = 4, .cols = 7, .n_in = 3};
    c.in_n[0] = 28, c.in_n[1] = c.in_n[2] = 7;
    for (int k = 0; k < 3; k++)
        c.in[k] = device_alloc(c.dev, c.in_n[k]);
    run_op_check(&c, "layernorm");
    /* with gamma 1 and beta 0 each row has mean 0 and variance 1 (up to eps) */
    float g[7] = {1, 1, 1, 1, 1, 1, 1}, b[7] = {0}, y[28], st[8];
    c.dev->ops->ln_fwd(c.dev, 4, 7, c.in[0], g, b, 1e-5f, st, st + 4, y);
    for (int r = 0; r < 4; r++) {
        double m = 0.0, v = 0.0;
        for (int k = 0; k < 7; k++)
            m += y[r * 7 + k] / 7.0, v += (double)y[r * 7 + k] * y[r * 7 + k] / 7.0;
        CU_ASSERT_DOUBLE_EQUAL(m, 0.0, 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(v, 1.0, 1e-3);
    }
    for (int k = 0; k < 3; k++)
        device_free(c.dev, c.in[k]);
    device_close(c.dev);
}

static void test_grad_gelu(void) {
    op_case c = {.dev = open_cpu(), .kind = OP_GELU, .rows = 3, .cols = 9, .n_in = 1};
    c.in_n[0] = 27;
    c.in[0] = device_alloc(c.dev, 27);
    run_op_check(&c, "gelu");
    /* erf form: GELU(1) = Phi(1) = 0.8413447, GELU(-2) = -2 Phi(-2) = -0.0455003 */
    float x[2] = {1.0f, -2.0f}, y[2];
    c.dev->ops->gelu_fwd(c.dev, 2, x, y);
    CU_ASSERT_DOUBLE_EQUAL(y[0], 0.8413447, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[1], -0.0455003, 1e-6);
    device_free(c.dev, c.in[0]);
    device_close(c.dev);
}

static void test_grad_embedding(void) {
    op_case c = {.dev = open_cpu(), .kind = OP_EMBED, .rows = EMB_B * EMB_T, .cols = EMB_D};
    c.n_in = 2;
    c.in_n[0] = EMB_V * EMB_D, c.in_n[1] = EMB_T * EMB_D;
    c.in[0] = device_alloc(c.dev, c.in_n[0]);
    c.in[1] = device_alloc(c.dev, c.in_n[1]);
    /* token 2 three times: its gradient rows add up */
    float toks[EMB_B * (EMB_T + 1)] = {2, 0, 2, 4, 1, 3, 2, 1, 0, 4};
    c.tokens = toks;
    run_op_check(&c, "embedding");
    device_free(c.dev, c.in[0]);
    device_free(c.dev, c.in[1]);
    device_close(c.dev);
}

static void test_grad_attn_softmax(void) {
    op_case c = {.dev = open_cpu(), .kind = OP_SOFTMAX, .rows = 12, .cols = 6, .n_in = 1};
    c.in_n[0] = 72;
    c.in[0] = device_alloc(c.dev, 72);
    run_op_check(&c, "attn_softmax");
    /* causal: row r sees keys 0..r mod 6 only, and its probabilities add up to 1 */
    float *y = device_alloc(c.dev, 72);
    c.dev->ops->attn_softmax_fwd(c.dev, 12, 6, c.in[0], y);
    for (int r = 0; r < 12; r++) {
        double s = 0.0;
        for (int j = 0; j < 6; j++) {
            if (j > r % 6) CU_ASSERT_EQUAL(y[r * 6 + j], 0.0f);
            s += y[r * 6 + j];
        }
        CU_ASSERT_DOUBLE_EQUAL(s, 1.0, 1e-6);
    }
    device_free(c.dev, y);
    device_free(c.dev, c.in[0]);
    device_close(c.dev);
}

static void test_dropout(void) {
    op_case c = {.dev = open_cpu(), .kind = OP_DROPOUT, .rows = 5, .cols = 8, .n_in = 1};
    c.in_n[0] = 40;
    c.in[0] = device_alloc(c.dev, 40);
    run_op_check(&c, "dropout");
    device_free(c.dev, c.in[0]);
    /* the mask: a fraction p dropped, survivors scaled by 1 / (1 - p); one seed one mask, another
     * seed another */
    const size_t n = 100000;
    float *x = device_alloc(c.dev, n), *a = device_alloc(c.dev, n), *b = device_alloc(c.dev, n);
    for (size_t i = 0; i < n; i++)
        x[i] = 1.0f;
    c.dev->ops->dropout(c.dev, n, 0.2f, 7, x, a);
    c.dev->ops->dropout(c.dev, n, 0.2f, 7, x, b);
    CU_ASSERT(memcmp(a, b, n * sizeof(float)) == 0);
    size_t dropped = 0;
    for (size_t i = 0; i < n; i++) {
        dropped += a[i] == 0.0f;
        if (a[i] != 0.0f) CU_ASSERT_DOUBLE_EQUAL(a[i], 1.25, 1e-6);
    }
    CU_ASSERT(dropped > 19400 && dropped < 20600); /* 20000 +- 4.7 sigma */
    c.dev->ops->dropout(c.dev, n, 0.2f, 8, x, b);
    CU_ASSERT(memcmp(a, b, n * sizeof(float)) != 0);
    device_free(c.dev, x);
    device_free(c.dev, a);
    device_free(c.dev, b);
    device_close(c.dev);
}

static void test_xent_tokens(void) {
    device *dev = open_cpu();
    /* 2 samples of T = 2: rows predict tokens 1, 2 of each sample */
    float toks[6] = {0, 2, 1, 3, 0, 0};
    float z[4 * 4] = {1, 2, 3, 0, 0, 5, 0, 0, 1, 1, 1, 1, 2, 0, 0, 0};
    float dz[16];
    int ok = 0;
    double loss = dev->ops->xent_tokens(dev, 4, 4, z, toks, 3, 2, dz, &ok);
    double want = 0.0;
    const int target[4] = {2, 1, 0, 0}, argmax[4] = {2, 1, 0, 0};
    for (int r = 0; r < 4; r++) {
        double s = 0.0;
        for (int k = 0; k < 4; k++)
            s += exp(z[r * 4 + k]);
        want += log(s) - z[r * 4 + target[r]];
        for (int k = 0; k < 4; k++)
            CU_ASSERT_DOUBLE_EQUAL(dz[r * 4 + k], (exp(z[r * 4 + k]) / s - (k == target[r])) / 4.0,
                                   1e-6);
    }
    (void)argmax;
    CU_ASSERT_DOUBLE_EQUAL(loss, want, 1e-5 * want);
    CU_ASSERT_EQUAL(ok, 4);
    device_close(dev);
}

/* ss_expf_neg against exp in double on [-87, 0] every 2^-12, and at the ends: within 1.5 units in
 * the last place (1.19 at worst), exact at 0, e^-87 below -87. */
static void test_expf_neg(void) {
    double worst = 0.0;
    for (long i = 0; i <= 87L * 4096; i++) {
        const float x = -(float)i / 4096.0f;
        const double want = exp((double)x);
        const float got = ss_expf_neg(x);
        const double ulp = nextafterf((float)want, INFINITY) - (float)want;
        const double err = fabs((double)got - want) / ulp;
        if (err > worst) worst = err;
    }
    CU_ASSERT(worst <= 1.5);
    CU_ASSERT_EQUAL(ss_expf_neg(0.0f), 1.0f);
    CU_ASSERT_EQUAL(ss_expf_neg(-1000.0f), ss_expf_neg(-87.0f));
    CU_ASSERT(ss_expf_neg(-87.0f) > 0.0f);
}

/* A vocabulary of 1,003 (blocks of 256 and a tail of 3 past the lanes of 8), rows of wide
 * logits: loss and gradient against the same sums in double, the loss equal whether the terms
 * are kept or not, and the same results in place. */
static void test_xent_tokens_wide(void) {
    device *dev = open_cpu();
    const int t = 3, batch = 2, rows = batch * t, vocab = 1003;
    float toks[2 * 4] = {5, 17, 1002, 0, 999, 256, 3, 7};
    float *z = malloc(sizeof(float) * rows * vocab), *dz = malloc(sizeof(float) * rows * vocab);
    rng r;
    rng_seed(&r, 11, RNG_STREAM_INIT);
    for (int i = 0; i < rows * vocab; i++)
        z[i] = (float)(30.0 * rng_uniform(&r) - 15.0);
    z[2 * vocab + 600] = 40.0f; /* a row whose largest logit is far above the rest */
    int ok = 0, ok_eval = 0, ok_in = 0;
    double loss = dev->ops->xent_tokens(dev, rows, vocab, z, toks, t + 1, t, dz, &ok);
    double eval = dev->ops->xent_tokens(dev, rows, vocab, z, toks, t + 1, t, NULL, &ok_eval);
    CU_ASSERT_EQUAL(loss, eval);
    CU_ASSERT_EQUAL(ok, ok_eval);
    double want = 0.0;
    int right = 0;
    for (int q = 0; q < rows; q++) {
        const float *zr = z + (size_t)q * vocab;
        const int y = (int)toks[(q / t) * (t + 1) + q % t + 1];
        int arg = 0;
        for (int k = 1; k < vocab; k++)
            if (zr[k] > zr[arg]) arg = k;
        double s = 0.0;
        for (int k = 0; k < vocab; k++)
            s += exp((double)zr[k] - zr[arg]);
        want += log(s) - ((double)zr[y] - zr[arg]);
        right += arg == y;
        for (int k = 0; k < vocab; k++) {
            const double g = (exp((double)zr[k] - zr[arg]) / s - (k == y)) / rows;
            CU_ASSERT(fabs(dz[(size_t)q * vocab + k] - g) <= 1e-6 * fabs(g) + 1e-12);
        }
    }
    CU_ASSERT(fabs(loss - want) <= 1e-6 * want);
    CU_ASSERT_EQUAL(ok, right);
    double in_place = dev->ops->xent_tokens(dev, rows, vocab, z, toks, t + 1, t, z, &ok_in);
    CU_ASSERT_EQUAL(in_place, loss);
    CU_ASSERT_EQUAL(ok_in, ok);
    CU_ASSERT(memcmp(z, dz, sizeof(float) * rows * vocab) == 0);
    free(z);
    free(dz);
    device_close(dev);
}

/* ---- models ---- */

static void tokens_of(rng *r, float *x, int n, int t, int vocab) {
    for (int i = 0; i < n * (t + 1); i++)
        x[i] = (float)rng_below(r, (uint64_t)vocab);
}

static void model_grad_check(const char *text, int vocab, int batch, int narrow) {
    device *dev = open_cpu();
    model_spec spec;
    CU_ASSERT_FATAL(model_spec_parse(&spec, text, 1, 1, 1, vocab) == SS_OK);
    spec.gpt_dropout = 0.0f; /* finite differences need one function */
    if (narrow) {            /* the layout at a size that checks in milliseconds */
        spec.gpt_dim = 8, spec.gpt_ffn = 12, spec.gpt_seq = 5;
        spec.in_w = 6;
    }
    model *m;
    CU_ASSERT_FATAL(model_create(dev, &spec, 3, batch, &m) == SS_OK);
    const int t = spec.gpt_seq;
    float *x = ss_malloc((size_t)batch * (t + 1) * sizeof(float));
    rng r;
    rng_seed(&r, 21, RNG_STREAM_DATA);
    tokens_of(&r, x, batch, t, vocab);
    float *p = model_params(m);
    const size_t np = model_param_count(m);
    for (int v = 0; v < model_view_count(m); v++) { /* away from the init's zeros and ones */
        const model_view *vw = model_view_at(m, v);
        for (size_t i = 0; i < vw->count; i++)
            p[vw->offset + i] += 0.1f * (float)(rng_uniform(&r) - 0.5);
    }
    double loss = model_forward_backward(m, x, NULL, batch);
    CU_ASSERT(isfinite(loss) && loss > 0);
    float *ana = ss_malloc(np * sizeof(float));
    memcpy(ana, model_grads(m), np * sizeof(float));
    int bad = 0, checked = 0;
    for (int v = 0; v < model_view_count(m); v++) {
        const model_view *vw = model_view_at(m, v);
        for (int k = 0; k < 3; k++) {
            size_t i = vw->offset + (size_t)rng_below(&r, vw->count);
            float keep = p[i];
            double num = 0.0;
            static const float eps[2] = {1e-2f, 2.5e-3f};
            for (int e = 0; e < 2; e++) {
                double lp, lm;
                p[i] = keep + eps[e];
                model_evaluate(m, x, NULL, (size_t)batch, &lp, NULL);
                p[i] = keep - eps[e];
                model_evaluate(m, x, NULL, (size_t)batch, &lm, NULL);
                p[i] = keep;
                num = (lp - lm) / (2.0 * eps[e]);
                if (fabs(num - ana[i]) <= 2e-4 + 2e-2 * fabs(ana[i])) break;
            }
            checked++;
            if (fabs(num - ana[i]) > 2e-4 + 2e-2 * fabs(ana[i])) {
                fprintf(stderr, "\n  %s %s[%zu]: numeric %.6g analytic %.6g", text, vw->name,
                        i - vw->offset, num, (double)ana[i]);
                bad++;
            }
        }
    }
    CU_ASSERT(checked >= 30);
    CU_ASSERT_EQUAL(bad, 0);
    free(ana);
    free(x);
    model_destroy(m);
    device_close(dev);
}

/* pre-norm, GELU, learned positions, tied output projection (wte's gradient is the sum of the
 * embedding's and the projection's), final layer norm */
static void test_grad_gpt(void) {
    model_grad_check("gpt:2,8,2,5", 11, 3, 0);
}

/* post-norm, ReLU, sinusoids, untied decoder with bias: the wlm layout at a small size */
static void test_grad_wlm(void) {
    model_grad_check("gpt:wlm", 13, 2, 1);
}

/* PyTorch's word_language_model TransformerModel, module by module (nn.Embedding, per
 * nn.TransformerEncoderLayer: self_attn.in_proj_weight/bias, out_proj, linear1, linear2, norm1,
 * norm2; decoder nn.Linear). */
static size_t wlm_reference_params(size_t v, size_t d, size_t nhid, size_t layers) {
    size_t layer = 3 * d * d + 3 * d + d * d + d + nhid * d + nhid + d * nhid + d + 2 * d + 2 * d;
    return v * d + layers * layer + v * d + v;
}

/* GPT-2's (wte, wpe, per block ln_1, c_attn, c_proj, ln_2, c_fc, c_proj; ln_f; tied lm_head) */
static size_t gpt_reference_params(size_t v, size_t t, size_t d, size_t layers) {
    size_t block =
        2 * d + (3 * d * d + 3 * d) + (d * d + d) + 2 * d + (4 * d * d + 4 * d) + (4 * d * d + d);
    return v * d + t * d + layers * block + 2 * d;
}

static size_t count_of(const char *text, int vocab) {
    model_spec spec;
    size_t p = 0, b = 1;
    CU_ASSERT_FATAL(model_spec_parse(&spec, text, 1, 1, 1, vocab) == SS_OK);
    CU_ASSERT_FATAL(model_spec_count(&spec, &p, &b) == SS_OK);
    CU_ASSERT_EQUAL(b, 0);
    return p;
}

static void test_param_counts(void) {
    /* WikiText-2's vocabulary (33,278 words): 13,828,478 parameters */
    CU_ASSERT_EQUAL(count_of("gpt:wlm", 33278), wlm_reference_params(33278, 200, 200, 2));
    CU_ASSERT_EQUAL(count_of("gpt:wlm", 33278), 13828478u);
    CU_ASSERT_EQUAL(count_of("gpt:selsync", 10000), wlm_reference_params(10000, 200, 200, 2));
    /* GPT-2 small's layout: 124,439,808 with V 50257, T 1024, D 768, 12 layers */
    CU_ASSERT_EQUAL(count_of("gpt:12,768,12,1024", 50257),
                    gpt_reference_params(50257, 1024, 768, 12));
    CU_ASSERT_EQUAL(count_of("gpt:12,768,12,1024", 50257), 124439808u);
    CU_ASSERT_EQUAL(count_of("gpt:2,64,4,32,0", 300), gpt_reference_params(300, 32, 64, 2));
    /* the views tile the vector */
    device *dev = open_cpu();
    model_spec spec;
    CU_ASSERT_FATAL(model_spec_parse(&spec, "gpt:2,16,4,8", 1, 1, 1, 20) == SS_OK);
    model *m;
    CU_ASSERT_FATAL(model_create(dev, &spec, 1, 2, &m) == SS_OK);
    size_t next = 0;
    for (int v = 0; v < model_view_count(m); v++) {
        CU_ASSERT_EQUAL(model_view_at(m, v)->offset, next);
        next += model_view_at(m, v)->count;
    }
    CU_ASSERT_EQUAL(next, model_param_count(m));
    CU_ASSERT_STRING_EQUAL(model_view_at(m, 0)->name, "wte.weight");
    double f = 0.0, b = 0.0;
    for (int i = 0; i < model_cost_layer_count(m); i++) {
        model_layer_cost c;
        model_cost_layer_at(m, i, &c);
        f += c.fwd_flops, b += c.bwd_flops;
    }
    CU_ASSERT_DOUBLE_EQUAL(f, model_forward_flops_per_sample(m), 1e-9 * f);
    CU_ASSERT_DOUBLE_EQUAL(b, model_backward_flops_per_sample(m), 1e-9 * b);
    /* the matrix products dominate: 2 x 8 tokens x (12 D^2 x 2 layers + D V) x 2... at least */
    CU_ASSERT(f > 2.0 * 8 * (2 * 12.0 * 16 * 16 + 16 * 20));
    model_destroy(m);
    device_close(dev);
}

static void test_spec_parse(void) {
    model_spec s;
    CU_ASSERT_EQUAL(model_spec_parse(&s, "gpt:4,128,8,64", 1, 28, 28, 500), SS_OK);
    CU_ASSERT(s.arch == MODEL_ARCH_GPT && s.gpt_layers == 4 && s.gpt_dim == 128 &&
              s.gpt_heads == 8 && s.gpt_seq == 64 && s.gpt_ffn == 512 && !s.gpt_wlm);
    CU_ASSERT_EQUAL(s.in_w, 65);
    CU_ASSERT_DOUBLE_EQUAL(s.gpt_dropout, 0.1, 1e-7);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "gpt:4,128,8,64,0.25", 1, 1, 1, 500), SS_OK);
    CU_ASSERT_DOUBLE_EQUAL(s.gpt_dropout, 0.25, 1e-7);
    CU_ASSERT_EQUAL(model_spec_parse(&s, "gpt", 1, 1, 1, 500), SS_OK);
    CU_ASSERT(s.gpt_wlm && s.gpt_layers == 2 && s.gpt_dim == 200 && s.gpt_heads == 2 &&
              s.gpt_seq == 35 && s.gpt_ffn == 200);
    CU_ASSERT_DOUBLE_EQUAL(s.gpt_dropout, 0.2, 1e-7);
    static const char *const bad[] = {
        "gpt:4,128,8",          "gpt:4,130,8,64", "gpt:0,128,8,64", "gpt:4,128,8,64,1.5",
        "gpt:4,128,8,64,0.1,3", "gpt:abc",        "gpt:4,128,8,x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(model_spec_parse(&s, bad[i], 1, 1, 1, 500), SS_EUSAGE);
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "gpt:L,D,H,T"));
        CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "gpt:wlm"));
    }
    /* an image data set's shape: the model refuses it at creation */
    CU_ASSERT_EQUAL(model_spec_parse(&s, "gpt:wlm", 1, 28, 28, 10), SS_OK);
    s.in_w = 28;
    CU_ASSERT_EQUAL(model_spec_count(&s, NULL, NULL), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "text data set"));
}

/* one pass of SGD steps on a fixed batch; returns the last loss */
static double train(const char *text, uint64_t stream, int steps, double *first) {
    device *dev = open_cpu();
    model_spec spec;
    SS_ASSERT(model_spec_parse(&spec, text, 1, 1, 1, 16) == SS_OK);
    model *m;
    SS_ASSERT(model_create(dev, &spec, 9, 4, &m) == SS_OK);
    model_set_stream(m, stream);
    sgd_state *opt = sgd_create(dev, model_param_count(m));
    const int t = spec.gpt_seq;
    float x[4 * 36];
    for (int b = 0; b < 4; b++) /* a learnable sequence: each token is the previous + 3 mod 16 */
        for (int j = 0; j <= t; j++)
            x[b * (t + 1) + j] = (float)((b * 5 + 3 * j) % 16);
    double loss = 0.0;
    for (int s = 0; s < steps; s++) {
        loss = model_forward_backward(m, x, NULL, 4);
        if (s == 0 && first) *first = loss;
        sgd_step(opt, model_params(m), model_grads(m), 0.5f, 0.0f, 0.0f);
    }
    double eval_a, eval_b;
    model_evaluate(m, x, NULL, 4, &eval_a, NULL);
    model_evaluate(m, x, NULL, 4, &eval_b, NULL);
    CU_ASSERT_EQUAL(eval_a, eval_b); /* no dropout at evaluation */
    sgd_destroy(opt);
    model_destroy(m);
    device_close(dev);
    return loss;
}

static void test_determinism_and_learning(void) {
    double first = 0.0;
    double a = train("gpt:2,32,4,32,0.1", 0, 30, &first);
    double b = train("gpt:2,32,4,32,0.1", 0, 30, NULL);
    double c = train("gpt:2,32,4,32,0.1", 1, 30, NULL);
    CU_ASSERT_EQUAL(a, b); /* one seed and stream: bit for bit */
    CU_ASSERT(a != c);     /* another worker's dropout masks */
    CU_ASSERT(first > 2.0 && a < 0.5 * first);
    double w = train("gpt:wlm", 0, 30, &first);
    CU_ASSERT(w < 0.7 * first);
}

/* gpt_dropout_mask returns the masks the training pass applied: the embedding after dropout
 * (site 0) is the embedding times the mask, block 0's attention probabilities after dropout
 * (site 1) are the probabilities times theirs; 0 or 1 / (1 - p), about p dropped; all ones
 * before a pass; another pass draws others. */
static void test_dropout_mask_report(void) {
    device *dev = open_cpu();
    model_spec spec;
    CU_ASSERT_FATAL(model_spec_parse(&spec, "gpt:2,16,2,8,0.3", 1, 1, 1, 40) == SS_OK);
    gpt *g;
    const int batch = 3, t = 8, d = 16, h = 2;
    const size_t n = (size_t)batch * t * d, natt = (size_t)batch * h * t * t;
    CU_ASSERT_FATAL(gpt_create(dev, &spec, 5, batch, &g) == SS_OK);
    float *mask = ss_malloc(n * sizeof(float)), *mask1 = ss_malloc(n * sizeof(float));
    gpt_dropout_mask(g, 0, n, mask);
    for (size_t i = 0; i < n; i++)
        CU_ASSERT_EQUAL(mask[i], 1.0f);
    float x[3 * 9];
    rng r;
    rng_seed(&r, 8, RNG_STREAM_DATA);
    tokens_of(&r, x, batch, t, 40);
    gpt_forward_backward(g, x, batch, NULL, NULL);
    gpt_dropout_mask(g, 0, n, mask);
    const float keep = 1.0f / (1.0f - 0.3f);
    size_t dropped = 0, bad = 0;
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < t; j++)
            for (int c = 0; c < d; c++) {
                const size_t i = ((size_t)b * t + j) * d + c;
                const float pre =
                    g->wte.w[(size_t)x[b * (t + 1) + j] * d + c] + g->wpe.w[(size_t)j * d + c];
                CU_ASSERT(mask[i] == 0.0f || mask[i] == keep);
                dropped += mask[i] == 0.0f;
                bad += fabsf(g->emb[i] - pre * mask[i]) > 1e-6f * fabsf(pre * mask[i]);
            }
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT(dropped > n / 5 && dropped < 2 * n / 5); /* 0.3 of 384 */
    float *matt = ss_malloc(natt * sizeof(float));
    gpt_dropout_mask(g, 1, natt, matt);
    size_t kept_nonzero = 0;
    for (size_t i = 0; i < natt; i++) {
        const float want = g->acts[0].att[i] * matt[i];
        CU_ASSERT(fabsf(g->acts[0].attd[i] - want) <= 1e-6f * fabsf(want));
        kept_nonzero += matt[i] != 0.0f && g->acts[0].att[i] != 0.0f;
    }
    CU_ASSERT(kept_nonzero > natt / 4); /* the causal half, less 0.3 of it */
    gpt_forward_backward(g, x, batch, NULL, NULL);
    gpt_dropout_mask(g, 0, n, mask1);
    CU_ASSERT(memcmp(mask, mask1, n * sizeof(float)) != 0);
    free(matt);
    free(mask);
    free(mask1);
    gpt_destroy(g);
    device_close(dev);
}

static CU_TestInfo op_tests[] = {
    {"layer norm vs finite differences", test_grad_layernorm},
    {"GELU (erf form) vs finite differences and Phi", test_grad_gelu},
    {"token + position embedding vs finite differences, repeated tokens", test_grad_embedding},
    {"causal attention softmax vs finite differences", test_grad_attn_softmax},
    {"dropout: gradient, rate, scale, one mask per seed", test_dropout},
    {"language model cross-entropy by hand", test_xent_tokens},
    {"the softmax's exponential: within 1.5 ulp of exp on [-87, 0]", test_expf_neg},
    {"cross-entropy over 1,003 words vs double sums, kept, not kept, in place",
     test_xent_tokens_wide},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo gpt_tests[] = {
    {"gpt:L,D,H,T (tied, pre-norm, GELU) vs finite differences", test_grad_gpt},
    {"gpt:wlm (untied, post-norm, ReLU) vs finite differences", test_grad_wlm},
    {"parameter counts = the reference definitions (wlm 13,828,478 on WikiText-2)",
     test_param_counts},
    {"model_spec_parse gpt forms and errors", test_spec_parse},
    {"dropout streams: deterministic, per worker; the loss falls", test_determinism_and_learning},
    {"gpt_dropout_mask: the masks the training pass applied", test_dropout_mask_report},
    CU_TEST_INFO_NULL,
};

int main(void) {
    CU_SuiteInfo suites[] = {
        {"transformer_ops", NULL, NULL, NULL, NULL, op_tests},
        {"gpt_models", NULL, NULL, NULL, NULL, gpt_tests},
        CU_SUITE_INFO_NULL,
    };
    return ss_test_main(suites);
}
