/* CPU backend, Transformer ops: batched GEMM through cblas, layer normalization, GELU (erf),
 * token and position embeddings, causal attention softmax, dropout and the language model's
 * cross-entropy. Plain loops; these are the references the CUDA kernels are checked against
 * (device_impl.h states each op). */
#include "kernels/device_impl.h"

#include "common/status.h"
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
    for (int i = 0; i < count; i++)
        cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                    trans_b ? CblasTrans : CblasNoTrans, m, n, k, alpha, a + i * stride_a, lda,
                    b + i * stride_b, ldb, beta, c + i * stride_c, ldc);
}

void cpu_ln_fwd(device *dev, int rows, int cols, const float *x, const float *gamma,
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

void cpu_gelu_fwd(device *dev, size_t n, const float *x, float *y) {
    (void)dev;
    for (size_t i = 0; i < n; i++) {
        double v = x[i];
        y[i] = (float)(0.5 * v * (1.0 + erf(v * M_SQRT1_2)));
    }
}

void cpu_gelu_bwd(device *dev, size_t n, const float *x, const float *dy, float *dx) {
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

void cpu_attn_softmax_fwd(device *dev, int rows, int t, const float *x, float *y) {
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

void cpu_attn_softmax_bwd(device *dev, int rows, int t, const float *y, const float *dy,
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

void cpu_dropout(device *dev, size_t n, float p, uint64_t seed, const float *x, float *y) {
    (void)dev;
    const uint32_t thr = dropout_threshold(p);
    const float keep_scale = 1.0f / (1.0f - p);
    for (size_t i = 0; i < n; i++)
        y[i] = dropout_draw(seed, i) < thr ? 0.0f : x[i] * keep_scale;
}

double cpu_xent_tokens(device *dev, int rows, int vocab, const float *logits, const float *tokens,
                       int ld, int t, float *dlogits, int *correct) {
    (void)dev;
    double loss = 0.0;
    int right = 0;
    const float inv_rows = 1.0f / (float)rows;
    for (int r = 0; r < rows; r++) {
        const float *z = logits + (size_t)r * vocab;
        const int y = (int)tokens[(size_t)(r / t) * ld + r % t + 1];
        int arg = 0;
        for (int k = 1; k < vocab; k++)
            if (z[k] > z[arg]) arg = k;
        const float zmax = z[arg], zy = z[y];
        double s = 0.0;
        for (int k = 0; k < vocab; k++)
            s += exp((double)(z[k] - zmax));
        loss += log(s) - (double)(zy - zmax);
        right += arg == y;
        if (!dlogits) continue;
        float *dz = dlogits + (size_t)r * vocab;
        const float inv_s = (float)(1.0 / s);
        for (int k = 0; k < vocab; k++)
            dz[k] = (expf(z[k] - zmax) * inv_s - (k == y ? 1.0f : 0.0f)) * inv_rows;
    }
    if (correct) *correct = right;
    return loss;
}
