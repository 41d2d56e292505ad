/* SGD with momentum and weight decay, gradient-norm clipping, and learning-rate schedules.
 *
 * Update (PyTorch's torch.optim.SGD): g' = g + wd * w (weight decay in its coupled L2 form);
 * v = mu * v + g';  w -= lr * v   (v only if mu > 0), or with Nesterov momentum
 * w -= lr * (g' + mu * v)  (v after its update).
 *
 *     sgd_state *s = sgd_create(dev, P);  sgd_step(s, params, grads, lr, mu, wd);  sgd_destroy(s);
 */
#ifndef SS_KERNELS_OPTIM_H
#define SS_KERNELS_OPTIM_H

#include "kernels/device.h"

typedef struct sgd_state sgd_state;

sgd_state *sgd_create(device *dev, size_t n);
void sgd_destroy(sgd_state *s);
void sgd_reset(sgd_state *s);             /* zero the momentum buffer */
float *sgd_momentum_buffer(sgd_state *s); /* (n) device buffer, for averaging or checkpoints */
void sgd_set_nesterov(sgd_state *s,
                      int on); /* Nesterov momentum from the next step (default off) */
void sgd_step(sgd_state *s, float *params, const float *grads, float lr, float momentum,
              float weight_decay);
/* sgd_step on elements [offset, offset + count) only (params and grads as for sgd_step): the
 * same arithmetic per element, so parts that cover the vector give sgd_step's bits. */
void sgd_step_part(sgd_state *s, size_t offset, size_t count, float *params, const float *grads,
                   float lr, float momentum, float weight_decay);
/* Added: FLOPs of one sgd_step on n parameters (2 per multiply-add: update, plus momentum and
 * weight decay when they are non-zero). */
double sgd_step_flops(size_t n, float momentum, float weight_decay);

/* Gradient-norm clipping as torch.nn.utils.clip_grad_norm_ (L2, over the whole vector): with
 * norm = ||g||_2, g *= max_norm / (norm + 1e-6) when that factor is below 1. Returns the norm
 * before clipping. max_norm <= 0: nothing is clipped (the norm is still returned). */
double grad_clip_norm(device *dev, float *grads, size_t n, double max_norm);

typedef enum lr_schedule_kind {
    LR_SCHEDULE_CONSTANT = 0,
    LR_SCHEDULE_STEP = 1,      /* lr * gamma^floor(epoch / step_epochs) */
    LR_SCHEDULE_COSINE = 2,    /* lr_min + (lr - lr_min) (1 + cos(pi t / T)) / 2, t in steps */
    LR_SCHEDULE_MULTISTEP = 3, /* lr * gamma^(milestones passed): epochs E1 < E2 < ... */
    LR_SCHEDULE_STEP_ITERS = 4 /* lr * gamma^floor(t / step_iters), t the step (0-based) */
} lr_schedule_kind;

#define LR_SCHEDULE_MAX_MILESTONES 8

typedef struct lr_schedule {
    lr_schedule_kind kind;
    double base_lr;
    double gamma;       /* step: decay factor (default 0.1) */
    double step_epochs; /* step: epochs between decays (default 30) */
    long step_iters;    /* step-iters: steps (iterations of a worker) between decays */
    double min_lr;      /* cosine: floor (default 0) */
    long total_steps;   /* cosine: T */
    long steps_per_epoch;
    double milestones[LR_SCHEDULE_MAX_MILESTONES]; /* multistep: epochs, increasing */
    int n_milestones;
    /* Linear warm-up over the first W = round(warmup_epochs x steps_per_epoch) steps, on top of
     * any schedule: step t (0-based) < W takes (t + 1) / W of the schedule's rate (0: none). */
    double warmup_epochs;
} lr_schedule;

/* Parses "constant", "step[:EPOCHS[:GAMMA]]", "step-iters:N[:GAMMA]" (decay every N steps, N a
 * whole number >= 1), "multistep:E1,E2,...[:GAMMA]" or "cosine[:MIN_LR]"; SS_EUSAGE on anything
 * else. Sets kind, gamma, step_epochs, milestones and min_lr (defaults where
 * omitted) and warmup_epochs to 0; the caller then sets base_lr, total_steps, steps_per_epoch and
 * warmup_epochs, which parsing leaves as they are otherwise. */
int lr_schedule_parse(lr_schedule *s, const char *text);
/* The learning rate of step `step` (0-based: the first step is 0). */
double lr_schedule_at(const lr_schedule *s, long step);
/* Warm-up steps: round(warmup_epochs x steps_per_epoch). */
long lr_schedule_warmup_steps(const lr_schedule *s);

#endif
