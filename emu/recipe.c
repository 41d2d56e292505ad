/* The models' default training recipes (see recipe.h). */
#include "emu/recipe.h"

#include <string.h>

static const recipe recipes[] = {
    {"resnet", "He et al. 2016, CIFAR", 128, 0.1, 1.0, 0.9, 0, 5e-4, {0.5, 0.75}, 1, 0.0, 0, NULL},
    {"vgg", "the resnet recipe", 128, 0.1, 1.0, 0.9, 0, 5e-4, {0.5, 0.75}, 1, 0.0, 0, NULL},
    /* the rows below name only what differs from zero */
    {.arch = "gpt:wlm",
     .source = "SelSync's Transformer LM, word_language_model's clipping",
     .batch = 20,
     .clip_norm = 0.25,
     .lr_fixed = 2.0,
     .schedule = "step-iters:2000:0.8"},
    {.arch = "gpt",
     .source = "gpt:L,D,H,T: gpt:wlm's, with momentum 0.9 at lr 0.5, measured",
     .batch = 20,
     .momentum = 0.9,
     .clip_norm = 0.25,
     .lr_fixed = 0.5,
     .schedule = "step-iters:2000:0.8"},
};
#define RECIPES ((int)(sizeof recipes / sizeof recipes[0]))

/* gpt, gpt:wlm and gpt:selsync are the word_language_model preset (kernels/model_spec.c) */
static int is_gpt_wlm(const char *model) {
    return !strcmp(model, "gpt") || !strcmp(model, "gpt:wlm") || !strcmp(model, "gpt:selsync");
}

const recipe *recipe_of(const char *model) {
    const char *colon = strchr(model, ':');
    const size_t len = colon ? (size_t)(colon - model) : strlen(model);
    const char *name = is_gpt_wlm(model) ? "gpt:wlm" : NULL;
    for (int i = 0; i < RECIPES; i++) {
        if (name ? !strcmp(recipes[i].arch, name)
                 : strlen(recipes[i].arch) == len && !strncmp(model, recipes[i].arch, len))
            return &recipes[i];
    }
    return NULL;
}

void recipe_dataset(run_config *cfg, int (*was_set)(const run_config *cfg, const char *option)) {
    /* a language model's data set, unless one was named, is the text that a Debian package ships */
    if (!strncmp(cfg->model, "gpt", 3) && !was_set(cfg, "dataset"))
        snprintf(cfg->dataset, sizeof cfg->dataset, "%s", "web-bible");
}

void recipe_apply(run_config *cfg, int (*was_set)(const run_config *cfg, const char *option)) {
    const recipe *r = recipe_of(cfg->model);
    if (!strcmp(cfg->augment, "auto"))
        snprintf(cfg->augment, sizeof cfg->augment, "%s", r && r->augment ? "yes" : "no");
    if (!r) return;
    recipe_dataset(cfg, was_set);
    if (!was_set(cfg, "batch")) cfg->batch = r->batch;
    if (!(cfg->lr > 0))
        cfg->lr = r->lr_fixed > 0 ? r->lr_fixed
                                  : r->lr_per_128 * (double)cfg->workers * cfg->batch / 128.0;
    if (!was_set(cfg, "momentum")) cfg->momentum = r->momentum;
    if (!was_set(cfg, "nesterov")) cfg->nesterov = r->nesterov;
    if (!was_set(cfg, "weight-decay")) cfg->weight_decay = r->weight_decay;
    if (!was_set(cfg, "lr-warmup")) cfg->lr_warmup = r->warmup_epochs;
    if (!was_set(cfg, "clip-norm")) cfg->clip_norm = r->clip_norm;
    if (!was_set(cfg, "lr-schedule") && r->schedule)
        snprintf(cfg->lr_schedule, sizeof cfg->lr_schedule, "%s", r->schedule);
    else if (!was_set(cfg, "lr-schedule"))
        snprintf(cfg->lr_schedule, sizeof cfg->lr_schedule, "multistep:%.6g,%.6g",
                 r->decay_at[0] * cfg->epochs, r->decay_at[1] * cfg->epochs);
}

void recipe_describe(const run_config *cfg, double lr, char *buf, size_t n) {
    const recipe *r = recipe_of(cfg->model);
    snprintf(buf, n,
             "recipe %s: lr %g, schedule %s, warm-up %g epochs, momentum %g%s, weight decay %g, "
             "augment %s, clip-norm %g",
             r ? r->arch : "none (the option table's defaults)", lr, cfg->lr_schedule,
             cfg->lr_warmup, cfg->momentum, cfg->nesterov ? " (Nesterov)" : "", cfg->weight_decay,
             cfg->augment, cfg->clip_norm);
}

void recipe_summarize(const run_config *cfg, run_summary *s) {
    const recipe *r = recipe_of(cfg->model);
    snprintf(s->recipe, sizeof s->recipe, "%s", r ? r->arch : "");
    s->momentum = cfg->momentum;
    s->nesterov = cfg->nesterov != 0;
    s->weight_decay = cfg->weight_decay;
    snprintf(s->lr_schedule, sizeof s->lr_schedule, "%s", cfg->lr_schedule);
    s->lr_warmup_epochs = cfg->lr_warmup;
    snprintf(s->augment, sizeof s->augment, "%s", cfg->augment);
    s->clip_norm = cfg->clip_norm;
}

void recipe_print_help(FILE *out) {
    fprintf(out, "Training recipes: an option not given takes the model's recipe "
                 "(docs/TRAINING.md).\n");
    for (int i = 0; i < RECIPES; i++) {
        const recipe *r = &recipes[i];
        char lr[64], schedule[96];
        if (r->lr_fixed > 0)
            snprintf(lr, sizeof lr, "%g (not scaled)", r->lr_fixed);
        else
            snprintf(lr, sizeof lr, "%g x N x B / 128", r->lr_per_128);
        if (r->schedule)
            snprintf(schedule, sizeof schedule, "%s", r->schedule);
        else
            snprintf(schedule, sizeof schedule, "multistep at %g%% and %g%% of --epochs",
                     100 * r->decay_at[0], 100 * r->decay_at[1]);
        fprintf(out,
                "  %s (%s):\n      --batch %d, --lr %s, --lr-warmup %g, --momentum %g%s,\n"
                "      --weight-decay %g, --lr-schedule %s,\n"
                "      --augment %s, --clip-norm %g\n",
                r->arch, r->source, r->batch, lr, r->warmup_epochs, r->momentum,
                r->nesterov ? " --nesterov" : "", r->weight_decay, schedule,
                r->augment ? "yes" : "no", r->clip_norm);
    }
    fprintf(out, "  logreg, mlp, cnn: the defaults below (constant rate, no weight decay, no "
                 "augmentation).\n");
}
