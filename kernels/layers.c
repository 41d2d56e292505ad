/* Layers: each kind is one row of a table (forward, backward, FLOP counts); every computation
 * goes through the device ops table. Shapes and the FLOP counting rule are in layers.h. */
#include "kernels/layers.h"

#include "common/status.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct layer_kind_ops {
    const char *name;
    void (*forward)(device *dev, layer *l, int batch, const float *x, float *y);
    void (*backward)(device *dev, layer *l, int batch, const float *x, const float *y,
                     const float *dy, float *dx);
    double (*forward_flops)(const layer *l);
    double (*backward_flops)(const layer *l);
} layer_kind_ops;

static void set_shape(layer *l, layer_kind kind, const char *name, int in_h, int in_w, int in_c,
                      int out_h, int out_w, int out_c) {
    memset(l, 0, sizeof *l);
    l->kind = kind;
    snprintf(l->name, sizeof l->name, "%s", name);
    l->in_h = in_h, l->in_w = in_w, l->in_c = in_c;
    l->out_h = out_h, l->out_w = out_w, l->out_c = out_c;
    l->need_dx = 1;
}

void layer_init_dense(layer *l, const char *name, int in, int out) {
    SS_ASSERT(in > 0 && out > 0);
    set_shape(l, LAYER_KIND_DENSE, name, 1, 1, in, 1, 1, out);
    l->weight_count = (size_t)out * in;
    l->bias_count = (size_t)out;
}

void layer_init_conv2d(layer *l, const char *name, int in_h, int in_w, int in_c, int out_c, int k,
                       int pad) {
    layer_init_conv2d_ex(l, name, in_h, in_w, in_c, out_c, k, pad, 1, 1);
}

void layer_init_conv2d_ex(layer *l, const char *name, int in_h, int in_w, int in_c, int out_c,
                          int k, int pad, int stride, int bias) {
    SS_ASSERT(k > 0 && pad >= 0 && pad < k && stride >= 1 && in_h + 2 * pad >= k &&
              in_w + 2 * pad >= k && out_c > 0);
    int out_h = (in_h + 2 * pad - k) / stride + 1, out_w = (in_w + 2 * pad - k) / stride + 1;
    set_shape(l, LAYER_KIND_CONV2D, name, in_h, in_w, in_c, out_h, out_w, out_c);
    l->kh = l->kw = k;
    l->pad = pad;
    l->stride = stride;
    l->weight_count = (size_t)out_c * k * k * in_c;
    l->bias_count = bias ? (size_t)out_c : 0;
}

void layer_init_batchnorm(layer *l, const char *name, int h, int w, int c) {
    set_shape(l, LAYER_KIND_BATCHNORM, name, h, w, c, h, w, c);
    l->weight_count = l->bias_count = (size_t)c;
    l->buffer_count = 2 * (size_t)c;
    l->bn_momentum = 0.1f;
    l->bn_eps = 1e-5f;
    l->training = 1;
}

void layer_init_add(layer *l, const char *name, int h, int w, int c, int skip_h, int skip_w,
                    int skip_c, int stride) {
    SS_ASSERT(stride >= 1 && skip_c <= c && (c - skip_c) % 2 == 0 &&
              (skip_h + stride - 1) / stride == h && (skip_w + stride - 1) / stride == w);
    set_shape(l, LAYER_KIND_ADD, name, h, w, c, h, w, c);
    shortcut_geom sc = {.in_h = skip_h,
                        .in_w = skip_w,
                        .in_c = skip_c,
                        .out_h = h,
                        .out_w = w,
                        .out_c = c,
                        .stride = stride,
                        .c_lo = (c - skip_c) / 2};
    l->sc = sc;
}

void layer_init_avgpool(layer *l, const char *name, int h, int w, int c) {
    set_shape(l, LAYER_KIND_AVGPOOL, name, h, w, c, 1, 1, c);
}

size_t layer_skip_size(const layer *l) {
    return (size_t)l->sc.in_h * l->sc.in_w * l->sc.in_c;
}

void layer_init_maxpool2(layer *l, const char *name, int in_h, int in_w, int in_c) {
    SS_ASSERT(in_h >= 2 && in_w >= 2);
    set_shape(l, LAYER_KIND_MAXPOOL2, name, in_h, in_w, in_c, in_h / 2, in_w / 2, in_c);
}

void layer_init_relu(layer *l, const char *name, int h, int w, int c) {
    set_shape(l, LAYER_KIND_RELU, name, h, w, c, h, w, c);
}

void layer_init_flatten(layer *l, const char *name, int h, int w, int c) {
    set_shape(l, LAYER_KIND_FLATTEN, name, h, w, c, 1, 1, h * w * c);
}

void layer_fuse_relu(layer *layers, int n) {
    for (int i = 0; i + 2 < n; i++) {
        layer *conv = &layers[i], *relu = &layers[i + 1], *pool = &layers[i + 2];
        if (conv->kind != LAYER_KIND_CONV2D || relu->kind != LAYER_KIND_RELU ||
            pool->kind != LAYER_KIND_MAXPOOL2)
            continue;
        conv->relu_in_epilogue = 1;
        relu->is_view = 1;
        pool->relu_mask_bwd = 1;
    }
}

int layer_is_view(const layer *l) {
    return l->kind == LAYER_KIND_FLATTEN || l->is_view;
}

size_t layer_in_size(const layer *l) {
    return (size_t)l->in_h * l->in_w * l->in_c;
}

size_t layer_out_size(const layer *l) {
    return (size_t)l->out_h * l->out_w * l->out_c;
}

size_t layer_bind(layer *l, float *params, float *grads, size_t offset) {
    if (!l->weight_count) return 0;
    l->w = params + offset;
    l->dw = grads + offset;
    l->b = l->bias_count ? l->w + l->weight_count : NULL;
    l->db = l->bias_count ? l->dw + l->weight_count : NULL;
    return l->weight_count + l->bias_count;
}

size_t layer_bind_buffers(layer *l, float *buffers, size_t offset) {
    if (!l->buffer_count) return 0;
    l->run_mean = buffers + offset;
    l->run_var = l->run_mean + l->out_c;
    return l->buffer_count;
}

void layer_init_params(const layer *l, rng *r, float *host_w, float *host_b) {
    if (!l->weight_count) return;
    if (l->kind == LAYER_KIND_BATCHNORM) {
        for (size_t i = 0; i < l->weight_count; i++)
            host_w[i] = 1.0f;
        memset(host_b, 0, l->bias_count * sizeof(float));
        return;
    }
    size_t fan_in = l->weight_count / (size_t)l->out_c;
    double bound = sqrt(6.0 / (double)fan_in);
    for (size_t i = 0; i < l->weight_count; i++)
        host_w[i] = (float)((2.0 * rng_uniform(r) - 1.0) * bound);
    if (l->bias_count) memset(host_b, 0, l->bias_count * sizeof(float));
}

void layer_init_buffers(const layer *l, float *host_buf) {
    for (size_t i = 0; i < l->buffer_count; i++)
        host_buf[i] = i < l->buffer_count / 2 ? 0.0f : 1.0f;
}

static conv_geom conv_geom_of(const layer *l, int batch) {
    conv_geom g = {.batch = batch,
                   .in_h = l->in_h,
                   .in_w = l->in_w,
                   .in_c = l->in_c,
                   .out_h = l->out_h,
                   .out_w = l->out_w,
                   .kh = l->kh,
                   .kw = l->kw,
                   .pad = l->pad,
                   .stride = l->stride};
    return g;
}

int layer_conv_chunk_samples(const layer *l, device_kind kind) {
    size_t budget = kind == DEVICE_KIND_CPU ? LAYER_CONV_COL_BYTES_CPU : LAYER_CONV_COL_BYTES_GPU;
    size_t per_sample = (size_t)l->out_h * l->out_w * l->kh * l->kw * l->in_c * sizeof(float);
    size_t n = budget / per_sample;
    return n < 1 ? 1 : n > (1u << 20) ? 1 << 20 : (int)n;
}

static void layer_alloc_scratch_of(device *dev, layer *l, int max_batch, layer_col_buf *shared);

void layer_alloc_scratch(device *dev, layer *l, int max_batch) {
    layer_alloc_scratch_in(dev, l, max_batch, NULL);
}

/* floats holding a bn_pool_fused batch norm's codes for max_batch samples (a byte each) */
static size_t pool_code_floats(const layer *l, int max_batch) {
    const size_t bytes =
        (size_t)max_batch * (size_t)(l->out_h / 2) * (size_t)(l->out_w / 2) * (size_t)l->out_c;
    return (bytes + sizeof(float) - 1) / sizeof(float);
}

void layer_alloc_scratch_in(device *dev, layer *l, int max_batch, layer_col_buf *shared) {
    layer_alloc_scratch_of(dev, l, max_batch, shared);
    l->scratch_floats = 0;
    if (l->kind == LAYER_KIND_BATCHNORM) l->scratch_floats = 2 * (size_t)l->out_c;
    if (l->bn_pool_fused || l->pool_fused) l->scratch_floats += pool_code_floats(l, max_batch);
    if (l->kind != LAYER_KIND_CONV2D) return;
    if (l->nobias) l->scratch_floats += 2 * (size_t)l->out_c;
    if (l->colbuf == &l->own_col) l->scratch_floats += l->own_col.floats;
}

static void layer_alloc_scratch_of(device *dev, layer *l, int max_batch, layer_col_buf *shared) {
    if (l->kind == LAYER_KIND_BATCHNORM) l->save = device_alloc(dev, 2 * (size_t)l->out_c);
    if (l->bn_pool_fused)
        l->pool_codes = (uint8_t *)device_alloc(dev, pool_code_floats(l, max_batch));
    if (l->kind != LAYER_KIND_CONV2D) return;
    conv_geom g = conv_geom_of(l, max_batch);
    size_t floats = 0;
    if (!l->conv_im2col_only && dev->ops->conv_direct_floats)
        floats = dev->ops->conv_direct_floats(dev, &g, l->out_c, l->need_dx);
    l->conv_direct = floats > 0;
    l->pool_fused = l->conv_direct && l->relu_in_epilogue; /* a fused ReLU has a max-pool after */
    l->col_samples = 0;
    if (l->conv_direct) {
        if (!l->bias_count) l->nobias = device_alloc(dev, 2 * (size_t)l->out_c);
        /* the pooling's choices, from the forward pass to the backward pass */
        if (l->pool_fused)
            l->pool_codes = (uint8_t *)device_alloc(dev, pool_code_floats(l, max_batch));
    } else {
        int chunk = layer_conv_chunk_samples(l, device_get_kind(dev));
        l->col_samples = max_batch < chunk ? max_batch : chunk;
        floats = (size_t)l->col_samples * l->out_h * l->out_w * l->kh * l->kw * l->in_c;
    }
    /* the workspace or column buffer: nothing in it outlives a pass */
    memset(&l->own_col, 0, sizeof l->own_col);
    l->colbuf = shared ? shared : &l->own_col;
    if (!shared) l->own_col.col = device_alloc(dev, floats);
    if (floats > l->colbuf->floats) l->colbuf->floats = floats;
}

void layer_free_scratch(device *dev, layer *l) {
    device_free(dev, l->own_col.col);
    device_free(dev, l->nobias);
    device_free(dev, l->save);
    device_free(dev, (float *)l->pool_codes);
    l->own_col.col = l->nobias = l->save = NULL;
    l->pool_codes = NULL;
    l->colbuf = NULL;
}

/* ---- dense: y (B, out) = x (B, in) W^T + b ---- */

static void dense_forward(device *dev, layer *l, int batch, const float *x, float *y) {
    int in = l->in_c, out = l->out_c;
    dev->ops->gemm(dev, 0, 1, batch, out, in, 1.0f, x, in, l->w, in, 0.0f, y, out);
    dev->ops->bias_add(dev, batch, out, l->b, y);
}

static void dense_backward(device *dev, layer *l, int batch, const float *x, const float *y,
                           const float *dy, float *dx) {
    (void)y;
    int in = l->in_c, out = l->out_c;
    /* dW (out, in) = dy^T (out, B) x (B, in) */
    dev->ops->gemm(dev, 1, 0, out, in, batch, 1.0f, dy, out, x, in, 0.0f, l->dw, in);
    dev->ops->bias_grad(dev, batch, out, dy, 0.0f, l->db);
    /* dx (B, in) = dy (B, out) W (out, in) */
    if (l->need_dx)
        dev->ops->gemm(dev, 0, 0, batch, in, out, 1.0f, dy, out, l->w, in, 0.0f, dx, in);
}

static double dense_forward_flops(const layer *l) {
    return 2.0 * l->in_c * l->out_c + l->out_c;
}

static double dense_backward_flops(const layer *l) {
    double gemm = 2.0 * l->in_c * l->out_c;
    return gemm + l->out_c + (l->need_dx ? gemm : 0.0);
}

/* ---- conv2d: im2col over a chunk of samples, then one GEMM with M = samples * out_h*out_w ----
 * y (B*P, OC) = col (B*P, KKC) W^T (KKC, OC), with P = out_h*out_w and KKC = kh*kw*in_c. */

/* A direct convolution's workspace: the column buffer (its own or the model's), whose columns it
 * overwrites: none of them is left for a later pass to reuse. */
static float *direct_ws(layer *l) {
    l->colbuf->owner = NULL;
    return l->colbuf->col;
}

static void conv_forward(device *dev, layer *l, int batch, const float *x, float *y) {
    const int p = l->out_h * l->out_w, kkc = l->kh * l->kw * l->in_c, oc = l->out_c;
    const size_t in_size = layer_in_size(l), out_size = layer_out_size(l);
    if (l->conv_direct) {
        conv_geom g = conv_geom_of(l, batch);
        const float *bias = l->b ? l->b : l->nobias;
        dev->ops->conv_fwd(dev, &g, oc, x, l->w, bias, l->relu_in_epilogue, direct_ws(l), NULL, y,
                           NULL);
        return;
    }
    layer_col_buf *cb = l->colbuf;
    conv_geom whole = conv_geom_of(l, batch);
    if (!l->conv_im2col_only && dev->ops->conv_implicit &&
        dev->ops->conv_implicit(dev, &whole, oc, x, l->w, y, l->conv_implicit_always)) {
        /* the whole batch without columns */
    } else {
        for (int s0 = 0; s0 < batch; s0 += l->col_samples) {
            int nb = batch - s0 < l->col_samples ? batch - s0 : l->col_samples;
            conv_geom g = conv_geom_of(l, nb);
            dev->ops->im2col(dev, &g, x + s0 * in_size, cb->col);
            dev->ops->gemm(dev, 0, 1, nb * p, oc, kkc, 1.0f, cb->col, kkc, l->w, kkc, 0.0f,
                           y + s0 * out_size, oc);
            cb->owner = l;
            cb->src = x + s0 * in_size;
            cb->count = nb;
        }
    }
    if (!l->b) {
        SS_ASSERT(!l->relu_in_epilogue);
    } else if (!l->relu_in_epilogue) {
        dev->ops->bias_add(dev, batch * p, oc, l->b, y);
    } else if (dev->ops->bias_relu) {
        dev->ops->bias_relu(dev, batch * p, oc, l->b, y);
    } else {
        dev->ops->bias_add(dev, batch * p, oc, l->b, y);
        dev->ops->relu_fwd(dev, (size_t)batch * out_size, y, y);
    }
}

/* Chunks from the last to the first: the column buffer still holds the forward pass's last
 * chunk, whose im2col is then skipped (the whole batch when it fits one chunk). Each chunk's
 * columns serve the weight gradient right after they are formed, while they are in cache; the
 * same buffer then receives the column gradient. */
static void conv_backward(device *dev, layer *l, int batch, const float *x, const float *y,
                          const float *dy, float *dx) {
    (void)y;
    const int p = l->out_h * l->out_w, kkc = l->kh * l->kw * l->in_c, oc = l->out_c;
    const size_t in_size = layer_in_size(l), out_size = layer_out_size(l);
    if (l->conv_direct) {
        conv_geom g = conv_geom_of(l, batch);
        float *db = l->db ? l->db : l->nobias + oc;
        dev->ops->conv_bwd(dev, &g, oc, x, y, dy, NULL, l->w, direct_ws(l), NULL, l->dw, db,
                           l->need_dx ? dx : NULL);
        return;
    }
    layer_col_buf *cb = l->colbuf;
    /* the input and weight gradients of the whole batch without columns, where the device takes
     * them; the chunks then form only the columns the other one needs (none when both are done) */
    conv_geom whole = conv_geom_of(l, batch);
    const int dx_done =
        l->need_dx && !l->conv_im2col_only && dev->ops->conv_implicit_dx &&
        dev->ops->conv_implicit_dx(dev, &whole, oc, dy, l->w, dx, l->conv_implicit_always);
    const int dw_done =
        !l->conv_im2col_only && dev->ops->conv_implicit_dw &&
        dev->ops->conv_implicit_dw(dev, &whole, oc, x, dy, l->dw, l->conv_implicit_always);
    const int last = (batch - 1) / l->col_samples * l->col_samples;
    for (int s0 = last; s0 >= 0 && !(dw_done && (dx_done || !l->need_dx)); s0 -= l->col_samples) {
        int nb = batch - s0 < l->col_samples ? batch - s0 : l->col_samples;
        conv_geom g = conv_geom_of(l, nb);
        const float *dyc = dy + s0 * out_size, *xc = x + s0 * in_size;
        if (!dw_done) {
            if (cb->owner != l || cb->src != xc || cb->count != nb)
                dev->ops->im2col(dev, &g, xc, cb->col);
            /* dW (OC, KKC) (+)= dy^T (OC, nb*P) col (nb*P, KKC) */
            dev->ops->gemm(dev, 1, 0, oc, kkc, nb * p, 1.0f, dyc, oc, cb->col, kkc,
                           s0 == last ? 0.0f : 1.0f, l->dw, kkc);
        }
        if (l->need_dx && !dx_done) {
            /* dcol (nb*P, KKC) = dy (nb*P, OC) W (OC, KKC), into the column buffer */
            dev->ops->gemm(dev, 0, 0, nb * p, kkc, oc, 1.0f, dyc, oc, l->w, kkc, 0.0f, cb->col,
                           kkc);
            dev->ops->col2im(dev, &g, cb->col, dx + s0 * in_size);
        }
        cb->owner = NULL;
    }
    if (l->db) dev->ops->bias_grad(dev, batch * p, oc, dy, 0.0f, l->db);
}

static double conv_forward_flops(const layer *l) {
    double p = (double)l->out_h * l->out_w, kkc = (double)l->kh * l->kw * l->in_c;
    return 2.0 * p * kkc * l->out_c + (l->bias_count ? p * l->out_c : 0.0);
}

static double conv_backward_flops(const layer *l) {
    double p = (double)l->out_h * l->out_w, kkc = (double)l->kh * l->kw * l->in_c;
    double gemm = 2.0 * p * kkc * l->out_c;
    return gemm + (l->bias_count ? p * l->out_c : 0.0) + (l->need_dx ? gemm + p * kkc : 0.0);
}

/* conv -> ReLU -> max-pool as one block (pool_fused): sample by sample, the pooling reads the
 * conv's output, and the conv's backward pass forms its output gradient, while the sample is in
 * cache; pool_y and pool_dy are the pooling's output and output gradient (layers.h). */
void layer_conv_pool_forward(device *dev, layer *conv, int batch, const float *x, float *y,
                             float *pool_y) {
    SS_ASSERT(conv->pool_fused);
    conv_geom g = conv_geom_of(conv, batch);
    dev->ops->conv_fwd(dev, &g, conv->out_c, x, conv->w, conv->b, 1, direct_ws(conv),
                       conv->pool_codes, y, pool_y);
}

void layer_conv_pool_backward(device *dev, layer *conv, int batch, const float *x, const float *y,
                              const float *pool_dy, float *dx) {
    SS_ASSERT(conv->pool_fused);
    conv_geom g = conv_geom_of(conv, batch);
    dev->ops->conv_bwd(dev, &g, conv->out_c, x, y, NULL, pool_dy, conv->w, direct_ws(conv),
                       conv->pool_codes, conv->dw, conv->db, conv->need_dx ? dx : NULL);
}

/* ---- 2x2 max pooling ---- */

static void maxpool_forward(device *dev, layer *l, int batch, const float *x, float *y) {
    dev->ops->maxpool_fwd(dev, batch, l->in_h, l->in_w, l->in_c, x, y);
}

static void maxpool_backward(device *dev, layer *l, int batch, const float *x, const float *y,
                             const float *dy, float *dx) {
    (void)y;
    if (!l->need_dx) return;
    if (l->relu_mask_bwd && dev->ops->maxpool_relu_bwd) {
        dev->ops->maxpool_relu_bwd(dev, batch, l->in_h, l->in_w, l->in_c, x, dy, dx);
        return;
    }
    dev->ops->maxpool_bwd(dev, batch, l->in_h, l->in_w, l->in_c, x, dy, dx);
    /* x is the ReLU's output: its backward pass, in place */
    if (l->relu_mask_bwd) dev->ops->relu_bwd(dev, (size_t)batch * layer_in_size(l), x, dx, dx);
}

static double maxpool_flops(const layer *l) {
    return 3.0 * (double)layer_out_size(l);
}

/* ---- ReLU ---- */

static void relu_forward(device *dev, layer *l, int batch, const float *x, float *y) {
    if (l->is_view) return; /* the conv, batch norm or add before applied it */
    dev->ops->relu_fwd(dev, (size_t)batch * layer_in_size(l), x, y);
}

static void relu_backward(device *dev, layer *l, int batch, const float *x, const float *y,
                          const float *dy, float *dx) {
    (void)x;
    /* a view: the pooling after, or the batch norm or add before, applies the mask */
    if (l->is_view) return;
    if (l->need_dx) dev->ops->relu_bwd(dev, (size_t)batch * layer_in_size(l), y, dy, dx);
}

static double relu_flops(const layer *l) {
    return (double)layer_in_size(l);
}

/* ---- batch normalization: per channel over the batch's B*H*W rows ---- */

static void bn_forward(device *dev, layer *l, int batch, const float *x, float *y) {
    const int rows = batch * l->in_h * l->in_w, c = l->in_c;
    if (l->relu_in_epilogue && l->training)
        dev->ops->bn_fwd_train_act(dev, rows, c, x, l->w, l->b, l->bn_momentum, l->bn_eps,
                                   l->run_mean, l->run_var, l->save, l->save + c, 1, y);
    else if (l->relu_in_epilogue)
        dev->ops->bn_fwd_infer_act(dev, rows, c, x, l->w, l->b, l->run_mean, l->run_var, l->bn_eps,
                                   1, y);
    else if (l->training)
        dev->ops->bn_fwd_train(dev, rows, c, x, l->w, l->b, l->bn_momentum, l->bn_eps, l->run_mean,
                               l->run_var, l->save, l->save + c, y);
    else
        dev->ops->bn_fwd_infer(dev, rows, c, x, l->w, l->b, l->run_mean, l->run_var, l->bn_eps, y);
}

static void bn_backward(device *dev, layer *l, int batch, const float *x, const float *y,
                        const float *dy, float *dx) {
    SS_ASSERT(l->training);
    const int rows = batch * l->in_h * l->in_w, c = l->in_c;
    if (l->relu_in_epilogue) /* dy is the fused ReLU's: masked by its output y */
        dev->ops->bn_bwd_masked(dev, rows, c, x, dy, y, l->w, l->save, l->save + c, l->dw, l->db,
                                l->need_dx ? dx : NULL);
    else
        dev->ops->bn_bwd(dev, rows, c, x, dy, l->w, l->save, l->save + c, l->dw, l->db,
                         l->need_dx ? dx : NULL);
}

void layer_bn_pool_forward(device *dev, layer *bn, int batch, const float *x, float *pool_y) {
    SS_ASSERT(bn->bn_pool_fused);
    const int h = bn->in_h, w = bn->in_w, c = bn->in_c;
    if (bn->training)
        dev->ops->bn_pool_fwd_train(dev, batch, h, w, c, x, bn->w, bn->b, bn->bn_momentum,
                                    bn->bn_eps, bn->run_mean, bn->run_var, bn->save, bn->save + c,
                                    pool_y, bn->pool_codes);
    else
        dev->ops->bn_pool_fwd_infer(dev, batch, h, w, c, x, bn->w, bn->b, bn->run_mean, bn->run_var,
                                    bn->bn_eps, pool_y);
}

void layer_bn_pool_backward(device *dev, layer *bn, int batch, const float *x, const float *pool_dy,
                            float *dx) {
    SS_ASSERT(bn->bn_pool_fused && bn->training);
    const int c = bn->in_c;
    dev->ops->bn_pool_bwd(dev, batch, bn->in_h, bn->in_w, c, x, pool_dy, bn->pool_codes, bn->w,
                          bn->save, bn->save + c, bn->dw, bn->db, bn->need_dx ? dx : NULL);
}

static double bn_forward_flops(const layer *l) {
    return 6.0 * (double)layer_in_size(l);
}

static double bn_backward_flops(const layer *l) {
    return (l->need_dx ? 11.0 : 5.0) * (double)layer_in_size(l);
}

/* ---- residual add: y = x + shortcut(skip) ---- */

static shortcut_geom shortcut_of(const layer *l, int batch) {
    shortcut_geom g = l->sc;
    g.batch = batch;
    return g;
}

static void add_forward(device *dev, layer *l, int batch, const float *x, float *y) {
    shortcut_geom g = shortcut_of(l, batch);
    if (dev->ops->add_fwd) {
        dev->ops->add_fwd(dev, &g, x, l->skip_act, l->relu_in_epilogue, y);
        return;
    }
    SS_ASSERT(!l->relu_in_epilogue);
    device_copy(dev, y, x, (size_t)batch * layer_in_size(l));
    dev->ops->shortcut_fwd(dev, &g, l->skip_act, y);
}

/* dx = dy, or with a fused ReLU dy where the output y is positive (the skip's gradient is the
 * same: model.c passes it on) */
static void add_backward(device *dev, layer *l, int batch, const float *x, const float *y,
                         const float *dy, float *dx) {
    (void)x;
    if (!l->need_dx) return;
    if (l->relu_in_epilogue)
        dev->ops->relu_bwd(dev, (size_t)batch * layer_in_size(l), y, dy, dx);
    else
        device_copy(dev, dx, dy, (size_t)batch * layer_in_size(l));
}

void layer_add_skip_backward(device *dev, layer *l, int batch, const float *dy, float *dskip) {
    SS_ASSERT(l->kind == LAYER_KIND_ADD);
    shortcut_geom g = shortcut_of(l, batch);
    dev->ops->shortcut_bwd(dev, &g, dy, dskip);
}

static double add_forward_flops(const layer *l) {
    return (double)l->out_h * l->out_w * l->sc.in_c;
}

/* ---- global average pooling ---- */

static void avgpool_forward(device *dev, layer *l, int batch, const float *x, float *y) {
    dev->ops->avgpool_fwd(dev, batch, l->in_h * l->in_w, l->in_c, x, y);
}

static void avgpool_backward(device *dev, layer *l, int batch, const float *x, const float *y,
                             const float *dy, float *dx) {
    (void)x, (void)y;
    if (l->need_dx) dev->ops->avgpool_bwd(dev, batch, l->in_h * l->in_w, l->in_c, dy, dx);
}

static double avgpool_forward_flops(const layer *l) {
    return (double)(layer_in_size(l) + layer_out_size(l));
}

static double avgpool_backward_flops(const layer *l) {
    return (double)layer_in_size(l);
}

/* ---- flatten: NHWC samples are already rows; the model lets input and output alias ---- */

static void flatten_forward(device *dev, layer *l, int batch, const float *x, float *y) {
    device_copy(dev, y, x, (size_t)batch * layer_in_size(l));
}

static void flatten_backward(device *dev, layer *l, int batch, const float *x, const float *y,
                             const float *dy, float *dx) {
    (void)x, (void)y;
    if (l->need_dx) device_copy(dev, dx, dy, (size_t)batch * layer_in_size(l));
}

static double no_flops(const layer *l) {
    (void)l;
    return 0.0;
}

static const layer_kind_ops layer_kinds[LAYER_KIND_COUNT] = {
    [LAYER_KIND_DENSE] = {"dense", dense_forward, dense_backward, dense_forward_flops,
                          dense_backward_flops},
    [LAYER_KIND_CONV2D] = {"conv2d", conv_forward, conv_backward, conv_forward_flops,
                           conv_backward_flops},
    [LAYER_KIND_MAXPOOL2] = {"maxpool2", maxpool_forward, maxpool_backward, maxpool_flops,
                             maxpool_flops},
    [LAYER_KIND_RELU] = {"relu", relu_forward, relu_backward, relu_flops, relu_flops},
    [LAYER_KIND_FLATTEN] = {"flatten", flatten_forward, flatten_backward, no_flops, no_flops},
    [LAYER_KIND_BATCHNORM] = {"batchnorm", bn_forward, bn_backward, bn_forward_flops,
                              bn_backward_flops},
    [LAYER_KIND_ADD] = {"add", add_forward, add_backward, add_forward_flops, no_flops},
    [LAYER_KIND_AVGPOOL] = {"avgpool", avgpool_forward, avgpool_backward, avgpool_forward_flops,
                            avgpool_backward_flops},
};

void layer_forward(device *dev, layer *l, int batch, const float *x, float *y) {
    layer_kinds[l->kind].forward(dev, l, batch, x, y);
}

void layer_backward(device *dev, layer *l, int batch, const float *x, const float *y,
                    const float *dy, float *dx) {
    layer_kinds[l->kind].backward(dev, l, batch, x, y, dy, dx);
}

double layer_forward_flops(const layer *l) {
    return layer_kinds[l->kind].forward_flops(l);
}

double layer_backward_flops(const layer *l) {
    double f = layer_kinds[l->kind].backward_flops(l);
    /* ReLU and pooling have no parameters: without an input gradient they do nothing */
    if (!l->need_dx && !l->weight_count) return 0.0;
    if (l->need_dx && l->accum_dx) f += (double)layer_in_size(l);
    return f;
}

double loss_forward_flops(int classes) {
    return 4.0 * classes;
}

double loss_backward_flops(int classes) {
    return 2.0 * classes;
}

/* ---- memory traffic and launches (read only; for the GPU compute model) ---- */

double layer_forward_bytes(const layer *l) {
    if (l->kind == LAYER_KIND_FLATTEN) return 0;
    double skip = l->kind == LAYER_KIND_ADD ? (double)layer_skip_size(l) : 0.0;
    return 4.0 * ((double)(layer_in_size(l) + layer_out_size(l)) + skip);
}

double layer_backward_bytes(const layer *l) {
    if (l->kind == LAYER_KIND_FLATTEN) return 0;
    /* read dy and the saved input (relu/maxpool: their output or argmax), write dx; an add
     * writes the skip's gradient instead of reading an input */
    double in = (double)layer_in_size(l), out = (double)layer_out_size(l);
    if (l->kind == LAYER_KIND_ADD) return 4.0 * (out + (l->need_dx ? in : 0) + layer_skip_size(l));
    return 4.0 * (out + in + (l->need_dx ? in : 0) + (l->need_dx && l->accum_dx ? 2 * in : 0));
}

int layer_forward_kernels(const layer *l) {
    switch (l->kind) {
    case LAYER_KIND_DENSE:
        return 2;
    case LAYER_KIND_CONV2D:
        return l->bias_count ? 3 : 2;
    case LAYER_KIND_BATCHNORM:
    case LAYER_KIND_ADD:
        return 2;
    case LAYER_KIND_FLATTEN:
        return 0;
    default:
        return 1;
    }
}

int layer_backward_kernels(const layer *l) {
    const int accum = l->need_dx && l->accum_dx;
    switch (l->kind) {
    case LAYER_KIND_DENSE:
        return (l->need_dx ? 3 : 2) + accum;
    case LAYER_KIND_CONV2D:
        return (l->need_dx ? 4 : 2) - (l->bias_count ? 0 : 1) + accum;
    case LAYER_KIND_BATCHNORM:
    case LAYER_KIND_ADD:
        return 2 + accum;
    case LAYER_KIND_FLATTEN:
        return 0;
    default:
        return 1 + accum;
    }
}
