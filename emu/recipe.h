/* The default training recipe of each model: what a run takes for an option it was not given.
 *
 * resnet (He et al. 2016, section 4.2, CIFAR-10): batch 128, lr 0.1 x (N x B / 128) (the linear
 * scaling rule of Goyal et al. 2017 for N workers of B samples), linear warm-up over the first
 * epoch (He et al. trained ResNet-110 at 0.01 for the first 400 iterations, about one epoch at
 * batch 128, before 0.1), momentum 0.9, weight decay 5e-4 (He et al.: 1e-4; 5e-4 as the CIFAR
 * recipe of Zagoruyko and Komodakis 2016), decay by 10 at 50 % and 75 % of the epochs
 * (32k and 48k of 64k iterations), random crop with padding 4 and horizontal flip.
 * vgg (the CIFAR VGG with batch norm): the same.
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
    const char *arch;   /* the model's name before any ':' */
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
} recipe;

/* The recipe of a --model text (NULL: none, the table's defaults apply). */
const recipe *recipe_of(const char *model);
/* Fills in cfg's batch, lr (when 0), momentum, nesterov, weight decay, lr schedule, warm-up and
 * clipping from the model's recipe where was_set says the option was not given, and resolves
 * --augment auto (yes for a recipe that augments, else no). */
void recipe_apply(run_config *cfg, int (*was_set)(const run_config *cfg, const char *option));
/* One line for the run's banner: the recipe's name and the values in use. */
void recipe_describe(const run_config *cfg, double lr, char *buf, size_t n);
/* summary.json's recipe keys: the recipe's name and the values in use. */
void recipe_summarize(const run_config *cfg, run_summary *s);
/* The recipes as --help lists them. */
void recipe_print_help(FILE *out);

#endif
