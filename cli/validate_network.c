/* `syncsim validate network` (see validate_network.h). */
#include "cli/validate_network.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/csv.h"
#include "common/number.h"
#include "common/status.h"
#include "cli/bench_network.h"
#include "sim/net/cluster.h"
#include "sim/net/coll/collective.h"

#define VALIDATE_MAX_SIZES 256
#define VALIDATE_MAX_REFS  64

typedef struct reference {
    char dir[1024];
    char platform[1200];
    int ranks;
    sim_allreduce_algo algo;
    sim_network_model model;
    int n;
    double size_bytes[VALIDATE_MAX_SIZES];
    double measured_us[VALIDATE_MAX_SIZES];
} reference;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double validate_median_abs(double *x, int n) {
    for (int i = 0; i < n; i++)
        x[i] = fabs(x[i]);
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

/* One key of reference.csv into r; SS_EINPUT naming the file and line. */
static int reference_key(reference *r, const char *file, long line, const char *key,
                         const char *value) {
    if (!strcmp(key, "ranks")) {
        long v;
        if (number_parse_long(value, 2, 65536, &v) != 0)
            return ss_error_set(SS_EINPUT, "%s:%ld: ranks '%s' is not an integer in [2, 65536]",
                                file, line, value);
        r->ranks = (int)v;
    } else if (!strcmp(key, "collective")) {
        if (sim_allreduce_algo_parse("collective", value, &r->algo))
            return ss_error_set(SS_EINPUT, "%s:%ld: %s", file, line, ss_error_message());
    } else if (!strcmp(key, "network_model")) {
        if (sim_network_model_parse("network_model", value, &r->model))
            return ss_error_set(SS_EINPUT, "%s:%ld: %s", file, line, ss_error_message());
    } else if (!strcmp(key, "platform")) {
        if (!value[0] || strchr(value, '/'))
            return ss_error_set(SS_EINPUT,
                                "%s:%ld: platform '%s' must name a file of the "
                                "reference's directory",
                                file, line, value);
        snprintf(r->platform, sizeof r->platform, "%s/%s", r->dir, value);
    }
    /* other keys (source, description) are for people */
    return SS_OK;
}

static int read_settings(reference *r) {
    char file[1200];
    snprintf(file, sizeof file, "%s/reference.csv", r->dir);
    csv_reader c;
    int st = csv_open(&c, file), got = 0;
    if (st) return st;
    r->ranks = 0;
    r->platform[0] = '\0';
    r->algo = SIM_ALLREDUCE_RING;
    r->model = SIM_NETWORK_LV08;
    while (st == SS_OK && (st = csv_next(&c, &got)) == SS_OK && got) {
        if (c.n_fields == 1 && !c.field[0][0]) continue;
        if (c.n_fields != 2) {
            st = ss_error_set(SS_EINPUT, "%s:%ld: expected 'key,value'", file, c.line);
            break;
        }
        if (c.line == 1 && !strcmp(c.field[0], "key")) continue;
        st = reference_key(r, file, c.line, c.field[0], c.field[1]);
    }
    csv_close(&c);
    if (st == SS_OK && (!r->ranks || !r->platform[0]))
        st = ss_error_set(SS_EINPUT, "%s: needs the keys ranks and platform", file);
    return st;
}

static int read_measured(reference *r) {
    char file[1200];
    snprintf(file, sizeof file, "%s/measured.csv", r->dir);
    csv_reader c;
    int st = csv_open(&c, file), got = 0;
    if (st) return st;
    if ((st = csv_next(&c, &got)) == SS_OK &&
        (!got || csv_find(&c, "size_bytes") != 0 || csv_find(&c, "time_us") != 1))
        st = ss_error_set(SS_EINPUT, "%s:1: expected the header size_bytes,time_us", file);
    r->n = 0;
    while (st == SS_OK && (st = csv_next(&c, &got)) == SS_OK && got) {
        double s = NAN, t = NAN;
        if (c.n_fields != 2 || number_parse_double(c.field[0], &s) ||
            number_parse_double(c.field[1], &t) || !(s >= 1) || !(t > 0)) {
            st = ss_error_set(SS_EINPUT,
                              "%s:%ld: expected a size in bytes >= 1 and a time in "
                              "microseconds > 0",
                              file, c.line);
        } else if (r->n == VALIDATE_MAX_SIZES) {
            st = ss_error_set(SS_EINPUT, "%s: more than %d sizes", file, VALIDATE_MAX_SIZES);
        } else {
            r->size_bytes[r->n] = s;
            r->measured_us[r->n++] = t;
        }
    }
    csv_close(&c);
    if (st == SS_OK && r->n == 0) st = ss_error_set(SS_EINPUT, "%s: no sizes", file);
    return st;
}

/* Simulates r's sizes and prints its table; medians in *large, *small (NAN: no size there). */
static int run_reference(const reference *r, const char *name, FILE *out, double *large,
                         double *small) {
    double el[VALIDATE_MAX_SIZES], es[VALIDATE_MAX_SIZES];
    int nl = 0, ns = 0;
    fprintf(out, "\n## %s: %d ranks, %s, %s, %s\n", name, r->ranks,
            sim_allreduce_algo_name(r->algo), sim_network_model_name(r->model), r->platform);
    fprintf(out, "%15s %14s %14s %10s  %s\n", "size_bytes", "measured_us", "predicted_us",
            "error_%", "ran");
    for (int i = 0; i < r->n; i++) {
        double sim_s, wall_s;
        char ran[BENCH_RAN_LEN];
        int st =
            bench_network_allreduce_protocol(r->platform, r->ranks, r->size_bytes[i], r->model,
                                             (int)r->algo, SIM_PROTOCOL_AUTO, &sim_s, &wall_s, ran);
        if (st) return st;
        double pred = 1e6 * sim_s, err = (pred - r->measured_us[i]) / r->measured_us[i];
        if (r->size_bytes[i] >= VALIDATE_LARGE_BYTES)
            el[nl++] = err;
        else
            es[ns++] = err;
        fprintf(out, "%15.0f %14.2f %14.2f %10.1f  %s\n", r->size_bytes[i], r->measured_us[i], pred,
                100 * err, ran[0] ? ran : "-");
        fflush(out);
    }
    *large = nl ? validate_median_abs(el, nl) : NAN;
    *small = ns ? validate_median_abs(es, ns) : NAN;
    return SS_OK;
}

static int cmp_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Subdirectories of root, sorted; *n of them in names[] (freed by the caller). */
static int list_references(const char *root, char **names, int *n) {
    DIR *d = opendir(root);
    if (!d)
        return ss_error_set(SS_EINPUT, "validate network: cannot open %s: %s", root,
                            strerror(errno));
    *n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && *n < VALIDATE_MAX_REFS) {
        char path[2048];
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", root, e->d_name);
        if (e->d_name[0] == '.' || stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)) continue;
        names[(*n)++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)*n, sizeof *names, cmp_name);
    return *n ? SS_OK
              : ss_error_set(SS_EINPUT, "validate network: %s holds no reference directory", root);
}

static void print_median(FILE *out, const char *label, double m, double bound) {
    if (isnan(m))
        fprintf(out, "  %-10s %10s\n", label, "-");
    else
        fprintf(out, "  %-10s %9.1f%%  (bound %.0f%%: %s)\n", label, 100 * m, 100 * bound,
                m <= bound ? "ok" : "EXCEEDED");
}

int validate_network(const validate_opts *o, FILE *out) {
    char *names[VALIDATE_MAX_REFS];
    int n = 0, st = list_references(o->root, names, &n), failed = 0;
    char first[512] = "";
    reference *r = ss_malloc(sizeof *r);
    fprintf(out, "# validate network: predicted vs measured all-reduce time (nccl-tests "
                 "out-of-place), relative error = (predicted - measured) / measured\n");
    for (int i = 0; st == SS_OK && i < n; i++) {
        snprintf(r->dir, sizeof r->dir, "%s/%s", o->root, names[i]);
        double large, small;
        if ((st = read_settings(r)) || (st = read_measured(r)) ||
            (st = run_reference(r, names[i], out, &large, &small)))
            break;
        fprintf(out, "median |error| of %s:\n", names[i]);
        print_median(out, ">= 1 MiB", large, o->max_large);
        print_median(out, "< 1 MiB", small, o->max_small);
        if ((!isnan(large) && large > o->max_large) || (!isnan(small) && small > o->max_small)) {
            if (!failed++) snprintf(first, sizeof first, "%s", names[i]);
        }
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(r);
    if (st == SS_OK && failed)
        st = ss_error_set(SS_EINPUT,
                          "validate network: %d reference(s) exceed the bounds (%s first; "
                          "--max-error-large %g, --max-error-small %g)",
                          failed, first, o->max_large, o->max_small);
    return st;
}
