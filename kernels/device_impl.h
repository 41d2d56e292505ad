/* Internal: the backend interface behind the opaque `device` (ggml-backend style).
 *
 * A backend is a table of function pointers; device.c dispatches every public call through it.
 * Each op has one CPU reference implementation (device_cpu.c); the CUDA backend (device_cuda.c
 * plus one cuda_<op>.cu per kernel) must agree with it within the tolerances of test_cuda.c.
 *
 * Matrices are row-major. Activations are stored NHWC: a conv output of B samples is the
 * row-major matrix (B*H*W, C), so bias add and bias grad work per column for conv and dense alike.
 * Legend: B batch, H/W spatial size, C channels, K classes, KH/KW kernel size.
 */
#ifndef SS_KERNELS_DEVICE_IMPL_H
#define SS_KERNELS_DEVICE_IMPL_H

#include "kernels/device.h"

#include <stddef.h>
#include <stdint.h>

/* Geometry of a 2-D convolution (square zero padding, equal strides) on NHWC tensors. */
typedef struct conv_geom {
    int batch;            /* B */
    int in_h, in_w, in_c; /* input (B, in_h, in_w, in_c) */
    int out_h, out_w;     /* out_h = (in_h + 2 pad - kh) / stride + 1 */
    int kh, kw, pad;
    int stride; /* 0 or 1: stride 1 (a zero-initialized geometry is unit-stride) */
} conv_geom;

/* The stride of g (1 when g->stride is 0). */
static inline int conv_stride(const conv_geom *g) {
    return g->stride > 1 ? g->stride : 1;
}

/* A shortcut of a residual block (He et al. 2016), NHWC: the skip input (B, in_h, in_w, in_c)
 * subsampled by `stride` (rows and columns 0, stride, 2 stride, ...) into the channels
 * [c_lo, c_lo + in_c) of an output (B, out_h, out_w, out_c) whose other channels are zero:
 * the identity when stride 1 and in_c == out_c, option A (zero padding) otherwise. */
typedef struct shortcut_geom {
    int batch;
    int in_h, in_w, in_c;
    int out_h, out_w, out_c;
    int stride, c_lo;
} shortcut_geom;

typedef struct device_ops {
    /* memory */
    float *(*alloc)(device *dev, size_t count); /* zero-filled */
    void (*free)(device *dev, float *p);
    void (*upload)(device *dev, float *dst, const float *host_src, size_t count);
    void (*download)(device *dev, float *host_dst, const float *src, size_t count);
    void (*copy)(device *dev, float *dst, const float *src, size_t count);
    void (*zero)(device *dev, float *dst, size_t count);
    void (*sync)(device *dev);
    /* device_share_with_host; NULL: device memory is host memory already */
    int (*share_with_host)(device *dev);
    /* device_place; NULL: memory is where it is used already */
    void (*place)(device *dev, float *p, size_t count, int on_host);

    /* C (m, n) = alpha op(A) op(B) + beta C; op(A) is (m, k), op(B) is (k, n); row-major with
     * leading dimensions lda, ldb, ldc. */
    void (*gemm)(device *dev, int trans_a, int trans_b, int m, int n, int k, float alpha,
                 const float *a, int lda, const float *b, int ldb, float beta, float *c, int ldc);
    /* y (rows, cols) += bias (cols) on every row */
    void (*bias_add)(device *dev, int rows, int cols, const float *bias, float *y);
    /* db (cols) = (beta ? db : 0) + sum over rows of dy (rows, cols), rows summed in order */
    void (*bias_grad)(device *dev, int rows, int cols, const float *dy, float beta, float *db);
    /* y (rows, cols) = max(y + bias, 0) on every row: bias_add then relu_fwd in one pass.
     * Optional (NULL: the two ops one after the other). */
    void (*bias_relu)(device *dev, int rows, int cols, const float *bias, float *y);
    void (*relu_fwd)(device *dev, size_t n, const float *x, float *y);
    /* dx = dy where y > 0, else 0 (y is the forward output) */
    void (*relu_bwd)(device *dev, size_t n, const float *y, const float *dy, float *dx);
    /* col (B*out_h*out_w, kh*kw*in_c) from x (B, in_h, in_w, in_c); zero outside the image */
    void (*im2col)(device *dev, const conv_geom *g, const float *x, float *col);
    /* dx (B, in_h, in_w, in_c) = sum of the col entries that read each input element */
    void (*col2im)(device *dev, const conv_geom *g, const float *col, float *dx);
    /* 2x2 max pooling, stride 2, NHWC: y (B, h/2, w/2, c) from x (B, h, w, c) */
    void (*maxpool_fwd)(device *dev, int batch, int h, int w, int c, const float *x, float *y);
    /* dx gets dy at the first maximum of each window (row-major order), 0 elsewhere */
    void (*maxpool_bwd)(device *dev, int batch, int h, int w, int c, const float *x,
                        const float *dy, float *dx);
    /* maxpool_bwd then relu_bwd with y = x (x is a ReLU's output), in one pass. Optional. */
    void (*maxpool_relu_bwd)(device *dev, int batch, int h, int w, int c, const float *x,
                             const float *dy, float *dx);
    /* Direct convolution without im2col (CPU: kernels/conv_direct.h). Optional: NULL, or
     * conv_direct_floats() returning 0 for a geometry it does not take, means im2col + gemm.
     * conv_direct_floats: floats of the workspace `ws` the passes need (oc output channels;
     * need_dx: the data gradient is wanted too); nothing in it outlives a pass, so the
     * convolutions of a model share one. */
    size_t (*conv_direct_floats)(device *dev, const conv_geom *g, int oc, int need_dx);
    /* y (B*out_h*out_w, oc) = conv(x, w) + bias, then ReLU when relu; w (oc, kh*kw*in_c).
     * With pool_y (a conv -> ReLU -> max-pool block): pool_y = maxpool_fwd of that output,
     * sample by sample, and y is not written; codes (a byte per pooled value, B out_h/2 out_w/2
     * oc) keep what the block's backward pass needs. codes is NULL without pool_y. */
    void (*conv_fwd)(device *dev, const conv_geom *g, int oc, const float *x, const float *w,
                     const float *bias, int relu, float *ws, uint8_t *codes, float *y,
                     float *pool_y);
    /* dw (oc, kh*kw*in_c), db (oc) and, unless dx is NULL, dx (B, in_h, in_w, in_c): the
     * gradients of the batch (overwritten); db as bias_grad computes it. The output gradient is
     * dy or, with pool_dy (the block's pooling's output gradient, after a conv_fwd with pool_y
     * and the same codes), what maxpool_relu_bwd would give, sample by sample; y is not read. */
    void (*conv_bwd)(device *dev, const conv_geom *g, int oc, const float *x, const float *y,
                     const float *dy, const float *pool_dy, const float *w, float *ws,
                     const uint8_t *codes, float *dw, float *db, float *dx);
    /* Implicit-GEMM convolution, the im2col path's alternative (optional: NULL, or a return of
     * 0 for a geometry it does not take or would compute slower, means im2col + gemm; always: for
     * every geometry it can compute). conv_implicit: y (B*out_h*out_w, oc) = conv(x, w), without
     * the bias; conv_implicit_dx: dx (B, in_h, in_w, in_c) = the input gradient from dy
     * (overwritten); conv_implicit_dw: dw (oc, kh * kw * in_c) = the weight gradient from x and
     * dy (overwritten). The CUDA backend's kernels of its own; the CPU's direct passes, for the
     * strided geometries the direct layer path does not take (conv_direct.h). */
    int (*conv_implicit)(device *dev, const conv_geom *g, int oc, const float *x, const float *w,
                         float *y, int always);
    int (*conv_implicit_dx)(device *dev, const conv_geom *g, int oc, const float *dy,
                            const float *w, float *dx, int always);
    int (*conv_implicit_dw)(device *dev, const conv_geom *g, int oc, const float *x,
                            const float *dy, float *dw, int always);
    /* Batch normalization over the rows of x (rows, cols), per column (NHWC: rows = B*H*W,
     * cols = C), y = (x - mean) / sqrt(var + eps) * gamma + beta. Training: mean and the biased
     * var of the batch, saved (save_mean, save_invstd = 1 / sqrt(var + eps), cols each) for the
     * backward pass; run_mean/run_var (cols) become (1 - momentum) run + momentum stat, with the
     * unbiased variance var * rows / (rows - 1) (PyTorch's BatchNorm2d). Sums in double (the
     * CPU's: each block of cpu_bn_block_rows(rows) rows in order, then the blocks in order). */
    void (*bn_fwd_train)(device *dev, int rows, int cols, const float *x, const float *gamma,
                         const float *beta, float momentum, float eps, float *run_mean,
                         float *run_var, float *save_mean, float *save_invstd, float *y);
    /* Inference: the running statistics in place of the batch's. */
    void (*bn_fwd_infer)(device *dev, int rows, int cols, const float *x, const float *gamma,
                         const float *beta, const float *run_mean, const float *run_var, float eps,
                         float *y);
    /* dgamma = sum dy xhat, dbeta = sum dy (overwritten) and, unless dx is NULL,
     * dx = gamma invstd (dy - mean(dy) - xhat mean(dy xhat)), xhat = (x - mean) invstd. */
    void (*bn_bwd)(device *dev, int rows, int cols, const float *x, const float *dy,
                   const float *gamma, const float *save_mean, const float *save_invstd,
                   float *dgamma, float *dbeta, float *dx);
    /* Optional (NULL: the model runs batch norm and the ReLU after it as two layers): the same
     * three with a ReLU fused. relu: y = max(BN(x), 0). y_mask: not NULL, the backward pass
     * takes dy as 0 where y_mask (the fused layer's output) is not positive, as relu_bwd. */
    void (*bn_fwd_train_act)(device *dev, int rows, int cols, const float *x, const float *gamma,
                             const float *beta, float momentum, float eps, float *run_mean,
                             float *run_var, float *save_mean, float *save_invstd, int relu,
                             float *y);
    void (*bn_fwd_infer_act)(device *dev, int rows, int cols, const float *x, const float *gamma,
                             const float *beta, const float *run_mean, const float *run_var,
                             float eps, int relu, float *y);
    void (*bn_bwd_masked)(device *dev, int rows, int cols, const float *x, const float *dy,
                          const float *y_mask, const float *gamma, const float *save_mean,
                          const float *save_invstd, float *dgamma, float *dbeta, float *dx);
    /* Optional (NULL: the layers run apart): batch norm with its ReLU and the 2x2 max-pool after
     * them as one block (vgg's stages), x (batch, h, w, cols) NHWC, cols a multiple of 16. pool_y
     * (batch, h/2, w/2, cols) = maxpool_fwd of what bn_fwd_*_act gives with relu, which is not
     * written; codes (training), a byte per pooled value: which input of its window took the
     * maximum (0 to 3, the first in the order 00, 01, 10, 11) or 4 where that maximum is not
     * positive. bn_pool_bwd: what maxpool_bwd of pool_dy and then bn_bwd_masked give, from the
     * codes. Same bits as those ops one after the other. */
    void (*bn_pool_fwd_train)(device *dev, int batch, int h, int w, int cols, const float *x,
                              const float *gamma, const float *beta, float momentum, float eps,
                              float *run_mean, float *run_var, float *save_mean, float *save_invstd,
                              float *pool_y, uint8_t *codes);
    void (*bn_pool_fwd_infer)(device *dev, int batch, int h, int w, int cols, const float *x,
                              const float *gamma, const float *beta, const float *run_mean,
                              const float *run_var, float eps, float *pool_y);
    void (*bn_pool_bwd)(device *dev, int batch, int h, int w, int cols, const float *x,
                        const float *pool_dy, const uint8_t *codes, const float *gamma,
                        const float *save_mean, const float *save_invstd, float *dgamma,
                        float *dbeta, float *dx);
    /* Global average pooling, NHWC: y (B, c) = mean over the hw pixels of x (B, hw, c); its
     * backward dx (B, hw, c) = dy / hw on every pixel. */
    void (*avgpool_fwd)(device *dev, int batch, int hw, int c, const float *x, float *y);
    void (*avgpool_bwd)(device *dev, int batch, int hw, int c, const float *dy, float *dx);
    /* y (shortcut_geom's output) += shortcut of x; dx (its input) = the adjoint of dy: dy at
     * the sampled pixels and channels, 0 elsewhere (overwritten). */
    void (*shortcut_fwd)(device *dev, const shortcut_geom *g, const float *x, float *y);
    void (*shortcut_bwd)(device *dev, const shortcut_geom *g, const float *dy, float *dx);
    /* Optional (NULL: a copy of x, then shortcut_fwd): y = x + shortcut of skip in one pass,
     * max(., 0) when relu; x and y have the geometry's output shape. */
    void (*add_fwd)(device *dev, const shortcut_geom *g, const float *x, const float *skip,
                    int relu, float *y);
    /* Softmax cross-entropy of logits (B, K) against host labels (B). Returns the summed loss
     * (double); *correct = samples whose first argmax is the label. When dlogits is not NULL it
     * receives d(mean loss)/d(logits) = (softmax - onehot) / B. */
    double (*softmax_xent)(device *dev, int batch, int classes, const float *logits,
                           const uint8_t *labels, float *dlogits, int *correct);
    /* g' = g + wd w; v = mu v + g' (v unused when mu == 0); w -= lr (mu ? v : g'), or with
     * nesterov (PyTorch's definition) w -= lr (g' + mu v) */
    void (*sgd)(device *dev, size_t n, float *w, const float *g, float *v, float lr, float mu,
                float wd, int nesterov);

    /* ---- Transformer ops (CPU: device_cpu_gpt.c; CUDA: device_cuda_gpt.c) ----
     * gemm for count matrices at once: A_i = a + i stride_a (likewise B, C), each as gemm. */
    void (*gemm_batched)(device *dev, int trans_a, int trans_b, int m, int n, int k, float alpha,
                         const float *a, int lda, long long stride_a, const float *b, int ldb,
                         long long stride_b, float beta, float *c, int ldc, long long stride_c,
                         int count);
    /* Layer normalization of each row of x (rows, cols): mean and rstd = 1 / sqrt(var + eps)
     * (biased variance, sums in double) saved (rows each); y = (x - mean) rstd gamma + beta. */
    void (*ln_fwd)(device *dev, int rows, int cols, const float *x, const float *gamma,
                   const float *beta, float eps, float *mean, float *rstd, float *y);
    /* dgamma = sum over rows of dy xhat, dbeta = sum of dy (overwritten, rows in order), and
     * dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy gamma (overwritten). */
    void (*ln_bwd)(device *dev, int rows, int cols, const float *x, const float *dy,
                   const float *gamma, const float *mean, const float *rstd, float *dgamma,
                   float *dbeta, float *dx);
    /* GELU, erf form (PyTorch's nn.GELU default): y = x Phi(x); dx = dy Phi'(x) x + dy Phi(x).
     * Computed in double, rounded once. In place allowed. */
    void (*gelu_fwd)(device *dev, size_t n, const float *x, float *y);
    void (*gelu_bwd)(device *dev, size_t n, const float *x, const float *dy, float *dx);
    /* Token ids are floats in rows of ld: token t of sample b is tokens[b ld + t] (device).
     * y (B, T, D) = scale wte[token] + pos[t] (pos (T, D) or NULL). */
    void (*embed_fwd)(device *dev, int batch, int t, int d, const float *tokens, int ld,
                      const float *wte, float scale, const float *pos, float *y);
    /* dwte (V, D): scale dy added at each token's row, rows of dy in order (accumulate 0: dwte
     * zeroed first, V rows of it); dpos (T, D), unless NULL, = sum over the batch of dy
     * (overwritten). */
    void (*embed_bwd)(device *dev, int batch, int t, int d, const float *tokens, int ld,
                      const float *dy, float scale, int vocab, int accumulate, float *dwte,
                      float *dpos);
    /* Causal softmax of attention scores: rows of length t, row r the query r mod t; y_j =
     * softmax over j <= r mod t of x, 0 above the diagonal. In place allowed. */
    void (*attn_softmax_fwd)(device *dev, int rows, int t, const float *x, float *y);
    /* dx_j = y_j (dy_j - sum_k y_k dy_k) for j <= r mod t, 0 above. In place (dx = dy) allowed. */
    void (*attn_softmax_bwd)(device *dev, int rows, int t, const float *y, const float *dy,
                             float *dx);
    /* Dropout: y = x / (1 - p) where element i is kept, 0 where dropped; element i is dropped
     * when dropout_draw(seed, i) < p (dropout_hash.h): the same mask on every backend, and the
     * backward pass is the same op with the same seed. In place allowed. */
    void (*dropout)(device *dev, size_t n, float p, uint64_t seed, const float *x, float *y);
    /* Softmax cross-entropy of a language model: logits (rows, V), row r = b t + j predicts
     * token j + 1 of sample b (tokens as embed_fwd). Returns the summed loss; *correct = rows
     * whose first argmax is the target. dlogits (may alias logits, or NULL) = (softmax -
     * onehot) / rows. */
    double (*xent_tokens)(device *dev, int rows, int vocab, const float *logits,
                          const float *tokens, int ld, int t, float *dlogits, int *correct);

    /* vector ops of device.h */
    void (*axpy)(device *dev, size_t n, float a, const float *x, float *y);
    void (*scale)(device *dev, size_t n, float a, float *x);
    void (*mean)(device *dev, size_t n, int k, const float *const *xs, float *out);
    double (*nrm2)(device *dev, size_t n, const float *x);
    void (*masked_copy)(device *dev, size_t n, const uint8_t *mask, const float *src, float *dst);

    /* device_lanes_reserve, device_lane_enter, device_lane_leave; NULL: one queue of work,
     * which every thread may use at once (the CPU's calls run in the calling thread) */
    int (*lanes_reserve)(device *dev, int lanes);
    /* Timing marks in the issuing queue (a benchmark's layer clock): mark_seconds is the time
     * between two recorded marks, waiting for the later one. NULL: the device computes in the
     * calling thread, whose clock times it after device_sync. */
    void *(*mark_create)(device *dev);
    void (*mark_record)(device *dev, void *mark);
    double (*mark_seconds)(device *dev, void *from, void *to);
    void (*mark_destroy)(device *dev, void *mark);
    /* device_memory_info; NULL: no memory of its own */
    int (*memory_info)(device *dev, double *free_bytes, double *total_bytes);
    void (*lane_enter)(device *dev, int lane);
    void (*lane_leave)(device *dev);

    void (*close)(device *dev);
} device_ops;

struct device {
    const device_ops *ops;
    device_kind kind;
    char name[128];
    void *ctx; /* backend state (CUDA: handles and scratch buffers) */
};

/* The rows of each block of the CPU's batch-norm sums: 256, or a multiple of it (rows over
 * 2^18) that keeps the blocks to 1,024; the row count alone decides it, not the threads. */
int cpu_bn_block_rows(int rows);

/* The CPU backend's Transformer ops (device_cpu_gpt.c), in its table. */
void cpu_gemm_batched(device *dev, int trans_a, int trans_b, int m, int n, int k, float alpha,
                      const float *a, int lda, long long stride_a, const float *b, int ldb,
                      long long stride_b, float beta, float *c, int ldc, long long stride_c,
                      int count);
void cpu_ln_fwd(device *dev, int rows, int cols, const float *x, const float *gamma,
                const float *beta, float eps, float *mean, float *rstd, float *y);
void cpu_ln_bwd(device *dev, int rows, int cols, const float *x, const float *dy,
                const float *gamma, const float *mean, const float *rstd, float *dgamma,
                float *dbeta, float *dx);
void cpu_gelu_fwd(device *dev, size_t n, const float *x, float *y);
void cpu_gelu_bwd(device *dev, size_t n, const float *x, const float *dy, float *dx);
void cpu_embed_fwd(device *dev, int batch, int t, int d, const float *tokens, int ld,
                   const float *wte, float scale, const float *pos, float *y);
void cpu_embed_bwd(device *dev, int batch, int t, int d, const float *tokens, int ld,
                   const float *dy, float scale, int vocab, int accumulate, float *dwte,
                   float *dpos);
void cpu_attn_softmax_fwd(device *dev, int rows, int t, const float *x, float *y);
void cpu_attn_softmax_bwd(device *dev, int rows, int t, const float *y, const float *dy, float *dx);
void cpu_dropout(device *dev, size_t n, float p, uint64_t seed, const float *x, float *y);
double cpu_xent_tokens(device *dev, int rows, int vocab, const float *logits, const float *tokens,
                       int ld, int t, float *dlogits, int *correct);

/* The backends' constructors: fill *dev or return SS_EDEVICE with the reason in `reason`. */
int device_cpu_init(device *dev);
#ifdef SS_HAVE_CUDA
int device_cuda_init(device *dev, char *reason, size_t reason_size);
int device_cuda_probe(char *reason, size_t reason_size);
#endif

#endif
