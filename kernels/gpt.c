/* Decoder-only Transformer language models (gpt.h): parameters as views of one flat vector,
 * activations kept per block for the backward pass, every computation a device op. Shapes: N = B
 * T rows of D (the residual stream), F the MLP width, hd = D / H. Attention runs head by head as
 * strided batched GEMMs over the batch: head h of sample b reads columns h hd.. of the rows of
 * qkv (N, 3D) and writes the scores (B, H, T, T). */
#include "kernels/gpt.h"

#include "common/rng.h"
#include "common/status.h"
#include "kernels/device_impl.h"
#include "kernels/dropout_hash.h"
#include "kernels/gpt_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- views ---- */

static void add_view(gpt *g, const char *name, size_t count) {
    SS_ASSERT(g->n_views < GPT_MAX_VIEWS);
    model_view *v = &g->views[g->n_views++];
    snprintf(v->name, sizeof v->name, "%s", name);
    v->offset = g->n_params;
    v->count = count;
    g->n_params += count;
}

/* Lays out the views (pass 0: offsets only) or binds the pointers (pass 1). */
static void layout(gpt *g, int bind) {
    const model_spec *s = &g->spec;
    const size_t d = (size_t)s->gpt_dim, f = (size_t)s->gpt_ffn, v = (size_t)s->classes;
    char name[40];
    g->n_views = 0;
    g->n_params = 0;
#define VIEW(field, nm, count)                                                                     \
    do {                                                                                           \
        size_t off_ = g->n_params;                                                                 \
        add_view(g, nm, count);                                                                    \
        if (bind) field = (gpt_tensor){g->params + off_, g->grads + off_, off_, count};            \
    } while (0)
    VIEW(g->wte, s->gpt_wlm ? "encoder.weight" : "wte.weight", v * d);
    if (!s->gpt_wlm) VIEW(g->wpe, "wpe.weight", (size_t)s->gpt_seq * d);
    for (int l = 0; l < s->gpt_layers; l++) {
        gpt_block *b = &g->blocks[l];
#define BVIEW(field, suffix, count)                                                                \
    do {                                                                                           \
        snprintf(name, sizeof name, "h%d.%s", l, suffix);                                          \
        VIEW(b->field, name, count);                                                               \
    } while (0)
        BVIEW(in_w, "attn.in_proj.weight", 3 * d * d);
        BVIEW(in_b, "attn.in_proj.bias", 3 * d);
        BVIEW(out_w, "attn.out_proj.weight", d * d);
        BVIEW(out_b, "attn.out_proj.bias", d);
        BVIEW(fc_w, "mlp.fc.weight", f * d);
        BVIEW(fc_b, "mlp.fc.bias", f);
        BVIEW(proj_w, "mlp.proj.weight", d * f);
        BVIEW(proj_b, "mlp.proj.bias", d);
        BVIEW(ln1_w, "ln1.weight", d);
        BVIEW(ln1_b, "ln1.bias", d);
        BVIEW(ln2_w, "ln2.weight", d);
        BVIEW(ln2_b, "ln2.bias", d);
#undef BVIEW
    }
    if (!s->gpt_wlm) {
        VIEW(g->lnf_w, "lnf.weight", d);
        VIEW(g->lnf_b, "lnf.bias", d);
    } else {
        VIEW(g->head_w, "decoder.weight", v * d);
        VIEW(g->head_b, "decoder.bias", v);
    }
#undef VIEW
}

int gpt_spec_check(const model_spec *s) {
    if (s->gpt_layers < 1 || s->gpt_layers > GPT_MAX_LAYERS || s->gpt_dim < 1 || s->gpt_heads < 1 ||
        s->gpt_dim % s->gpt_heads || s->gpt_seq < 1 || s->gpt_seq > 4096 || s->gpt_dim > 16384 ||
        s->gpt_ffn < 1 || s->gpt_ffn > 65536 || s->gpt_dropout < 0.0f || s->gpt_dropout >= 1.0f)
        return ss_error_set(SS_EUSAGE,
                            "gpt: L %d (1 to %d), D %d divisible by H %d, T %d (1 to 4096), "
                            "dropout %g (in [0, 1))",
                            s->gpt_layers, GPT_MAX_LAYERS, s->gpt_dim, s->gpt_heads, s->gpt_seq,
                            (double)s->gpt_dropout);
    if (s->classes < 2 || s->classes > (1 << 24) || s->in_w != s->gpt_seq + 1)
        return ss_error_set(SS_EUSAGE,
                            "gpt: a language model needs a text data set (vocabulary %d, samples "
                            "of %d tokens; T + 1 = %d expected)",
                            s->classes, s->in_w, s->gpt_seq + 1);
    return SS_OK;
}

size_t gpt_spec_params(const model_spec *spec) {
    gpt g = {.spec = *spec};
    g.views = ss_calloc(GPT_MAX_VIEWS, sizeof *g.views);
    layout(&g, 0);
    free(g.views);
    return g.n_params;
}

/* ---- initialization ---- */

static void fill_uniform(rng *r, float *x, size_t n, double bound) {
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((2.0 * rng_uniform(r) - 1.0) * bound);
}

static void fill_normal(rng *r, float *x, size_t n, double std) {
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(rng_normal(r) * std);
}

static void fill_const(float *x, size_t n, float v) {
    for (size_t i = 0; i < n; i++)
        x[i] = v;
}

/* GPT-2: weights N(0, 0.02), the residual projections N(0, 0.02 / sqrt(2 L)), biases 0. The
 * word_language_model: embedding and decoder U(-0.1, 0.1); PyTorch's defaults for the rest
 * (in_proj Xavier-uniform, Linear U(-1/sqrt(fan_in), 1/sqrt(fan_in)) weights and biases,
 * attention biases 0). Layer norms 1 and 0. Drawn in view order. */
static void init_params(gpt *g, float *h, uint64_t seed) {
    const model_spec *s = &g->spec;
    const double d = s->gpt_dim, f = s->gpt_ffn;
    rng r;
    rng_seed(&r, seed, RNG_STREAM_INIT);
#define AT(t) (h + (t).offset)
    if (s->gpt_wlm)
        fill_uniform(&r, AT(g->wte), g->wte.count, 0.1);
    else
        fill_normal(&r, AT(g->wte), g->wte.count, 0.02);
    if (!s->gpt_wlm) fill_normal(&r, AT(g->wpe), g->wpe.count, 0.02);
    for (int l = 0; l < s->gpt_layers; l++) {
        gpt_block *b = &g->blocks[l];
        if (s->gpt_wlm) {
            fill_uniform(&r, AT(b->in_w), b->in_w.count, sqrt(6.0 / (d + 3 * d)));
            fill_uniform(&r, AT(b->out_w), b->out_w.count, 1.0 / sqrt(d));
            fill_uniform(&r, AT(b->fc_w), b->fc_w.count, 1.0 / sqrt(d));
            fill_uniform(&r, AT(b->fc_b), b->fc_b.count, 1.0 / sqrt(d));
            fill_uniform(&r, AT(b->proj_w), b->proj_w.count, 1.0 / sqrt(f));
            fill_uniform(&r, AT(b->proj_b), b->proj_b.count, 1.0 / sqrt(f));
        } else {
            const double res = 0.02 / sqrt(2.0 * s->gpt_layers);
            fill_normal(&r, AT(b->in_w), b->in_w.count, 0.02);
            fill_normal(&r, AT(b->out_w), b->out_w.count, res);
            fill_normal(&r, AT(b->fc_w), b->fc_w.count, 0.02);
            fill_normal(&r, AT(b->proj_w), b->proj_w.count, res);
        }
        fill_const(AT(b->ln1_w), b->ln1_w.count, 1.0f);
        fill_const(AT(b->ln2_w), b->ln2_w.count, 1.0f);
    }
    if (s->gpt_wlm)
        fill_uniform(&r, AT(g->head_w), g->head_w.count, 0.1);
    else
        fill_const(AT(g->lnf_w), g->lnf_w.count, 1.0f);
#undef AT
}

/* The sinusoidal positions of the word_language_model (Vaswani et al. 2017): pe[t, 2i] =
 * sin(t / 10000^(2i/D)), pe[t, 2i+1] = cos(the same). */
static void sinusoids(float *pe, int t_len, int d) {
    for (int t = 0; t < t_len; t++)
        for (int i = 0; i < d; i += 2) {
            double div = exp(-(double)i * log(10000.0) / d);
            pe[(size_t)t * d + i] = (float)sin(t * div);
            if (i + 1 < d) pe[(size_t)t * d + i + 1] = (float)cos(t * div);
        }
}

/* ---- memory ---- */

static float *alloc_counted(gpt *g, size_t count) {
    g->device_bytes += 4.0 * (double)(count ? count : 1);
    return device_alloc(g->dev, count);
}

static void alloc_acts(gpt *g) {
    const model_spec *s = &g->spec;
    const size_t n = (size_t)g->max_batch * s->gpt_seq, d = (size_t)s->gpt_dim;
    const size_t f = (size_t)s->gpt_ffn, att = n * s->gpt_heads * s->gpt_seq;
    const int drop = s->gpt_dropout > 0.0f;
    g->tokens = alloc_counted(g, (size_t)g->max_batch * (s->gpt_seq + 1));
    g->emb = alloc_counted(g, n * d);
    for (int l = 0; l < s->gpt_layers; l++) {
        gpt_acts *a = &g->acts[l];
        a->ln1 = alloc_counted(g, n * d);
        a->ln1_stats = alloc_counted(g, 2 * n);
        a->qkv = alloc_counted(g, n * 3 * d);
        a->att = alloc_counted(g, att);
        a->attd = drop ? alloc_counted(g, att) : a->att;
        a->o = alloc_counted(g, n * d);
        a->res1 = alloc_counted(g, n * d);
        a->ln2 = alloc_counted(g, n * d);
        a->ln2_stats = alloc_counted(g, 2 * n);
        a->h = alloc_counted(g, n * f);
        a->act = alloc_counted(g, n * f);
        a->actd = drop && s->gpt_wlm ? alloc_counted(g, n * f) : a->act;
        a->res2 = alloc_counted(g, n * d);
    }
    g->lnf = alloc_counted(g, n * d);
    g->lnf_stats = alloc_counted(g, 2 * n);
    g->logits = alloc_counted(g, n * (size_t)s->classes);
    for (int i = 0; i < 5; i++)
        g->sd[i] = alloc_counted(g, n * d);
    g->sbig = alloc_counted(g, n * (f > 3 * d ? f : 3 * d));
    g->sqkv = alloc_counted(g, n * 3 * d);
    g->satt = alloc_counted(g, att);
    if (s->gpt_wlm) {
        float *pe = ss_malloc((size_t)s->gpt_seq * d * sizeof(float));
        sinusoids(pe, s->gpt_seq, (int)d);
        g->pos_table = alloc_counted(g, (size_t)s->gpt_seq * d);
        device_upload(g->dev, g->pos_table, pe, (size_t)s->gpt_seq * d);
        free(pe);
    }
}

int gpt_create(device *dev, const model_spec *spec, uint64_t seed, int max_batch, gpt **out) {
    *out = NULL;
    int rc = gpt_spec_check(spec);
    if (rc != SS_OK) return rc;
    gpt *g = ss_calloc(1, sizeof *g);
    g->dev = dev;
    g->spec = *spec;
    g->max_batch = max_batch;
    g->views = ss_calloc(GPT_MAX_VIEWS, sizeof *g->views);
    g->blocks = ss_calloc((size_t)spec->gpt_layers, sizeof *g->blocks);
    g->acts = ss_calloc((size_t)spec->gpt_layers, sizeof *g->acts);
    layout(g, 0);
    g->params = alloc_counted(g, g->n_params);
    g->grads = alloc_counted(g, g->n_params);
    layout(g, 1);
    float *host = ss_calloc(g->n_params, sizeof(float));
    init_params(g, host, seed);
    device_upload(dev, g->params, host, g->n_params);
    free(host);
    alloc_acts(g);
    g->drop_seed = dropout_mix64(seed ^ 0x6770742d64726f70ull);
    gpt_costs_build(g);
    *out = g;
    return SS_OK;
}

void gpt_destroy(gpt *g) {
    if (!g) return;
    device *dev = g->dev;
    for (int l = 0; l < g->spec.gpt_layers; l++) {
        gpt_acts *a = &g->acts[l];
        if (a->attd != a->att) device_free(dev, a->attd);
        if (a->actd != a->act) device_free(dev, a->actd);
        float *bufs[] = {a->ln1, a->ln1_stats, a->qkv, a->att, a->o,   a->res1,
                         a->ln2, a->ln2_stats, a->h,   a->act, a->res2};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
            device_free(dev, bufs[i]);
    }
    float *bufs[] = {g->params, g->grads, g->tokens, g->emb,      g->lnf,   g->lnf_stats,
                     g->logits, g->sbig,  g->sqkv,   g->satt,     g->sd[0], g->sd[1],
                     g->sd[2],  g->sd[3], g->sd[4],  g->pos_table};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        device_free(dev, bufs[i]);
    free(g->views);
    free(g->blocks);
    free(g->acts);
    free(g->costs);
    free(g);
}

float *gpt_params(gpt *g) {
    return g->params;
}

float *gpt_grads(gpt *g) {
    return g->grads;
}

size_t gpt_param_count(const gpt *g) {
    return g->n_params;
}

int gpt_view_count(const gpt *g) {
    return g->n_views;
}

const model_view *gpt_view_at(const gpt *g, int i) {
    SS_ASSERT(i >= 0 && i < g->n_views);
    return &g->views[i];
}

double gpt_device_bytes(const gpt *g) {
    return g->device_bytes;
}

void gpt_set_dropout_stream(gpt *g, uint64_t stream) {
    g->drop_seed = dropout_mix64(g->drop_seed ^ dropout_mix64(stream + 1));
}
