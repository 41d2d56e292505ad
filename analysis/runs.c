#include "analysis/runs.h"
#include "common/csv.h"
#include "common/ini_text.h"
#include "common/number.h"
#include "common/status.h"
#include "common/summary.h"
#include "sim/policy/policy_registry.h"
#include "traces/trace.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* DIR/summary.json through common/summary.h; SS_OK when it is there and parses. */
static int read_summary(const char *dir, run_summary *s) {
    char path[1200];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    return summary_read(path, s);
}

static double count_or_nan(long n) {
    return n >= 0 ? (double)n : NAN; /* a null count reads back negative */
}

static int config_handler(void *user, const char *section, const char *name, const char *value,
                          long line, char *problem, size_t n) {
    (void)section, (void)line, (void)problem, (void)n;
    run_record *r = user;
    if (!name || r->n_keys == RUN_RECORD_MAX_KEYS) return 0;
    snprintf(r->key[r->n_keys], sizeof r->key[0], "%s", name);
    snprintf(r->value[r->n_keys], sizeof r->value[0], "%s", value);
    r->n_keys++;
    return 0;
}

int run_record_complete(const char *dir) {
    run_summary s;
    if (read_summary(dir, &s) != SS_OK) return 0;
    return !strcmp(s.status, "ok") || !strcmp(s.status, "diverged");
}

/* The values of a summary over those of config.ini; a null one leaves the record's as it is. */
static void record_summary(run_record *r, const run_summary *s) {
    if (s->status[0]) snprintf(r->status, sizeof r->status, "%s", s->status);
    if (s->policy[0]) snprintf(r->policy, sizeof r->policy, "%s", s->policy);
    if (s->workers >= 0) r->workers = s->workers;
    if (s->batch >= 0) r->batch = s->batch;
    if (s->seed || !isfinite(r->seed)) r->seed = (double)s->seed; /* 0 is also an absent seed */
    r->test_accuracy = s->test_accuracy;
    r->test_perplexity = s->test_perplexity;
    r->sim_time_s = s->sim_time_s;
    r->lssr = s->lssr;
    r->bytes_sent = s->bytes_sent;
    r->steps = count_or_nan(s->steps);
    r->sync_steps = count_or_nan(s->sync_steps);
    r->compute_s = s->compute_s;
    r->comm_s = s->comm_s;
    r->wait_s = s->wait_s;
    r->epochs = s->epochs;
    r->dropped_fraction = isfinite(s->dropped_fraction) ? s->dropped_fraction : 0.0;
}

int run_record_read(const char *dir, run_record *r) {
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    snprintf(r->status, sizeof r->status, "failed");
    r->test_accuracy = r->test_perplexity = r->sim_time_s = r->lssr = r->bytes_sent = NAN;
    r->steps = r->sync_steps = r->compute_s = r->comm_s = r->wait_s = r->epochs = r->seed = NAN;
    char path[1200];
    snprintf(path, sizeof path, "%s/config.ini", dir);
    int have_config = file_exists(path);
    int rc;
    if (have_config && (rc = ini_text_parse(path, "config", SS_EINPUT, config_handler, r)) != SS_OK)
        return rc;
    const char *v;
    long x;
    if ((v = run_record_get(r, "policy"))) snprintf(r->policy, sizeof r->policy, "%s", v);
    static const char *const counts[] = {"workers", "batch"};
    for (int k = 0; k < 2; k++) {
        if (!(v = run_record_get(r, counts[k]))) continue;
        if (number_parse_long(v, 1, 1L << 30, &x) != 0)
            return ss_error_set(SS_EINPUT, "%s: %s = '%s' is not a whole number >= 1", path,
                                counts[k], v);
        *(k ? &r->batch : &r->workers) = (int)x;
    }
    if ((v = run_record_get(r, "seed")) && number_parse_double(v, &r->seed) != 0)
        return ss_error_set(SS_EINPUT, "%s: seed = '%s' is not a whole number", path, v);
    if ((v = run_record_get(r, "platform")) && v[0])
        snprintf(r->platform, sizeof r->platform, "%s", v);
    else if ((v = run_record_get(r, "bandwidth")))
        snprintf(r->platform, sizeof r->platform, "%s", v);

    run_summary s;
    snprintf(path, sizeof path, "%s/summary.json", dir);
    struct stat st; /* anything there by that name: a directory or device is refused by reading */
    const int have_summary = stat(path, &st) == 0;
    /* a summary that is there but malformed is an error, not a failed run */
    if (have_summary && (rc = read_summary(dir, &s)) != SS_OK) return rc;
    if (!have_summary && !have_config)
        return ss_error_set(SS_EINPUT, "%s: not a run directory", dir);
    if (have_summary) record_summary(r, &s);
    if (!r->policy[0])
        snprintf(r->policy, sizeof r->policy, "%s",
                 r->workers > 1 ? policy_registry_baseline()->name : "single");
    return SS_OK;
}

const char *run_record_get(const run_record *r, const char *key) {
    for (int i = 0; i < r->n_keys; i++)
        if (!strcmp(r->key[i], key)) return r->value[i];
    return NULL;
}

/* The value of one item of the setting for run r ("" when it has none). */
static void setting_value(const run_record *r, int item, char *buf, size_t n) {
    const char *v = NULL;
    buf[0] = '\0';
    switch (item) {
    case 0:
        v = run_record_get(r, "model");
        if (!v || !v[0]) v = run_record_get(r, "profile");
        break;
    case 1:
        v = run_record_get(r, "dataset");
        break;
    case 2: {
        if (!run_record_get(r, "dataset")) return; /* a replay: no data, no partition */
        v = run_record_get(r, "partition");
        const policy_info *p = policy_registry_find(r->policy);
        if ((!v || !v[0]) && p && p->default_partition) v = p->default_partition;
        break;
    }
    case 3:
        if (r->workers > 0) snprintf(buf, n, "%d workers", r->workers);
        return;
    case 4:
        v = run_record_get(r, "gpu");
        break;
    case 5:
        if (r->batch > 0) snprintf(buf, n, "batch %d", r->batch);
        return;
    case 6: {
        const char *base = strrchr(r->platform, '/');
        v = base ? base + 1 : r->platform;
        break;
    }
    }
    if (v && v[0]) snprintf(buf, n, "%s%s", item == 2 ? "partition " : "", v);
}

void run_setting_text(const run_record *runs, int n, int with_network, char *buf, size_t size) {
    size_t len = 0;
    buf[0] = '\0';
    for (int item = 0; item < 7 && len < size; item++) {
        if (item == 6 && !with_network) continue;
        char first[RUN_RECORD_TEXT + 16], v[RUN_RECORD_TEXT + 16];
        int same = 1;
        setting_value(&runs[0], item, first, sizeof first);
        for (int i = 1; i < n && same; i++) {
            setting_value(&runs[i], item, v, sizeof v);
            same = !strcmp(v, first);
        }
        if (!same && item == 2) { /* the partitions, each once: "partition defdp/seldp" */
            size_t l = (size_t)snprintf(first, sizeof first, "partition ");
            for (int i = 0; i < n; i++) {
                setting_value(&runs[i], item, v, sizeof v);
                const char *value = v + strlen("partition ");
                int seen = 0;
                for (int j = 0; j < i && !seen; j++) {
                    char w[RUN_RECORD_TEXT + 16];
                    setting_value(&runs[j], item, w, sizeof w);
                    seen = !strcmp(w, v);
                }
                if (!seen && v[0] && l < sizeof first)
                    l += (size_t)snprintf(first + l, sizeof first - l, "%s%s",
                                          first[l - 1] == ' ' ? "" : "/", value);
            }
            same = 1;
        }
        if (!same || !first[0]) continue;
        len += (size_t)snprintf(buf + len, size - len, "%s%s", len ? ", " : "", first);
    }
}

int run_key_is_launch(const char *key) {
    static const char *const keys[] = {"seed",   "out",      "progress",       "trace",
                                       "config", "data-dir", "dump-gradients", NULL};
    for (int i = 0; keys[i]; i++)
        if (!strcmp(keys[i], key)) return 1;
    return 0;
}

static int is_run_dir(const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/config.ini", dir);
    if (file_exists(path)) return 1;
    snprintf(path, sizeof path, "%s/summary.json", dir);
    return file_exists(path);
}

int run_name_compare(const char *a, const char *b) {
    while (*a && *b) {
        if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
            /* a number against a number: by value ("5Gbps" < "25Gbps", "0.05" < "0.3") */
            char *ea, *eb;
            const double x = strtod(a, &ea), y = strtod(b, &eb);
            if (x != y) return x < y ? -1 : 1;
            const int la = (int)(ea - a), lb = (int)(eb - b); /* "1" before "1.0" */
            const int c = la != lb ? (la < lb ? -1 : 1) : strncmp(a, b, (size_t)la);
            if (c) return c;
            a = ea, b = eb;
            continue;
        }
        if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++, b++;
    }
    return (unsigned char)*a - (unsigned char)*b;
}

static int compare_names(const void *a, const void *b) {
    return run_name_compare(*(char *const *)a, *(char *const *)b);
}

static void push_dir(char ***dirs, int *n, const char *path) {
    *dirs = realloc(*dirs, sizeof(char *) * (size_t)(*n + 1));
    SS_ASSERT(*dirs);
    (*dirs)[(*n)++] = strdup(path);
}

int run_dirs_find(const char *dir, char ***dirs, int *n) {
    /* A sweep's or a compare's directory has a config.ini of its own too: its runs are below. */
    static const char *const subdirs[] = {"points", "runs"};
    int has_children = 0;
    for (size_t s = 0; s < sizeof subdirs / sizeof subdirs[0]; s++) {
        char parent[1200];
        struct stat st;
        snprintf(parent, sizeof parent, "%s/%s", dir, subdirs[s]);
        has_children |= stat(parent, &st) == 0 && S_ISDIR(st.st_mode);
    }
    if (!has_children && is_run_dir(dir)) {
        push_dir(dirs, n, dir);
        return SS_OK;
    }
    int found = 0;
    for (size_t s = 0; s < sizeof subdirs / sizeof subdirs[0]; s++) {
        char parent[1200];
        snprintf(parent, sizeof parent, "%s/%s", dir, subdirs[s]);
        DIR *d = opendir(parent);
        if (!d) continue;
        int first = *n;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (e->d_name[0] == '.') continue;
            char path[1500];
            snprintf(path, sizeof path, "%s/%s", parent, e->d_name);
            if (is_run_dir(path)) push_dir(dirs, n, path), found++;
        }
        closedir(d);
        /* an empty subdirectory leaves *dirs NULL, which qsort must not be given */
        if (*n > first) qsort(*dirs + first, (size_t)(*n - first), sizeof(char *), compare_names);
    }
    if (!found)
        return ss_error_set(SS_EINPUT,
                            "%s: no run found (expected config.ini or summary.json in it, or run "
                            "directories under %s/points/ or %s/runs/)",
                            dir, dir, dir);
    return SS_OK;
}

void run_dirs_free(char **dirs, int n) {
    for (int i = 0; i < n; i++)
        free(dirs[i]);
    free(dirs);
}

static void curve_push(double **time_s, double **accuracy, size_t *n, size_t *cap, double t,
                       double a) {
    if (*n == *cap) {
        *cap = *cap ? 2 * *cap : 64;
        *time_s = realloc(*time_s, sizeof(double) * *cap);
        *accuracy = realloc(*accuracy, sizeof(double) * *cap);
        SS_ASSERT(*time_s && *accuracy);
    }
    (*time_s)[*n] = t;
    (*accuracy)[*n] = a;
    (*n)++;
}

/* A cell as a number: NaN when empty; SS_EINPUT naming the file, line and column when it is
 * anything but a decimal number ("0x10", "nan", "high" are refused, not read as 16 or blank). */
static int cell_number(const csv_reader *r, int col, const char *name, double *x) {
    *x = NAN;
    if (col >= r->n_fields || !r->field[col][0]) return SS_OK;
    if (number_parse_double(r->field[col], x) == 0) return SS_OK;
    return ss_error_set(SS_EINPUT, "%s:%ld: %s '%.40s' is not a decimal number", r->name, r->line,
                        name, r->field[col]);
}

/* metrics.csv's (sim_time_s, column) points; a missing column is SS_EINPUT unless optional, where
 * it gives no points. */
static int curve_read(const char *dir, const char *column, int optional, double **time_s,
                      double **value, size_t *n) {
    *time_s = *value = NULL;
    *n = 0;
    char path[1200];
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    csv_reader r;
    int got, rc = csv_open(&r, path);
    if (rc != SS_OK) return rc;
    if ((rc = csv_next(&r, &got)) != SS_OK || !got) {
        csv_close(&r);
        return rc != SS_OK ? rc : ss_error_set(SS_EINPUT, "%s: empty", path);
    }
    const int ct = csv_find(&r, "sim_time_s"), ca = csv_find(&r, column);
    if (ct < 0 || ca < 0) {
        csv_close(&r);
        if (optional && ct >= 0) return SS_OK;
        return ss_error_set(SS_EINPUT, "%s: no sim_time_s or %s column", path, column);
    }
    size_t cap = 0;
    while ((rc = csv_next(&r, &got)) == SS_OK && got) {
        double t, a;
        if ((rc = cell_number(&r, ct, "sim_time_s", &t)) != SS_OK ||
            (rc = cell_number(&r, ca, column, &a)) != SS_OK)
            break;
        curve_push(time_s, value, n, &cap, t, a);
    }
    csv_close(&r);
    if (rc != SS_OK) {
        free(*time_s);
        free(*value);
        *time_s = *value = NULL;
        *n = 0;
    }
    return rc;
}

int run_curve_read(const char *dir, double **time_s, double **accuracy, size_t *n) {
    return curve_read(dir, "test_accuracy", 0, time_s, accuracy, n);
}

int run_curve_read_column(const char *dir, const char *column, double **time_s, double **value,
                          size_t *n) {
    return curve_read(dir, column, 0, time_s, value, n);
}

int run_record_is_language(const run_record *r) {
    return isfinite(r->test_perplexity);
}

int run_record_check_files(const char *dir) {
    char path[1200];
    struct stat st;
    snprintf(path, sizeof path, "%s/metrics.csv", dir);
    if (stat(path, &st) == 0) {
        double *t, *a;
        size_t m;
        int rc = run_curve_read(dir, &t, &a, &m);
        if (rc != SS_OK) return rc;
        free(t);
        free(a);
        /* a language model's perplexity cells too (older files have no such column) */
        if ((rc = curve_read(dir, "test_perplexity", 1, &t, &a, &m)) != SS_OK) return rc;
        free(t);
        free(a);
    }
    snprintf(path, sizeof path, "%s/steps.trace", dir);
    if (stat(path, &st) == 0) {
        trace_table tt;
        int rc = trace_table_read(path, 0, &tt);
        if (rc != SS_OK) return rc;
        trace_table_free(&tt);
    }
    return SS_OK;
}

double run_curve_tta_s(const double *time_s, const double *accuracy, size_t n, double target) {
    for (size_t i = 0; i < n; i++)
        if (accuracy[i] >= target) return time_s[i];
    return -1;
}

double run_curve_tta_below_s(const double *time_s, const double *value, size_t n, double target) {
    for (size_t i = 0; i < n; i++)
        if (value[i] <= target) return time_s[i];
    return -1;
}

int trace_table_read(const char *path, size_t max_rows, trace_table *t) {
    memset(t, 0, sizeof *t);
    trace_stream *s;
    int rc = trace_stream_open(path, &s);
    if (rc != SS_OK) return rc;
    t->n_cols = trace_stream_n_columns(s);
    for (int c = 0; c < t->n_cols; c++)
        snprintf(t->col[c], sizeof t->col[0], "%s", trace_stream_column(s, c));
    size_t rows_cap = 0;
    step_record rec;
    int got;
    while ((!max_rows || t->n_rows < max_rows) &&
           (rc = trace_stream_next(s, &rec, &got)) == SS_OK && got) {
        if (t->n_rows == rows_cap) {
            rows_cap = rows_cap ? 2 * rows_cap : 1024;
            t->cells = realloc(t->cells, sizeof(double) * rows_cap * (size_t)t->n_cols);
            SS_ASSERT(t->cells);
        }
        double *row = t->cells + t->n_rows * (size_t)t->n_cols;
        for (int c = 0; c < t->n_cols; c++)
            row[c] = trace_record_value(&rec, t->col[c]);
        t->n_rows++;
    }
    trace_stream_close(s);
    if (rc != SS_OK) trace_table_free(t);
    return rc;
}

int trace_table_column(const trace_table *t, const char *name) {
    for (int c = 0; c < t->n_cols; c++)
        if (!strcmp(t->col[c], name)) return c;
    return -1;
}

void trace_table_free(trace_table *t) {
    free(t->cells);
    memset(t, 0, sizeof *t);
}
