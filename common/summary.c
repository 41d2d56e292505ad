#include "common/summary.h"
#include "common/infile.h"
#include "common/outputs.h"
#include "common/status.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum field_type {
    F_STR,  /* char[]: "" is null */
    F_NUM,  /* double: NaN is null */
    F_TIME, /* double: < 0 or NaN is null (tta_s: never reached) */
    F_INT,  /* int: < 0 is null */
    F_LONG, /* long: < 0 is null */
    F_U64,  /* uint64_t: always written */
    F_HIST, /* long[SUMMARY_HIST_BINS] with its count of bins (0 is null) at `aux` */
} field_type;

typedef struct field {
    const char *key;
    field_type type;
    size_t offset, size; /* of the value in run_summary; size: of a string's buffer */
    size_t aux;          /* F_HIST: offset of the bins count */
} field;

#define STR(k)                                                                                     \
    { #k, F_STR, offsetof(run_summary, k), sizeof(((run_summary *)0)->k), 0 }
#define NUM(k)                                                                                     \
    { #k, F_NUM, offsetof(run_summary, k), 0, 0 }
#define INT(k)                                                                                     \
    { #k, F_INT, offsetof(run_summary, k), 0, 0 }
#define LONG(k)                                                                                    \
    { #k, F_LONG, offsetof(run_summary, k), 0, 0 }
#define HIST(key, k, bins)                                                                         \
    { key, F_HIST, offsetof(run_summary, k), 0, offsetof(run_summary, bins) }

/* The schema, in the order the keys are written. */
static const field fields[] = {
    STR(status),
    STR(mode),
    STR(policy),
    INT(workers),
    STR(platform),
    NUM(test_accuracy),
    NUM(test_loss),
    NUM(test_perplexity),
    NUM(worker_test_accuracy_mean),
    NUM(sim_time_s),
    {"tta_s", F_TIME, offsetof(run_summary, tta_s), 0, 0},
    NUM(target_accuracy),
    NUM(target_perplexity),
    NUM(lssr),
    NUM(delta_p50),
    NUM(delta_p90),
    NUM(delta_p99),
    NUM(delta_max),
    NUM(delta_target_lssr),
    NUM(delta_chosen),
    NUM(lssr_after_calibration),
    NUM(delta_chosen_min),
    NUM(delta_chosen_max),
    LONG(delta_choices),
    LONG(steps),
    LONG(sync_steps),
    NUM(bytes_sent),
    NUM(compute_s),
    NUM(comm_s),
    NUM(wait_s),
    NUM(dropped_fraction),
    NUM(dlcp_time_saved_s),
    NUM(epochs),
    {"seed", F_U64, offsetof(run_summary, seed), 0, 0},
    STR(device),
    INT(threads),
    STR(model),
    STR(dataset),
    STR(partition),
    STR(collective),
    STR(precision),
    STR(framework),
    INT(batch),
    NUM(lr),
    STR(recipe),
    NUM(momentum),
    INT(nesterov),
    NUM(weight_decay),
    STR(lr_schedule),
    NUM(lr_warmup_epochs),
    STR(augment),
    NUM(clip_norm),
    STR(bn_stats),
    INT(local_batch),
    NUM(params),
    NUM(flops_per_sample),
    NUM(forward_flops_per_sample),
    NUM(backward_flops_per_sample),
    HIST("staleness_clock_gap_hist", clock_gap_hist, clock_gap_bins),
    HIST("staleness_updates_hist", update_staleness_hist, update_staleness_bins),
    {"staleness_max_clock_gap", F_LONG, offsetof(run_summary, max_clock_gap), 0, 0},
    {"staleness_max_updates", F_LONG, offsetof(run_summary, max_update_staleness), 0, 0},
    STR(source),
    INT(recorded_workers),
    STR(scale_out),
    NUM(recorded_sim_time_s),
    NUM(relative_difference),
    NUM(param_bytes),
    NUM(samples_per_s),
    NUM(wall_s),
};
#define FIELD_COUNT ((int)(sizeof fields / sizeof fields[0]))

void run_summary_init(run_summary *s) {
    memset(s, 0, sizeof *s);
    for (int i = 0; i < FIELD_COUNT; i++) {
        void *v = (char *)s + fields[i].offset;
        switch (fields[i].type) {
        case F_NUM:
            *(double *)v = NAN;
            break;
        case F_TIME:
            *(double *)v = -1;
            break;
        case F_INT:
            *(int *)v = -1;
            break;
        case F_LONG:
            *(long *)v = -1;
            break;
        default: /* strings empty, histograms without bins, seed 0 */
            break;
        }
    }
}

void run_summary_set_staleness(run_summary *s, const long *clock_gap_hist,
                               const long *update_staleness_hist, int n, long max_clock_gap,
                               long max_update_staleness) {
    for (int i = 0; i < n && i < SUMMARY_HIST_BINS; i++) {
        s->clock_gap_hist[i] = clock_gap_hist[i];
        s->update_staleness_hist[i] = update_staleness_hist[i];
        if (clock_gap_hist[i] || i == 0) s->clock_gap_bins = i + 1;
        if (update_staleness_hist[i] || i == 0) s->update_staleness_bins = i + 1;
    }
    s->max_clock_gap = max_clock_gap;
    s->max_update_staleness = max_update_staleness;
}

static void add_hist(cJSON *j, const char *key, const long *hist, int bins) {
    if (bins <= 0) {
        cJSON_AddNullToObject(j, key);
        return;
    }
    cJSON *a = cJSON_AddArrayToObject(j, key);
    for (int i = 0; i < bins && i < SUMMARY_HIST_BINS; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)hist[i]));
}

static void add_field(cJSON *j, const field *f, const run_summary *s) {
    const void *v = (const char *)s + f->offset;
    double x = NAN;
    switch (f->type) {
    case F_STR:
        if (((const char *)v)[0]) {
            cJSON_AddStringToObject(j, f->key, v);
            return;
        }
        break;
    case F_NUM:
        x = *(const double *)v;
        break;
    case F_TIME:
        x = *(const double *)v >= 0 ? *(const double *)v : NAN;
        break;
    case F_INT:
        x = *(const int *)v >= 0 ? (double)*(const int *)v : NAN;
        break;
    case F_LONG:
        x = *(const long *)v >= 0 ? (double)*(const long *)v : NAN;
        break;
    case F_U64:
        x = (double)*(const uint64_t *)v;
        break;
    case F_HIST:
        add_hist(j, f->key, v, *(const int *)((const char *)s + f->aux));
        return;
    }
    if (isnan(x))
        cJSON_AddNullToObject(j, f->key);
    else
        cJSON_AddNumberToObject(j, f->key, x);
}

int summary_write(const run_config *cfg, const run_summary *s) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "schema", SUMMARY_SCHEMA);
    for (int i = 0; i < FIELD_COUNT; i++)
        add_field(j, &fields[i], s);
    int rc = outputs_write_json(cfg, "summary.json", j);
    cJSON_Delete(j);
    return rc;
}

static void read_hist(const cJSON *a, long *hist, int *bins) {
    *bins = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, a) {
        if (*bins == SUMMARY_HIST_BINS || !cJSON_IsNumber(e)) break;
        hist[(*bins)++] = (long)e->valuedouble;
    }
}

/* An absent or null value leaves the field absent; a value of another JSON type ("test_accuracy":
 * "high") is an error naming the file and the key, never a blank in a report. */
static int read_field(const char *path, const cJSON *j, const field *f, run_summary *s) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, f->key);
    if (!v && !strcmp(f->key, "wall_s")) v = cJSON_GetObjectItemCaseSensitive(j, "wall_time_s");
    void *dst = (char *)s + f->offset;
    if (!v || cJSON_IsNull(v)) return SS_OK;
    const char *want = f->type == F_STR ? "a string" : f->type == F_HIST ? "an array" : "a number";
    if ((f->type == F_STR && !cJSON_IsString(v)) || (f->type == F_HIST && !cJSON_IsArray(v)) ||
        (f->type != F_STR && f->type != F_HIST && !cJSON_IsNumber(v)))
        return ss_error_set(SS_EINPUT, "%s: \"%s\" is not %s (or null)", path, f->key, want);
    if (f->type == F_STR) {
        snprintf(dst, f->size, "%s", v->valuestring);
        return SS_OK;
    }
    if (f->type == F_HIST) {
        read_hist(v, dst, (int *)((char *)s + f->aux));
        return SS_OK;
    }
    const double x = v->valuedouble;
    switch (f->type) {
    case F_NUM:
    case F_TIME:
        *(double *)dst = x;
        break;
    case F_INT:
        *(int *)dst = (int)x;
        break;
    case F_LONG:
        *(long *)dst = (long)x;
        break;
    case F_U64:
        *(uint64_t *)dst = x > 0 ? (uint64_t)x : 0;
        break;
    default:
        break;
    }
    return SS_OK;
}

int summary_read(const char *path, run_summary *s) {
    run_summary_init(s);
    char *text = NULL;
    size_t len = 0;
    int rc = infile_read(path, "summary", INFILE_MAX_TEXT, SS_EINPUT, &text, &len);
    if (rc != SS_OK) return rc;
    cJSON *j = len > 0 ? cJSON_Parse(text) : NULL;
    free(text);
    if (!cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return ss_error_set(SS_EINPUT, "%s: not a JSON object", path);
    }
    const cJSON *schema = cJSON_GetObjectItemCaseSensitive(j, "schema");
    if (cJSON_IsNumber(schema) && schema->valuedouble > SUMMARY_SCHEMA) {
        double version = schema->valuedouble; /* read before the tree is freed */
        cJSON_Delete(j);
        return ss_error_set(SS_EINPUT, "%s: summary schema %g, this syncsim reads up to %d", path,
                            version, SUMMARY_SCHEMA);
    }
    for (int i = 0; i < FIELD_COUNT && rc == SS_OK; i++)
        rc = read_field(path, j, &fields[i], s);
    cJSON_Delete(j);
    return rc;
}
