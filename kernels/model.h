/* Models: a graph of layers (each reads one earlier activation, a residual add two) plus one
 * flat parameter vector and one flat gradient vector on the device, with per-layer views.
 * Aggregation (averaging replicas) is therefore one vector op on model_params(). State that is
 * not trained (batch normalization's running mean and variance) lives in a second flat vector,
 * model_buffers(), with its own views: each replica keeps its own, and a policy may average or
 * keep it. Forward/backward FLOPs are counted exactly by the layers (a multiply-add is 2 FLOPs),
 * because simulated compute time comes from them.
 *
 * Legend: B batch, D = C*H*W input features per sample, K classes.
 *
 *     model_spec spec; model_spec_default(&spec, MODEL_ARCH_MLP, 1, 28, 28, 10);
 *     model *m; model_create(dev, &spec, seed, &m);
 *     double loss = model_forward_backward(m, x, y, B);   // grads = d(mean loss)/d(params)
 *     sgd_step(...model_params(m), model_grads(m)...);
 */
#ifndef SS_KERNELS_MODEL_H
#define SS_KERNELS_MODEL_H

#include "kernels/device.h"

#include <stddef.h>
#include <stdint.h>

typedef enum model_arch {
    MODEL_ARCH_LOGREG = 0,
    MODEL_ARCH_MLP = 1,
    MODEL_ARCH_CNN = 2,
    MODEL_ARCH_RESNET = 3,
    MODEL_ARCH_VGG = 4,
    MODEL_ARCH_GPT = 5
} model_arch;

#define MODEL_MAX_HIDDEN 8
#define MODEL_MAX_LAYERS 1024 /* layers of a model's graph (resnet:110: 383, 387 with proj) */

typedef struct model_spec {
    model_arch arch;
    int in_c, in_h, in_w;         /* input shape of one sample */
    int classes;                  /* K */
    int n_hidden;                 /* mlp: number of hidden dense layers */
    int hidden[MODEL_MAX_HIDDEN]; /* mlp: their widths (default 256, 256) */
    int conv_channels[2];         /* cnn: output channels of the two conv blocks (default 32, 64) */
    int n_cnn_dense;              /* cnn: hidden dense layers after the conv blocks (1) */
    int cnn_dense[MODEL_MAX_HIDDEN]; /* cnn: their widths (default 128) */
    int cnn_valid;                   /* cnn: 1 unpadded 5x5 convs (LeNet-5), 0 "same" padding */
    int depth;       /* resnet: 6n + 2 layers (20, 32, 44, 56, 110); vgg: 11, 13, 16, 19 */
    int resnet_proj; /* resnet: 1 projection shortcuts (option B), 0 zero padding (option A) */
    int vgg_width;   /* vgg: channels of the first stage (64; the stages have 1, 2, 4, 8, 8 x) */
    /* gpt (kernels/gpt.h): a language model over classes = vocabulary tokens; a sample is
     * in_w = T + 1 token ids (as floats): T inputs, each predicting the next */
    int gpt_layers, gpt_dim, gpt_heads, gpt_seq; /* L, D, H, T */
    int gpt_ffn;                                 /* MLP width: 4 D (wlm: its nhid) */
    float gpt_dropout;                           /* 0.1 (wlm: 0.2) */
    int gpt_wlm; /* PyTorch's word_language_model Transformer (post-norm, ReLU, sinusoidal
                    positions, embedding x sqrt(D), untied decoder with bias, no final norm) */
} model_spec;

/* A view of one parameter tensor inside the flat vector. */
typedef struct model_view {
    char name[40]; /* "dense1.weight", "conv2.bias", "layer1.0.bn1.running_var", ... */
    size_t offset; /* in floats from the start of model_params() */
    size_t count;  /* floats */
} model_view;

typedef struct model model;

/* Default spec for an architecture and input shape: logreg, mlp 784-256-256-10, LeNet-like cnn
 * (conv5x5(32)+relu+maxpool2, conv5x5(64)+relu+maxpool2, dense(128)+relu, dense(K), "same"
 * padding), resnet:20 with option A shortcuts, vgg:11. */
void model_spec_default(model_spec *spec, model_arch arch, int in_c, int in_h, int in_w,
                        int classes);
/* Parses "logreg", "mlp", "mlp:512,128" (hidden widths), "cnn", "cnn:C1,C2,D1,..." (the two
 * convs' channels, then one or more hidden dense widths), "cnn:lenet" (NIID-Bench's simple-cnn,
 * LeNet-5: unpadded conv5x5(6), conv5x5(16), dense 120, 84), "resnet" (resnet:20) or
 * "resnet:D[,proj]" (He et al. 2016 section 4.2, D = 6n + 2), "vgg" (vgg:11) or "vgg:D" (D = 11,
 * 13, 16, 19: Simonyan and Zisserman's configurations A, B, D, E with batch norm, CIFAR form);
 * SS_EUSAGE names the valid forms. */
int model_spec_parse(model_spec *spec, const char *text, int in_c, int in_h, int in_w, int classes);
/* The spec's sizes for batches of max_batch: SS_OK, or SS_EUSAGE naming what is wrong. */
int model_spec_check(const model_spec *spec, int max_batch);
/* The valid forms, for messages and --help. */
const char *model_spec_forms(void);
/* 1 when models of the spec have buffers (batch normalization: resnet, vgg). */
int model_spec_has_buffers(const model_spec *spec);
/* Convolutions in each of the five stages of VGG-D, or NULL for another depth. */
const int *model_vgg_stage_convs(int depth);
/* The parameter and buffer counts of the spec's models without creating one (nothing is
 * allocated on a device); SS_EUSAGE as model_create for a spec it cannot build. */
int model_spec_count(const model_spec *spec, size_t *params, size_t *buffers);
const char *model_arch_name(model_arch arch);

/* Creates the model on dev with parameters initialized deterministically from seed (He-uniform
 * weights, zero biases) for batches of at most max_batch samples. */
int model_create(device *dev, const model_spec *spec, uint64_t seed, int max_batch, model **out);
void model_destroy(model *m);

size_t model_param_count(const model *m);
float *model_params(model *m); /* (P) device buffer */
float *model_grads(model *m);  /* (P) device buffer, filled by model_forward_backward */
int model_view_count(const model *m);
const model_view *model_view_at(const model *m, int i);
/* Buffers: state the training pass updates but no gradient trains (batch normalization's running
 * mean, initially 0, and unbiased running variance, initially 1, per channel); read by
 * model_evaluate. 0 floats (and a NULL vector) for models without batch normalization. */
size_t model_buffer_count(const model *m);
float *model_buffers(model *m); /* (S) device buffer */
int model_buffer_view_count(const model *m);
const model_view *model_buffer_view_at(const model *m, int i);
/* For tools that repeat a step elsewhere (bench/step_dump): the model's ReLU layers in forward
 * order, and the output of the k-th after the last training pass, (batch, h, w, c) NHWC in device
 * memory, its shape in h, w, c; NULL where the output is not held (a convolution or batch norm,
 * its ReLU and a max-pool run as one block). A ReLU's decisions are where its output is positive.
 */
int model_relu_count(const model *m);
const float *model_relu_output(const model *m, int k, int *h, int *w, int *c);
/* Bytes of device memory the model holds: parameters, gradients, buffers, activations and their
 * gradients, scratch. */
double model_device_bytes(const model *m);

/* Exact FLOPs for one sample: forward, and backward (gradients of inputs and of parameters). */
double model_forward_flops_per_sample(const model *m);
double model_backward_flops_per_sample(const model *m);
double model_param_bytes(const model *m); /* 4 * P */
/* The L2 norm of each view of vec, a (P) device vector laid out like model_params() (for
 * example model_grads(m)); out has model_view_count(m) entries. SelSync's code variant sums
 * these per-layer norms instead of taking one global norm. */
void model_layer_norms(model *m, const float *vec, double *out);

/* Cost of layer i (0..model_cost_layer_count()-1, forward order; the last is the softmax
 * cross-entropy loss) for the GPU compute model: FLOPs and bytes per sample, the bytes of its
 * parameters, and its kernel launches per pass (the larger of forward and backward). */
typedef struct model_layer_cost {
    char name[24];               /* the layer's name ("conv1", "layer1.0.bn1", "h0.attn", "loss") */
    double fwd_flops, bwd_flops; /* per sample */
    double fwd_bytes, bwd_bytes; /* activation traffic per sample, 4 bytes an element */
    double param_bytes;          /* 4 x the layer's parameters */
    int kernels;
    int matmul;            /* a dense or convolution layer: a matrix product, N x K */
    int conv;              /* that product is a convolution */
    int norm;              /* a batch normalization (reductions over the activations) */
    int maxpool;           /* a max pooling */
    double gemm_n, gemm_k; /* its output features/channels, reduction length */
} model_layer_cost;
int model_cost_layer_count(const model *m);
void model_cost_layer_at(const model *m, int i, model_layer_cost *out);
/* The same layers for a model of the spec, without creating one (nothing is allocated on a
 * device): *n of them in *out (malloc'ed: the caller frees it); SS_EUSAGE as model_create for a
 * spec it cannot build. */
int model_spec_cost_layers(const model_spec *spec, model_layer_cost **out, int *n);

/* One training pass on a batch (batch normalization in training mode: batch statistics, and the
 * running statistics updated): x (B, D) and y (B) are host arrays; B <= max_batch. Fills
 * model_grads() with the gradient of the mean softmax cross-entropy over the batch and returns
 * that mean loss (NaN/Inf are returned as they are: the caller decides it diverged). */
double model_forward_backward(model *m, const float *x, const uint8_t *y, int batch);
/* The same pass, calling grad_ready(ctx, i) as soon as the backward pass has written the gradient
 * of layer i (model_cost_layer_at's index: the loss is layer n, then n - 1 down to 0, each once),
 * as a framework's gradient hooks fire. On a GPU the layer's kernels are queued, not finished:
 * device_sync before the host reads the gradient. */
double model_forward_backward_each(model *m, const float *x, const uint8_t *y, int batch,
                                   void (*grad_ready)(void *ctx, int layer), void *ctx);

/* Layer clock (a benchmark's): while set, each training pass adds the seconds of layer i's
 * forward pass to fwd_s[i] and of its backward pass to bwd_s[i] (model_cost_layer_at's index and
 * count; the loss's forward and backward both count in bwd_s[n]; a conv -> ReLU -> max-pool
 * block computed as one counts in the conv's slot). On a GPU, events in the stream time the
 * layers (no synchronization between layers, one wait at the end of the pass); on the CPU the
 * wall clock. NULL stops it; evaluations are not timed. A gpt model's cost layers are timed the
 * same way (a block's norm, qkv, attention, projection with its residual add, norm, fc1, its
 * activation, fc2 with its residual add). */
void model_set_layer_clock(model *m, double *fwd_s, double *bwd_s);

/* Evaluates on n samples (processed in chunks of max_batch; batch normalization in inference
 * mode, with the running statistics): mean loss and number correct. */
void model_evaluate(model *m, const float *x, const uint8_t *y, size_t n, double *mean_loss,
                    size_t *correct);
/* The same evaluation, returning the sum of the per-sample losses (chunks of max_batch samples,
 * summed in order from 0.0): of one chunk (n <= max_batch) it is that chunk's loss exactly, so
 * the chunks of a test set may be evaluated apart and summed in order to the same bits. A
 * language model returns n times its mean loss per token, evaluated whole. */
double model_evaluate_sum(model *m, const float *x, const uint8_t *y, size_t n, size_t *correct);
/* A language model (gpt): x holds samples of T + 1 token ids as floats and y is not read; the
 * loss is the mean cross-entropy per predicted token (perplexity = exp(loss)), and model_evaluate's
 * *correct is the number of correctly predicted tokens / T (correct / n the next-token
 * accuracy). */
int model_is_language(const model *m);
/* The replica's stream of random draws in training passes (dropout masks): each worker sets its
 * rank so that replicas with one seed still draw different masks. A no-op for models without
 * dropout. */
void model_set_stream(model *m, uint64_t stream);

#endif
