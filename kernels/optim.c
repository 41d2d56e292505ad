/* SGD with momentum and weight decay (one fused device op), gradient-norm clipping, and
 * learning-rate schedules with linear warm-up. */
#include "kernels/optim.h"

#include "common/status.h"
#include "kernels/device_impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct sgd_state {
    device *dev;
    size_t n;
    float *velocity; /* (n) momentum buffer v */
    int nesterov;
};

sgd_state *sgd_create(device *dev, size_t n) {
    sgd_state *s = ss_calloc(1, sizeof *s);
    s->dev = dev;
    s->n = n;
    s->velocity = device_alloc(dev, n);
    return s;
}

void sgd_destroy(sgd_state *s) {
    if (!s) return;
    device_free(s->dev, s->velocity);
    free(s);
}

void sgd_reset(sgd_state *s) {
    s->dev->ops->zero(s->dev, s->velocity, s->n);
}

float *sgd_momentum_buffer(sgd_state *s) {
    return s->velocity;
}

void sgd_set_nesterov(sgd_state *s, int on) {
    s->nesterov = on != 0;
}

void sgd_step(sgd_state *s, float *params, const float *grads, float lr, float momentum,
              float weight_decay) {
    if (s->n)
        s->dev->ops->sgd(s->dev, s->n, params, grads, s->velocity, lr, momentum, weight_decay,
                         s->nesterov);
}

void sgd_step_part(sgd_state *s, size_t offset, size_t count, float *params, const float *grads,
                   float lr, float momentum, float weight_decay) {
    SS_ASSERT(offset + count <= s->n);
    if (count)
        s->dev->ops->sgd(s->dev, count, params + offset, grads + offset, s->velocity + offset, lr,
                         momentum, weight_decay, s->nesterov);
}

double grad_clip_norm(device *dev, float *grads, size_t n, double max_norm) {
    if (!n) return 0.0;
    const double norm = device_nrm2(dev, n, grads);
    const double coef = max_norm / (norm + 1e-6);
    if (max_norm > 0 && coef < 1.0) device_scale(dev, n, (float)coef, grads);
    return norm;
}

double sgd_step_flops(size_t n, float momentum, float weight_decay) {
    double per = 2.0 + (momentum != 0.0f ? 2.0 : 0.0) + (weight_decay != 0.0f ? 2.0 : 0.0);
    return per * (double)n;
}

/* Parses one optional number after a ':'; *p advances past it. */
static int parse_field(const char **p, double *out, const char *text) {
    if (**p != ':') return SS_OK;
    const char *start = *p + 1;
    char *end;
    errno = 0;
    double v = strtod(start, &end);
    if (end == start || errno || !isfinite(v) || v < 0 || (*end && *end != ':'))
        return ss_error_set(SS_EUSAGE,
                            "lr schedule '%s': bad number at '%s' (valid: constant, "
                            "step[:EPOCHS[:GAMMA]], step-iters:N[:GAMMA], "
                            "multistep:E1,E2,...[:GAMMA], cosine[:MIN_LR])",
                            text, start);
    *out = v;
    *p = end;
    return SS_OK;
}

/* multistep's epochs "E1,E2,..." after the ':' at *p, increasing; *p advances past them. */
static int parse_milestones(lr_schedule *s, const char **p, const char *text, const char *valid) {
    s->n_milestones = 0;
    if (**p != ':')
        return ss_error_set(SS_EUSAGE, "lr schedule '%s': multistep needs its epochs (%s)", text,
                            valid);
    const char *q = *p + 1;
    for (;;) {
        char *end;
        errno = 0;
        double v = strtod(q, &end);
        const double prev = s->n_milestones ? s->milestones[s->n_milestones - 1] : 0.0;
        if (end == q || errno || !isfinite(v) || v <= prev ||
            s->n_milestones == LR_SCHEDULE_MAX_MILESTONES || (*end && *end != ',' && *end != ':'))
            return ss_error_set(SS_EUSAGE,
                                "lr schedule '%s': bad epoch at '%s' (multistep takes 1 to %d "
                                "increasing epochs > 0; %s)",
                                text, q, LR_SCHEDULE_MAX_MILESTONES, valid);
        s->milestones[s->n_milestones++] = v;
        q = end;
        if (*q != ',') break;
        q++;
    }
    *p = q;
    return SS_OK;
}

int lr_schedule_parse(lr_schedule *s, const char *text) {
    static const char *const valid = "valid: constant, step[:EPOCHS[:GAMMA]], "
                                     "step-iters:N[:GAMMA], multistep:E1,E2,...[:GAMMA], "
                                     "cosine[:MIN_LR]";
    const char *colon = strchr(text, ':');
    size_t len = colon ? (size_t)(colon - text) : strlen(text);
    const char *p = text + len;
    s->gamma = 0.1;
    s->step_epochs = 30.0;
    s->step_iters = 0;
    s->min_lr = 0.0;
    s->n_milestones = 0;
    s->warmup_epochs = 0.0;
    if (len == 8 && !strncmp(text, "constant", 8) && !*p) {
        s->kind = LR_SCHEDULE_CONSTANT;
        return SS_OK;
    }
    if (len == 4 && !strncmp(text, "step", 4)) {
        s->kind = LR_SCHEDULE_STEP;
        if (parse_field(&p, &s->step_epochs, text) || parse_field(&p, &s->gamma, text))
            return SS_EUSAGE;
        if (*p || s->step_epochs <= 0)
            return ss_error_set(SS_EUSAGE, "lr schedule '%s': bad step form (%s)", text, valid);
        return SS_OK;
    }
    if (len == 10 && !strncmp(text, "step-iters", 10)) {
        s->kind = LR_SCHEDULE_STEP_ITERS;
        double n = 0;
        if (*p != ':')
            return ss_error_set(SS_EUSAGE, "lr schedule '%s': step-iters needs its N (%s)", text,
                                valid);
        if (parse_field(&p, &n, text) || parse_field(&p, &s->gamma, text)) return SS_EUSAGE;
        if (*p || n < 1 || n != floor(n) || n > 1e12)
            return ss_error_set(SS_EUSAGE,
                                "lr schedule '%s': bad step-iters form (N a whole number of steps "
                                ">= 1; %s)",
                                text, valid);
        s->step_iters = (long)n;
        return SS_OK;
    }
    if (len == 9 && !strncmp(text, "multistep", 9)) {
        s->kind = LR_SCHEDULE_MULTISTEP;
        if (parse_milestones(s, &p, text, valid) || parse_field(&p, &s->gamma, text))
            return SS_EUSAGE;
        if (*p)
            return ss_error_set(SS_EUSAGE, "lr schedule '%s': bad multistep form (%s)", text,
                                valid);
        return SS_OK;
    }
    if (len == 6 && !strncmp(text, "cosine", 6)) {
        s->kind = LR_SCHEDULE_COSINE;
        if (parse_field(&p, &s->min_lr, text)) return SS_EUSAGE;
        if (*p)
            return ss_error_set(SS_EUSAGE, "lr schedule '%s': bad cosine form (%s)", text, valid);
        return SS_OK;
    }
    return ss_error_set(SS_EUSAGE, "unknown lr schedule '%s' (%s)", text, valid);
}

long lr_schedule_warmup_steps(const lr_schedule *s) {
    if (!(s->warmup_epochs > 0)) return 0;
    const double spe = s->steps_per_epoch > 0 ? (double)s->steps_per_epoch : 1.0;
    return (long)llround(s->warmup_epochs * spe);
}

/* The schedule's rate at `step` before the warm-up's factor. */
static double scheduled(const lr_schedule *s, long step) {
    const double spe = s->steps_per_epoch > 0 ? (double)s->steps_per_epoch : 1.0;
    const double epoch = (double)step / spe;
    switch (s->kind) {
    case LR_SCHEDULE_STEP:
        return s->base_lr * pow(s->gamma, floor(epoch / s->step_epochs));
    case LR_SCHEDULE_STEP_ITERS:
        return s->base_lr * pow(s->gamma, (double)(step / s->step_iters));
    case LR_SCHEDULE_MULTISTEP: {
        int passed = 0;
        while (passed < s->n_milestones && epoch >= s->milestones[passed])
            passed++;
        return s->base_lr * pow(s->gamma, passed);
    }
    case LR_SCHEDULE_COSINE: {
        if (s->total_steps <= 0) return s->base_lr;
        double t = step < s->total_steps ? (double)step : (double)s->total_steps;
        const double pi = 3.14159265358979323846;
        return s->min_lr + (s->base_lr - s->min_lr) * (1.0 + cos(pi * t / s->total_steps)) / 2.0;
    }
    case LR_SCHEDULE_CONSTANT:
    default:
        return s->base_lr;
    }
}

double lr_schedule_at(const lr_schedule *s, long step) {
    const double lr = scheduled(s, step);
    const long w = lr_schedule_warmup_steps(s);
    return step < w ? lr * (double)(step + 1) / (double)w : lr;
}
