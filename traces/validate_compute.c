/* `syncsim validate compute` (validate_compute.h). */
#include "traces/validate_compute.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/csv.h"
#include "common/sorted.h"
#include "common/status.h"
#include "sim/compute/compute.h"
#include "traces/profile.h"

#ifndef SS_REFERENCE_DIR
#define SS_REFERENCE_DIR "traces/reference"
#endif

/* How a row's training loop ran on its host: the framework (framework.h) and whether it read a
 * value back to the host every step. */
typedef struct row_loop {
    sim_framework framework;
    int host_sync;
} row_loop;

/* Predicted images/s of one row: batch / the step on the framework's two timelines (ideal: the
 * GPU's forward + backward + optimizer). *gpu_img_s: the GPU's time alone, for the table. */
static int predict(const csv_reader *r, const char *model, const char *gpu, const char *prec,
                   int batch, row_loop loop, double *img_s, double *gpu_img_s) {
    const gpu_class *g;
    sim_precision p;
    model_profile prof;
    int rc;
    if ((rc = gpu_table_find("gpu", gpu, &g)) != SS_OK ||
        (rc = sim_precision_parse("precision", prec, &p)) != SS_OK ||
        (rc = profile_find(model, &prof)) != SS_OK)
        return ss_error_set(SS_EINPUT, "%s:%ld: %s", r->name, r->line, ss_error_message());
    sim_layer_cost *layers = ss_malloc(sizeof(sim_layer_cost) * (size_t)prof.layers);
    rc = profile_step_layers(&prof, batch, layers);
    if (rc == SS_OK) {
        const sim_compute_cfg cfg = {.mode = SIM_COMPUTE_MODEL,
                                     .scale = 1.0,
                                     .precision = p,
                                     .gpu = g,
                                     .framework = loop.framework,
                                     .host_sync = loop.host_sync};
        const sim_compute_host host = {.speed_flops = g->peak_flops[SIM_PRECISION_FP32], .gpu = g};
        double step_s = 0;
        *gpu_img_s = batch / sim_compute_layers_on(g, p, layers, prof.layers, NULL, NULL, NULL);
        rc = sim_compute_step_s(&cfg, &host, layers, prof.layers, &step_s);
        if (rc == SS_OK) *img_s = batch / step_s;
    }
    if (rc != SS_OK)
        rc = ss_error_set(SS_EINPUT, "%s:%ld: %s", r->name, r->line, ss_error_message());
    free(layers);
    profile_free(&prof);
    return rc;
}

static int column(csv_reader *r, const char *name, int *col) {
    *col = csv_find(r, name);
    if (*col < 0)
        return ss_error_set(SS_EINPUT,
                            "%s:%ld: no column '%s' (header: id,model,gpu,precision,batch,"
                            "images_per_s)",
                            r->name, r->line, name);
    return SS_OK;
}

/* The loop of a row: its framework and host_sync columns where the file has them (c[6], c[7];
 * -1: absent), else eager without a read-back, the command line's default. */
static int row_loop_of(const csv_reader *r, const int *c, row_loop *loop) {
    *loop = (row_loop){.framework = SIM_FRAMEWORK_EAGER, .host_sync = 0};
    const char *fw = c[6] >= 0 && c[6] < r->n_fields ? r->field[c[6]] : "";
    const char *hs = c[7] >= 0 && c[7] < r->n_fields ? r->field[c[7]] : "";
    if (*fw && sim_framework_parse("framework", fw, &loop->framework) != SS_OK)
        return ss_error_set(SS_EINPUT, "%s:%ld: %s", r->name, r->line, ss_error_message());
    if (*hs && strcmp(hs, "0") != 0 && strcmp(hs, "1") != 0)
        return ss_error_set(SS_EINPUT, "%s:%ld: host_sync must be 0 or 1, not '%s'", r->name,
                            r->line, hs);
    loop->host_sync = *hs == '1';
    return SS_OK;
}

/* One data row: prints it and appends its relative error (and its precision's, prec[]). */
static int row(csv_reader *r, const int *c, FILE *out, double *errs, int *n, sim_precision *prec) {
    char *end;
    long batch = strtol(r->field[c[4]], &end, 10);
    double pub = strtod(r->field[c[5]], NULL);
    if (*end || batch < 1 || batch > 1 << 20 || !(pub > 0))
        return ss_error_set(SS_EINPUT, "%s:%ld: batch and images_per_s must be positive", r->name,
                            r->line);
    row_loop loop;
    double pred = 0, gpu_only = 0;
    int rc = row_loop_of(r, c, &loop);
    if (rc == SS_OK)
        rc = predict(r, r->field[c[1]], r->field[c[2]], r->field[c[3]], (int)batch, loop, &pred,
                     &gpu_only);
    if (rc != SS_OK) return rc;
    double e = fabs(pred - pub) / pub;
    if (sim_precision_parse("precision", r->field[c[3]], &prec[*n]) != SS_OK)
        prec[*n] = SIM_PRECISION_FP32; /* predict() refused an unknown one already */
    errs[(*n)++] = e;
    char fw[24];
    snprintf(fw, sizeof fw, "%s%s", sim_framework_name(loop.framework),
             loop.host_sync ? "+sync" : "");
    fprintf(out, "%-19s %-18s %-9s %-5s %6ld %-11s %10.0f %10.0f %+8.1f%% %+8.1f%%\n",
            r->field[c[0]], r->field[c[1]], r->field[c[2]], r->field[c[3]], batch, fw, pub, pred,
            100 * (pred - pub) / pub, 100 * (gpu_only - pub) / pub);
    return SS_OK;
}

/* Prints the median relative error of each precision's rows (where more than one precision has
 * rows): a table's mixed-precision rows can hide behind its others' median. */
static void print_by_precision(const double *errs, const sim_precision *prec, int n, FILE *out) {
    double *e = ss_malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    int kinds = 0;
    for (int p = 0; p < SIM_PRECISION_COUNT; p++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            m += prec[i] == (sim_precision)p;
        kinds += m > 0;
    }
    for (int p = 0; kinds > 1 && p < SIM_PRECISION_COUNT; p++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (prec[i] == (sim_precision)p) e[m++] = errs[i];
        if (m == 0) continue;
        sorted_doubles(e, (size_t)m);
        fprintf(out, "  %s: median |error| %.1f%% over %d rows\n", sim_precision_name(p),
                100 * sorted_median(e, (size_t)m), m);
    }
    free(e);
}

/* Sorts the n relative errors into res's median and bound check, and prints them; SS_EINPUT
 * "FILE: no WHAT" when there are none. */
static int finish(double *errs, int n, double bound, const char *file, const char *what, FILE *out,
                  validate_compute_result *res) {
    if (n == 0) return ss_error_set(SS_EINPUT, "%s: no %s", file, what);
    sorted_doubles(errs, (size_t)n);
    res->rows = n;
    res->median_rel_error = sorted_median(errs, (size_t)n);
    res->within_bound = res->median_rel_error <= bound;
    fprintf(out, "median |error| %.1f%% over %d %s (bound %.0f%%): %s\n",
            100 * res->median_rel_error, n, what, 100 * bound,
            res->within_bound ? "within" : "EXCEEDED");
    return SS_OK;
}

/* ---- per-layer measurements ---- */

/* One group of a layers file: the rows of one model, GPU, precision and batch, summed per
 * profile layer. */
typedef struct layer_group {
    char key[4][64]; /* model, gpu, precision, batch */
    model_profile prof;
    const gpu_class *gpu;
    sim_precision prec;
    int batch;
    double *meas_f, *meas_b; /* per profile layer, seconds */
    double unmapped_s;       /* rows of no profile layer (dropout) */
    int rows;
} layer_group;

static const char *const kind_names[SIM_LAYER_KIND_COUNT] = {"other", "dense", "norm", "conv",
                                                             "maxpool"};

static void group_free(layer_group *g) {
    profile_free(&g->prof);
    free(g->meas_f);
    free(g->meas_b);
    memset(g, 0, sizeof *g);
}

static int group_open(layer_group *g, const csv_reader *r, const int *c) {
    memset(g, 0, sizeof *g);
    for (int i = 0; i < 4; i++)
        snprintf(g->key[i], sizeof g->key[i], "%s", r->field[c[i]]);
    char *end;
    long b = strtol(g->key[3], &end, 10);
    int rc = *end || b < 1 || b > 1 << 20
                 ? ss_error_set(SS_EINPUT, "batch must be a positive integer")
                 : SS_OK;
    g->batch = (int)b;
    if (rc == SS_OK && (rc = gpu_table_find("gpu", g->key[1], &g->gpu)) == SS_OK &&
        (rc = sim_precision_parse("precision", g->key[2], &g->prec)) == SS_OK &&
        (rc = profile_find(g->key[0], &g->prof)) == SS_OK && !g->prof.layer_names)
        rc = ss_error_set(SS_EINPUT, "profile %s has no per-layer data", g->key[0]);
    if (rc != SS_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", ss_error_message());
        group_free(g);
        return ss_error_set(SS_EINPUT, "%s:%ld: %s", r->name, r->line, why);
    }
    g->meas_f = ss_calloc((size_t)g->prof.layers, sizeof(double));
    g->meas_b = ss_calloc((size_t)g->prof.layers, sizeof(double));
    return SS_OK;
}

static int group_add(layer_group *g, const csv_reader *r, const int *c) {
    const char *name = r->field[c[4]];
    char *e1, *e2;
    double f = strtod(r->field[c[5]], &e1), b = *r->field[c[6]] ? strtod(r->field[c[6]], &e2) : 0;
    if (*e1 || (*r->field[c[6]] && *e2) || !(f >= 0) || !(b >= 0))
        return ss_error_set(SS_EINPUT,
                            "%s:%ld: fwd_us and bwd_us must be numbers >= 0 (bwd_us "
                            "may be empty)",
                            r->name, r->line);
    g->rows++;
    if (!*name) {
        g->unmapped_s += (f + b) * 1e-6;
        return SS_OK;
    }
    for (int i = 0; i < g->prof.layers; i++)
        if (!strcmp(g->prof.layer_names[i], name)) {
            g->meas_f[i] += f * 1e-6;
            g->meas_b[i] += b * 1e-6;
            return SS_OK;
        }
    return ss_error_set(SS_EINPUT, "%s:%ld: profile %s has no layer '%s'", r->name, r->line,
                        g->key[0], name);
}

/* Prints a group: per kind, the measured and modelled times of the profile layers measured;
 * appends the group's relative error of the sum. SS_EINPUT when no time was measured. */
static int group_report(layer_group *g, const char *file, FILE *out, double *errs, int *n) {
    const int L = g->prof.layers;
    sim_layer_cost *layers = ss_malloc(sizeof(sim_layer_cost) * (size_t)L);
    double *f = ss_malloc(sizeof(double) * (size_t)L), *b = ss_malloc(sizeof(double) * (size_t)L);
    profile_step_layers(&g->prof, g->batch, layers);
    sim_compute_layers_on(g->gpu, g->prec, layers, L, f, b, NULL);
    double sum[SIM_LAYER_KIND_COUNT][4] = {{0}}, tm = 0, tp = 0; /* per kind: measured f, b; model
                                                                    f, b */
    for (int i = 0; i < L; i++) {
        if (g->meas_f[i] + g->meas_b[i] <= 0) continue; /* not measured (the loss) */
        double *k = sum[layers[i].kind];
        k[0] += g->meas_f[i];
        k[1] += g->meas_b[i];
        k[2] += f[i];
        k[3] += b[i];
        tm += g->meas_f[i] + g->meas_b[i];
        tp += f[i] + b[i];
    }
    if (!(tm > 0)) {
        free(layers);
        free(f);
        free(b);
        return ss_error_set(SS_EINPUT,
                            "%s: %s %s %s batch %d: no time measured for a layer of the "
                            "profile",
                            file, g->key[0], g->key[1], g->key[2], g->batch);
    }
    double e = (tp - tm) / tm;
    errs[(*n)++] = fabs(e);
    fprintf(out, "%s %s %s batch %d: %d layer calls, measured %.2f ms, model %.2f ms (%+.1f%%)\n",
            g->key[0], g->key[1], g->key[2], g->batch, g->rows, 1e3 * tm, 1e3 * tp, 100 * e);
    for (int k = 0; k < SIM_LAYER_KIND_COUNT; k++)
        if (sum[k][0] + sum[k][1] > 0)
            fprintf(
                out, "    %-7s forward %8.2f / %8.2f ms, backward %8.2f / %8.2f ms (%+.1f%%)\n",
                kind_names[k], 1e3 * sum[k][0], 1e3 * sum[k][2], 1e3 * sum[k][1], 1e3 * sum[k][3],
                100 * (sum[k][2] + sum[k][3] - sum[k][0] - sum[k][1]) / (sum[k][0] + sum[k][1]));
    if (g->unmapped_s > 0)
        fprintf(out, "    (%.2f ms of layers the profile does not have, left out)\n",
                1e3 * g->unmapped_s);
    free(layers);
    free(f);
    free(b);
    return SS_OK;
}

static int validate_layers(csv_reader *r, double bound, FILE *out, validate_compute_result *res) {
    static const char *const names[7] = {"model",         "gpu",    "precision", "batch",
                                         "profile_layer", "fwd_us", "bwd_us"};
    int c[7], rc = SS_OK, got = 0, n = 0, cap = 0;
    for (int i = 0; i < 7 && rc == SS_OK; i++)
        if ((c[i] = csv_find(r, names[i])) < 0)
            rc = ss_error_set(SS_EINPUT,
                              "%s:%ld: no column '%s' (a layers file has model, gpu, precision, "
                              "batch, profile_layer, fwd_us, bwd_us)",
                              r->name, r->line, names[i]);
    double *errs = NULL;
    layer_group g = {0};
    int open = 0;
    if (rc == SS_OK)
        fprintf(out, "measured / model, layer by layer (the profile's layers measured alone):\n");
    while (rc == SS_OK && (rc = csv_next(r, &got)) == SS_OK) {
        int same = got && open && r->n_fields > 6;
        for (int i = 0; same && i < 4; i++)
            same = !strcmp(g.key[i], r->field[c[i]]);
        if (open && !same) {
            if (n == cap) errs = realloc(errs, sizeof(double) * (size_t)(cap = cap ? 2 * cap : 8));
            SS_ASSERT(errs);
            rc = group_report(&g, r->name, out, errs, &n);
            group_free(&g);
            open = 0;
        }
        if (!got || rc != SS_OK) break;
        if (r->n_fields < 7) {
            rc = ss_error_set(SS_EINPUT, "%s:%ld: expected at least 7 fields", r->name, r->line);
            break;
        }
        if (!open && (rc = group_open(&g, r, c)) == SS_OK) open = 1;
        if (rc == SS_OK) rc = group_add(&g, r, c);
    }
    if (open) group_free(&g);
    if (rc == SS_OK) rc = finish(errs, n, bound, r->name, "layer sums", out, res);
    free(errs);
    return rc;
}

int validate_compute(const char *csv_path, double bound, FILE *out, validate_compute_result *res) {
    memset(res, 0, sizeof *res);
    const char *path = csv_path ? csv_path : SS_REFERENCE_DIR "/compute/throughputs.csv";
    csv_reader r;
    int rc = csv_open(&r, path), got = 0, c[8], n = 0, cap = 0;
    if (rc != SS_OK) return rc;
    r.skip_comments = 1;
    static const char *const names[6] = {"id",        "model", "gpu",
                                         "precision", "batch", "images_per_s"};
    if ((rc = csv_next(&r, &got)) == SS_OK && !got)
        rc = ss_error_set(SS_EINPUT, "%s: empty file", path);
    if (rc == SS_OK && csv_find(&r, "profile_layer") >= 0) { /* bench/torch_layers.py's layers */
        rc = validate_layers(&r, bound, out, res);
        csv_close(&r);
        return rc;
    }
    for (int i = 0; rc == SS_OK && i < 6; i++)
        rc = column(&r, names[i], &c[i]);
    c[6] = csv_find(&r, "framework"); /* optional: eager where absent */
    c[7] = csv_find(&r, "host_sync");
    double *errs = NULL;
    if (rc == SS_OK)
        fprintf(out, "%-19s %-18s %-9s %-5s %6s %-11s %10s %10s %9s %9s\n", "id", "model", "gpu",
                "prec", "batch", "framework", "reference", "predicted", "error", "gpu only");
    sim_precision *prec = NULL;
    while (rc == SS_OK && (rc = csv_next(&r, &got)) == SS_OK && got) {
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            errs = realloc(errs, sizeof(double) * (size_t)cap);
            prec = realloc(prec, sizeof(sim_precision) * (size_t)cap);
        }
        SS_ASSERT(errs && prec);
        rc = r.n_fields < 6 ? ss_error_set(SS_EINPUT, "%s:%ld: expected 6 fields", path, r.line)
                            : row(&r, c, out, errs, &n, prec);
    }
    csv_close(&r);
    if (rc == SS_OK) print_by_precision(errs, prec, n, out);
    if (rc == SS_OK) rc = finish(errs, n, bound, path, "rows", out, res);
    free(errs);
    free(prec);
    return rc;
}
