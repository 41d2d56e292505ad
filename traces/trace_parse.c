/* What the two trace readers (trace_read.c, trace_stream.c) share: reading a line, the first line,
 * the header lines and their completeness, and a version-2 record line. */
#include "traces/trace_internal.h"
#include "traces/input_file.h"
#include "common/number.h"
#include "common/status.h"
#include "sim/policy/policy_codec.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* sim_layer_kind's names in "# layer" lines */
const char *const trace_layer_kind_names[SIM_LAYER_KIND_COUNT] = {"other", "matmul", "norm", "conv",
                                                                  "maxpool"};

int trace_parse_line(FILE *fp, char **buf, size_t *cap, int *had_newline) {
    return traces_input_line(fp, buf, cap, TRACE_MAX_LINE, had_newline);
}

/* "key = value" after a prefix: splits in place; -1 if there is no '='. */
static int split_kv(char *text, char **key, char **value) {
    char *eq = strchr(text, '=');
    if (!eq) return -1;
    char *k = text, *v = eq + 1;
    *eq = '\0';
    while (*k == ' ' || *k == '\t')
        k++;
    for (char *e = eq - 1; e >= k && (*e == ' ' || *e == '\t'); e--)
        *e = '\0';
    while (*v == ' ' || *v == '\t')
        v++;
    size_t vl = strlen(v);
    while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\t'))
        v[--vl] = '\0';
    *key = k;
    *value = v;
    return k[0] ? 0 : -1;
}

int trace_parse_error(const trace_parser *r, const char *fmt, const char *detail) {
    return ss_error_set(SS_EINPUT, "%s:%ld: %s%s", r->name, r->line, fmt, detail ? detail : "");
}

/* "# layer KIND FWD_FLOPS BWD_FLOPS FWD_BYTES BWD_BYTES PARAM_BYTES KERNELS GEMM_N GEMM_K": one
 * layer of a step, in forward order, before the records. */
static int layer_line(trace_parser *r, const char *text) {
    if (r->t) return trace_parse_error(r, "layer line after the first record", NULL);
    if (r->n_layers >= TRACE_MAX_LAYERS) return trace_parse_error(r, "too many layer lines", NULL);
    char kind[16], f[8][64];
    char tail;
    if (sscanf(text, "%15s %63s %63s %63s %63s %63s %63s %63s %63s %c", kind, f[0], f[1], f[2],
               f[3], f[4], f[5], f[6], f[7], &tail) != 9)
        return trace_parse_error(
            r,
            "malformed layer line (expected 'layer KIND FWD_FLOPS BWD_FLOPS FWD_BYTES "
            "BWD_BYTES PARAM_BYTES KERNELS GEMM_N GEMM_K')",
            NULL);
    sim_layer_cost l = {0};
    int k = -1;
    for (int i = 0; i < SIM_LAYER_KIND_COUNT; i++)
        if (!strcmp(kind, trace_layer_kind_names[i])) k = i;
    if (k < 0)
        return trace_parse_error(r, "layer kind must be other, matmul, norm, conv or maxpool, not ",
                                 kind);
    l.kind = (sim_layer_kind)k;
    double *v[7] = {&l.fwd_flops,   &l.bwd_flops, &l.fwd_bytes, &l.bwd_bytes,
                    &l.param_bytes, &l.gemm_n,    &l.gemm_k};
    const int col[7] = {0, 1, 2, 3, 4, 6, 7};
    for (int i = 0; i < 7; i++)
        if (number_parse_double(f[col[i]], v[i]) || !(*v[i] >= 0) || !isfinite(*v[i]))
            return trace_parse_error(r, "layer values must be finite numbers >= 0, not ",
                                     f[col[i]]);
    long kernels;
    if (number_parse_long(f[5], 0, 1000000, &kernels))
        return trace_parse_error(r, "layer kernels must be an integer from 0 to 1000000, not ",
                                 f[5]);
    l.kernels = (int)kernels;
    r->layers = realloc(r->layers, sizeof *r->layers * (size_t)(r->n_layers + 1));
    SS_ASSERT(r->layers);
    r->layers[r->n_layers++] = l;
    return SS_OK;
}

int trace_parse_header_line(trace_parser *r, char *text) {
    char *key, *value;
    char why[160];
    if (!strncmp(text, "meta ", 5)) {
        if (split_kv(text + 5, &key, &value))
            return trace_parse_error(r, "malformed meta line", NULL);
        double d;
        if (!strcmp(key, "source"))
            snprintf(r->meta.source, sizeof r->meta.source, "%s", value);
        else if (!strcmp(key, "model"))
            snprintf(r->meta.model, sizeof r->meta.model, "%s", value);
        else if (!strcmp(key, "param_count") || !strcmp(key, "param_bytes") ||
                 !strcmp(key, "sample_bytes") || !strcmp(key, "state_bytes")) {
            if (number_parse_double(value, &d) || d < 0)
                return trace_parse_error(r, "meta value must be a number >= 0: ", key);
            if (!strcmp(key, "param_count")) r->meta.param_count = d;
            if (!strcmp(key, "param_bytes")) r->meta.param_bytes = d;
            if (!strcmp(key, "sample_bytes")) r->meta.sample_bytes = d;
            if (!strcmp(key, "state_bytes")) r->meta.state_bytes = d;
        }
        return SS_OK; /* unknown meta keys are allowed (newer writers) */
    }
    if (!strncmp(text, "policy ", 7)) {
        if (r->t) return trace_parse_error(r, "policy line after the first record", NULL);
        if (split_kv(text + 7, &key, &value))
            return trace_parse_error(r, "malformed policy line", NULL);
        int i = policy_codec_parse(key, value, &r->pc, why, sizeof why);
        if (i == POLICY_CODEC_UNKNOWN) return trace_parse_error(r, "unknown policy key: ", key);
        if (i < 0) return trace_parse_error(r, why, NULL);
        if (!strcmp(key, "slowdown")) {
            free(r->slowdown_text);
            r->slowdown_text = strdup(value);
            SS_ASSERT(r->slowdown_text);
        }
        r->policy_seen[i] = 1;
        return SS_OK;
    }
    if (!strncmp(text, "config ", 7)) {
        if (split_kv(text + 7, &key, &value))
            return trace_parse_error(r, "malformed config line", NULL);
        if (strlen(key) >= sizeof r->config[0].key || strlen(value) >= sizeof r->config[0].value)
            return trace_parse_error(r, "config key or value too long", NULL);
        if (r->n_config == r->cap_config) {
            r->cap_config = r->cap_config ? 2 * r->cap_config : 64;
            if (r->cap_config > 4096) return trace_parse_error(r, "too many config lines", NULL);
            r->config = realloc(r->config, sizeof *r->config * (size_t)r->cap_config);
            SS_ASSERT(r->config);
        }
        trace_kv *kv = &r->config[r->n_config++];
        snprintf(kv->key, sizeof kv->key, "%s", key);
        snprintf(kv->value, sizeof kv->value, "%s", value);
        return SS_OK;
    }
    if (!strncmp(text, "layer ", 6)) return layer_line(r, text + 6);
    if (!strncmp(text, "columns:", 8)) {
        const char *c = text + 8;
        while (*c == ' ')
            c++;
        if (strcmp(c, TRACE_COLUMNS))
            return trace_parse_error(r, "unexpected columns (expected '" TRACE_COLUMNS "')", NULL);
        r->columns_seen = 1;
        return SS_OK;
    }
    if (!strncmp(text, "result ", 7)) {
        if (split_kv(text + 7, &key, &value) || strcmp(key, "sim_time_s") ||
            number_parse_double(value, &r->sim_time_s) || r->sim_time_s < 0)
            return trace_parse_error(r, "malformed result line (expected 'result sim_time_s = T')",
                                     NULL);
        return SS_OK;
    }
    if (!strncmp(text, "end ", 4)) {
        if (split_kv(text + 4, &key, &value) || strcmp(key, "records") ||
            number_parse_long(value, 0, 4000000000000000000L, &r->end_records))
            return trace_parse_error(r, "malformed end line (expected 'end records = K')", NULL);
        r->end_seen = 1;
        return SS_OK;
    }
    return SS_OK; /* a comment */
}

/* The header is complete: every policy line, the columns, sizes that make sense. */
int trace_parse_check_header(trace_parser *r) {
    for (int i = 0; i < policy_codec_count(); i++)
        if (policy_codec_required(i) && !r->policy_seen[i])
            return trace_parse_error(r, "the header lacks the policy line for ",
                                     policy_codec_key(i));
    if (!r->columns_seen)
        return trace_parse_error(r, "the header lacks the '# columns:' line", NULL);
    if (r->pc.workers < 1 || r->pc.workers > TRACE_MAX_WORKERS || r->pc.steps < 1)
        return trace_parse_error(r, "policy workers and steps must be positive", NULL);
    if (!(r->meta.param_bytes > 0))
        return trace_parse_error(r, "meta param_bytes must be > 0", NULL);
    return SS_OK;
}

int trace_parse_value(const char *text, int non_finite, double *out) {
    if (number_parse_double(text, out) == 0) return 0;
    if (!non_finite) return -1;
    if (!strcmp(text, "nan") || !strcmp(text, "-nan")) {
        *out = NAN;
        return 0;
    }
    if (!strcmp(text, "inf") || !strcmp(text, "-inf")) {
        *out = text[0] == '-' ? -INFINITY : INFINITY;
        return 0;
    }
    return -1;
}

int trace_column_may_be_non_finite(const char *column) {
    return !strcmp(column, "grad_norm") || !strcmp(column, "delta") || !strcmp(column, "loss");
}

/* Parses and checks one record line (version 2) against the header's workers and steps. */
int trace_parse_record(const trace_parser *r, char *text, step_record *rec) {
    char *f[14];
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(text, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (n == 13) return trace_parse_error(r, "more than 13 fields in a record", NULL);
        f[n++] = tok;
    }
    if (n != 13) return trace_parse_error(r, "a record has 13 fields (truncated line?)", NULL);
    long step, worker, decision, samples;
    double v[9]; /* start comm wait ... parsed below */
    if (number_parse_long(f[0], 1, r->pc.steps, &step))
        return trace_parse_error(r, "step out of range (1..policy steps): ", f[0]);
    if (number_parse_long(f[1], 0, r->pc.workers - 1, &worker))
        return trace_parse_error(r, "worker out of range (0..policy workers - 1): ", f[1]);
    /* grad_norm, delta and loss (7, 8, 12) are nan or inf after a diverged step */
    const int dcol[9] = {2, 3, 4, 5, 6, 7, 8, 11, 12};
    for (int i = 0; i < 9; i++)
        if (trace_parse_value(f[dcol[i]], dcol[i] == 7 || dcol[i] == 8 || dcol[i] == 12, &v[i]))
            return trace_parse_error(r, "not a finite number: ", f[dcol[i]]);
    /* start_s compute_s comm_s wait_s flops : non-negative */
    for (int i = 0; i < 5; i++)
        if (v[i] < 0) return trace_parse_error(r, "times and FLOPs must be >= 0: ", f[dcol[i]]);
    if (number_parse_long(f[9], 0, 1, &decision))
        return trace_parse_error(r, "decision must be 0 or 1: ", f[9]);
    if (number_parse_long(f[10], 0, 1L << 30, &samples))
        return trace_parse_error(r, "trace_parse_error samples: ", f[10]);
    *rec = (step_record){.step = step,
                         .worker = (int)worker,
                         .start_s = v[0],
                         .compute_s = v[1],
                         .comm_s = v[2],
                         .wait_s = v[3],
                         .flops = v[4],
                         .grad_norm = v[5],
                         .delta = v[6],
                         .decision = (int)decision,
                         .samples = (int)samples,
                         .bytes_sent = v[7],
                         .loss = v[8]};
    return SS_OK;
}

/* The first line: the magic and version. *version: TRACE_VERSION, or 1 for the old format
 * (no policy header; the caller decides whether it can use it). */
/* "# syncsim-trace VERSION" (spaces or tabs between): the text of VERSION, or NULL for another
 * line. */
static const char *magic_version(const char *buf) {
    const char *p = buf;
    if (*p++ != '#') return NULL;
    while (*p == ' ' || *p == '\t')
        p++;
    if (strncmp(p, TRACE_MAGIC, strlen(TRACE_MAGIC))) return NULL;
    p += strlen(TRACE_MAGIC);
    if (*p != ' ' && *p != '\t') return NULL;
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

int trace_parse_first_line(const trace_parser *r, const char *buf, int *version) {
    const char *text = magic_version(buf);
    if (text) {
        /* decimal digits only: a sign, a suffix or a number past any integer is not a version
         * (strtol would have read 99999999999999999999 as -1 and advised re-recording) */
        size_t digits = strspn(text, "0123456789");
        if (digits == 0 || text[digits] != '\0')
            return ss_error_set(
                SS_EINPUT,
                "%s:1: malformed trace format version '%.32s' (expected '# " TRACE_MAGIC " %d')",
                r->name, text, TRACE_VERSION);
        long v;
        if (number_parse_long(text, 0, 1000000, &v))
            return ss_error_set(SS_EINPUT,
                                "%s:1: trace format version %.32s is out of range; this syncsim "
                                "reads version %d",
                                r->name, text, TRACE_VERSION);
        if (v != TRACE_VERSION)
            return ss_error_set(
                SS_EINPUT, "%s:1: trace format version %ld, this syncsim reads version %d; %s",
                r->name, v, TRACE_VERSION,
                v > TRACE_VERSION ? "it was written by a newer syncsim: upgrade syncsim"
                                  : "re-record it with this syncsim (syncsim train)");
        *version = (int)v;
        return SS_OK;
    }
    if (!strncmp(buf, "# syncsim steps trace, format 1", 31)) {
        *version = 1;
        return SS_OK;
    }
    return trace_parse_error(
        r, "not a syncsim trace (expected the first line '# " TRACE_MAGIC " 2')", NULL);
}
