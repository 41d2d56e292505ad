/* `syncsim validate compute` (validate_compute.h). */
#include "traces/validate_compute.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/csv.h"
#include "common/status.h"
#include "sim/compute.h"
#include "traces/profile.h"

#ifndef SS_REFERENCE_DIR
#define SS_REFERENCE_DIR "traces/reference"
#endif

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Predicted images/s of one row: batch / (forward + backward + optimizer) on the GPU. */
static int predict(const csv_reader *r, const char *model, const char *gpu, const char *prec,
                   int batch, double *img_s) {
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
    if (rc == SS_OK)
        *img_s = batch / sim_compute_layers_on(g, p, layers, prof.layers, NULL, NULL, NULL);
    else
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

/* One data row: prints it and appends its relative error. */
static int row(csv_reader *r, const int *c, FILE *out, double *errs, int *n) {
    char *end;
    long batch = strtol(r->field[c[4]], &end, 10);
    double pub = strtod(r->field[c[5]], NULL);
    if (*end || batch < 1 || batch > 1 << 20 || !(pub > 0))
        return ss_error_set(SS_EINPUT, "%s:%ld: batch and images_per_s must be positive", r->name,
                            r->line);
    double pred = 0;
    int rc = predict(r, r->field[c[1]], r->field[c[2]], r->field[c[3]], (int)batch, &pred);
    if (rc != SS_OK) return rc;
    double e = fabs(pred - pub) / pub;
    errs[(*n)++] = e;
    fprintf(out, "%-19s %-18s %-9s %-5s %6ld %10.0f %10.0f %+8.1f%%\n", r->field[c[0]],
            r->field[c[1]], r->field[c[2]], r->field[c[3]], batch, pub, pred,
            100 * (pred - pub) / pub);
    return SS_OK;
}

int validate_compute(const char *csv_path, double bound, FILE *out, validate_compute_result *res) {
    memset(res, 0, sizeof *res);
    const char *path = csv_path ? csv_path : SS_REFERENCE_DIR "/compute/throughputs.csv";
    csv_reader r;
    int rc = csv_open(&r, path), got = 0, c[6], n = 0, cap = 0;
    if (rc != SS_OK) return rc;
    r.skip_comments = 1;
    static const char *const names[6] = {"id",        "model", "gpu",
                                         "precision", "batch", "images_per_s"};
    if ((rc = csv_next(&r, &got)) == SS_OK && !got)
        rc = ss_error_set(SS_EINPUT, "%s: empty file", path);
    for (int i = 0; rc == SS_OK && i < 6; i++)
        rc = column(&r, names[i], &c[i]);
    double *errs = NULL;
    if (rc == SS_OK)
        fprintf(out, "%-19s %-18s %-9s %-5s %6s %10s %10s %9s\n", "id", "model", "gpu", "prec",
                "batch", "published", "predicted", "error");
    while (rc == SS_OK && (rc = csv_next(&r, &got)) == SS_OK && got) {
        if (n == cap) errs = realloc(errs, sizeof(double) * (size_t)(cap = cap ? 2 * cap : 16));
        SS_ASSERT(errs);
        rc = r.n_fields < 6 ? ss_error_set(SS_EINPUT, "%s:%ld: expected 6 fields", path, r.line)
                            : row(&r, c, out, errs, &n);
    }
    csv_close(&r);
    if (rc == SS_OK && n == 0) rc = ss_error_set(SS_EINPUT, "%s: no reference rows", path);
    if (rc == SS_OK) {
        qsort(errs, (size_t)n, sizeof(double), cmp_double);
        res->rows = n;
        res->median_rel_error = n % 2 ? errs[n / 2] : 0.5 * (errs[n / 2 - 1] + errs[n / 2]);
        res->within_bound = res->median_rel_error <= bound;
        fprintf(out, "median |error| %.1f%% over %d rows (bound %.0f%%): %s\n",
                100 * res->median_rel_error, n, 100 * bound,
                res->within_bound ? "within" : "EXCEEDED");
    }
    free(errs);
    return rc;
}
