/* Models: a layer list, one flat parameter vector and one flat gradient vector on the device
 * (each layer's weight and bias are views into them, llm.c's malloc_and_point_parameters), and
 * one activation buffer per layer boundary sized for max_batch samples. */
#include "kernels/model.h"

#include "common/rng.h"
#include "common/status.h"
#include "kernels/gpt.h"
#include "kernels/layer_clock.h"
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
    layer *layers;   /* (n_layers) */
    int *src;        /* (n_layers) the activation layer i reads: act[src[i]] (i in a chain) */
    int *skip;       /* (n_layers) a residual add's skip activation, -1 for other layers */
    int *accum_skip; /* (n_layers) an add's skip gradient is added to one already there */
    size_t n_params; /* P */
    float *params;   /* (P) */
    float *grads;    /* (P) */
    int n_views;
    model_view *views; /* (2 n_layers) */
    size_t n_buffers;  /* S */
    float *buffers;    /* (S) */
    int n_buffer_views;
    model_view *buffer_views; /* (2 n_layers) */
    float **act;      /* (n_layers + 1) act[i] the output of layer i - 1 (act[0] the input), sized
                         for max_batch; the last: logits */
    float **dact;     /* (n_layers + 1) dact[i]: d(loss)/d(act[i]); dact[0] unused */
    int *owns_act;    /* (n_layers + 1) 0 where a view (flatten, fused ReLU) made act[i] alias
                         act[i-1] */
    float *dtmp;      /* a layer's input gradient before it is added to another consumer's */
    float *host_nhwc; /* (max_batch, D) staging to reorder CHW input, or NULL */
    double forward_flops, backward_flops; /* per sample */
    double device_bytes;
    gpt *gpt;             /* a language model (gpt.h) in place of the layer graph */
    layer_clock clock;    /* model_set_layer_clock's (shared with gpt) */
    layer_col_buf colbuf; /* the im2col convolutions' column buffer */
};

/* Appends a layer reading the activation src (-1: the previous layer's output). */
static layer *add_layer_from(model *m, int src) {
    SS_ASSERT(m->n_layers < MODEL_MAX_LAYERS);
    int i = m->n_layers++;
    m->src[i] = src < 0 ? i : src;
    m->skip[i] = -1;
    return &m->layers[i];
}

static layer *add_layer(model *m) {
    return add_layer_from(m, -1);
}

/* Shape of activation a: the input, or the output of layer a - 1. */
static void act_shape(const model *m, int a, int *h, int *w, int *c) {
    if (a == 0) {
        *h = m->spec.in_h, *w = m->spec.in_w, *c = m->spec.in_c;
        return;
    }
    const layer *l = &m->layers[a - 1];
    *h = l->out_h, *w = l->out_w, *c = l->out_c;
}

static void name_layer(char *out, size_t size, const char *kind, int index) {
    snprintf(out, size, "%.8s%d", kind, index % 1000);
}

static int build_cnn(model *m) {
    const model_spec *s = &m->spec;
    char name[16];
    /* "same" padding (2 for 5x5) keeps 28x28 -> 28 -> 14 -> 14 -> 7: the second conv, which
     * holds most of the FLOPs, is one large GEMM per chunk (M = samples*196, K = 800). LeNet-5
     * (cnn_valid) pads nothing: 28 -> 24 -> 12 -> 8 -> 4 (32 -> 28 -> 14 -> 10 -> 5). */
    const int pad = s->cnn_valid ? 0 : 2;
    int h = s->in_h, w = s->in_w, c = s->in_c;
    for (int i = 0; i < 2; i++) {
        if (h + 2 * pad < 5 + 1 || w + 2 * pad < 5 + 1)
            return ss_error_set(SS_EUSAGE, "cnn: input %dx%d too small for two conv blocks",
                                s->in_h, s->in_w);
        name_layer(name, sizeof name, "conv", i + 1);
        layer_init_conv2d(add_layer(m), name, h, w, c, s->conv_channels[i], 5, pad);
        h += 2 * pad - 4, w += 2 * pad - 4;
        c = s->conv_channels[i];
        name_layer(name, sizeof name, "relu", i + 1);
        layer_init_relu(add_layer(m), name, h, w, c);
        name_layer(name, sizeof name, "pool", i + 1);
        layer_init_maxpool2(add_layer(m), name, h, w, c);
        h /= 2, w /= 2;
    }
    layer_init_flatten(add_layer(m), "flatten", h, w, c);
    int in = h * w * c;
    for (int i = 0; i < s->n_cnn_dense; i++) {
        name_layer(name, sizeof name, "dense", i + 1);
        layer_init_dense(add_layer(m), name, in, s->cnn_dense[i]);
        name_layer(name, sizeof name, "relu", i + 3);
        layer_init_relu(add_layer(m), name, 1, 1, s->cnn_dense[i]);
        in = s->cnn_dense[i];
    }
    name_layer(name, sizeof name, "dense", s->n_cnn_dense + 1);
    layer_init_dense(add_layer(m), name, in, s->classes);
    return SS_OK;
}

/* conv3x3 (no bias) -> batch norm [-> ReLU] reading activation src; names prefix.convK, .bnK */
static void conv_bn(model *m, int src, const char *prefix, int k, int out_c, int kernel, int stride,
                    int relu) {
    int h, w, c;
    act_shape(m, src < 0 ? m->n_layers : src, &h, &w, &c);
    char name[24];
    snprintf(name, sizeof name, "%s.conv%d", prefix, k);
    layer *conv = add_layer_from(m, src);
    layer_init_conv2d_ex(conv, name, h, w, c, out_c, kernel, kernel / 2, stride, 0);
    snprintf(name, sizeof name, "%s.bn%d", prefix, k);
    layer_init_batchnorm(add_layer(m), name, conv->out_h, conv->out_w, out_c);
    if (!relu) return;
    snprintf(name, sizeof name, "%s.relu%d", prefix, k);
    layer_init_relu(add_layer(m), name, conv->out_h, conv->out_w, out_c);
}

/* One basic block of He et al. 2016 (two 3x3 convs with batch norm, a shortcut, ReLU after the
 * addition), reading the activation `in`. A shortcut that changes the shape is option A (the
 * input subsampled, its channels zero-padded) or, with proj, option B (1x1 conv + batch norm). */
static void basic_block(model *m, const char *prefix, int planes, int stride) {
    const int in = m->n_layers;
    int h, w, c;
    act_shape(m, in, &h, &w, &c);
    conv_bn(m, in, prefix, 1, planes, 3, stride, 1);
    conv_bn(m, -1, prefix, 2, planes, 3, 1, 0);
    const int main_out = m->n_layers;
    const layer *last = &m->layers[main_out - 1];
    const int oh = last->out_h, ow = last->out_w;
    char name[24];
    snprintf(name, sizeof name, "%s.add", prefix);
    if (m->spec.resnet_proj && (stride != 1 || c != planes)) {
        char sub[24];
        snprintf(sub, sizeof sub, "%s.sc", prefix);
        conv_bn(m, in, sub, 0, planes, 1, stride, 0); /* sc.conv0, sc.bn0 */
        layer *add = add_layer(m);
        layer_init_add(add, name, oh, ow, planes, oh, ow, planes, 1);
        m->skip[m->n_layers - 1] = main_out;
    } else {
        layer *add = add_layer(m);
        layer_init_add(add, name, oh, ow, planes, h, w, c, stride);
        m->skip[m->n_layers - 1] = in;
    }
    snprintf(name, sizeof name, "%s.relu", prefix);
    layer_init_relu(add_layer(m), name, oh, ow, planes);
}

/* The CIFAR ResNet of He et al. 2016, section 4.2: conv3x3(16), then 3 stages of n basic
 * blocks with 16, 32, 64 channels (the first block of stages 2 and 3 with stride 2), global
 * average pooling, dense(K); 6n + 2 weighted layers. */
static int build_resnet(model *m) {
    const model_spec *s = &m->spec;
    const int n = (s->depth - 2) / 6;
    if (s->in_h < 4 || s->in_w < 4)
        return ss_error_set(SS_EUSAGE, "resnet: input %dx%d too small (at least 4x4)", s->in_h,
                            s->in_w);
    conv_bn(m, -1, "stem", 1, 16, 3, 1, 1);
    char prefix[16];
    for (int stage = 0; stage < 3; stage++)
        for (int b = 0; b < n; b++) {
            snprintf(prefix, sizeof prefix, "layer%d.%d", stage + 1, b % 1000);
            basic_block(m, prefix, 16 << stage, stage > 0 && b == 0 ? 2 : 1);
        }
    const layer *last = &m->layers[m->n_layers - 1];
    layer_init_avgpool(add_layer(m), "avgpool", last->out_h, last->out_w, last->out_c);
    layer_init_dense(add_layer(m), "fc", 64, s->classes);
    return SS_OK;
}

/* VGG in the form used on CIFAR (Simonyan and Zisserman 2015, configurations A/B/D/E, with batch
 * normalization after every convolution): five stages of 3x3 convs (no bias: the batch norm's
 * beta takes its place) + batch norm + ReLU, each closed by a 2x2 max pooling while the map is
 * at least 2x2 (32 -> 16 -> 8 -> 4 -> 2 -> 1; 28 -> 14 -> 7 -> 3 -> 1, the fifth left out),
 * then global average pooling (the identity on a 1x1 map) and dense(K). */
static int build_vgg(model *m) {
    const model_spec *s = &m->spec;
    const int *convs = model_vgg_stage_convs(s->depth);
    char prefix[16];
    for (int stage = 0; stage < 5; stage++) {
        const int width = s->vgg_width << (stage < 3 ? stage : 3);
        snprintf(prefix, sizeof prefix, "stage%d", stage + 1);
        for (int k = 0; k < convs[stage]; k++)
            conv_bn(m, -1, prefix, k + 1, width, 3, 1, 1);
        int h, w, c;
        act_shape(m, m->n_layers, &h, &w, &c);
        if (h < 2 || w < 2) continue;
        char name[24];
        snprintf(name, sizeof name, "%s.pool", prefix);
        layer_init_maxpool2(add_layer(m), name, h, w, c);
    }
    int h, w, c;
    act_shape(m, m->n_layers, &h, &w, &c);
    layer_init_avgpool(add_layer(m), "avgpool", h, w, c);
    layer_init_dense(add_layer(m), "fc", c, s->classes);
    return SS_OK;
}

/* Builds the layer graph of the spec; returns SS_EUSAGE for shapes it cannot take. */
static int build_layers(model *m) {
    const model_spec *s = &m->spec;
    const int d = s->in_c * s->in_h * s->in_w, k = s->classes;
    char name[16];
    int rc = SS_OK;
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
        rc = build_cnn(m);
    } else if (s->arch == MODEL_ARCH_RESNET) {
        rc = build_resnet(m);
    } else if (s->arch == MODEL_ARCH_VGG) {
        rc = build_vgg(m);
    } else {
        rc = ss_error_set(SS_EUSAGE, "unknown model architecture %d", (int)s->arch);
    }
    if (rc != SS_OK) return rc;
    for (int i = 0; i < m->n_layers; i++)
        m->layers[i].need_dx = m->src[i] != 0;
    layer_fuse_relu(m->layers, m->n_layers);
    return SS_OK;
}

/* On a device with the fused ops (the CPU's): a batch norm or an add whose output only the ReLU
 * after it reads applies that ReLU, and the ReLU becomes a view (layers.h, relu_in_epilogue).
 * Same values bit for bit; the ReLU's two passes over the activations (and, for an add, the copy
 * before its shortcut) fewer. Such a batch norm whose ReLU only a max-pool reads runs with both
 * as one block (bn_pool_fused): the batch norm's output is then not held. Activation i + 1 is
 * layer i's output. */
static void fuse_post_relu(model *m) {
    const device_ops *ops = m->dev->ops;
    const int bn_ok = ops->bn_fwd_train_act && ops->bn_fwd_infer_act && ops->bn_bwd_masked;
    const int bn_pool_ok = ops->bn_pool_fwd_train && ops->bn_pool_fwd_infer && ops->bn_pool_bwd;
    for (int i = 0; i + 1 < m->n_layers; i++) {
        layer *l = &m->layers[i], *relu = &m->layers[i + 1];
        const int ok = l->kind == LAYER_KIND_BATCHNORM ? bn_ok
                       : l->kind == LAYER_KIND_ADD     ? ops->add_fwd != NULL
                                                       : 0;
        if (!ok || relu->kind != LAYER_KIND_RELU || relu->is_view || m->src[i + 1] != i + 1)
            continue;
        int others = 0;
        for (int j = 0; j < m->n_layers; j++)
            others += j != i + 1 && (m->src[j] == i + 1 || m->skip[j] == i + 1);
        if (others) continue;
        l->relu_in_epilogue = 1;
        relu->is_view = 1;
        /* a batch norm's ReLU read by a max-pool alone: the three layers as one block */
        layer *pool = i + 2 < m->n_layers ? &m->layers[i + 2] : NULL;
        if (l->kind != LAYER_KIND_BATCHNORM || !bn_pool_ok || l->out_c % 16 || !pool ||
            pool->kind != LAYER_KIND_MAXPOOL2 || m->src[i + 2] != i + 2 || m->skip[i] >= 0)
            continue;
        for (int j = 0; j < m->n_layers; j++)
            others += j != i + 2 && (m->src[j] == i + 2 || m->skip[j] == i + 2);
        l->bn_pool_fused = !others;
    }
}

/* Which input gradients are added to another consumer's: the backward pass visits layers from
 * the last, so the last consumer of an activation writes its gradient and the earlier ones add
 * to it. */
static void mark_accumulation(model *m) {
    int *written = ss_calloc((size_t)m->n_layers + 1, sizeof(int));
    for (int i = m->n_layers - 1; i >= 0; i--) {
        layer *l = &m->layers[i];
        l->accum_dx = written[m->src[i]];
        written[m->src[i]] = 1;
        if (m->skip[i] >= 0) {
            m->accum_skip[i] = written[m->skip[i]];
            written[m->skip[i]] = 1;
        }
        /* a view aliases its input: only in a chain */
        SS_ASSERT(!layer_is_view(l) || (m->src[i] == i && !l->accum_dx));
    }
    free(written);
}

static int spec_check(const model_spec *spec, int max_batch) {
    return model_spec_check(spec, max_batch);
}

static void alloc_graph(model *m);

int model_spec_count(const model_spec *spec, size_t *params, size_t *buffers) {
    int status = spec_check(spec, 1);
    if (status != SS_OK) return status;
    if (spec->arch == MODEL_ARCH_GPT) {
        if (params) *params = gpt_spec_params(spec);
        if (buffers) *buffers = 0;
        return SS_OK;
    }
    model m = {.spec = *spec, .max_batch = 1};
    alloc_graph(&m);
    status = build_layers(&m);
    size_t p = 0, b = 0;
    for (int i = 0; i < m.n_layers; i++) {
        p += m.layers[i].weight_count + m.layers[i].bias_count;
        b += m.layers[i].buffer_count;
    }
    free(m.layers);
    free(m.src);
    free(m.skip);
    free(m.accum_skip);
    if (params) *params = p;
    if (buffers) *buffers = b;
    return status;
}

int model_spec_cost_layers(const model_spec *spec, model_layer_cost **out, int *n) {
    *out = NULL;
    *n = 0;
    int status = spec_check(spec, 1);
    if (status != SS_OK) return status;
    if (spec->arch == MODEL_ARCH_GPT) return gpt_spec_cost_layers(spec, out, n);
    model m = {.spec = *spec, .max_batch = 1};
    alloc_graph(&m);
    status = build_layers(&m);
    if (status == SS_OK) { /* the graph as model_create builds it, without tensors */
        mark_accumulation(&m);
        *n = model_cost_layer_count(&m);
        *out = ss_calloc((size_t)*n, sizeof **out);
        for (int i = 0; i < *n; i++)
            model_cost_layer_at(&m, i, &(*out)[i]);
    }
    free(m.layers);
    free(m.src);
    free(m.skip);
    free(m.accum_skip);
    return status;
}

static float *alloc_counted(model *m, size_t count) {
    m->device_bytes += 4.0 * (double)(count ? count : 1);
    return device_alloc(m->dev, count);
}

static void alloc_graph(model *m) {
    const size_t n = MODEL_MAX_LAYERS;
    m->layers = ss_calloc(n, sizeof *m->layers);
    m->src = ss_calloc(n, sizeof *m->src);
    m->skip = ss_calloc(n, sizeof *m->skip);
    m->accum_skip = ss_calloc(n, sizeof *m->accum_skip);
}

/* Shrinks the graph's arrays to the layers built; allocates the per-activation arrays. */
static void size_graph(model *m) {
    const size_t n = (size_t)m->n_layers;
    layer *all = m->layers;
    m->layers = ss_calloc(n, sizeof *m->layers);
    memcpy(m->layers, all, n * sizeof *m->layers);
    free(all);
    m->views = ss_calloc(2 * n, sizeof *m->views);
    m->buffer_views = ss_calloc(2 * n, sizeof *m->buffer_views);
    m->act = ss_calloc(n + 1, sizeof *m->act);
    m->dact = ss_calloc(n + 1, sizeof *m->dact);
    m->owns_act = ss_calloc(n + 1, sizeof *m->owns_act);
}

/* Views, then the initial values drawn in view order from one stream of the seed. */
static void bind_params(model *m, uint64_t seed) {
    for (int i = 0; i < m->n_layers; i++) {
        m->n_params += m->layers[i].weight_count + m->layers[i].bias_count;
        m->n_buffers += m->layers[i].buffer_count;
    }
    m->params = alloc_counted(m, m->n_params);
    m->grads = alloc_counted(m, m->n_params);
    m->buffers = m->n_buffers ? alloc_counted(m, m->n_buffers) : NULL;
    float *host = ss_malloc((m->n_params + m->n_buffers + 1) * sizeof(float));
    float *host_buf = host + m->n_params;
    rng r;
    rng_seed(&r, seed, RNG_STREAM_INIT);
    size_t offset = 0, boffset = 0;
    for (int i = 0; i < m->n_layers; i++) {
        layer *l = &m->layers[i];
        if (l->weight_count) {
            model_view *vw = &m->views[m->n_views++];
            snprintf(vw->name, sizeof vw->name, "%s.weight", l->name);
            vw->offset = offset, vw->count = l->weight_count;
            if (l->bias_count) {
                model_view *vb = &m->views[m->n_views++];
                snprintf(vb->name, sizeof vb->name, "%s.bias", l->name);
                vb->offset = offset + l->weight_count, vb->count = l->bias_count;
            }
            layer_init_params(l, &r, host + offset, host + offset + l->weight_count);
            offset += layer_bind(l, m->params, m->grads, offset);
        }
        if (l->buffer_count) {
            model_view *vm = &m->buffer_views[m->n_buffer_views++];
            model_view *vv = &m->buffer_views[m->n_buffer_views++];
            snprintf(vm->name, sizeof vm->name, "%s.running_mean", l->name);
            snprintf(vv->name, sizeof vv->name, "%s.running_var", l->name);
            vm->offset = boffset, vm->count = l->buffer_count / 2;
            vv->offset = boffset + vm->count, vv->count = l->buffer_count / 2;
            layer_init_buffers(l, host_buf + boffset);
            boffset += layer_bind_buffers(l, m->buffers, boffset);
        }
    }
    device_upload(m->dev, m->params, host, m->n_params);
    if (m->n_buffers) device_upload(m->dev, m->buffers, host_buf, m->n_buffers);
    free(host);
}

/* One activation buffer per layer output (act[0] the input), and its gradient; none for a
 * bn_pool_fused batch norm's output (its block writes the pooling's alone) and its ReLU's view. */
static void alloc_activations(model *m) {
    const size_t b = (size_t)m->max_batch;
    size_t tmp = 0;
    for (int i = 0; i <= m->n_layers; i++) {
        int h, w, c;
        act_shape(m, i, &h, &w, &c);
        size_t per_sample = (size_t)h * w * c;
        if (i > 0 && m->layers[i - 1].bn_pool_fused) {
            m->act[i] = m->dact[i] = NULL;
            continue;
        }
        if (i > 0 && layer_is_view(&m->layers[i - 1])) {
            m->act[i] = m->act[i - 1];
            continue;
        }
        m->act[i] = alloc_counted(m, b * per_sample);
        m->dact[i] = i > 0 ? alloc_counted(m, b * per_sample) : NULL;
        m->owns_act[i] = 1;
    }
    for (int i = 1; i <= m->n_layers; i++)
        if (layer_is_view(&m->layers[i - 1])) m->dact[i] = m->dact[i - 1];
    for (int i = 0; i < m->n_layers; i++) {
        layer *l = &m->layers[i];
        if (l->need_dx && l->accum_dx && layer_in_size(l) > tmp) tmp = layer_in_size(l);
        if (m->skip[i] >= 0 && m->accum_skip[i] && layer_skip_size(l) > tmp)
            tmp = layer_skip_size(l);
        if (m->skip[i] >= 0) l->skip_act = m->act[m->skip[i]];
    }
    m->dtmp = tmp ? alloc_counted(m, b * tmp) : NULL;
}

/* An add whose skip gradient joins another consumer's: 1 per skip element. */
static double skip_accum_flops(const model *m, int i) {
    return m->skip[i] > 0 && m->accum_skip[i] ? (double)layer_skip_size(&m->layers[i]) : 0.0;
}

/* A language model: the gpt's vectors and views seen through the model. */
static int create_gpt(model *m, uint64_t seed) {
    int status = gpt_create(m->dev, &m->spec, seed, m->max_batch, &m->gpt);
    if (status != SS_OK) return status;
    m->n_params = gpt_param_count(m->gpt);
    m->params = gpt_params(m->gpt);
    m->grads = gpt_grads(m->gpt);
    m->n_views = gpt_view_count(m->gpt);
    m->views = ss_calloc((size_t)m->n_views, sizeof *m->views);
    for (int i = 0; i < m->n_views; i++)
        m->views[i] = *gpt_view_at(m->gpt, i);
    m->forward_flops = gpt_forward_flops(m->gpt);
    m->backward_flops = gpt_backward_flops(m->gpt);
    m->device_bytes = gpt_device_bytes(m->gpt);
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
    if (spec->arch == MODEL_ARCH_GPT) {
        if ((status = create_gpt(m, seed)) != SS_OK) {
            free(m);
            return status;
        }
        *out = m;
        return SS_OK;
    }
    alloc_graph(m);
    status = build_layers(m);
    if (status != SS_OK) {
        model_destroy(m);
        return status;
    }
    fuse_post_relu(m);
    size_graph(m);
    mark_accumulation(m);
    bind_params(m, seed);
    alloc_activations(m);
    for (int i = 0; i < m->n_layers; i++)
        layer_alloc_scratch_in(dev, &m->layers[i], max_batch, &m->colbuf);
    if (m->colbuf.floats) m->colbuf.col = device_alloc(dev, m->colbuf.floats);
    m->device_bytes += 4.0 * (double)m->colbuf.floats;
    if (m->layers[0].kind == LAYER_KIND_CONV2D && spec->in_c > 1)
        m->host_nhwc = ss_malloc((size_t)max_batch * layer_in_size(&m->layers[0]) * sizeof(float));

    for (int i = 0; i < m->n_layers; i++) {
        m->forward_flops += layer_forward_flops(&m->layers[i]);
        m->backward_flops += layer_backward_flops(&m->layers[i]);
        m->backward_flops += skip_accum_flops(m, i);
        m->device_bytes += 4.0 * (double)m->layers[i].scratch_floats;
    }
    m->forward_flops += loss_forward_flops(spec->classes);
    m->backward_flops += loss_backward_flops(spec->classes);
    *out = m;
    return SS_OK;
}

void model_destroy(model *m) {
    if (!m) return;
    layer_clock_free(&m->clock);
    if (m->gpt) {
        gpt_destroy(m->gpt);
        free(m->views);
        free(m);
        return;
    }
    for (int i = 0; m->act && i < m->n_layers; i++)
        layer_free_scratch(m->dev, &m->layers[i]);
    device_free(m->dev, m->colbuf.col);
    for (int i = 0; m->act && i <= m->n_layers; i++) {
        if (!m->owns_act[i]) continue;
        device_free(m->dev, m->act[i]);
        device_free(m->dev, m->dact[i]);
    }
    device_free(m->dev, m->params);
    device_free(m->dev, m->grads);
    device_free(m->dev, m->buffers);
    device_free(m->dev, m->dtmp);
    free(m->host_nhwc);
    free(m->act);
    free(m->dact);
    free(m->owns_act);
    free(m->views);
    free(m->buffer_views);
    free(m->layers);
    free(m->src);
    free(m->skip);
    free(m->accum_skip);
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

size_t model_buffer_count(const model *m) {
    return m->n_buffers;
}

float *model_buffers(model *m) {
    return m->buffers;
}

int model_relu_count(const model *m) {
    int n = 0;
    for (int i = 0; i < m->n_layers; i++)
        n += m->layers[i].kind == LAYER_KIND_RELU;
    return n;
}

const float *model_relu_output(const model *m, int k, int *h, int *w, int *c) {
    for (int i = 0; i < m->n_layers; i++) {
        const layer *l = &m->layers[i];
        if (l->kind != LAYER_KIND_RELU) continue;
        if (k-- > 0) continue;
        *h = l->out_h, *w = l->out_w, *c = l->out_c;
        const layer *before = i > 0 ? &m->layers[i - 1] : NULL;
        return before && (before->bn_pool_fused || before->pool_fused) ? NULL : m->act[i + 1];
    }
    return NULL;
}

int model_buffer_view_count(const model *m) {
    return m->n_buffer_views;
}

const model_view *model_buffer_view_at(const model *m, int i) {
    SS_ASSERT(i >= 0 && i < m->n_buffer_views);
    return &m->buffer_views[i];
}

double model_device_bytes(const model *m) {
    return m->device_bytes;
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
    if (m->gpt) return gpt_cost_layer_count(m->gpt);
    return m->n_layers + 1;
}

void model_cost_layer_at(const model *m, int i, model_layer_cost *out) {
    if (m->gpt) {
        gpt_cost_layer_at(m->gpt, i, out);
        return;
    }
    SS_ASSERT(i >= 0 && i <= m->n_layers);
    memset(out, 0, sizeof *out);
    if (i == m->n_layers) { /* the loss: logits in, one softmax kernel each way */
        const int k = m->spec.classes;
        out->fwd_flops = loss_forward_flops(k);
        out->bwd_flops = loss_backward_flops(k);
        out->fwd_bytes = 4.0 * k;
        out->bwd_bytes = 8.0 * k;
        out->kernels = 1;
        snprintf(out->name, sizeof out->name, "loss");
        return;
    }
    const layer *l = &m->layers[i];
    snprintf(out->name, sizeof out->name, "%s", l->name);
    out->fwd_flops = layer_forward_flops(l);
    out->bwd_flops = layer_backward_flops(l) + skip_accum_flops(m, i);
    out->fwd_bytes = layer_forward_bytes(l);
    out->bwd_bytes = layer_backward_bytes(l);
    out->param_bytes = 4.0 * (double)(l->weight_count + l->bias_count);
    int f = layer_forward_kernels(l), b = layer_backward_kernels(l);
    out->kernels = f > b ? f : b;
    out->norm = l->kind == LAYER_KIND_BATCHNORM;
    out->maxpool = l->kind == LAYER_KIND_MAXPOOL2;
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

static void set_training(model *m, int training) {
    for (int i = 0; i < m->n_layers; i++)
        m->layers[i].training = training;
}

void model_set_layer_clock(model *m, double *fwd_s, double *bwd_s) {
    layer_clock_set(&m->clock, m->dev, model_cost_layer_count(m), fwd_s, bwd_s);
    if (m->gpt) gpt_set_layer_clock(m->gpt, fwd_s ? &m->clock : NULL);
}

/* A pool_fused conv, or a bn_pool_fused batch norm, runs with its ReLU (a view) and max-pool as
 * one block: layers i..i+2 (its time on the layer clock goes to the conv or batch norm). The clock
 * times training passes only. */
static void forward(model *m, int batch) {
    double *clock = m->layers[0].training ? m->clock.fwd : NULL;
    layer_clock_lap(&m->clock, clock, -1);
    for (int i = 0; i < m->n_layers; i++) {
        if (m->layers[i].pool_fused) {
            layer_conv_pool_forward(m->dev, &m->layers[i], batch, m->act[i], m->act[i + 1],
                                    m->act[i + 3]);
            layer_clock_lap(&m->clock, clock, i);
            i += 2;
            continue;
        }
        if (m->layers[i].bn_pool_fused) {
            layer_bn_pool_forward(m->dev, &m->layers[i], batch, m->act[m->src[i]], m->act[i + 3]);
            layer_clock_lap(&m->clock, clock, i);
            i += 2;
            continue;
        }
        layer_forward(m->dev, &m->layers[i], batch, m->act[m->src[i]], m->act[i + 1]);
        layer_clock_lap(&m->clock, clock, i);
    }
}

/* Layer i's backward pass: its input gradient (and an add's skip gradient) written, or added
 * through dtmp to the gradient another consumer of the same activation wrote before. */
static void backward_layer(model *m, int i, int batch) {
    layer *l = &m->layers[i];
    const int a = m->src[i];
    float *dx = l->need_dx && l->accum_dx ? m->dtmp : m->dact[a];
    layer_backward(m->dev, l, batch, m->act[a], m->act[i + 1], m->dact[i + 1], dx);
    if (l->need_dx && l->accum_dx)
        device_axpy(m->dev, (size_t)batch * layer_in_size(l), 1.0f, m->dtmp, m->dact[a]);
    const int sk = m->skip[i];
    if (sk <= 0) return; /* no skip, or the skip is the data */
    /* the skip's gradient is dy, masked by a fused ReLU: dx holds that, unless it was added to
     * another consumer's (then dy is masked in place: its consumers are done with it) */
    const float *dy = m->dact[i + 1];
    if (l->relu_in_epilogue && l->need_dx && !l->accum_dx)
        dy = m->dact[a];
    else if (l->relu_in_epilogue)
        m->dev->ops->relu_bwd(m->dev, (size_t)batch * layer_in_size(l), m->act[i + 1],
                              m->dact[i + 1], m->dact[i + 1]);
    float *dskip = m->accum_skip[i] ? m->dtmp : m->dact[sk];
    layer_add_skip_backward(m->dev, l, batch, dy, dskip);
    if (m->accum_skip[i])
        device_axpy(m->dev, (size_t)batch * layer_skip_size(l), 1.0f, m->dtmp, m->dact[sk]);
}

double model_forward_backward(model *m, const float *x, const uint8_t *y, int batch) {
    return model_forward_backward_each(m, x, y, batch, NULL, NULL);
}

double model_forward_backward_each(model *m, const float *x, const uint8_t *y, int batch,
                                   void (*grad_ready)(void *ctx, int layer), void *ctx) {
    SS_ASSERT(batch >= 1 && batch <= m->max_batch);
    if (m->gpt) return gpt_forward_backward(m->gpt, x, batch, grad_ready, ctx);
    set_training(m, 1);
    upload_input(m, x, batch);
    forward(m, batch);
    const int last = m->n_layers;
    layer_clock_lap(&m->clock, m->clock.bwd, -1);
    double loss_sum = m->dev->ops->softmax_xent(m->dev, batch, m->spec.classes, m->act[last], y,
                                                m->dact[last], NULL);
    layer_clock_lap(&m->clock, m->clock.bwd, last);
    if (grad_ready) grad_ready(ctx, last);
    for (int i = last - 1; i >= 0; i--) {
        if (i >= 2 && m->layers[i - 2].pool_fused) { /* layer i is the block's max-pool */
            layer_conv_pool_backward(m->dev, &m->layers[i - 2], batch, m->act[i - 2], m->act[i - 1],
                                     m->dact[i + 1], m->dact[i - 2]);
            layer_clock_lap(&m->clock, m->clock.bwd, i - 2);
            for (int j = i; grad_ready && j >= i - 2; j--)
                grad_ready(ctx, j);
            i -= 2;
            continue;
        }
        if (i >= 2 && m->layers[i - 2].bn_pool_fused) { /* layer i is the block's max-pool */
            layer *bn = &m->layers[i - 2];
            const int a = m->src[i - 2];
            float *dx = bn->need_dx && bn->accum_dx ? m->dtmp : m->dact[a];
            layer_bn_pool_backward(m->dev, bn, batch, m->act[a], m->dact[i + 1], dx);
            if (bn->need_dx && bn->accum_dx)
                device_axpy(m->dev, (size_t)batch * layer_in_size(bn), 1.0f, m->dtmp, m->dact[a]);
            layer_clock_lap(&m->clock, m->clock.bwd, i - 2);
            for (int j = i; grad_ready && j >= i - 2; j--)
                grad_ready(ctx, j);
            i -= 2;
            continue;
        }
        backward_layer(m, i, batch);
        layer_clock_lap(&m->clock, m->clock.bwd, i);
        if (grad_ready) grad_ready(ctx, i);
    }
    if (m->clock.bwd) layer_clock_resolve(&m->clock);
    return loss_sum / batch;
}

double model_evaluate_sum(model *m, const float *x, const uint8_t *y, size_t n, size_t *correct) {
    if (m->gpt) { /* the mean per token over the n samples; correct: tokens / T (next-token) */
        size_t tokens = 0;
        double mean = 0.0;
        gpt_evaluate(m->gpt, x, n, &mean, &tokens);
        if (correct) *correct = tokens / (size_t)m->spec.gpt_seq;
        return mean * (double)n;
    }
    const size_t d = (size_t)m->spec.in_c * m->spec.in_h * m->spec.in_w;
    double loss_sum = 0.0;
    size_t right = 0;
    set_training(m, 0);
    for (size_t s0 = 0; s0 < n; s0 += (size_t)m->max_batch) {
        int nb = (int)(n - s0 < (size_t)m->max_batch ? n - s0 : (size_t)m->max_batch);
        int ok = 0;
        upload_input(m, x + s0 * d, nb);
        forward(m, nb);
        loss_sum += m->dev->ops->softmax_xent(m->dev, nb, m->spec.classes, m->act[m->n_layers],
                                              y + s0, NULL, &ok);
        right += (size_t)ok;
    }
    if (correct) *correct = right;
    return loss_sum;
}

void model_evaluate(model *m, const float *x, const uint8_t *y, size_t n, double *mean_loss,
                    size_t *correct) {
    const double loss_sum = model_evaluate_sum(m, x, y, n, correct);
    if (mean_loss) *mean_loss = n ? loss_sum / (double)n : 0.0;
}

void model_set_stream(model *m, uint64_t stream) {
    if (m->gpt) gpt_set_dropout_stream(m->gpt, stream);
}

int model_is_language(const model *m) {
    return m->gpt != NULL;
}
