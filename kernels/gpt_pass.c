/* The passes of a gpt model (gpt.h): forward, backward, evaluation, and the cost table the GPU
 * compute model and the FLOP counts read. Dropout sites: 0 the embedding; for block l, 1 + 4 l
 * + 0 the attention probabilities, + 1 the attention's residual branch, + 2 the MLP's hidden
 * activations (wlm), + 3 the MLP's residual branch. */
#include "kernels/gpt_internal.h"

#include "common/status.h"
#include "kernels/device_impl.h"
#include "kernels/layer_clock.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The cost layers' indices (gpt_costs_build): 0 the embedding, block l's eight from 1 + 8 l
 * (SLOT_* + 8 l), then the final norm (gpt), the head and the loss. */
enum { SLOT_NORM1 = 1, SLOT_QKV, SLOT_ATTN, SLOT_PROJ, SLOT_NORM2, SLOT_FC1, SLOT_ACT, SLOT_FC2 };

/* The layer clock's lap closing cost layer `slot` of a training pass's forward pass */
static void lap_fwd(gpt *g, int slot) {
    if (g->clock && g->training) layer_clock_lap(g->clock, g->clock->fwd, slot);
}

/* ... and of its backward pass */
static void lap_bwd(gpt *g, int slot) {
    if (g->clock) layer_clock_lap(g->clock, g->clock->bwd, slot);
}

void gpt_set_layer_clock(gpt *g, struct layer_clock *clock) {
    g->clock = clock;
}

static int dropping(const gpt *g) {
    return g->training && g->spec.gpt_dropout > 0.0f;
}

static void drop(gpt *g, int site, size_t n, const float *x, float *y) {
    if (dropping(g))
        g->dev->ops->dropout(g->dev, n, g->spec.gpt_dropout, gpt_site_seed(g, site), x, y);
    else
        device_copy(g->dev, y, x, n);
}

/* y (n, out) = x (n, in) W^T + b */
static void dense(device *dev, int n, int in, int out, const float *x, const gpt_tensor *w,
                  const gpt_tensor *b, float *y) {
    dev->ops->gemm(dev, 0, 1, n, out, in, 1.0f, x, in, w->w, in, 0.0f, y, out);
    if (b) dev->ops->bias_add(dev, n, out, b->w, y);
}

/* dW, db (overwritten) and, unless dx is NULL, dx (n, in) */
static void dense_bwd(device *dev, int n, int in, int out, const float *x, const float *dy,
                      const gpt_tensor *w, const gpt_tensor *b, float *dx) {
    dev->ops->gemm(dev, 1, 0, out, in, n, 1.0f, dy, out, x, in, 0.0f, w->g, in);
    if (b) dev->ops->bias_grad(dev, n, out, dy, 0.0f, b->g);
    if (dx) dev->ops->gemm(dev, 0, 0, n, in, out, 1.0f, dy, out, w->w, in, 0.0f, dx, in);
}

static void layer_norm(gpt *g, int n, const float *x, const gpt_tensor *w, const gpt_tensor *b,
                       float *stats, float *y) {
    const int d = g->spec.gpt_dim;
    g->dev->ops->ln_fwd(g->dev, n, d, x, w->w, b->w, GPT_LN_EPS, stats, stats + n, y);
}

static void layer_norm_bwd(gpt *g, int n, const float *x, const float *dy, const gpt_tensor *w,
                           const gpt_tensor *b, const float *stats, float *dx) {
    const int d = g->spec.gpt_dim;
    g->dev->ops->ln_bwd(g->dev, n, d, x, dy, w->w, stats, stats + n, w->g, b->g, dx);
}

/* ---- attention ---- */

typedef struct attn_dims {
    int t, d, h, hd;
    long long row3, hs; /* a sample's stride in qkv (T 3D) and in the scores (H T T) */
    float scale;
} attn_dims;

static attn_dims dims_of(const gpt *g) {
    const model_spec *s = &g->spec;
    attn_dims a = {s->gpt_seq, s->gpt_dim, s->gpt_heads, s->gpt_dim / s->gpt_heads, 0, 0, 0};
    a.row3 = (long long)a.t * 3 * a.d;
    a.hs = (long long)a.h * a.t * a.t;
    a.scale = (float)(1.0 / sqrt((double)a.hd));
    return a;
}

static void attn_fwd(gpt *g, int l, const float *in, int batch) {
    device *dev = g->dev;
    const gpt_block *b = &g->blocks[l];
    gpt_acts *a = &g->acts[l];
    const attn_dims k = dims_of(g);
    const int n = batch * k.t, tt = k.t * k.t;
    dense(dev, n, k.d, 3 * k.d, in, &b->in_w, &b->in_b, a->qkv);
    lap_fwd(g, SLOT_QKV + 8 * l);
    for (int h = 0; h < k.h; h++) /* scores: scale Q K^T */
        dev->ops->gemm_batched(dev, 0, 1, k.t, k.t, k.hd, k.scale, a->qkv + h * k.hd, 3 * k.d,
                               k.row3, a->qkv + k.d + h * k.hd, 3 * k.d, k.row3, 0.0f,
                               a->att + h * tt, k.t, k.hs, batch);
    dev->ops->attn_softmax_fwd(dev, batch * k.h * k.t, k.t, a->att, a->att);
    const float *p = a->att;
    if (dropping(g)) {
        drop(g, 1 + 4 * l, (size_t)batch * k.hs, a->att, a->attd);
        p = a->attd;
    }
    for (int h = 0; h < k.h; h++) /* O = P V */
        dev->ops->gemm_batched(dev, 0, 0, k.t, k.hd, k.t, 1.0f, p + h * tt, k.t, k.hs,
                               a->qkv + 2 * k.d + h * k.hd, 3 * k.d, k.row3, 0.0f, a->o + h * k.hd,
                               k.d, (long long)k.t * k.d, batch);
    lap_fwd(g, SLOT_ATTN + 8 * l);
}

/* The attention branch's backward pass from d(its output before dropout and residual) dres:
 * parameter gradients, and d(its input) into din (its lap the caller's). */
static void attn_bwd(gpt *g, int l, const float *dres, const float *in, float *din, int batch) {
    device *dev = g->dev;
    const gpt_block *b = &g->blocks[l];
    const gpt_acts *a = &g->acts[l];
    const attn_dims k = dims_of(g);
    const int n = batch * k.t, tt = k.t * k.t;
    const long long rowd = (long long)k.t * k.d;
    float *dz = g->sd[2], *dout = g->sd[3], *dqkv = g->sqkv, *datt = g->satt;
    drop(g, 2 + 4 * l, (size_t)n * k.d, dres, dz);
    dense_bwd(dev, n, k.d, k.d, a->o, dz, &b->out_w, &b->out_b, dout);
    lap_bwd(g, SLOT_PROJ + 8 * l);
    const float *p = dropping(g) ? a->attd : a->att;
    for (int h = 0; h < k.h; h++) {
        /* dP = dO V^T; dV = P^T dO */
        dev->ops->gemm_batched(dev, 0, 1, k.t, k.t, k.hd, 1.0f, dout + h * k.hd, k.d, rowd,
                               a->qkv + 2 * k.d + h * k.hd, 3 * k.d, k.row3, 0.0f, datt + h * tt,
                               k.t, k.hs, batch);
        dev->ops->gemm_batched(dev, 1, 0, k.t, k.hd, k.t, 1.0f, p + h * tt, k.t, k.hs,
                               dout + h * k.hd, k.d, rowd, 0.0f, dqkv + 2 * k.d + h * k.hd, 3 * k.d,
                               k.row3, batch);
    }
    if (dropping(g)) drop(g, 1 + 4 * l, (size_t)batch * k.hs, datt, datt);
    dev->ops->attn_softmax_bwd(dev, batch * k.h * k.t, k.t, a->att, datt, datt);
    for (int h = 0; h < k.h; h++) {
        /* dQ = scale dS K; dK = scale dS^T Q */
        dev->ops->gemm_batched(dev, 0, 0, k.t, k.hd, k.t, k.scale, datt + h * tt, k.t, k.hs,
                               a->qkv + k.d + h * k.hd, 3 * k.d, k.row3, 0.0f, dqkv + h * k.hd,
                               3 * k.d, k.row3, batch);
        dev->ops->gemm_batched(dev, 1, 0, k.t, k.hd, k.t, k.scale, datt + h * tt, k.t, k.hs,
                               a->qkv + h * k.hd, 3 * k.d, k.row3, 0.0f, dqkv + k.d + h * k.hd,
                               3 * k.d, k.row3, batch);
    }
    lap_bwd(g, SLOT_ATTN + 8 * l);
    dense_bwd(dev, n, k.d, 3 * k.d, in, dqkv, &b->in_w, &b->in_b, din);
}

/* ---- MLP ---- */

static const float *mlp_hidden(const gpt *g, const gpt_acts *a) {
    return dropping(g) && g->spec.gpt_wlm ? a->actd : a->act;
}

static void mlp_fwd(gpt *g, int l, const float *in, float *out, int batch) {
    device *dev = g->dev;
    const gpt_block *b = &g->blocks[l];
    gpt_acts *a = &g->acts[l];
    const int n = batch * g->spec.gpt_seq, d = g->spec.gpt_dim, f = g->spec.gpt_ffn;
    const size_t nf = (size_t)n * f;
    dense(dev, n, d, f, in, &b->fc_w, &b->fc_b, a->h);
    lap_fwd(g, SLOT_FC1 + 8 * l);
    if (g->spec.gpt_wlm)
        dev->ops->relu_fwd(dev, nf, a->h, a->act);
    else
        dev->ops->gelu_fwd(dev, nf, a->h, a->act);
    if (g->spec.gpt_wlm && dropping(g)) drop(g, 3 + 4 * l, nf, a->act, a->actd);
    lap_fwd(g, SLOT_ACT + 8 * l);
    dense(dev, n, f, d, mlp_hidden(g, a), &b->proj_w, &b->proj_b, out);
}

/* (fc1's lap the caller's) */
static void mlp_bwd(gpt *g, int l, const float *dres, const float *in, float *din, int batch) {
    device *dev = g->dev;
    const gpt_block *b = &g->blocks[l];
    const gpt_acts *a = &g->acts[l];
    const int n = batch * g->spec.gpt_seq, d = g->spec.gpt_dim, f = g->spec.gpt_ffn;
    const size_t nf = (size_t)n * f;
    float *dm = g->sd[2], *dh = g->sbig;
    drop(g, 4 + 4 * l, (size_t)n * d, dres, dm);
    dense_bwd(dev, n, f, d, mlp_hidden(g, a), dm, &b->proj_w, &b->proj_b, dh);
    lap_bwd(g, SLOT_FC2 + 8 * l);
    if (g->spec.gpt_wlm && dropping(g)) drop(g, 3 + 4 * l, nf, dh, dh);
    if (g->spec.gpt_wlm)
        dev->ops->relu_bwd(dev, nf, a->act, dh, dh);
    else
        dev->ops->gelu_bwd(dev, nf, a->h, dh, dh);
    lap_bwd(g, SLOT_ACT + 8 * l);
    dense_bwd(dev, n, d, f, in, dh, &b->fc_w, &b->fc_b, din);
}

/* ---- blocks ---- */

/* base + drop(z) into out (z is scratch) */
static void residual(gpt *g, int site, size_t n, const float *base, float *z, float *out) {
    drop(g, site, n, z, z);
    device_copy(g->dev, out, base, n);
    device_axpy(g->dev, n, 1.0f, z, out);
}

static const float *block_fwd(gpt *g, int l, const float *x, int batch) {
    const gpt_block *b = &g->blocks[l];
    gpt_acts *a = &g->acts[l];
    const int n = batch * g->spec.gpt_seq, pre = !g->spec.gpt_wlm;
    const size_t nd = (size_t)n * g->spec.gpt_dim;
    float *z = g->sd[0];
    if (pre) layer_norm(g, n, x, &b->ln1_w, &b->ln1_b, a->ln1_stats, a->ln1);
    if (pre) lap_fwd(g, SLOT_NORM1 + 8 * l);
    attn_fwd(g, l, pre ? a->ln1 : x, batch);
    dense(g->dev, n, g->spec.gpt_dim, g->spec.gpt_dim, a->o, &b->out_w, &b->out_b, z);
    residual(g, 2 + 4 * l, nd, x, z, a->res1);
    lap_fwd(g, SLOT_PROJ + 8 * l);
    const float *mid = a->res1;
    if (!pre) {
        layer_norm(g, n, a->res1, &b->ln1_w, &b->ln1_b, a->ln1_stats, a->ln1);
        lap_fwd(g, SLOT_NORM1 + 8 * l);
        mid = a->ln1;
    } else {
        layer_norm(g, n, a->res1, &b->ln2_w, &b->ln2_b, a->ln2_stats, a->ln2);
        lap_fwd(g, SLOT_NORM2 + 8 * l);
    }
    mlp_fwd(g, l, pre ? a->ln2 : mid, z, batch);
    residual(g, 4 + 4 * l, nd, mid, z, a->res2);
    lap_fwd(g, SLOT_FC2 + 8 * l);
    if (pre) return a->res2;
    layer_norm(g, n, a->res2, &b->ln2_w, &b->ln2_b, a->ln2_stats, a->ln2);
    lap_fwd(g, SLOT_NORM2 + 8 * l);
    return a->ln2;
}

/* ds: d(block output) in, d(block input) out */
static void block_bwd(gpt *g, int l, float *ds, int batch) {
    const gpt_block *b = &g->blocks[l];
    const gpt_acts *a = &g->acts[l];
    const int n = batch * g->spec.gpt_seq;
    const size_t nd = (size_t)n * g->spec.gpt_dim;
    const float *x = g->block_in[l];
    float *s0 = g->sd[0], *s1 = g->sd[1];
    const int o = 8 * l;
    if (!g->spec.gpt_wlm) { /* ds = d res2 */
        mlp_bwd(g, l, ds, a->ln2, s0, batch);
        lap_bwd(g, SLOT_FC1 + o);
        layer_norm_bwd(g, n, a->res1, s0, &b->ln2_w, &b->ln2_b, a->ln2_stats, s1);
        device_axpy(g->dev, nd, 1.0f, s1, ds); /* d res1 */
        lap_bwd(g, SLOT_NORM2 + o);
        attn_bwd(g, l, ds, a->ln1, s0, batch);
        lap_bwd(g, SLOT_QKV + o);
        layer_norm_bwd(g, n, x, s0, &b->ln1_w, &b->ln1_b, a->ln1_stats, s1);
        device_axpy(g->dev, nd, 1.0f, s1, ds);
        lap_bwd(g, SLOT_NORM1 + o);
        return;
    }
    /* post-norm: ds = d ln2 */
    layer_norm_bwd(g, n, a->res2, ds, &b->ln2_w, &b->ln2_b, a->ln2_stats, s0); /* d res2 */
    lap_bwd(g, SLOT_NORM2 + o);
    mlp_bwd(g, l, s0, a->ln1, s1, batch);
    device_axpy(g->dev, nd, 1.0f, s0, s1); /* d ln1 */
    lap_bwd(g, SLOT_FC1 + o);
    layer_norm_bwd(g, n, a->res1, s1, &b->ln1_w, &b->ln1_b, a->ln1_stats, ds); /* d res1 */
    lap_bwd(g, SLOT_NORM1 + o);
    attn_bwd(g, l, ds, x, s0, batch);
    device_axpy(g->dev, nd, 1.0f, s0, ds);
    lap_bwd(g, SLOT_QKV + o);
}

/* ---- the model ---- */

static float embed_scale(const gpt *g) {
    return g->spec.gpt_wlm ? (float)sqrt((double)g->spec.gpt_dim) : 1.0f;
}

static const gpt_tensor *head_of(const gpt *g) {
    return g->spec.gpt_wlm ? &g->head_w : &g->wte;
}

static void forward(gpt *g, int batch) {
    device *dev = g->dev;
    const model_spec *s = &g->spec;
    const int t = s->gpt_seq, d = s->gpt_dim, n = batch * t;
    lap_fwd(g, -1);
    dev->ops->embed_fwd(dev, batch, t, d, g->tokens, t + 1, g->wte.w, embed_scale(g),
                        s->gpt_wlm ? g->pos_table : g->wpe.w, g->emb);
    drop(g, 0, (size_t)n * d, g->emb, g->emb);
    lap_fwd(g, 0);
    const float *x = g->emb;
    for (int l = 0; l < s->gpt_layers; l++) {
        g->block_in[l] = x;
        x = block_fwd(g, l, x, batch);
    }
    if (!s->gpt_wlm) {
        layer_norm(g, n, x, &g->lnf_w, &g->lnf_b, g->lnf_stats, g->lnf);
        lap_fwd(g, g->n_costs - 3);
        g->block_in[s->gpt_layers] = x;
        x = g->lnf;
    }
    g->head_in = x;
    dense(dev, n, d, s->classes, x, head_of(g), s->gpt_wlm ? &g->head_b : NULL, g->logits);
    lap_fwd(g, g->n_costs - 2);
}

static void upload_tokens(gpt *g, const float *x, int batch) {
    device_upload(g->dev, g->tokens, x, (size_t)batch * (g->spec.gpt_seq + 1));
}

/* the cost-layer indices: 0 embedding, 1 + 8 l .. 8 + 8 l block l, then lnf (gpt), head, loss */
static void hooks(void (*grad_ready)(void *, int), void *ctx, int from, int to) {
    for (int i = from; grad_ready && i >= to; i--)
        grad_ready(ctx, i);
}

double gpt_forward_backward(gpt *g, const float *x, int batch,
                            void (*grad_ready)(void *ctx, int layer), void *ctx) {
    SS_ASSERT(batch >= 1 && batch <= g->max_batch);
    device *dev = g->dev;
    const model_spec *s = &g->spec;
    const int t = s->gpt_seq, d = s->gpt_dim, n = batch * t, v = s->classes;
    g->training = 1;
    g->pass++;
    upload_tokens(g, x, batch);
    forward(g, batch);
    /* the loss's forward and backward both count in its backward slot, as in model.c */
    lap_bwd(g, -1);
    double loss = dev->ops->xent_tokens(dev, n, v, g->logits, g->tokens, t + 1, t, g->logits, NULL);
    int top = g->n_costs - 1;
    lap_bwd(g, top);
    hooks(grad_ready, ctx, top, top);
    float *ds = g->sd[4];
    dense_bwd(dev, n, d, v, g->head_in, g->logits, head_of(g), s->gpt_wlm ? &g->head_b : NULL, ds);
    lap_bwd(g, top - 1);
    hooks(grad_ready, ctx, top - 1, top - 1);
    top--;
    if (!s->gpt_wlm) {
        layer_norm_bwd(g, n, g->block_in[s->gpt_layers], ds, &g->lnf_w, &g->lnf_b, g->lnf_stats,
                       g->sd[0]);
        device_copy(dev, ds, g->sd[0], (size_t)n * d);
        lap_bwd(g, top - 1);
        hooks(grad_ready, ctx, top - 1, top - 1);
    }
    for (int l = s->gpt_layers - 1; l >= 0; l--) {
        block_bwd(g, l, ds, batch);
        hooks(grad_ready, ctx, 8 + 8 * l, 1 + 8 * l);
    }
    drop(g, 0, (size_t)n * d, ds, ds);
    dev->ops->embed_bwd(dev, batch, t, d, g->tokens, t + 1, ds, embed_scale(g), v, !s->gpt_wlm,
                        g->wte.g, s->gpt_wlm ? NULL : g->wpe.g);
    lap_bwd(g, 0);
    if (g->clock) layer_clock_resolve(g->clock);
    hooks(grad_ready, ctx, 0, 0);
    return loss / n;
}

void gpt_dropout_mask(gpt *g, int site, size_t n, float *host) {
    for (size_t i = 0; i < n; i++)
        host[i] = 1.0f;
    if (!n || !g->pass || g->spec.gpt_dropout <= 0.0f) return;
    float *d = device_alloc(g->dev, n);
    device_upload(g->dev, d, host, n);
    g->dev->ops->dropout(g->dev, n, g->spec.gpt_dropout, gpt_site_seed(g, site), d, d);
    device_download(g->dev, host, d, n);
    device_free(g->dev, d);
}

void gpt_evaluate(gpt *g, const float *x, size_t n, double *mean_loss, size_t *correct_tokens) {
    const int t = g->spec.gpt_seq;
    double sum = 0.0;
    size_t right = 0;
    g->training = 0;
    for (size_t s0 = 0; s0 < n; s0 += (size_t)g->max_batch) {
        int nb = (int)(n - s0 < (size_t)g->max_batch ? n - s0 : (size_t)g->max_batch);
        int ok = 0;
        upload_tokens(g, x + s0 * (size_t)(t + 1), nb);
        forward(g, nb);
        sum += g->dev->ops->xent_tokens(g->dev, nb * t, g->spec.classes, g->logits, g->tokens,
                                        t + 1, t, NULL, &ok);
        right += (size_t)ok;
    }
    if (mean_loss) *mean_loss = n ? sum / ((double)n * t) : 0.0;
    if (correct_tokens) *correct_tokens = right;
}

/* ---- costs (per sample of T tokens; a multiply-add 2 FLOPs, elementwise 1 per element, layer
 * norm 7 forward and 12 backward per element, GELU 8 and 10, softmax 5 and 4 per score) ---- */

static model_layer_cost *cost(gpt *g) {
    model_layer_cost *c = &g->costs[g->n_costs++];
    memset(c, 0, sizeof *c);
    c->kernels = 1;
    return c;
}

static void cost_dense(gpt *g, double in, double out, int has_bias, double extra) {
    const double t = g->spec.gpt_seq;
    model_layer_cost *c = cost(g);
    c->matmul = 1;
    c->gemm_n = out, c->gemm_k = in;
    c->fwd_flops = 2 * t * in * out + (has_bias ? t * out : 0) + extra;
    c->bwd_flops = 4 * t * in * out + (has_bias ? t * out : 0) + extra;
    c->fwd_bytes = 4 * t * (in + out);
    c->bwd_bytes = 4 * t * (2 * in + out);
    c->param_bytes = 4 * (in * out + (has_bias ? out : 0));
    c->kernels = has_bias ? 3 : 2;
}

static void cost_elementwise(gpt *g, double elems, double fwd, double bwd, int norm) {
    model_layer_cost *c = cost(g);
    c->fwd_flops = fwd * elems, c->bwd_flops = bwd * elems;
    c->fwd_bytes = 8 * elems, c->bwd_bytes = 12 * elems;
    c->norm = norm;
    if (norm) c->param_bytes = 8 * g->spec.gpt_dim;
    c->kernels = norm ? 2 : 1;
}

/* Names the layer costed last: "h0.attn" for block l >= 0, else the word alone. */
static void name_last(gpt *g, int l, const char *word) {
    model_layer_cost *c = &g->costs[g->n_costs - 1];
    if (l >= 0)
        snprintf(c->name, sizeof c->name, "h%d.%s", l, word);
    else
        snprintf(c->name, sizeof c->name, "%s", word);
}

void gpt_costs_build(gpt *g) {
    const model_spec *s = &g->spec;
    const double t = s->gpt_seq, d = s->gpt_dim, f = s->gpt_ffn, v = s->classes, h = s->gpt_heads;
    const double td = t * d, drop = s->gpt_dropout > 0.0f ? 1.0 : 0.0;
    g->costs = ss_calloc((size_t)(4 + 8 * s->gpt_layers), sizeof *g->costs);
    g->n_costs = 0;
    model_layer_cost *e = cost(g); /* embedding: gather, scale and/or position add, dropout */
    e->fwd_flops = e->bwd_flops = td * ((s->gpt_wlm ? 2 : 1) + drop);
    e->fwd_bytes = 4 * (2 * td + t), e->bwd_bytes = 4 * (2 * td + t);
    e->param_bytes = 4 * (v * d + (s->gpt_wlm ? 0 : td));
    name_last(g, -1, "embed");
    for (int l = 0; l < s->gpt_layers; l++) {
        cost_elementwise(g, td, 7, 12, 1);
        name_last(g, l, "norm1");
        cost_dense(g, d, 3 * d, 1, 0);
        name_last(g, l, "qkv");
        model_layer_cost *a = cost(g); /* two GEMMs each way per head, softmax, dropout */
        a->matmul = 1;
        a->gemm_n = t, a->gemm_k = d / h;
        a->fwd_flops = 4 * t * td + (5 + drop) * h * t * t;
        a->bwd_flops = 8 * t * td + (4 + drop) * h * t * t;
        a->fwd_bytes = 4 * (3 * td + 2 * h * t * t + td);
        a->bwd_bytes = 4 * (2 * (3 * td + 2 * h * t * t) + td);
        a->kernels = 3 * (int)h + 1;
        name_last(g, l, "attn");
        cost_dense(g, d, d, 1, (1 + drop) * td); /* + the residual add and dropout */
        name_last(g, l, "proj");
        cost_elementwise(g, td, 7, 12, 1);
        name_last(g, l, "norm2");
        cost_dense(g, d, f, 1, 0);
        name_last(g, l, "fc1");
        cost_elementwise(g, t * f, s->gpt_wlm ? 1 + drop : 8, s->gpt_wlm ? 1 + drop : 10, 0);
        name_last(g, l, s->gpt_wlm ? "relu" : "gelu");
        cost_dense(g, f, d, 1, (1 + drop) * td);
        name_last(g, l, "fc2");
    }
    if (!s->gpt_wlm) cost_elementwise(g, td, 7, 12, 1);
    if (!s->gpt_wlm) name_last(g, -1, "norm_f");
    cost_dense(g, d, v, s->gpt_wlm, 0);
    name_last(g, -1, s->gpt_wlm ? "decoder" : "head");
    if (!s->gpt_wlm) g->costs[g->n_costs - 1].param_bytes = 0; /* tied: the embedding's */
    model_layer_cost *loss = cost(g);
    loss->fwd_flops = 4 * t * v, loss->bwd_flops = 2 * t * v;
    loss->fwd_bytes = 4 * t * v, loss->bwd_bytes = 8 * t * v;
    name_last(g, -1, "loss");
    g->fwd_flops = g->bwd_flops = 0;
    for (int i = 0; i < g->n_costs; i++) {
        g->fwd_flops += g->costs[i].fwd_flops;
        g->bwd_flops += g->costs[i].bwd_flops;
    }
}

double gpt_forward_flops(const gpt *g) {
    return g->fwd_flops;
}

double gpt_backward_flops(const gpt *g) {
    return g->bwd_flops;
}

int gpt_spec_cost_layers(const model_spec *spec, model_layer_cost **out, int *n) {
    gpt g; /* the costs read the spec only */
    memset(&g, 0, sizeof g);
    g.spec = *spec;
    gpt_costs_build(&g);
    *out = g.costs;
    *n = g.n_costs;
    return SS_OK;
}

int gpt_cost_layer_count(const gpt *g) {
    return g->n_costs;
}

void gpt_cost_layer_at(const gpt *g, int i, model_layer_cost *out) {
    SS_ASSERT(i >= 0 && i < g->n_costs);
    *out = g->costs[i];
}
