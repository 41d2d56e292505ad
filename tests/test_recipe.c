/* CUnit suite of the training recipes: Nesterov momentum and coupled weight decay against hand
 * computations, the learning rate of warm-up and multistep decay at given steps, gradient-norm
 * clipping, the crops and flips of augmentation pixel by pixel and their determinism, and the
 * models' default recipes as the options resolve them. */
#include "cli/options.h"
#include "common/status.h"
#include "emu/augment.h"
#include "emu/recipe.h"
#include "kernels/device.h"
#include "kernels/optim.h"
#include "ss_test.h"

#include <math.h>
#include <string.h>

static device *open_cpu(void) {
    device *dev = NULL;
    char notice[256];
    int rc = device_open("cpu", &dev, notice, sizeof notice);
    SS_ASSERT(rc == SS_OK);
    return dev;
}

/* ---- update rules ---- */

/* Nesterov (PyTorch): g' = g + wd w; v = mu v + g'; w -= lr (g' + mu v). lr 0.1, mu 0.9, wd 0.01:
 *   w0 = 1, g = 0.5:   step 1: g' = 0.51, v = 0.51, w = 1 - 0.1 (0.51 + 0.459) = 0.9031
 *                      step 2: g' = 0.5 + 0.009031 = 0.509031, v = 0.459 + 0.509031 = 0.968031,
 *                              w = 0.9031 - 0.1 (0.509031 + 0.8712279) = 0.76507411
 *   w0 = -2, g = 0.25: step 1: g' = 0.23, v = 0.23, w = -2 - 0.1 (0.23 + 0.207) = -2.0437
 *   w0 = 0.5, g = -1:  step 1: g' = -0.995, v = -0.995, w = 0.5 + 0.1 (0.995 + 0.8955) = 0.68905
 * (plain momentum would give 0.949 for the first: w -= lr v). */
static void test_nesterov_hand(void) {
    device *dev = open_cpu();
    const float w0[3] = {1.0f, -2.0f, 0.5f}, g[3] = {0.5f, 0.25f, -1.0f};
    float *w = device_alloc(dev, 3), *gd = device_alloc(dev, 3);
    device_upload(dev, w, w0, 3);
    device_upload(dev, gd, g, 3);
    sgd_state *s = sgd_create(dev, 3);
    sgd_set_nesterov(s, 1);
    sgd_step(s, w, gd, 0.1f, 0.9f, 0.01f);
    SS_CHECK_CLOSE(w[0], 0.9031, 0, 1e-6);
    SS_CHECK_CLOSE(w[1], -2.0437, 0, 1e-6);
    SS_CHECK_CLOSE(w[2], 0.68905, 0, 1e-6);
    SS_CHECK_CLOSE(sgd_momentum_buffer(s)[0], 0.51, 0, 1e-6);
    sgd_step(s, w, gd, 0.1f, 0.9f, 0.01f);
    SS_CHECK_CLOSE(w[0], 0.76507411, 0, 1e-6);
    SS_CHECK_CLOSE(w[1], -2.10594697, 0, 1e-6);
    SS_CHECK_CLOSE(w[2], 0.958335805, 0, 1e-6);
    SS_CHECK_CLOSE(sgd_momentum_buffer(s)[0], 0.968031, 0, 1e-6);
    /* off again: the plain momentum form, w -= lr v */
    sgd_reset(s);
    sgd_set_nesterov(s, 0);
    device_upload(dev, w, w0, 3);
    sgd_step(s, w, gd, 0.1f, 0.9f, 0.01f);
    SS_CHECK_CLOSE(w[0], 0.949, 0, 1e-6);
    sgd_destroy(s);
    device_free(dev, w);
    device_free(dev, gd);
    device_close(dev);
}

/* Weight decay is L2 coupled into the gradient (torch.optim.SGD's weight_decay), not decoupled:
 * w0 = 2, g = 0.5, lr 0.1, wd 0.1, no momentum: w = 2 - 0.1 (0.5 + 0.2) = 1.93 (decoupled would be
 * 2 - 0.05 - 0.1 x 0.1 x 2 = 1.93 as well at mu = 0, so momentum tells them apart:)
 * with mu 0.9, two steps: v1 = 0.7, w1 = 1.93; g'2 = 0.5 + 0.193 = 0.693, v2 = 0.63 + 0.693 =
 * 1.323, w2 = 1.93 - 0.1323 = 1.7977 (decoupled: v2 = 0.9 x 0.5 + 0.5 = 0.95, w2 = 1.93 - 0.095 -
 * 0.0193 = 1.8157). */
static void test_weight_decay_hand(void) {
    device *dev = open_cpu();
    const float w0 = 2.0f, g = 0.5f;
    float *w = device_alloc(dev, 1), *gd = device_alloc(dev, 1);
    device_upload(dev, w, &w0, 1);
    device_upload(dev, gd, &g, 1);
    sgd_state *s = sgd_create(dev, 1);
    sgd_step(s, w, gd, 0.1f, 0.0f, 0.1f);
    SS_CHECK_CLOSE(w[0], 1.93, 0, 1e-6);
    device_upload(dev, w, &w0, 1);
    sgd_step(s, w, gd, 0.1f, 0.9f, 0.1f);
    SS_CHECK_CLOSE(w[0], 1.93, 0, 1e-6);
    sgd_step(s, w, gd, 0.1f, 0.9f, 0.1f);
    SS_CHECK_CLOSE(w[0], 1.7977, 0, 1e-6);
    sgd_destroy(s);
    device_free(dev, w);
    device_free(dev, gd);
    device_close(dev);
}

/* clip_grad_norm_: g = (3, 4), norm 5; max 1 scales by 1 / (5 + 1e-6); max 10 leaves it. */
static void test_clip_norm_hand(void) {
    device *dev = open_cpu();
    const float g0[2] = {3.0f, 4.0f};
    float *g = device_alloc(dev, 2);
    device_upload(dev, g, g0, 2);
    SS_CHECK_CLOSE(grad_clip_norm(dev, g, 2, 10.0), 5.0, 0, 1e-12);
    CU_ASSERT(g[0] == 3.0f && g[1] == 4.0f);
    SS_CHECK_CLOSE(grad_clip_norm(dev, g, 2, 1.0), 5.0, 0, 1e-12);
    SS_CHECK_CLOSE(g[0], 3.0 / (5.0 + 1e-6), 0, 1e-6);
    SS_CHECK_CLOSE(g[1], 4.0 / (5.0 + 1e-6), 0, 1e-6);
    SS_CHECK_CLOSE(grad_clip_norm(dev, g, 2, 1.0), 1.0, 0, 1e-5); /* now within: unchanged */
    SS_CHECK_CLOSE(g[0], 0.6, 0, 1e-5);
    device_upload(dev, g, g0, 2);
    SS_CHECK_CLOSE(grad_clip_norm(dev, g, 2, 0.0), 5.0, 0, 1e-12); /* 0: no clipping */
    CU_ASSERT(g[0] == 3.0f);
    device_free(dev, g);
    device_close(dev);
}

/* ---- schedules ---- */

/* Warm-up 0.5 epochs at 10 steps an epoch: W = 5, step t < 5 takes (t + 1) / 5 of the rate. Then
 * multistep at epochs 1 and 2 (steps 10 and 20) with gamma 0.1. */
static void test_warmup_multistep(void) {
    lr_schedule s;
    CU_ASSERT_EQUAL_FATAL(lr_schedule_parse(&s, "multistep:1,2"), SS_OK);
    CU_ASSERT_EQUAL(s.n_milestones, 2);
    s.base_lr = 0.1;
    s.steps_per_epoch = 10;
    s.total_steps = 30;
    s.warmup_epochs = 0.5;
    CU_ASSERT_EQUAL(lr_schedule_warmup_steps(&s), 5);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 0), 0.02, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 2), 0.06, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 4), 0.1, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 5), 0.1, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 9), 0.1, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 10), 0.01, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 19), 0.01, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 20), 0.001, 0, 1e-12);
    /* the gamma of the text; warm-up on top of cosine: (t + 1) / W of the cosine's rate */
    CU_ASSERT_EQUAL_FATAL(lr_schedule_parse(&s, "multistep:1.5:0.5"), SS_OK);
    CU_ASSERT(s.warmup_epochs == 0.0); /* parsing resets it */
    s.base_lr = 0.1;
    s.steps_per_epoch = 10;
    SS_CHECK_CLOSE(lr_schedule_at(&s, 14), 0.1, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 15), 0.05, 0, 1e-12);
    CU_ASSERT_EQUAL_FATAL(lr_schedule_parse(&s, "cosine"), SS_OK);
    s.base_lr = 0.1;
    s.steps_per_epoch = 10;
    s.total_steps = 20;
    s.warmup_epochs = 1.0;
    const double pi = 3.14159265358979323846;
    SS_CHECK_CLOSE(lr_schedule_at(&s, 3), 0.1 * (1 + cos(pi * 3 / 20)) / 2 * 4 / 10, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 10), 0.1 * (1 + cos(pi * 10 / 20)) / 2, 0, 1e-12);
    /* malformed forms name the valid ones */
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "multistep"), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "multistep:E1,E2"));
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "multistep:2,1"), SS_EUSAGE);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "multistep:1,x"), SS_EUSAGE);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "multistep:1,2:0.1:3"), SS_EUSAGE);
}

/* step-iters:2000:0.8 (the SelSync paper's language model): x0.8 at steps 2000, 4000, ...
 * whatever the epoch's length; with warm-up on top. */
static void test_step_iters(void) {
    lr_schedule s;
    CU_ASSERT_EQUAL_FATAL(lr_schedule_parse(&s, "step-iters:2000:0.8"), SS_OK);
    s.base_lr = 2.0;
    s.steps_per_epoch = 300; /* not read */
    SS_CHECK_CLOSE(lr_schedule_at(&s, 0), 2.0, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 1999), 2.0, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 2000), 1.6, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 3999), 1.6, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 4000), 1.28, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 10000), 2.0 * pow(0.8, 5), 0, 1e-12);
    s.warmup_epochs = 1.0; /* 300 steps: step 149 takes half the rate */
    SS_CHECK_CLOSE(lr_schedule_at(&s, 149), 1.0, 0, 1e-12);
    CU_ASSERT_EQUAL_FATAL(lr_schedule_parse(&s, "step-iters:5"), SS_OK); /* gamma 0.1 */
    s.base_lr = 1.0;
    SS_CHECK_CLOSE(lr_schedule_at(&s, 5), 0.1, 0, 1e-12);
    SS_CHECK_CLOSE(lr_schedule_at(&s, 4), 1.0, 0, 1e-12);
    /* N a whole number of steps >= 1 */
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "step-iters"), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "step-iters:N[:GAMMA]"));
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "step-iters:0"), SS_EUSAGE);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "step-iters:2.5"), SS_EUSAGE);
    CU_ASSERT_EQUAL(lr_schedule_parse(&s, "step-iters:10:0.5:1"), SS_EUSAGE);
}

/* ---- augmentation ---- */

/* A 1-channel 3 x 4 image set of 2 samples: pixel (y, x) of sample i is 10 y + x + 100 i; the
 * fill is its smallest value, 0. */
static void image_set(dataset *d, float *x, uint8_t *y) {
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "test");
    d->n = 2;
    d->c = 1;
    d->h = 3;
    d->w = 4;
    d->classes = 2;
    for (int i = 0; i < 2; i++)
        for (int r = 0; r < 3; r++)
            for (int c = 0; c < 4; c++)
                x[i * 12 + r * 4 + c] = (float)(10 * r + c + 100 * i);
    y[0] = 0, y[1] = 1;
    d->x = x;
    d->y = y;
}

static void test_augment_moves_pixels(void) {
    float x[24];
    uint8_t y[2];
    dataset d;
    image_set(&d, x, y);
    augment a;
    CU_ASSERT_EQUAL_FATAL(augment_init(&a, &d, 2, 5), SS_OK);
    CU_ASSERT(a.fill[0] == 0.0f);
    float out[12];
    augment_sample(&a, x, out, (augment_draw){2, 2, 0}); /* the centre crop: the image */
    CU_ASSERT(memcmp(out, x, sizeof out) == 0);
    augment_sample(&a, x, out, (augment_draw){3, 2, 0}); /* one row down: out(y) = in(y + 1) */
    for (int c = 0; c < 4; c++) {
        CU_ASSERT(out[0 * 4 + c] == 10.0f + c);
        CU_ASSERT(out[1 * 4 + c] == 20.0f + c);
        CU_ASSERT(out[2 * 4 + c] == 0.0f); /* padding */
    }
    augment_sample(&a, x, out, (augment_draw){2, 0, 0}); /* two columns left: out(x) = in(x-2) */
    for (int r = 0; r < 3; r++) {
        CU_ASSERT(out[r * 4 + 0] == 0.0f && out[r * 4 + 1] == 0.0f);
        CU_ASSERT(out[r * 4 + 2] == 10.0f * r && out[r * 4 + 3] == 10.0f * r + 1);
    }
    augment_sample(&a, x, out, (augment_draw){2, 2, 1}); /* mirrored: out(x) = in(3 - x) */
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 4; c++)
            CU_ASSERT(out[r * 4 + c] == 10.0f * r + (3 - c));
    /* crop, then flip (torchvision's order): out(y, x) = in(y + 1, 3 - x + 1) where inside */
    augment_sample(&a, x, out, (augment_draw){3, 3, 1});
    CU_ASSERT(out[0 * 4 + 0] == 0.0f); /* in(1, 4): outside */
    CU_ASSERT(out[0 * 4 + 1] == 13.0f && out[1 * 4 + 3] == 21.0f && out[2 * 4 + 2] == 0.0f);
    augment_free(&a);
}

static void test_augment_deterministic(void) {
    enum { N = 16, D = 12 };
    float x[24];
    uint8_t y[2];
    dataset d;
    image_set(&d, x, y);
    augment a;
    CU_ASSERT_EQUAL_FATAL(augment_init(&a, &d, 4, 9), SS_OK);
    float b1[N * D], b2[N * D], b3[N * D], b4[N * D], orig[N * D];
    for (int i = 0; i < N * D; i++)
        orig[i] = (float)((i * 7919) % 251);
    memcpy(b1, orig, sizeof orig);
    memcpy(b2, orig, sizeof orig);
    memcpy(b3, orig, sizeof orig);
    memcpy(b4, orig, sizeof orig);
    augment_batch(&a, b1, N, 1, 7);
    augment_batch(&a, b2, N, 1, 7);
    augment_batch(&a, b3, N, 1, 8);
    augment_batch(&a, b4, N, 2, 7);
    CU_ASSERT(memcmp(b1, b2, sizeof b1) == 0); /* same worker and step: the same batch */
    CU_ASSERT(memcmp(b1, b3, sizeof b1) != 0); /* another step, another worker: other draws */
    CU_ASSERT(memcmp(b1, b4, sizeof b1) != 0);
    /* each sample is its own draw applied to it; the draws cover the offsets and both flips */
    int seen_dy[9] = {0}, flips = 0;
    for (int i = 0; i < N; i++) {
        augment_draw dr = augment_draw_of(&a, 1, 7, i);
        CU_ASSERT(dr.dy >= 0 && dr.dy <= 8 && dr.dx >= 0 && dr.dx <= 8);
        seen_dy[dr.dy] = 1;
        flips += dr.flip;
        float out[D];
        augment_sample(&a, orig + i * D, out, dr);
        CU_ASSERT(memcmp(out, b1 + i * D, sizeof out) == 0);
    }
    int distinct = 0;
    for (int k = 0; k < 9; k++)
        distinct += seen_dy[k];
    CU_ASSERT(distinct >= 4);
    CU_ASSERT(flips > 0 && flips < N);
    augment_free(&a);
    /* a set that is not images is refused, naming the option */
    d.h = 1;
    d.w = 1;
    d.c = 12;
    CU_ASSERT_EQUAL(augment_init(&a, &d, 4, 9), SS_EUSAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "--augment"));
}

/* ---- default recipes ---- */

static void parse(run_config *cfg, int argc, char **argv) {
    CU_ASSERT_EQUAL_FATAL(options_parse(CMD_TRAIN, argc, argv, cfg), SS_OK);
    recipe_apply(cfg, options_was_set);
}

static void test_recipe_defaults(void) {
    run_config cfg;
    char *resnet[] = {"--model", "resnet:20", "--epochs", "30"};
    parse(&cfg, 4, resnet);
    CU_ASSERT_EQUAL(cfg.batch, 128);
    SS_CHECK_CLOSE(cfg.lr, 0.1, 0, 1e-12);
    SS_CHECK_CLOSE(cfg.momentum, 0.9, 0, 1e-12);
    SS_CHECK_CLOSE(cfg.weight_decay, 5e-4, 0, 1e-12);
    SS_CHECK_CLOSE(cfg.lr_warmup, 1.0, 0, 0);
    CU_ASSERT_STRING_EQUAL(cfg.lr_schedule, "multistep:15,22.5");
    CU_ASSERT_STRING_EQUAL(cfg.augment, "yes");
    CU_ASSERT_STRING_EQUAL(cfg.bn_stats, "average");
    CU_ASSERT(!cfg.nesterov);
    /* linear scaling with the synchronous batch; what was given stays */
    char *scaled[] = {"--model",   "vgg:11", "--policy",      "bsp",    "--workers",  "4",
                      "--batch",   "64",     "--epochs",      "10",     "--momentum", "0.5",
                      "--augment", "no",     "--lr-schedule", "cosine", "--nesterov"};
    parse(&cfg, 17, scaled);
    CU_ASSERT_EQUAL(cfg.batch, 64);
    SS_CHECK_CLOSE(cfg.lr, 0.1 * 4 * 64 / 128, 0, 1e-12);
    SS_CHECK_CLOSE(cfg.momentum, 0.5, 0, 0);
    CU_ASSERT(cfg.nesterov);
    CU_ASSERT_STRING_EQUAL(cfg.lr_schedule, "cosine");
    CU_ASSERT_STRING_EQUAL(cfg.augment, "no");
    /* models without a recipe keep the table's defaults */
    char *mlp[] = {"--model", "mlp"};
    parse(&cfg, 2, mlp);
    CU_ASSERT_EQUAL(cfg.batch, 64);
    CU_ASSERT(cfg.lr == 0.0);
    SS_CHECK_CLOSE(options_learning_rate(&cfg), 0.02, 0, 1e-12);
    CU_ASSERT(cfg.weight_decay == 0.0 && cfg.lr_warmup == 0.0 && cfg.clip_norm == 0.0);
    CU_ASSERT_STRING_EQUAL(cfg.lr_schedule, "constant");
    CU_ASSERT_STRING_EQUAL(cfg.augment, "no");
    char line[512];
    recipe_describe(&cfg, 0.02, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "recipe none"));
}

/* gpt:wlm (and its other names): the SelSync paper's setting, lr 2.0 not scaled with the workers,
 * x0.8 every 2,000 steps, batch 20, clipping 0.25, no momentum or weight decay; in the summary's
 * keys as resolved. gpt:L,D,H,T: its own recipe. */
static void test_recipe_gpt(void) {
    run_config cfg;
    char *wlm[] = {"--model",  "gpt:wlm", "--dataset", "web-bible",
                   "--policy", "bsp",     "--workers", "16"};
    parse(&cfg, 8, wlm);
    CU_ASSERT_EQUAL(cfg.batch, 20);
    SS_CHECK_CLOSE(cfg.lr, 2.0, 0, 0); /* not 2.0 x 16 x 20 / 128 */
    CU_ASSERT(cfg.momentum == 0.0 && cfg.weight_decay == 0.0 && cfg.lr_warmup == 0.0);
    CU_ASSERT(!cfg.nesterov);
    SS_CHECK_CLOSE(cfg.clip_norm, 0.25, 0, 0);
    CU_ASSERT_STRING_EQUAL(cfg.lr_schedule, "step-iters:2000:0.8");
    CU_ASSERT_STRING_EQUAL(cfg.augment, "no");
    run_summary sum;
    run_summary_init(&sum);
    recipe_summarize(&cfg, &sum);
    CU_ASSERT_STRING_EQUAL(sum.recipe, "gpt:wlm");
    CU_ASSERT_STRING_EQUAL(sum.lr_schedule, "step-iters:2000:0.8");
    SS_CHECK_CLOSE(sum.clip_norm, 0.25, 0, 0);
    char line[512];
    recipe_describe(&cfg, 2.0, line, sizeof line);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "recipe gpt:wlm: lr 2, schedule step-iters:2000:0.8"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "clip-norm 0.25"));
    for (int i = 0; i < 2; i++) { /* the preset's other names */
        char *other[] = {"--model", i ? "gpt:selsync" : "gpt", "--dataset", "web-bible"};
        parse(&cfg, 4, other);
        CU_ASSERT_STRING_EQUAL(cfg.lr_schedule, "step-iters:2000:0.8");
        CU_ASSERT_EQUAL(cfg.batch, 20);
    }
    /* what was given stays */
    char *given[] = {"--model", "gpt:wlm",     "--dataset", "web-bible",     "--lr",
                     "0.5",     "--clip-norm", "1",         "--lr-schedule", "constant"};
    parse(&cfg, 10, given);
    SS_CHECK_CLOSE(cfg.lr, 0.5, 0, 0);
    SS_CHECK_CLOSE(cfg.clip_norm, 1.0, 0, 0);
    CU_ASSERT_STRING_EQUAL(cfg.lr_schedule, "constant");
    /* gpt:L,D,H,T: gpt:wlm's with momentum 0.9 at lr 0.5 */
    char *small[] = {"--model",  "gpt:2,128,4,64", "--dataset", "web-bible",
                     "--policy", "selsync",        "--workers", "8"};
    parse(&cfg, 8, small);
    CU_ASSERT_EQUAL(cfg.batch, 20);
    SS_CHECK_CLOSE(cfg.lr, 0.5, 0, 0);
    SS_CHECK_CLOSE(cfg.clip_norm, 0.25, 0, 0);
    SS_CHECK_CLOSE(cfg.momentum, 0.9, 0, 0);
    CU_ASSERT(cfg.weight_decay == 0.0 && !cfg.nesterov);
    CU_ASSERT_STRING_EQUAL(cfg.lr_schedule, "step-iters:2000:0.8");
    recipe_summarize(&cfg, &sum);
    CU_ASSERT_STRING_EQUAL(sum.recipe, "gpt");
    /* the data set: web-bible unless one is named; image models keep fashion-mnist */
    char *bare[] = {"--model", "gpt:wlm"}, *named[] = {"--model", "gpt:wlm", "--dataset", "ptb"};
    parse(&cfg, 2, bare);
    CU_ASSERT_STRING_EQUAL(cfg.dataset, "web-bible");
    parse(&cfg, 4, named);
    CU_ASSERT_STRING_EQUAL(cfg.dataset, "ptb");
    char *image[] = {"--model", "resnet:20"};
    parse(&cfg, 2, image);
    CU_ASSERT_STRING_EQUAL(cfg.dataset, "fashion-mnist");
}

static CU_TestInfo rules_tests[] = {
    {"optim: Nesterov momentum matches a hand computation", test_nesterov_hand},
    {"optim: weight decay is coupled L2, by hand with and without momentum",
     test_weight_decay_hand},
    {"optim: gradient-norm clipping as clip_grad_norm_", test_clip_norm_hand},
    {"optim: warm-up and multistep learning rates at given steps", test_warmup_multistep},
    {"optim: step-iters decays every N steps", test_step_iters},
    CU_TEST_INFO_NULL,
};

static CU_TestInfo augment_tests[] = {
    {"augment: crops and flips move pixels as specified", test_augment_moves_pixels},
    {"augment: draws are per worker and step, deterministic", test_augment_deterministic},
    {"recipe: resnet and vgg defaults, given options kept, mlp unchanged", test_recipe_defaults},
    {"recipe: gpt:wlm as the SelSync paper trained it, gpt:L,D,H,T, web-bible by default",
     test_recipe_gpt},
    CU_TEST_INFO_NULL,
};

static CU_SuiteInfo suites[] = {
    {"update rules", NULL, NULL, NULL, NULL, rules_tests},
    {"augmentation and recipes", NULL, NULL, NULL, NULL, augment_tests},
    CU_SUITE_INFO_NULL,
};

int main(void) {
    return ss_test_main(suites);
}
