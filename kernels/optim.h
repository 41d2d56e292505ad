/* SGD with momentum and weight decay, and learning-rate schedules.
 *
 * Update (PyTorch's form): g' = g + wd * w;  v = mu * v + g';  w -= lr * v   (v only if mu > 0).
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
void sgd_step(sgd_state *s, float *params, const float *grads, float lr, float momentum,
              float weight_decay);
/* Added: FLOPs of one sgd_step on n parameters (2 per multiply-add: update, plus momentum and
 * weight decay when they are non-zero). */
double sgd_step_flops(size_t n, float momentum, float weight_decay);

typedef enum lr_schedule_kind {
    LR_SCHEDULE_CONSTANT = 0,
    LR_SCHEDULE_STEP = 1,  /* lr * gamma^floor(epoch / step_epochs) */
    LR_SCHEDULE_COSINE = 2 /* lr_min + (lr - lr_min) (1 + cos(pi t / T)) / 2, t in steps */
} lr_schedule_kind;

typedef struct lr_schedule {
    lr_schedule_kind kind;
    double base_lr;
    double gamma;       /* step: decay factor (default 0.1) */
    double step_epochs; /* step: epochs between decays (default 30) */
    double min_lr;      /* cosine: floor (default 0) */
    long total_steps;   /* cosine: T */
    long steps_per_epoch;
} lr_schedule;

/* Parses "constant", "step[:EPOCHS[:GAMMA]]" or "cosine[:MIN_LR]"; SS_EUSAGE on anything else.
 * Sets kind, gamma, step_epochs and min_lr (defaults where omitted); the caller sets base_lr,
 * total_steps and steps_per_epoch, which parsing leaves as they are. */
int lr_schedule_parse(lr_schedule *s, const char *text);
double lr_schedule_at(const lr_schedule *s, long step);

#endif
