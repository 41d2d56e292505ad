/* CPU backend, Transformer ops: batched GEMM through cblas, layer normalization, GELU (erf),
 * token and position embeddings, causal attention softmax, dropout and the language model's
 * cross-entropy. Plain loops; these are the references the CUDA kernels are checked against
 * (device_impl.h states each op). */
#include "kernels/device_impl.h"

#include "common/status.h"
#include "kernels/cpu_par.h"
#include "kernels/cpu_vec.h"
#include "kernels/dropout_hash.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cpu_gemm_batched(device *dev, int trans_a, int trans_b, int m, int n, int k, float alpha,
                      const float *a, int lda, long long stride_a, const float *b, int ldb,
                      long long stride_b, float beta, float *c, int ldc, long long stride_c,
                      int count) {
    (void)dev;
    cpu_par_quiet();
    for (int i = 0; i < count; i++)
        cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                    trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a + i * stride_a, lda,
                    b + i * stride_b, ldb, beta, c + i * stride_c, ldc);
}

static void ln_fwd_loop(device *dev, int rows, int cols, const float *x, const float *gamma,
                        const float *beta, float eps, float *mean, float *rstd, float *y) {
    (void)dev;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols;
        double s = 0.0;
        for (int c = 0; c < cols; c++)
            s += xr[c];
        const float mu = (float)(s / cols);
        double v = 0.0;
        for (int c = 0; c < cols; c++) {
            double d = (double)xr[c] - mu;
            v += d * d;
        }
        const float rs = (float)(1.0 / sqrt(v / cols + eps));
        mean[r] = mu, rstd[r] = rs;
        float *yr = y + (size_t)r * cols;
        for (int c = 0; c < cols; c++)
            yr[c] = (xr[c] - mu) * rs * gamma[c] + beta[c];
    }
}

void cpu_ln_bwd(device *dev, int rows, int cols, const float *x, const float *dy,
                const float *gamma, const float *mean, const float *rstd, float *dgamma,
                float *dbeta, float *dx) {
    (void)dev;
    double *acc = ss_calloc(2 * (size_t)cols, sizeof(double)), *accb = acc + cols;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * cols, *gr = dy + (size_t)r * cols;
        double sg = 0.0, sgx = 0.0;
        for (int c = 0; c < cols; c++) {
            float xhat = (xr[c] - mean[r]) * rstd[r];
            double g = (double)gr[c] * gamma[c];
            sg += g;
            sgx += g * xhat;
            acc[c] += (double)gr[c] * xhat;
            accb[c] += gr[c];
        }
        const float a = (float)(sg / cols), b = (float)(sgx / cols);
        float *dr = dx + (size_t)r * cols;
        for (int c = 0; c < cols; c++) {
            float xhat = (xr[c] - mean[r]) * rstd[r];
            dr[c] = rstd[r] * (gr[c] * gamma[c] - a - xhat * b);
        }
    }
    for (int c = 0; c < cols; c++) {
        dgamma[c] = (float)acc[c];
        dbeta[c] = (float)accb[c];
    }
    free(acc);
}

static void gelu_fwd_loop(device *dev, size_t n, const float *x, float *y) {
    (void)dev;
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        y[i] = (float)(0.5 * v * (1.0 + erf(v * M_SQRT1_2)));
    }
}

static void gelu_bwd_loop(device *dev, size_t n, const float *x, const float *dy, float *dx) {
    (void)dev;
    const double inv_sqrt_2pi = 0.3989422804014327;
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        double cdf = 0.5 * (1.0 + erf(v * M_SQRT1_2)), pdf = inv_sqrt_2pi * exp(-0.5 * v * v);
        dx[i] = (float)((double)dy[i] * (cdf + v * pdf));
    }
}

void cpu_embed_fwd(device *dev, int batch, int t, int d, const float *tokens, int ld,
                   const float *wte, float scale, const float *pos, float *y) {
    (void)dev;
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < t; j++) {
            const float *e = wte + (size_t)tokens[(size_t)b * ld + j] * d;
            float *yr = y + ((size_t)b * t + j) * d;
            for (int c = 0; c < d; c++)
                yr[c] = scale * e[c] + (pos ? pos[(size_t)j * d + c] : 0.0f);
        }
}

void cpu_embed_bwd(device *dev, int batch, int t, int d, const float *tokens, int ld,
                   const float *dy, float scale, int vocab, int accumulate, float *dwte,
                   float *dpos) {
    (void)dev;
    if (!accumulate) memset(dwte, 0, (size_t)vocab * d * sizeof(float));
    for (int b = 0; b < batch; b++)
        for (int j = 0; j < t; j++) {
            float *e = dwte + (size_t)tokens[(size_t)b * ld + j] * d;
            const float *g = dy + ((size_t)b * t + j) * d;
            for (int c = 0; c < d; c++)
                e[c] += scale * g[c];
        }
    if (!dpos) return;
    for (int j = 0; j < t; j++)
        for (int c = 0; c < d; c++) {
            float s = 0.0f;
            for (int b = 0; b < batch; b++)
                s += dy[((size_t)b * t + j) * d + c];
            dpos[(size_t)j * d + c] = s;
        }
}

static void attn_softmax_fwd_loop(device *dev, int rows, int t, const float *x, float *y) {
    (void)dev;
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * t;
        float *yr = y + (size_t)r * t;
        const int q = r % t;
        float mx = xr[0];
        for (int j = 1; j <= q; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        double s = 0.0;
        for (int j = 0; j <= q; j++)
            s += exp((double)(xr[j] - mx));
        const float inv = (float)(1.0 / s);
        for (int j = 0; j <= q; j++)
            yr[j] = expf(xr[j] - mx) * inv;
        for (int j = q + 1; j < t; j++)
            yr[j] = 0.0f;
    }
}

static void attn_softmax_bwd_loop(device *dev, int rows, int t, const float *y, const float *dy,
                                  float *dx) {
    (void)dev;
    for (int r = 0; r < rows; r++) {
        const float *yr = y + (size_t)r * t, *gr = dy + (size_t)r * t;
        float *dr = dx + (size_t)r * t;
        const int q = r % t;
        double s = 0.0;
        for (int j = 0; j <= q; j++)
            s += (double)yr[j] * gr[j];
        const float sf = (float)s;
        for (int j = 0; j <= q; j++)
            dr[j] = yr[j] * (gr[j] - sf);
        for (int j = q + 1; j < t; j++)
            dr[j] = 0.0f;
    }
}

/* elements [i0, i1) */
static SS_CPU_CLONES void dropout_range(size_t i0, size_t i1, float p, uint64_t seed,
                                        const float *x, float *y) {
    const uint32_t thr = dropout_threshold(p);
    const float keep_scale = 1.0f / (1.0f - p);
    for (size_t i = i0; i < i1; i++)
        y[i] = dropout_draw(seed, i) < thr ? 0.0f : x[i] * keep_scale;
}

/* e^(z[k] - zmax) for k < n; out may be z (element by element, so the vector loop is safe). */
SS_INLINE void exp_shifted(const float *z, float zmax, int n, float *out) {
    SS_IVDEP
    for (int k = 0; k < n; k++)
        out[k] = ss_expf_neg(z[k] - zmax);
}

/* Adds e[0..n) into eight double lanes, e[k] into lane k mod 8 (n a multiple of 8). */
SS_INLINE void sum_lanes(const float *e, int n, double *lane) {
    for (int k = 0; k < n; k += 8)
        for (int j = 0; j < 8; j++)
            lane[j] += (double)e[k + j];
}

/* The block of terms summed at a time when they are not kept. */
#define XENT_BLOCK 256

/* One row's largest logit (the first index of it) and the sum of e^(z - max), in double over
 * eight lanes in a fixed order (whether the terms are kept or not, in every variant); the terms
 * go to e when it is not NULL (e may be z). */
SS_INLINE double xent_row(const float *z, int vocab, int *arg, float *zmax_out, float *e) {
    float lane_max[16];
    int k = 0;
    for (int j = 0; j < 16; j++)
        lane_max[j] = z[0];
    for (; k + 16 <= vocab; k += 16)
        for (int j = 0; j < 16; j++)
            lane_max[j] = z[k + j] > lane_max[j] ? z[k + j] : lane_max[j];
    float zmax = lane_max[0];
    for (int j = 1; j < 16; j++)
        zmax = lane_max[j] > zmax ? lane_max[j] : zmax;
    for (; k < vocab; k++)
        zmax = z[k] > zmax ? z[k] : zmax;
    int a = 0;
    while (a < vocab - 1 && !(z[a] == zmax))
        a++;
    *arg = a;
    *zmax_out = zmax;
    double lane[8] = {0};
    const int whole = vocab / 8 * 8;
    float tail[8];
    if (e) {
        exp_shifted(z, zmax, vocab, e);
        sum_lanes(e, whole, lane);
        for (k = whole; k < vocab; k++)
            lane[0] += (double)e[k];
    } else {
        float block[XENT_BLOCK];
        for (k = 0; k < whole; k += XENT_BLOCK) {
            const int n = whole - k < XENT_BLOCK ? whole - k : XENT_BLOCK;
            exp_shifted(z + k, zmax, n, block);
            sum_lanes(block, n, lane);
        }
        exp_shifted(z + whole, zmax, vocab - whole, tail);
        for (k = 0; k < vocab - whole; k++)
            lane[0] += (double)tail[k];
    }
    return ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
           ((lane[4] + lane[5]) + (lane[6] + lane[7]));
}

typedef struct xent_job {
    int vocab, ld, t;
    float inv_rows;
    const float *logits, *tokens;
    float *dlogits;
    double *terms; /* a row's log(s) - (z[y] - max), summed in row order after the parts */
    uint8_t *right;
} xent_job;

static SS_CPU_CLONES void xent_rows(void *ctx, size_t r0, size_t r1) {
    const xent_job *j = ctx;
    const int vocab = j->vocab, t = j->t;
    const float inv_rows = j->inv_rows;
    for (size_t r = r0; r < r1; r++) {
        const float *z = j->logits + r * vocab;
        const int y = (int)j->tokens[(r / t) * j->ld + r % t + 1];
        int arg;
        float zmax;
        /* the row's terms e^(z - max) go to dz, which may be the logits themselves: z[y] is read
         * before */
        const float zy = z[y];
        float *dz = j->dlogits ? j->dlogits + r * vocab : NULL;
        const double s = xent_row(z, vocab, &arg, &zmax, dz);
        j->terms[r] = log(s) - (double)(zy - zmax);
        j->right[r] = arg == y;
        if (!dz) continue;
        const float inv_s = (float)(1.0 / s), ey = dz[y];
        for (int k = 0; k < vocab; k++)
            dz[k] = dz[k] * inv_s * inv_rows;
        dz[y] = (ey * inv_s - 1.0f) * inv_rows;
    }
}

double cpu_xent_tokens(device *dev, int rows, int vocab, const float *logits, const float *tokens,
                       int ld, int t, float *dlogits, int *correct) {
    (void)dev;
    double *terms = ss_malloc(((size_t)rows + 1) * sizeof(double));
    uint8_t *right = ss_malloc((size_t)rows + 1);
    xent_job j = {vocab, ld, t, 1.0f / (float)rows, logits, tokens, dlogits, terms, right};
    cpu_par_for(0, (size_t)rows, cpu_par_grain((size_t)vocab), 1, xent_rows, &j);
    double loss = 0.0;
    int n_right = 0;
    for (int r = 0; r < rows; r++) {
        loss += terms[r];
        n_right += right[r];
    }
    free(terms);
    free(right);
    if (correct) *correct = n_right;
    return loss;
}

/* ---- the passes above split over threads (cpu_par.h): each part runs the loop on its own
 * rows or elements, so the bits are those of one thread ---- */

typedef struct gpt_par_job {
    device *dev;
    int cols;
    const float *x, *x2, *gamma, *beta;
    float *y, *mean, *rstd;
    float eps, p;
    uint64_t seed;
} gpt_par_job;

static void ln_fwd_part(void *ctx, size_t r0, size_t r1) {
    const gpt_par_job *j = ctx;
    const size_t at = r0 * j->cols;
    ln_fwd_loop(j->dev, (int)(r1 - r0), j->cols, j->x + at, j->gamma, j->beta, j->eps, j->mean + r0,
                j->rstd + r0, j->y + at);
}

void cpu_ln_fwd(device *dev, int rows, int cols, const float *x, const float *gamma,
                const float *beta, float eps, float *mean, float *rstd, float *y) {
    gpt_par_job j = {.dev = dev,
                     .cols = cols,
                     .x = x,
                     .gamma = gamma,
                     .beta = beta,
                     .y = y,
                     .mean = mean,
                     .rstd = rstd,
                     .eps = eps};
    cpu_par_for(0, (size_t)rows, cpu_par_grain((size_t)cols), 1, ln_fwd_part, &j);
}

static void gelu_fwd_part(void *ctx, size_t i0, size_t i1) {
    const gpt_par_job *j = ctx;
    gelu_fwd_loop(j->dev, i1 - i0, j->x + i0, j->y + i0);
}

void cpu_gelu_fwd(device *dev, size_t n, const float *x, float *y) {
    gpt_par_job j = {.dev = dev, .x = x, .y = y};
    cpu_par_for(0, n, CPU_PAR_GRAIN / 16, 16, gelu_fwd_part, &j); /* erf: 16x an add's cost */
}

static void gelu_bwd_part(void *ctx, size_t i0, size_t i1) {
    const gpt_par_job *j = ctx;
    gelu_bwd_loop(j->dev, i1 - i0, j->x + i0, j->x2 + i0, j->y + i0);
}

void cpu_gelu_bwd(device *dev, size_t n, const float *x, const float *dy, float *dx) {
    gpt_par_job j = {.dev = dev, .x = x, .x2 = dy, .y = dx};
    cpu_par_for(0, n, CPU_PAR_GRAIN / 16, 16, gelu_bwd_part, &j);
}

/* rows of t scores: a part starts at a query row 0 (the loops take the query from the row) */
static void softmax_fwd_part(void *ctx, size_t r0, size_t r1) {
    const gpt_par_job *j = ctx;
    const size_t at = r0 * j->cols;
    attn_softmax_fwd_loop(j->dev, (int)(r1 - r0), j->cols, j->x + at, j->y + at);
}

void cpu_attn_softmax_fwd(device *dev, int rows, int t, const float *x, float *y) {
    gpt_par_job j = {.dev = dev, .cols = t, .x = x, .y = y};
    cpu_par_for(0, (size_t)rows, cpu_par_grain((size_t)t), (size_t)t, softmax_fwd_part, &j);
}

static void softmax_bwd_part(void *ctx, size_t r0, size_t r1) {
    const gpt_par_job *j = ctx;
    const size_t at = r0 * j->cols;
    attn_softmax_bwd_loop(j->dev, (int)(r1 - r0), j->cols, j->x + at, j->x2 + at, j->y + at);
}

void cpu_attn_softmax_bwd(device *dev, int rows, int t, const float *y, const float *dy,
                          float *dx) {
    gpt_par_job j = {.dev = dev, .cols = t, .x = y, .x2 = dy, .y = dx};
    cpu_par_for(0, (size_t)rows, cpu_par_grain((size_t)t), (size_t)t, softmax_bwd_part, &j);
}

static void dropout_part(void *ctx, size_t i0, size_t i1) {
    const gpt_par_job *j = ctx;
    dropout_range(i0, i1, j->p, j->seed, j->x, j->y);
}

void cpu_dropout(device *dev, size_t n, float p, uint64_t seed, const float *x, float *y) {
    (void)dev;
    gpt_par_job j = {.x = x, .y = y, .p = p, .seed = seed};
    cpu_par_for(0, n, CPU_PAR_GRAIN / 4, 16, dropout_part, &j); /* a hash an element */
}
