/* The profile of an emulated model (see profile_model.h). */
#include "emu/profile_model.h"
#include "common/status.h"
#include "emu/dataset.h"
#include "emu/emulation.h"
#include "emu/memory.h"
#include "kernels/bench.h"
#include "kernels/device.h"

#include <cblas.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define VALID_SETS                                                                                 \
    "fashion-mnist, mnist, synthetic, cifar10, cifar100 (images); web-bible, wikitext-2, "         \
    "wikitext-103, ptb (text, for gpt); or a directory of one"

/* The image sets by name: their shape and classes, without reading them. */
static const struct {
    const char *name;
    int c, h, w, classes;
} image_sets[] = {{"fashion-mnist", 1, 28, 28, 10},
                  {"mnist", 1, 28, 28, 10},
                  {"synthetic", 1, 28, 28, 10},
                  {"cifar10", 3, 32, 32, 10},
                  {"cifar100", 3, 32, 32, 100}};
#define IMAGE_SETS ((int)(sizeof image_sets / sizeof image_sets[0]))

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int profile_model_dataset_shape(const char *set, const char *data_dir, int *c, int *h, int *w,
                                int *classes, int *text) {
    *text = 0;
    for (int i = 0; i < IMAGE_SETS; i++)
        if (!strcmp(set, image_sets[i].name)) {
            *c = image_sets[i].c, *h = image_sets[i].h, *w = image_sets[i].w;
            *classes = image_sets[i].classes;
            return SS_OK;
        }
    if (!dataset_is_text_spec(set) && !is_dir(set))
        return ss_error_set(SS_EUSAGE, "--dataset: unknown data set '%s' (valid: %s)", set,
                            VALID_SETS);
    /* a text set's vocabulary, or a directory's shape: read as train reads them */
    dataset train, test;
    int rc = dataset_is_text_spec(set) ? dataset_text_load(set, data_dir, &train, &test)
                                       : dataset_load(set, NULL, 1, &train, &test);
    if (rc != SS_OK) return rc;
    *text = train.tokens != NULL;
    *c = train.c, *h = train.h, *w = train.w, *classes = train.classes;
    dataset_free(&train);
    dataset_free(&test);
    return SS_OK;
}

int profile_model_from_spec(const model_spec *spec, int batch, model_profile *out) {
    memset(out, 0, sizeof *out);
    if (batch < 1 || batch > 1000000)
        return ss_error_set(SS_EUSAGE, "--batch: an integer from 1 to 1000000, not %d", batch);
    model_layer_cost *costs;
    int n;
    size_t count;
    int rc = model_spec_cost_layers(spec, &costs, &n);
    if (rc == SS_OK) rc = model_spec_count(spec, &count, NULL);
    if (rc != SS_OK) {
        free(costs);
        return rc;
    }
    out->layers = n;
    out->layer_costs = ss_calloc((size_t)n, sizeof *out->layer_costs);
    out->layer_names = ss_calloc((size_t)n, sizeof out->layer_names[0]);
    for (int i = 0; i < n; i++) {
        const model_layer_cost *lc = &costs[i];
        /* what emulation.c's layers_of gives the compute model, per sample */
        out->layer_costs[i] = (sim_layer_cost){.fwd_flops = lc->fwd_flops,
                                               .bwd_flops = lc->bwd_flops,
                                               .fwd_bytes = lc->fwd_bytes,
                                               .bwd_bytes = lc->bwd_bytes,
                                               .param_bytes = lc->param_bytes,
                                               .kernels = lc->kernels,
                                               .kind = emulation_layer_kind(lc),
                                               .gemm_n = lc->gemm_n,
                                               .gemm_k = lc->gemm_k};
        snprintf(out->layer_names[i], sizeof out->layer_names[0], "%s",
                 lc->name[0] ? lc->name : "layer");
        out->params += lc->param_bytes / 4;
        out->forward_flops_per_sample += lc->fwd_flops;
        out->backward_flops_per_sample += lc->bwd_flops;
    }
    free(costs);
    if (out->params != (double)count) { /* every parameter belongs to one layer */
        profile_free(out);
        return ss_error_set(SS_EINPUT, "model %s: its layers hold %.0f parameters, the model %zu",
                            model_arch_name(spec->arch), out->params, count);
    }
    snprintf(out->name, sizeof out->name, "%s", model_arch_name(spec->arch));
    out->backward_factor = 2.0;
    out->batch = batch;
    out->version = PROFILE_VERSION;
    /* one sample on the wire, as the emulation sends it (data injection): features and label */
    out->sample_bytes = 4.0 * spec->in_c * spec->in_h * spec->in_w + 1.0;
    if (spec->arch == MODEL_ARCH_GPT)
        snprintf(out->input, sizeof out->input, "%d tokens", spec->gpt_seq);
    else
        snprintf(out->input, sizeof out->input, "%dx%dx%d", spec->in_c, spec->in_h, spec->in_w);
    return SS_OK;
}

/* The first `batch` training samples of the set (from the start again for a smaller set; a text
 * set's first windows of T + 1 tokens) into *x and *y (malloc'ed); NULL and NULL, with what was
 * wrong in `why`, when the set cannot be read (cifar100 has no reader; cifar10, or mnist outside
 * its directory, needs --data-dir). */
static void first_batch(const char *set, const char *data_dir, const model_spec *spec, int batch,
                        float **x, uint8_t **y, char *why, size_t why_size) {
    *x = NULL, *y = NULL;
    dataset train, test;
    int rc = dataset_load(set, data_dir, 1, &train, &test); /* a text set too */
    if (rc == SS_OK && (rc = dataset_fit_model(&train, &test, spec)) != SS_OK) {
        dataset_free(&train);
        dataset_free(&test);
    }
    if (rc != SS_OK) {
        snprintf(why, why_size, "%s", ss_error_message());
        return;
    }
    const size_t d = dataset_features(&train);
    if (!train.n || d != (size_t)spec->in_c * spec->in_h * spec->in_w) {
        snprintf(why, why_size, "%s: not a set of the model's input shape", set);
    } else {
        *x = ss_malloc((size_t)batch * d * sizeof(float));
        *y = ss_malloc((size_t)batch);
        for (int i = 0; i < batch; i++) {
            const size_t k = (size_t)i % train.n;
            memcpy(*x + (size_t)i * d, train.x + k * d, d * sizeof(float));
            (*y)[i] = train.y[k];
        }
    }
    dataset_free(&train);
    dataset_free(&test);
}

/* Each layer's seconds on o->measure's device into out's layers (fwd_s, bwd_s, whole batch) and
 * the measured fields, on the first batch of `set` (random data of its shape where it cannot be
 * read: `data` says which); `where` names the device. */
static int measure(const profile_model_opts *o, const model_spec *spec, const char *set,
                   model_profile *out, char *where, size_t where_size, char *data, size_t data_size,
                   double *clocked_s) {
    const int steps = o->measure_steps > 0 ? o->measure_steps : 10;
    /* OpenBLAS's threads before the device opens (its name says them); nothing to a GPU */
    const int blas = openblas_get_num_threads();
    openblas_set_num_threads(o->measure_threads > 0 ? o->measure_threads : 1);
    device *dev;
    char notice[256];
    int rc = device_open(o->measure, &dev, notice, sizeof notice);
    if (rc != SS_OK) {
        openblas_set_num_threads(blas);
        return rc;
    }
    if (notice[0]) fprintf(stderr, "%s\n", notice);
    const int cpu = device_get_kind(dev) == DEVICE_KIND_CPU;
    double *fwd = ss_calloc((size_t)out->layers, sizeof *fwd);
    double *bwd = ss_calloc((size_t)out->layers, sizeof *bwd);
    double step_s = 0.0;
    float *x = NULL;
    uint8_t *y = NULL;
    /* refused up front, with the estimate, when one model at this batch does not fit */
    rc = memory_check_run(dev, spec, 0, 1, out->batch, 0, 0, NULL, 0);
    if (rc == SS_OK) {
        char why[512] = "";
        first_batch(set, o->data_dir, spec, out->batch, &x, &y, why, sizeof why);
        if (x) {
            snprintf(data, data_size, "the first %d training samples of %s", out->batch, set);
        } else {
            snprintf(data, data_size, "random data of the input's shape (%s)", why);
            fprintf(stderr,
                    "syncsim: profile model --measure: %s unread: random data of its "
                    "shape instead (%s)\n",
                    set, why);
        }
        rc = bench_measure_layers(dev, spec, out->batch, steps, x, y, fwd, bwd, &step_s, clocked_s);
    }
    free(x);
    free(y);
    snprintf(where, where_size, "%s", device_name(dev));
    device_close(dev);
    openblas_set_num_threads(blas);
    if (rc == SS_OK) {
        double layers_s = 0.0;
        for (int i = 0; i < out->layers; i++) {
            out->layer_costs[i].fwd_s = fwd[i];
            out->layer_costs[i].bwd_s = bwd[i];
            layers_s += fwd[i] + bwd[i];
        }
        out->measured = 1;
        out->measured_batch = out->batch;
        out->measured_steps = steps;
        /* the layers lie inside the step; a clock's rounding never makes the gap negative */
        out->measured_gap_s = step_s > layers_s ? step_s - layers_s : 0.0;
        out->measured_step_s = layers_s + out->measured_gap_s;
        snprintf(out->measured_device, sizeof out->measured_device, "%s", cpu ? "cpu" : "cuda");
        if (!(out->measured_step_s > 0.0))
            rc = ss_error_set(SS_EDEVICE, "--measure: the step measured 0 seconds");
    }
    free(fwd);
    free(bwd);
    return rc;
}

int profile_model_make(const profile_model_opts *o, model_profile *out, char *notes, size_t n) {
    memset(out, 0, sizeof *out);
    if (!o->model || !o->model[0]) return ss_error_set(SS_EUSAGE, "--model: missing");
    if (o->batch < 1 || o->batch > 1000000)
        return ss_error_set(SS_EUSAGE, "--batch: an integer from 1 to 1000000, not %d", o->batch);
    const char *name = o->name ? o->name : o->model;
    if (!name[0] || strlen(name) >= sizeof out->name || strpbrk(name, " \t\n\r#"))
        return ss_error_set(
            SS_EUSAGE, "--name: one word of at most 63 characters, without '#', not '%s'", name);
    /* the architecture first (any shape parses), for the default data set and the check */
    model_spec spec;
    int rc = model_spec_parse(&spec, o->model, 1, 28, 28, 10);
    if (rc != SS_OK) return ss_error_set(SS_EUSAGE, "--model: %s", ss_error_message());
    const int lm = spec.arch == MODEL_ARCH_GPT;
    const char *set = o->dataset && o->dataset[0] ? o->dataset : lm ? "web-bible" : "fashion-mnist";
    /* refused by name before a text set is read, as train refuses it once read */
    int image_name = 0;
    for (int i = 0; i < IMAGE_SETS; i++)
        image_name |= !strcmp(set, image_sets[i].name);
    if ((image_name || dataset_is_text_spec(set)) &&
        (rc = dataset_kind_fits(set, !image_name, &spec)) != SS_OK)
        return rc;
    int c, h, w, classes, text;
    if ((rc = profile_model_dataset_shape(set, o->data_dir, &c, &h, &w, &classes, &text)) != SS_OK)
        return rc;
    if ((rc = dataset_kind_fits(set, text, &spec)) != SS_OK) return rc;
    if ((rc = model_spec_parse(&spec, o->model, c, h, w, classes)) != SS_OK)
        return ss_error_set(SS_EUSAGE, "--model: %s", ss_error_message());
    if ((rc = model_spec_check(&spec, o->batch)) != SS_OK)
        return ss_error_set(SS_EUSAGE, "--model %s on %s: %s", o->model, set, ss_error_message());
    if ((rc = profile_model_from_spec(&spec, o->batch, out)) != SS_OK) return rc;
    snprintf(out->name, sizeof out->name, "%s", name);
    if (lm)
        snprintf(out->description, sizeof out->description,
                 "emulated %s on %s (vocabulary %d), %d layers", o->model, set, classes,
                 out->layers);
    else
        snprintf(out->description, sizeof out->description,
                 "emulated %s on %s (%dx%dx%d, %d classes), %d layers", o->model, set, c, h, w,
                 classes, out->layers);
    /* the notes: the command, what the layers hold, the format */
    char measured[160] = "", how[1400] = "";
    if (o->measure) {
        char where[160], data[700];
        double clocked_s = 0.0;
        if ((rc = measure(o, &spec, set, out, where, sizeof where, data, sizeof data,
                          &clocked_s)) != SS_OK) {
            profile_free(out);
            return rc;
        }
        const size_t len = strlen(out->description);
        snprintf(out->description + len, sizeof out->description - len, ", measured on %s",
                 out->measured_device);
        snprintf(measured, sizeof measured, " --measure %s --steps %d --threads %d", o->measure,
                 out->measured_steps, o->measure_threads > 0 ? o->measure_threads : 1);
        snprintf(how, sizeof how,
                 ", and each layer's measured seconds a step on %s, trained on %s by SGD with "
                 "momentum; the gap is the optimizer's update and the time between layers; "
                 "the layers scaled by %.4f to the steps without the layer clock (with it, "
                 "%.9g s a step)",
                 where, data, clocked_s > 0.0 ? out->measured_step_s / clocked_s : 1.0, clocked_s);
    }
    snprintf(notes, n,
             "syncsim profile model --model %s --dataset %s --batch %d%s\n"
             "the emulated model's layers as the compute model sees them in train (FLOPs and "
             "bytes per sample)%s\nformat: traces/FORMAT.md",
             o->model, set, o->batch, measured, how);
    return SS_OK;
}
