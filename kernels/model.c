/* Models: a layer list, one flat parameter vector and one flat gradient vector on the device
 * (each layer's weight and bias are views into them, llm.c's malloc_and_point_parameters), and
 * one activation buffer per layer boundary sized for max_batch samples. */
#include "kernels/model.h"

#include "common/rng.h"
#include "common/status.h"
#include "kernels/layers.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct model {
    device *dev;
    model_spec spec;
    int max_batch;
    int n_layers;
    layer layers[MODEL_MAX_LAYERS];
    size_t n_params; /* P */
    float *params;   /* (P) */
    float *grads;    /* (P) */
    int n_views;
    model_view views[2 * MODEL_MAX_LAYERS];
    float *act[MODEL_MAX_LAYERS + 1];     /* act[i] (max_batch, in_size of layer i); last: logits */
    float *dact[MODEL_MAX_LAYERS + 1];    /* dact[i]: d(loss)/d(act[i]); dact[0] unused */
    int owns_act[MODEL_MAX_LAYERS + 1];   /* 0 where a view (flatten, fused ReLU) made act[i]
                                             alias act[i-1] */
    float *host_nhwc;                     /* (max_batch, D) staging to reorder CHW input, or NULL */
    double forward_flops, backward_flops; /* per sample */
};

static const char *const arch_names[] = {"logreg", "mlp", "cnn"};

const char *model_arch_name(model_arch arch) {
    return (unsigned)arch < 3 ? arch_names[arch] : "unknown";
}

void model_spec_default(model_spec *spec, model_arch arch, int in_c, int in_h, int in_w,
                        int classes) {
    memset(spec, 0, sizeof *spec);
    spec->arch = arch;
    spec->in_c = in_c, spec->in_h = in_h, spec->in_w = in_w;
    spec->classes = classes;
    spec->n_hidden = 2;
    spec->hidden[0] = spec->hidden[1] = 256;
    spec->conv_channels[0] = 32;
    spec->conv_channels[1] = 64;
    spec->cnn_dense = 128;
}

int model_spec_parse(model_spec *spec, const char *text, int in_c, int in_h, int in_w,
                     int classes) {
    static const char *const valid = "valid: logreg, mlp, mlp:W1,W2,... (hidden widths), cnn";
    const char *colon = strchr(text, ':');
    size_t name_len = colon ? (size_t)(colon - text) : strlen(text);
    for (int a = 0; a < 3; a++) {
        if (strlen(arch_names[a]) != name_len || strncmp(text, arch_names[a], name_len)) continue;
        model_spec_default(spec, (model_arch)a, in_c, in_h, in_w, classes);
        if (!colon) return SS_OK;
        if (a != MODEL_ARCH_MLP)
            return ss_error_set(SS_EUSAGE, "model '%s' takes no options (%s)", text, valid);
        const char *p = colon + 1;
        spec->n_hidden = 0;
        for (;;) {
            char *end;
            errno = 0;
            long w = strtol(p, &end, 10);
            if (end == p || errno || w < 1 || w > 1 << 20 || (*end && *end != ','))
                return ss_error_set(SS_EUSAGE, "model '%s': bad hidden width at '%s' (%s)", text, p,
                                    valid);
            if (spec->n_hidden == MODEL_MAX_HIDDEN)
                return ss_error_set(SS_EUSAGE, "model '%s': at most %d hidden layers", text,
                                    MODEL_MAX_HIDDEN);
            spec->hidden[spec->n_hidden++] = (int)w;
            if (!*end) break;
            p = end + 1;
        }
        return SS_OK;
    }
    return ss_error_set(SS_EUSAGE, "unknown model '%s' (%s)", text, valid);
}

static layer *add_layer(model *m) {
    SS_ASSERT(m->n_layers < MODEL_MAX_LAYERS);
    return &m->layers[m->n_layers++];
}

static void name_layer(char *out, size_t size, const char *kind, int index) {
    snprintf(out, size, "%.8s%d", kind, index % 1000);
}

/* Builds the layer list of the spec; returns SS_EUSAGE for shapes it cannot take. */
static int build_layers(model *m) {
    const model_spec *s = &m->spec;
    const int d = s->in_c * s->in_h * s->in_w, k = s->classes;
    char name[16];
    if (s->arch == MODEL_ARCH_LOGREG) {
        layer_init_dense(add_layer(m), "dense1", d, k);
    } else if (s->arch == MODEL_ARCH_MLP) {
        int in = d;
        for (int i = 0; i < s->n_hidden; i++) {
            name_layer(name, sizeof name, "dense", i + 1);
            layer_init_dense(add_layer(m), name, in, s->hidden[i]);
            name_layer(name, sizeof name, "relu", i + 1);
            layer_init_relu(add_layer(m), name, 1, 1, s->hidden[i]);
            in = s->hidden[i];
        }
        name_layer(name, sizeof name, "dense", s->n_hidden + 1);
        layer_init_dense(add_layer(m), name, in, k);
    } else if (s->arch == MODEL_ARCH_CNN) {
        /* "same" padding (2 for 5x5) keeps 28x28 -> 28 -> 14 -> 14 -> 7: the second conv, which
         * holds most of the FLOPs, is one large GEMM per chunk (M = samples*196, K = 800). */
        int h = s->in_h, w = s->in_w, c = s->in_c;
        for (int i = 0; i < 2; i++) {
            if (h < 2 || w < 2)
                return ss_error_set(SS_EUSAGE, "cnn: input %dx%d too small for two conv blocks",
                                    s->in_h, s->in_w);
            name_layer(name, sizeof name, "conv", i + 1);
            layer_init_conv2d(add_layer(m), name, h, w, c, s->conv_channels[i], 5, 2);
            c = s->conv_channels[i];
            name_layer(name, sizeof name, "relu", i + 1);
            layer_init_relu(add_layer(m), name, h, w, c);
            name_layer(name, sizeof name, "pool", i + 1);
            layer_init_maxpool2(add_layer(m), name, h, w, c);
            h /= 2, w /= 2;
        }
        if (h < 1 || w < 1) return ss_error_set(SS_EUSAGE, "cnn: input too small");
        layer_init_flatten(add_layer(m), "flatten", h, w, c);
        layer_init_dense(add_layer(m), "dense1", h * w * c, s->cnn_dense);
        layer_init_relu(add_layer(m), "relu3", 1, 1, s->cnn_dense);
        layer_init_dense(add_layer(m), "dense2", s->cnn_dense, k);
    } else {
        return ss_error_set(SS_EUSAGE, "unknown model architecture %d", (int)s->arch);
    }
    m->layers[0].need_dx = 0;
    layer_fuse_relu(m->layers, m->n_layers);
    return SS_OK;
}

/* The spec's shapes: SS_OK, or SS_EUSAGE naming what is wrong. */
static int spec_check(const model_spec *spec, int max_batch) {
    if (spec->in_c < 1 || spec->in_h < 1 || spec->in_w < 1 || spec->classes < 2 ||
        spec->classes > 256 || max_batch < 1)
        return ss_error_set(SS_EUSAGE,
                            "model: bad shape (input %dx%dx%d, %d classes, max batch %d)",
                            spec->in_c, spec->in_h, spec->in_w, spec->classes, max_batch);
    if (spec->arch == MODEL_ARCH_MLP) {
        if (spec->n_hidden < 0 || spec->n_hidden > MODEL_MAX_HIDDEN)
            return ss_error_set(SS_EUSAGE, "mlp: %d hidden layers (at most %d)", spec->n_hidden,
                                MODEL_MAX_HIDDEN);
        for (int i = 0; i < spec->n_hidden; i++)
            if (spec->hidden[i] < 1)
                return ss_error_set(SS_EUSAGE, "mlp: hidden width %d must be positive",
                                    spec->hidden[i]);
    }
    if (spec->arch == MODEL_ARCH_CNN &&
        (spec->conv_channels[0] < 1 || spec->conv_channels[1] < 1 || spec->cnn_dense < 1))
        return ss_error_set(SS_EUSAGE, "cnn: channels %d, %d and dense width %d must be positive",
                            spec->conv_channels[0], spec->conv_channels[1], spec->cnn_dense);
    return SS_OK;
}

int model_create(device *dev, const model_spec *spec, uint64_t seed, int max_batch, model **out) {
    SS_ASSERT(dev && spec && out);
    *out = NULL;
    int status = spec_check(spec, max_batch);
    if (status != SS_OK) return status;
    model *m = ss_calloc(1, sizeof *m);
    m->dev = dev;
    m->spec = *spec;
    m->max_batch = max_batch;
    status = build_layers(m);
    if (status != SS_OK) {
        free(m);
        return status;
    }

    for (int i = 0; i < m->n_layers; i++)
        m->n_params += m->layers[i].weight_count + m->layers[i].bias_count;
    m->params = device_alloc(dev, m->n_params);
    m->grads = device_alloc(dev, m->n_params);

    /* views, then the initial values drawn in view order from one stream of the seed */
    float *host = ss_malloc(m->n_params * sizeof(float));
    rng r;
    rng_seed(&r, seed, RNG_STREAM_INIT);
    size_t offset = 0;
    for (int i = 0; i < m->n_layers; i++) {
        layer *l = &m->layers[i];
        if (!l->weight_count) continue;
        model_view *vw = &m->views[m->n_views++], *vb = &m->views[m->n_views++];
        snprintf(vw->name, sizeof vw->name, "%s.weight", l->name);
        snprintf(vb->name, sizeof vb->name, "%s.bias", l->name);
        vw->offset = offset, vw->count = l->weight_count;
        vb->offset = offset + l->weight_count, vb->count = l->bias_count;
        layer_init_params(l, &r, host + vw->offset, host + vb->offset);
        offset += layer_bind(l, m->params, m->grads, offset);
    }
    device_upload(dev, m->params, host, m->n_params);
    free(host);

    for (int i = 0; i <= m->n_layers; i++) {
        const layer *l = &m->layers[i < m->n_layers ? i : m->n_layers - 1];
        size_t per_sample = i < m->n_layers ? layer_in_size(l) : layer_out_size(l);
        if (i > 0 && layer_is_view(&m->layers[i - 1])) {
            m->act[i] = m->act[i - 1];
            continue;
        }
        m->act[i] = device_alloc(dev, (size_t)max_batch * per_sample);
        m->dact[i] = i > 0 ? device_alloc(dev, (size_t)max_batch * per_sample) : NULL;
        m->owns_act[i] = 1;
    }
    for (int i = 1; i <= m->n_layers; i++)
        if (layer_is_view(&m->layers[i - 1])) m->dact[i] = m->dact[i - 1];
    for (int i = 0; i < m->n_layers; i++)
        layer_alloc_scratch(dev, &m->layers[i], max_batch);
    if (m->layers[0].kind == LAYER_KIND_CONV2D && spec->in_c > 1)
        m->host_nhwc = ss_malloc((size_t)max_batch * layer_in_size(&m->layers[0]) * sizeof(float));

    for (int i = 0; i < m->n_layers; i++) {
        m->forward_flops += layer_forward_flops(&m->layers[i]);
        m->backward_flops += layer_backward_flops(&m->layers[i]);
    }
    m->forward_flops += loss_forward_flops(spec->classes);
    m->backward_flops += loss_backward_flops(spec->classes);
    *out = m;
    return SS_OK;
}

void model_destroy(model *m) {
    if (!m) return;
    for (int i = 0; i < m->n_layers; i++)
        layer_free_scratch(m->dev, &m->layers[i]);
    for (int i = 0; i <= m->n_layers; i++) {
        if (!m->owns_act[i]) continue;
        device_free(m->dev, m->act[i]);
        device_free(m->dev, m->dact[i]);
    }
    device_free(m->dev, m->params);
    device_free(m->dev, m->grads);
    free(m->host_nhwc);
    free(m);
}

size_t model_param_count(const model *m) {
    return m->n_params;
}

float *model_params(model *m) {
    return m->params;
}

float *model_grads(model *m) {
    return m->grads;
}

int model_view_count(const model *m) {
    return m->n_views;
}

const model_view *model_view_at(const model *m, int i) {
    SS_ASSERT(i >= 0 && i < m->n_views);
    return &m->views[i];
}

double model_forward_flops_per_sample(const model *m) {
    return m->forward_flops;
}

double model_backward_flops_per_sample(const model *m) {
    return m->backward_flops;
}

int model_cost_layer_count(const model *m) {
    return m->n_layers + 1;
}

void model_cost_layer_at(const model *m, int i, model_layer_cost *out) {
    SS_ASSERT(i >= 0 && i <= m->n_layers);
    memset(out, 0, sizeof *out);
    if (i == m->n_layers) { /* the loss: logits in, one softmax kernel each way */
        const int k = m->spec.classes;
        out->fwd_flops = loss_forward_flops(k);
        out->bwd_flops = loss_backward_flops(k);
        out->fwd_bytes = 4.0 * k;
        out->bwd_bytes = 8.0 * k;
        out->kernels = 1;
        return;
    }
    const layer *l = &m->layers[i];
    out->fwd_flops = layer_forward_flops(l);
    out->bwd_flops = layer_backward_flops(l);
    out->fwd_bytes = layer_forward_bytes(l);
    out->bwd_bytes = layer_backward_bytes(l);
    out->param_bytes = 4.0 * (double)(l->weight_count + l->bias_count);
    int f = layer_forward_kernels(l), b = layer_backward_kernels(l);
    out->kernels = f > b ? f : b;
    if (l->kind == LAYER_KIND_DENSE || l->kind == LAYER_KIND_CONV2D) {
        out->matmul = 1;
        out->conv = l->kind == LAYER_KIND_CONV2D;
        out->gemm_n = l->out_c;
        out->gemm_k = l->kind == LAYER_KIND_CONV2D ? (double)l->kh * l->kw * l->in_c
                                                   : (double)l->in_h * l->in_w * l->in_c;
    }
}

double model_param_bytes(const model *m) {
    return 4.0 * (double)m->n_params;
}

void model_layer_norms(model *m, const float *vec, double *out) {
    for (int i = 0; i < m->n_views; i++)
        out[i] = device_nrm2(m->dev, m->views[i].count, vec + m->views[i].offset);
}

/* Uploads a batch as the first layer's input; a conv model reorders samples CHW -> HWC. */
static void upload_input(model *m, const float *x, int batch) {
    const model_spec *s = &m->spec;
    const size_t d = (size_t)s->in_c * s->in_h * s->in_w;
    if (!m->host_nhwc) {
        device_upload(m->dev, m->act[0], x, (size_t)batch * d);
        return;
    }
    const size_t hw = (size_t)s->in_h * s->in_w;
    for (int b = 0; b < batch; b++) {
        const float *src = x + b * d;
        float *dst = m->host_nhwc + b * d;
        for (size_t p = 0; p < hw; p++)
            for (int c = 0; c < s->in_c; c++)
                dst[p * s->in_c + c] = src[c * hw + p];
    }
    device_upload(m->dev, m->act[0], m->host_nhwc, (size_t)batch * d);
}

/* A pool_fused conv runs with its ReLU (a view) and max-pool as one block: layers i..i+2. */
static void forward(model *m, int batch) {
    for (int i = 0; i < m->n_layers; i++) {
        if (m->layers[i].pool_fused) {
            layer_conv_pool_forward(m->dev, &m->layers[i], batch, m->act[i], m->act[i + 1],
                                    m->act[i + 3]);
            i += 2;
            continue;
        }
        layer_forward(m->dev, &m->layers[i], batch, m->act[i], m->act[i + 1]);
    }
}

double model_forward_backward(model *m, const float *x, const uint8_t *y, int batch) {
    return model_forward_backward_each(m, x, y, batch, NULL, NULL);
}

double model_forward_backward_each(model *m, const float *x, const uint8_t *y, int batch,
                                   void (*grad_ready)(void *ctx, int layer), void *ctx) {
    SS_ASSERT(batch >= 1 && batch <= m->max_batch);
    upload_input(m, x, batch);
    forward(m, batch);
    const int last = m->n_layers;
    double loss_sum = m->dev->ops->softmax_xent(m->dev, batch, m->spec.classes, m->act[last], y,
                                                m->dact[last], NULL);
    if (grad_ready) grad_ready(ctx, last);
    for (int i = last - 1; i >= 0; i--) {
        if (i >= 2 && m->layers[i - 2].pool_fused) { /* layer i is the block's max-pool */
            layer_conv_pool_backward(m->dev, &m->layers[i - 2], batch, m->act[i - 2], m->act[i - 1],
                                     m->dact[i + 1], m->dact[i - 2]);
            for (int j = i; grad_ready && j >= i - 2; j--)
                grad_ready(ctx, j);
            i -= 2;
            continue;
        }
        layer_backward(m->dev, &m->layers[i], batch, m->act[i], m->act[i + 1], m->dact[i + 1],
                       m->dact[i]);
        if (grad_ready) grad_ready(ctx, i);
    }
    return loss_sum / batch;
}

void model_evaluate(model *m, const float *x, const uint8_t *y, size_t n, double *mean_loss,
                    size_t *correct) {
    const size_t d = (size_t)m->spec.in_c * m->spec.in_h * m->spec.in_w;
    double loss_sum = 0.0;
    size_t right = 0;
    for (size_t s0 = 0; s0 < n; s0 += (size_t)m->max_batch) {
        int nb = (int)(n - s0 < (size_t)m->max_batch ? n - s0 : (size_t)m->max_batch);
        int ok = 0;
        upload_input(m, x + s0 * d, nb);
        forward(m, nb);
        loss_sum += m->dev->ops->softmax_xent(m->dev, nb, m->spec.classes, m->act[m->n_layers],
                                              y + s0, NULL, &ok);
        right += (size_t)ok;
    }
    if (mean_loss) *mean_loss = n ? loss_sum / (double)n : 0.0;
    if (correct) *correct = right;
}
