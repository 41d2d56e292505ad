/* Internal: the layers a model is built from (dense, conv2d, 2x2 max pooling, ReLU, flatten,
 * batch normalization, residual addition, global average pooling) and the softmax cross-entropy
 * loss. Each layer works on a batch through the device ops table and counts its exact FLOPs per
 * sample.
 *
 * Layout: activations are NHWC, one sample after the other: x (B, H, W, C). A dense layer sees a
 * sample as a row of D = H*W*C features. Parameters are views into the model's flat vectors:
 *     dense.weight (out, in), dense.bias (out)
 *     conv.weight (OC, KH, KW, C) i.e. (OC, KH*KW*C) in im2col's row order, conv.bias (OC)
 *         (a conv without bias, as before a batch normalization, has no bias view)
 *     bn.weight (C) gamma, bn.bias (C) beta; and in the model's buffers (state, not trained):
 *     bn.running_mean (C), bn.running_var (C)
 *
 * FLOP counting rule (per sample): a multiply-add is 2 FLOPs; an add, a compare or a max is 1.
 *   forward  = GEMM (2 * M*N*K / B) + bias add (1 per output) + elementwise (ReLU 1 per element,
 *              max-pool 3 compares per output)
 *   backward = grad-weight GEMM + bias grad (1 per output) + grad-input GEMM and col2im adds
 *              (1 per column entry) when the layer's input gradient is needed (not for the first
 *              layer: nobody uses the gradient of the data) + elementwise (ReLU 1 per element,
 *              max-pool 3 compares per output to find the argmax again).
 *   batch norm (training): forward 6 per element (sum; squared deviation 3; x scale + shift 2),
 *              backward 5 per element for dgamma/dbeta (xhat 2, two sums 3) and 6 more for the
 *              input gradient (xhat 2, then gamma invstd (dy - a - xhat b) 4); the per-channel
 *              terms (C per batch, not per sample) are left out.
 *   residual add: 1 per added element forward (the skip's elements: H*W*C_skip), 0 backward
 *              (copies); global average pooling: H*W*C adds + C divides forward, H*W*C
 *              multiplies backward.
 *   a layer whose input has a second consumer (the source of a skip connection) adds its input
 *              gradient to the other's: 1 per input element (accum_dx).
 * Flatten costs nothing (a view). The loss adds 4K forward and 2K backward (see loss_*_flops).
 */
#ifndef SS_KERNELS_LAYERS_H
#define SS_KERNELS_LAYERS_H

#include "kernels/device_impl.h"

#include "common/rng.h"

typedef enum layer_kind {
    LAYER_KIND_DENSE = 0,
    LAYER_KIND_CONV2D = 1,
    LAYER_KIND_MAXPOOL2 = 2,
    LAYER_KIND_RELU = 3,
    LAYER_KIND_FLATTEN = 4,
    LAYER_KIND_BATCHNORM = 5,
    LAYER_KIND_ADD = 6,     /* y = x + shortcut(skip) (shortcut_geom) */
    LAYER_KIND_AVGPOOL = 7, /* global: (H, W, C) -> (1, 1, C) */
    LAYER_KIND_COUNT
} layer_kind;

/* Bytes of a conv layer's column buffer: a batch is processed in chunks of as many samples as
 * fit. On the CPU a chunk stays in a core's L2 cache (1 MiB on current x86 server cores): conv2
 * of the cnn holds 627 KB a sample, so one sample a chunk, and conv1 (78 KB a sample) 13, so that
 * im2col writes, the GEMM's packing reads and col2im reads hit L2 instead of the shared L3 (with
 * other jobs on the machine, 8 MiB chunks made the cnn step up to 10 % slower; on a quiet
 * machine both are as fast). A GPU takes the whole batch where it fits in 256 MiB (the cnn's
 * conv2 at batch 256 needs 160 MB): one GEMM with M = B * out_h*out_w, where 8 MiB chunks gave
 * GEMMs of a few dozen tiles that left most of the GPU's multiprocessors idle. A model's
 * convolutions share one buffer (layer_alloc_scratch_in), so its size is the largest layer's. The
 * chunking is fixed per device kind, so that results do not depend on the machine. */
#define LAYER_CONV_COL_BYTES_CPU (1u << 20)
#define LAYER_CONV_COL_BYTES_GPU (256u << 20)

/* The column buffer of im2col convolutions, and the workspace of direct ones: a layer's own, or
 * one that all the convolutions of a model share (they run one after another on one queue), with
 * what it holds: the columns of `count` samples of the input `src` of layer `owner` (NULL:
 * nothing reusable). */
typedef struct layer_col_buf {
    float *col;
    size_t floats;
    const struct layer *owner;
    const float *src;
    int count;
} layer_col_buf;

typedef struct layer {
    layer_kind kind;
    char name[24];           /* "dense1", "conv2", "layer3.17.conv1", ... */
    int in_h, in_w, in_c;    /* input shape of one sample (dense: 1, 1, in) */
    int out_h, out_w, out_c; /* output shape of one sample */
    int kh, kw, pad, stride; /* conv only */
    int need_dx;             /* 0 for the first layer: its input gradient is not computed */
    int accum_dx;            /* the input has another consumer whose gradient is there already: this
                                layer's input gradient is added to it (the model does it) */
    size_t weight_count;     /* floats in the weight view (0 without parameters) */
    size_t bias_count;       /* floats in the bias view */
    float *w, *b;            /* views into the model's parameters */
    float *dw, *db;          /* views into the model's gradients */
    /* conv without bias on the direct path: oc zeros (its bias) and oc floats that receive the
     * bias gradient nobody uses */
    float *nobias;
    /* batch norm: momentum 0.1 and eps 1e-5 (PyTorch's BatchNorm2d); training selects batch
     * statistics (the model sets it per pass); run_mean/run_var view the model's buffers;
     * save (2 C) the batch's mean and 1/sqrt(var + eps) for the backward pass */
    float bn_momentum, bn_eps;
    int training;
    size_t buffer_count; /* floats in the model's buffers (batch norm: 2 C) */
    float *run_mean, *run_var;
    float *save;
    /* residual add: the skip input's shortcut into the output; skip_act the skip's activation
     * (set by the model) */
    shortcut_geom sc;
    const float *skip_act;
    /* conv: direct convolution (device op conv_fwd ...) when the device takes the geometry;
     * colbuf is then its workspace. Otherwise im2col + gemm, or on a GPU the implicit-GEMM kernel
     * (device op conv_implicit) where it takes the geometry and is faster. conv_im2col_only,
     * set before layer_alloc_scratch, keeps im2col + gemm (tests compare them);
     * conv_implicit_always takes the implicit kernel for every geometry it computes. */
    int conv_direct;
    int conv_im2col_only;
    int conv_implicit_always;
    /* conv, direct, fused with a ReLU: the max-pool after it runs inside its passes, through
     * layer_conv_pool_forward/backward (the model calls them for the three layers) */
    int pool_fused;
    size_t scratch_floats; /* what layer_alloc_scratch allocated */
    int col_samples;       /* conv, im2col: samples a chunk, min(max_batch, CHUNK) */
    /* conv: the column buffer, (col_samples * out_h*out_w, kh*kw*in_c) at least, or a direct
     * convolution's workspace (conv_direct_floats): own_col or a model's shared one */
    layer_col_buf *colbuf;
    layer_col_buf own_col;
    /* Fusion of conv -> ReLU -> max-pool (layer_fuse_relu): the conv applies the ReLU in its
     * bias pass, the ReLU layer becomes a view (like flatten) and the pooling's backward pass
     * applies the ReLU's mask. Same values bit for bit, two passes over the activations fewer;
     * the FLOP counts stay those of the separate layers. */
    /* conv: y = max(x W^T + b, 0). Batch norm and add (model.c's fuse_post_relu, on a device
     * with their fused ops): y = max(., 0) of the ReLU after them, which becomes a view, and
     * their backward pass masks dy by y > 0 (same bits as the two layers). */
    int relu_in_epilogue;
    /* batch norm with its ReLU fused, and the max-pool after them on a device with the
     * bn_pool ops (the CPU's; model.c's fuse_post_relu): the three layers run as one block
     * through layer_bn_pool_forward/backward, the batch norm's output is not held, and
     * pool_codes (a byte per pooled value of max_batch samples) carries the pooling's choices to
     * the backward pass; so does a pool_fused conv's */
    int bn_pool_fused;
    uint8_t *pool_codes;
    int is_view;       /* ReLU fused away: y aliases x, dx aliases dy */
    int relu_mask_bwd; /* max-pool: its input is a ReLU's output; dx = 0 where x <= 0 */
} layer;

void layer_init_dense(layer *l, const char *name, int in, int out);
void layer_init_conv2d(layer *l, const char *name, int in_h, int in_w, int in_c, int out_c, int k,
                       int pad);
/* out = (in + 2 pad - k) / stride + 1; bias 0: no bias parameters */
void layer_init_conv2d_ex(layer *l, const char *name, int in_h, int in_w, int in_c, int out_c,
                          int k, int pad, int stride, int bias);
void layer_init_batchnorm(layer *l, const char *name, int h, int w, int c);
/* y (h, w, c) = x (h, w, c) + shortcut of a skip input (skip_h, skip_w, skip_c): subsampled by
 * stride, its channels centred in c (option A's zero padding: (c - skip_c) / 2 zero channels
 * before them) */
void layer_init_add(layer *l, const char *name, int h, int w, int c, int skip_h, int skip_w,
                    int skip_c, int stride);
void layer_init_avgpool(layer *l, const char *name, int h, int w, int c);
void layer_init_maxpool2(layer *l, const char *name, int in_h, int in_w, int in_c);
void layer_init_relu(layer *l, const char *name, int h, int w, int c);
void layer_init_flatten(layer *l, const char *name, int h, int w, int c);

/* Fuses every conv -> ReLU -> max-pool triple of layers[0..n-1] (flags above). */
void layer_fuse_relu(layer *layers, int n);
/* 1 if the layer's output aliases its input (flatten, a fused ReLU). */
int layer_is_view(const layer *l);

size_t layer_in_size(const layer *l);  /* floats per sample */
size_t layer_out_size(const layer *l); /* floats per sample */
/* Points the layer's views at params/grads + offset; returns the floats it uses. */
size_t layer_bind(layer *l, float *params, float *grads, size_t offset);
/* Points a batch norm's running statistics at buffers + offset; returns the floats it uses. */
size_t layer_bind_buffers(layer *l, float *buffers, size_t offset);
/* He-uniform weights (bound sqrt(6 / fan_in)) drawn in order from r into a host array (weights
 * first, then zero biases), matching the view layout; batch norm: gamma 1, beta 0 (nothing
 * drawn). host_buf (buffer_count): running mean 0, running variance 1. */
void layer_init_params(const layer *l, rng *r, float *host_w, float *host_b);
void layer_init_buffers(const layer *l, float *host_buf);
void layer_alloc_scratch(device *dev, layer *l, int max_batch);
/* The same, but a conv uses `shared` as its column buffer or direct workspace (allocated by the
 * caller once every layer has grown shared->floats to what it needs; its col is read at each
 * pass), or its own buffer when shared is NULL. scratch_floats does not count a shared buffer. */
void layer_alloc_scratch_in(device *dev, layer *l, int max_batch, layer_col_buf *shared);
/* conv: samples per im2col chunk under LAYER_CONV_COL_BYTES_<kind> (at least 1) */
int layer_conv_chunk_samples(const layer *l, device_kind kind);
void layer_free_scratch(device *dev, layer *l);

/* A pool_fused conv with its ReLU and max-pool, sample by sample: pool_y the pooling's output
 * (y, the conv's, is not written: the sample's output stays in cache, and the pooling keeps a
 * byte per pooled value for the backward pass in the conv's scratch); backward from pool_dy, the
 * pooling's output gradient, right after the forward pass. Same bits as the three layers one after
 * the other. */
void layer_conv_pool_forward(device *dev, layer *conv, int batch, const float *x, float *y,
                             float *pool_y);
void layer_conv_pool_backward(device *dev, layer *conv, int batch, const float *x, const float *y,
                              const float *pool_dy, float *dx);

/* A bn_pool_fused batch norm with its ReLU and max-pool: pool_y the pooling's output from x, the
 * batch norm's input (training or inference, as the layer is set); backward from pool_dy, the
 * pooling's output gradient, after a training forward pass: the batch norm's parameter gradients
 * and, when it needs one, dx. Same bits as the three layers one after the other. */
void layer_bn_pool_forward(device *dev, layer *bn, int batch, const float *x, float *pool_y);
void layer_bn_pool_backward(device *dev, layer *bn, int batch, const float *x, const float *pool_dy,
                            float *dx);

/* Residual add, backward of the skip input: dskip = the shortcut's adjoint of dy (overwritten). */
void layer_add_skip_backward(device *dev, layer *l, int batch, const float *dy, float *dskip);
size_t layer_skip_size(const layer *l); /* add: floats per sample of the skip input */

/* y (B, out) from x (B, in) */
void layer_forward(device *dev, layer *l, int batch, const float *x, float *y);
/* From dy (B, out): parameter gradients (overwritten) and, when l->need_dx, dx (B, in).
 * x and y are the forward pass's input and output. */
void layer_backward(device *dev, layer *l, int batch, const float *x, const float *y,
                    const float *dy, float *dx);

double layer_forward_flops(const layer *l);  /* per sample */
double layer_backward_flops(const layer *l); /* per sample */
/* Memory traffic and launches of a layer, for the GPU compute model (sim/compute/compute.h): bytes
 * read and written per sample by the forward pass (input and output activations) and by the
 * backward pass (output gradient, saved input or output, input gradient when need_dx), at 4 bytes
 * an element; weights are counted apart (weight_count + bias_count). Kernels per pass: dense GEMM +
 * bias 2 forward, 3 backward (dW, db, dx); conv im2col + GEMM + bias 3 forward, 4 backward
 * (dW, db, dcol, col2im), one fewer each without bias; batch norm 2 (statistics, apply) each
 * way; residual add 2 (copy, shortcut) each way, reading the skip too; elementwise and global
 * average pooling 1; flatten 0 (a view); one more backward with accum_dx. */
double layer_forward_bytes(const layer *l);  /* per sample */
double layer_backward_bytes(const layer *l); /* per sample */
int layer_forward_kernels(const layer *l);
int layer_backward_kernels(const layer *l);

/* Softmax cross-entropy per sample FLOPs (max, subtract, exp, sum = 4K; then p - onehot, / B). */
double loss_forward_flops(int classes);
double loss_backward_flops(int classes);

#endif
