/* The default training recipe of each model: what a run takes for an option it was not given.
 *
 * resnet (He et al. 2016, section 4.2, CIFAR-10): batch 128, lr 0.1 x (N x B / 128) (the linear
 * scaling rule of Goyal et al. 2017 for N workers of B samples), linear warm-up over the first
 * epoch (He et al. trained ResNet-110 at 0.01 for the first 400 iterations, about one epoch at
 * batch 128, before 0.1), momentum 0.9, weight decay 5e-4 (He et al.: 1e-4; 5e-4 as the CIFAR
 * recipe of Zagoruyko and Komodakis 2016), decay by 10 at 50 % and 75 % of the epochs
 * (32k and 48k of 64k iterations), random crop with padding 4 and horizontal flip.
 * vgg (the CIFAR VGG with batch norm): the same.
 * gpt:wlm (also gpt, gpt:selsync): the SelSync paper's setting for its Transformer language model
 * (SGD, lr 2.0 decayed x0.8 every 2,000 iterations, batch 20) with the gradient-norm clipping at
 * 0.25 of PyTorch's examples/word_language_model (its --clip default); no momentum, no weight
 * decay, no warm-up; the rate is the paper's whatever the workers and batch (not scaled).
 * gpt:L,D,H,T: gpt:wlm's recipe (batch 20, clipping 0.25, x0.8 every 2,000 steps, the rate not
 * scaled) with momentum 0.9 and lr 0.5: no SGD recipe is published for GPT-2's layout (GPT-2 was
 * trained with Adam, which syncsim does not emulate); on gpt:2,128,4,64 and web-bible this one
 * took the validation perplexity to 229 in 150 steps where gpt:wlm's (lr 2.0, no momentum) took
 * it to 420 (docs/TRAINING.md).
 * logreg, mlp, cnn: no recipe; the option table's defaults (constant rate, momentum 0.9, no weight
 * decay, no augmentation), as before recipes existed.
 *
 *     recipe_apply(&cfg, options_was_set);   // fills in what was not given
 */
#ifndef SS_EMU_RECIPE_H
#define SS_EMU_RECIPE_H

#include "common/run_config.h"
#include "common/summary.h"

#include <stddef.h>
#include <stdio.h>

typedef struct recipe {
    const char *arch;   /* the model's name before any ':' ("gpt:wlm" for that preset) */
    const char *source; /* where it comes from */
    int batch;
    double lr_per_128;    /* the rate at 128 samples per synchronous step, scaled linearly */
    double warmup_epochs; /* linear warm-up */
    double momentum;
    int nesterov;
    double weight_decay;
    double decay_at[2]; /* fractions of the epochs at which the rate is divided by 10 */
    int augment;
    double clip_norm;
    double lr_fixed;      /* > 0: the rate whatever the workers and batch (lr_per_128 unused) */
    const char *schedule; /* its --lr-schedule as given (NULL: multistep at decay_at) */
} recipe;

/* The recipe of a --model text (NULL: none, the table's defaults apply). */
const recipe *recipe_of(const char *model);
/* A language model (gpt) without --dataset reads web-bible, the text of Debian's sword-text-web;
 * every other model keeps the option table's fashion-mnist. Part of recipe_apply; the benchmarks,
 * which take no recipe, call it alone. */
void recipe_dataset(run_config *cfg, int (*was_set)(const run_config *cfg, const char *option));
/* Fills in cfg's data set, batch, lr (when 0), momentum, nesterov, weight decay, lr schedule,
 * warm-up and clipping from the model's recipe where was_set says the option was not given, and
 * resolves --augment auto (yes for a recipe that augments, else no). */
void recipe_apply(run_config *cfg, int (*was_set)(const run_config *cfg, const char *option));
/* One line for the run's banner: the recipe's name and the values in use. */
void recipe_describe(const run_config *cfg, double lr, char *buf, size_t n);
/* summary.json's recipe keys: the recipe's name and the values in use. */
void recipe_summarize(const run_config *cfg, run_summary *s);
/* The recipes as --help lists them. */
void recipe_print_help(FILE *out);

#endif
