/* Internal: decoder-only Transformer language models, the --model gpt:... forms (model.c
 * dispatches to these; the public interface is model.h).
 *
 * gpt:L,D,H,T (GPT-2's layout, Radford et al. 2019): token embedding wte (V, D) plus learned
 * positions wpe (T, D), dropout; L pre-norm blocks x += drop(attn(ln1(x))), x += drop(mlp(ln2(x)))
 * with causal multi-head self-attention (H heads of D/H, in_proj (3D, D) and out_proj (D, D) with
 * biases, dropout on the attention probabilities) and an MLP D -> 4D -> D with GELU (erf form);
 * a final layer norm; logits = x wte^T (the output projection tied to the embedding: its
 * gradient is added to the embedding's).
 *
 * gpt:wlm: PyTorch's examples/word_language_model TransformerModel (nn.TransformerEncoderLayer,
 * PyTorch's defaults): embedding x sqrt(D) + sinusoidal positions, dropout; L post-norm blocks
 * x = ln1(x + drop(attn(x))), x = ln2(x + drop(W2 drop(relu(W1 x)))) with an MLP of width nhid;
 * no final norm; an untied decoder (V, D) with bias. 2 layers, D = nhid = 200, 2 heads,
 * dropout 0.2, T = 35: 2 V D + V + 484,000 parameters.
 *
 * A sample is T + 1 token ids: inputs 0..T-1, each predicting the next; the loss is the mean
 * cross-entropy over the B T predictions. Dropout is active in training passes only; its
 * masks are drawn from (the model's dropout stream, the pass number, the site), so that a
 * replica's run is reproducible and two workers' differ (gpt_set_dropout_stream). */
#ifndef SS_KERNELS_GPT_H
#define SS_KERNELS_GPT_H

#include "kernels/model.h"

typedef struct gpt gpt;

/* The parameter count of a spec (nothing allocated). */
size_t gpt_spec_params(const model_spec *spec);
/* SS_EUSAGE naming what is wrong with a spec's sizes. */
int gpt_spec_check(const model_spec *spec);
int gpt_create(device *dev, const model_spec *spec, uint64_t seed, int max_batch, gpt **out);
void gpt_destroy(gpt *g);

float *gpt_params(gpt *g);
float *gpt_grads(gpt *g);
size_t gpt_param_count(const gpt *g);
int gpt_view_count(const gpt *g);
const model_view *gpt_view_at(const gpt *g, int i);
double gpt_device_bytes(const gpt *g);
double gpt_forward_flops(const gpt *g); /* per sample (T tokens) */
double gpt_backward_flops(const gpt *g);
int gpt_cost_layer_count(const gpt *g);
void gpt_cost_layer_at(const gpt *g, int i, model_layer_cost *out);
/* The same costs for the spec without creating a model: *n of them in *out (malloc'ed). */
int gpt_spec_cost_layers(const model_spec *spec, model_layer_cost **out, int *n);
/* The layer clock of model_set_layer_clock (kernels/layer_clock.h), lapped after each cost layer
 * of a training pass, or NULL: none. */
struct layer_clock;
void gpt_set_layer_clock(gpt *g, struct layer_clock *clock);
/* Dropout masks of this replica: a stream number (the worker's rank) mixed into the seed. */
void gpt_set_dropout_stream(gpt *g, uint64_t stream);

/* The mask the last training pass applied at dropout site `site` (gpt_pass.c numbers them) to
 * its n elements, into host: 0 where dropped, else 1 / (1 - p); the site's dropout op applied
 * again to ones, as the backward pass applies it (bench/step_dump writes these for a check
 * against PyTorch). All ones when the model has no dropout or no training pass ran. */
void gpt_dropout_mask(gpt *g, int site, size_t n, float *host);

/* x: (batch, T + 1) host token ids as floats. Returns the mean loss over batch T tokens. */
double gpt_forward_backward(gpt *g, const float *x, int batch,
                            void (*grad_ready)(void *ctx, int layer), void *ctx);
/* Mean loss per token over n samples (no dropout); *correct_tokens: predictions whose argmax
 * is the next token. */
void gpt_evaluate(gpt *g, const float *x, size_t n, double *mean_loss, size_t *correct_tokens);

#endif
