/* Internal: the state of a gpt model (gpt.c: layout, initialization, memory; gpt_pass.c: the
 * passes and the cost table). */
#ifndef SS_KERNELS_GPT_INTERNAL_H
#define SS_KERNELS_GPT_INTERNAL_H

#include "kernels/dropout_hash.h"
#include "kernels/gpt.h"

#define GPT_MAX_LAYERS 64
#define GPT_MAX_VIEWS  (6 + 12 * GPT_MAX_LAYERS)
#define GPT_LN_EPS     1e-5f /* PyTorch's nn.LayerNorm default */

/* One parameter tensor: its values and gradient (device), its place in the flat vector. */
typedef struct gpt_tensor {
    float *w, *g;
    size_t offset, count;
} gpt_tensor;

typedef struct gpt_block {
    gpt_tensor in_w, in_b, out_w, out_b, fc_w, fc_b, proj_w, proj_b, ln1_w, ln1_b, ln2_w, ln2_b;
} gpt_block;

/* What a block's backward pass reads (N = B T rows). Pre-norm: ln1 = LN1(x), ln2 = LN2(res1),
 * the output res2. Post-norm: ln1 = LN1(res1), ln2 = LN2(res2), the output ln2. */
typedef struct gpt_acts {
    float *ln1, *ln1_stats; /* (N, D); mean (N) then rstd (N) */
    float *qkv;             /* (N, 3D) */
    float *att, *attd;      /* (B, H, T, T) probabilities; after dropout (or att) */
    float *o;               /* (N, D) the heads' outputs side by side */
    float *res1;            /* (N, D) block input + drop(o Wo^T + bo) */
    float *ln2, *ln2_stats;
    float *h, *act, *actd; /* (N, F) before and after the activation; after dropout (wlm) */
    float *res2;           /* (N, D) */
} gpt_acts;

struct gpt {
    device *dev;
    model_spec spec;
    int max_batch;
    size_t n_params;
    int n_views;
    model_view *views;
    float *params, *grads;
    gpt_tensor wte, wpe, lnf_w, lnf_b, head_w, head_b; /* wpe: gpt; lnf: gpt; head: wlm */
    gpt_block *blocks;
    gpt_acts *acts;
    const float *block_in[GPT_MAX_LAYERS + 1]; /* each block's input, then lnf's (gpt) */
    const float *head_in;                      /* the output projection's input */
    float *tokens;                             /* (max_batch, T + 1) */
    float *emb;                                /* (N, D) embedding after dropout */
    float *lnf, *lnf_stats;                    /* final layer norm (gpt) */
    float *logits;                             /* (N, V); the backward pass makes it dlogits */
    float *sd[5];                              /* (N, D) scratch; sd[4] the stream's gradient */
    float *sbig;                               /* (N, max(F, 3D)) */
    float *sqkv, *satt;                        /* (N, 3D), (B, H, T, T) gradients */
    float *pos_table;                          /* (T, D) sinusoids (wlm) */
    uint64_t drop_seed, pass;
    int training;
    double device_bytes;
    int n_costs;
    model_layer_cost *costs;
    struct layer_clock *clock; /* gpt_set_layer_clock's, or NULL */
    double fwd_flops, bwd_flops;
};

/* The mask seed of a dropout site in the current pass. */
static inline uint64_t gpt_site_seed(const gpt *g, int site) {
    return dropout_mix64(g->drop_seed ^ dropout_mix64(g->pass * 1024u + (uint64_t)site));
}
void gpt_costs_build(gpt *g);

#endif
