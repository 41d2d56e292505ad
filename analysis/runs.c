#include "analysis/runs.h"
#include "common/csv.h"
#include "common/status.h"
#include "sim/policy_registry.h"
#include "traces/trace.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <ini.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static cJSON *read_json(const char *path) {
    FILE *fp = fopen(path, "r");
    if (!fp) return NULL;
    char *text = NULL;
    size_t cap = 0;
    ssize_t len = getdelim(&text, &cap, '\0', fp);
    fclose(fp);
    cJSON *j = len > 0 ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

static double json_number(const cJSON *j, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void json_string(const cJSON *j, const char *key, char *buf, size_t n) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
    if (cJSON_IsString(v)) snprintf(buf, n, "%s", v->valuestring);
}

static int config_handler(void *user, const char *section, const char *name, const char *value) {
    (void)section;
    run_record *r = user;
    if (r->n_keys == RUN_RECORD_MAX_KEYS) return 1;
    snprintf(r->key[r->n_keys], sizeof r->key[0], "%s", name);
    snprintf(r->value[r->n_keys], sizeof r->value[0], "%s", value);
    r->n_keys++;
    return 1;
}

cJSON *run_summary_read(const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    return read_json(path);
}

int run_record_complete(const char *dir) {
    cJSON *j = run_summary_read(dir);
    if (!j) return 0;
    char status[16] = "";
    json_string(j, "status", status, sizeof status);
    cJSON_Delete(j);
    return !strcmp(status, "ok") || !strcmp(status, "diverged");
}

int run_record_read(const char *dir, run_record *r) {
    memset(r, 0, sizeof *r);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    snprintf(r->status, sizeof r->status, "failed");
    r->test_accuracy = r->sim_time_s = r->lssr = r->bytes_sent = NAN;
    r->steps = r->sync_steps = r->compute_s = r->comm_s = r->wait_s = r->epochs = r->seed = NAN;
    char path[1200];
    snprintf(path, sizeof path, "%s/config.ini", dir);
    int have_config = file_exists(path);
    if (have_config && ini_parse(path, config_handler, r) != 0)
        return ss_error_set(SS_EINPUT, "%s: malformed INI file", path);
    const char *v;
    if ((v = run_record_get(r, "policy"))) snprintf(r->policy, sizeof r->policy, "%s", v);
    if ((v = run_record_get(r, "workers"))) r->workers = atoi(v);
    if ((v = run_record_get(r, "batch"))) r->batch = atoi(v);
    if ((v = run_record_get(r, "seed"))) r->seed = strtod(v, NULL);
    if ((v = run_record_get(r, "platform")) && v[0])
        snprintf(r->platform, sizeof r->platform, "%s", v);
    else if ((v = run_record_get(r, "bandwidth")))
        snprintf(r->platform, sizeof r->platform, "%s", v);

    cJSON *j = run_summary_read(dir);
    if (!j && !have_config) return ss_error_set(SS_EINPUT, "%s: not a run directory", dir);
    if (j) {
        json_string(j, "status", r->status, sizeof r->status);
        json_string(j, "policy", r->policy, sizeof r->policy);
        double w = json_number(j, "workers");
        if (isfinite(w)) r->workers = (int)w;
        double b = json_number(j, "batch");
        if (isfinite(b)) r->batch = (int)b;
        double s = json_number(j, "seed");
        if (isfinite(s)) r->seed = s;
        r->test_accuracy = json_number(j, "test_accuracy");
        r->sim_time_s = json_number(j, "sim_time_s");
        r->lssr = json_number(j, "lssr");
        r->bytes_sent = json_number(j, "bytes_sent");
        r->steps = json_number(j, "steps");
        r->sync_steps = json_number(j, "sync_steps");
        r->compute_s = json_number(j, "compute_s");
        r->comm_s = json_number(j, "comm_s");
        r->wait_s = json_number(j, "wait_s");
        r->epochs = json_number(j, "epochs");
        double d = json_number(j, "dropped_fraction");
        r->dropped_fraction = isfinite(d) ? d : 0.0;
        cJSON_Delete(j);
    }
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

static int is_run_dir(const char *dir) {
    char path[1200];
    snprintf(path, sizeof path, "%s/config.ini", dir);
    if (file_exists(path)) return 1;
    snprintf(path, sizeof path, "%s/summary.json", dir);
    return file_exists(path);
}

static int compare_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
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
        qsort(*dirs + first, (size_t)(*n - first), sizeof(char *), compare_names);
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

/* A cell as a number: NaN when empty or not a number. */
static double cell_number(const csv_reader *r, int col) {
    if (col >= r->n_fields) return NAN;
    char *end;
    const double x = strtod(r->field[col], &end);
    return end == r->field[col] ? NAN : x;
}

int run_curve_read(const char *dir, double **time_s, double **accuracy, size_t *n) {
    *time_s = *accuracy = NULL;
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
    const int ct = csv_find(&r, "sim_time_s"), ca = csv_find(&r, "test_accuracy");
    if (ct < 0 || ca < 0) {
        csv_close(&r);
        return ss_error_set(SS_EINPUT, "%s: no sim_time_s or test_accuracy column", path);
    }
    size_t cap = 0;
    while ((rc = csv_next(&r, &got)) == SS_OK && got)
        curve_push(time_s, accuracy, n, &cap, cell_number(&r, ct), cell_number(&r, ca));
    csv_close(&r);
    if (rc != SS_OK) {
        free(*time_s);
        free(*accuracy);
        *time_s = *accuracy = NULL;
        *n = 0;
    }
    return rc;
}

double run_curve_tta_s(const double *time_s, const double *accuracy, size_t n, double target) {
    for (size_t i = 0; i < n; i++)
        if (accuracy[i] >= target) return time_s[i];
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
