/* The step-trace format (trace.h, FORMAT.md): writer, reader, CSV import. */
#include "traces/trace.h"
#include "common/csv.h"
#include "common/number.h"
#include "common/status.h"
#include "sim/policy/policy_codec.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_COLUMNS                                                                              \
    "step worker start_s compute_s comm_s wait_s flops grad_norm delta decision samples "          \
    "bytes_sent loss"
#define TRACE_MAX_LINE    65536 /* bytes of one line */
#define TRACE_MAX_WORKERS (1 << 20)

/* ---- writer ---- */

/* sim_layer_kind's names in "# layer" lines */
static const char *const layer_kind_names[] = {"other", "matmul", "norm"};

void trace_writer_begin(trace_writer *w, FILE *fp, const trace_meta *meta, const policy_config *pc,
                        const char *config_ini) {
    w->fp = fp;
    w->records = 0;
    fprintf(fp, "# %s %d\n", TRACE_MAGIC, TRACE_VERSION);
    fprintf(fp, "# one record per worker step, in completion order; format: traces/FORMAT.md\n");
    fprintf(fp, "# meta source = %s\n", meta->source[0] ? meta->source : "emulation");
    if (meta->model[0]) fprintf(fp, "# meta model = %s\n", meta->model);
    fprintf(fp, "# meta param_count = %.17g\n", meta->param_count);
    fprintf(fp, "# meta param_bytes = %.17g\n", meta->param_bytes);
    fprintf(fp, "# meta sample_bytes = %.17g\n", meta->sample_bytes);
    policy_codec_write(pc, "# policy ", fp);
    for (int i = 0; meta->layers && i < meta->n_layers; i++) {
        const sim_layer_cost *l = &meta->layers[i];
        fprintf(fp, "# layer %s %.17g %.17g %.17g %.17g %.17g %d %.17g %.17g\n",
                layer_kind_names[l->kind], l->fwd_flops, l->bwd_flops, l->fwd_bytes, l->bwd_bytes,
                l->param_bytes, l->kernels, l->gemm_n, l->gemm_k);
    }
    if (config_ini) {
        /* config.ini lines: keep the "key = value" ones (not comments or the section) */
        const char *p = config_ini;
        while (*p) {
            size_t len = strcspn(p, "\n");
            if (len > 0 && p[0] != '#' && p[0] != '[' && p[0] != ';' && memchr(p, '=', len))
                fprintf(fp, "# config %.*s\n", (int)len, p);
            p += len;
            if (*p == '\n') p++;
        }
    }
    fprintf(fp, "# columns: %s\n", TRACE_COLUMNS);
}

void trace_writer_record(trace_writer *w, const step_record *r) {
    fprintf(w->fp, "%ld %d %.17g %.17g %.17g %.17g %.17g %.17g %.17g %d %d %.17g %.17g\n", r->step,
            r->worker, r->start_s, r->compute_s, r->comm_s, r->wait_s, r->flops, r->grad_norm,
            r->delta, r->decision, r->samples, r->bytes_sent, r->loss);
    w->records++;
}

void trace_writer_end(trace_writer *w, double sim_time_s) {
    if (sim_time_s >= 0) fprintf(w->fp, "# result sim_time_s = %.17g\n", sim_time_s);
    fprintf(w->fp, "# end records = %ld\n", w->records);
}

/* ---- common to reader and importer ---- */

int trace_alloc(const policy_config *pc, int workers, long steps, trace **out) {
    *out = NULL;
    if (workers < 1 || workers > TRACE_MAX_WORKERS || steps < 1 ||
        (double)workers * (double)steps > (double)TRACE_MAX_CELLS)
        return ss_error_set(SS_EUSAGE,
                            "a trace of %d workers x %ld steps is outside what fits in memory "
                            "(at most %ld worker steps)",
                            workers, steps, (long)TRACE_MAX_CELLS);
    trace *t = ss_calloc(1, sizeof *t);
    t->version = TRACE_VERSION;
    t->pc = *pc;
    t->workers = workers;
    t->steps = steps;
    t->sim_time_s = -1;
    size_t n = (size_t)workers * (size_t)steps;
    t->cells = ss_calloc(n, sizeof *t->cells);
    t->decisions = ss_malloc((size_t)steps);
    memset(t->decisions, -1, (size_t)steps);
    *out = t;
    return SS_OK;
}

void trace_finish(trace *t) {
    t->records = 0;
    t->steps_done = 0;
    int complete = 1;
    for (long s = 1; s <= t->steps; s++) {
        int8_t d = -1;
        int all = 1;
        for (int w = 0; w < t->workers; w++) {
            const trace_cell *c = trace_cell_at(t, s, w);
            if (!c->recorded) {
                all = 0;
                continue;
            }
            t->records++;
            if (c->decision > d) d = c->decision;
        }
        t->decisions[s - 1] = d;
        if (complete && all)
            t->steps_done = s;
        else
            complete = 0;
    }
}

void trace_free(trace *t) {
    if (!t) return;
    free(t->cells);
    free(t->decisions);
    free(t->config);
    free(t->slowdown);
    free(t->layers);
    free(t);
}

const char *trace_config_get(const trace *t, const char *key) {
    for (int i = t->n_config - 1; i >= 0; i--) /* the last line of a key wins */
        if (!strcmp(t->config[i].key, key)) return t->config[i].value;
    return NULL;
}

double trace_sync_fraction(const trace *t) {
    long n = 0, sync = 0;
    for (long s = 0; s < t->steps; s++)
        if (t->decisions[s] >= 0) {
            n++;
            sync += t->decisions[s];
        }
    return n ? (double)sync / (double)n : 0.0;
}

/* Reads one line into *buf (without the newline). 1 line read, 0 end of file, -1 too long. */
static int read_line(FILE *fp, char **buf, size_t *cap, int *had_newline) {
    ssize_t len = getline(buf, cap, fp);
    if (len < 0) return 0;
    *had_newline = len > 0 && (*buf)[len - 1] == '\n';
    if (*had_newline) (*buf)[--len] = '\0';
    if (len > 0 && (*buf)[len - 1] == '\r') (*buf)[--len] = '\0';
    if (len > TRACE_MAX_LINE) return -1;
    if (strlen(*buf) != (size_t)len) return -2; /* a NUL byte inside the line */
    return 1;
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

/* ---- reader ---- */

typedef struct reader {
    const char *name;
    long line;
    trace *t;
    policy_config pc;
    trace_meta meta;
    unsigned char policy_seen[POLICY_CODEC_MAX_KEYS];
    trace_kv *config;
    int n_config, cap_config;
    int columns_seen;
    int end_seen;
    long end_records;
    double sim_time_s;
    char *slowdown_text;    /* the "slowdown" policy value, parsed once the workers are known */
    sim_layer_cost *layers; /* "# layer" lines */
    int n_layers;
} reader;

static int bad(const reader *r, const char *fmt, const char *detail) {
    return ss_error_set(SS_EINPUT, "%s:%ld: %s%s", r->name, r->line, fmt, detail ? detail : "");
}

/* "# layer KIND FWD_FLOPS BWD_FLOPS FWD_BYTES BWD_BYTES PARAM_BYTES KERNELS GEMM_N GEMM_K": one
 * layer of a step, in forward order, before the records. */
static int layer_line(reader *r, const char *text) {
    if (r->t) return bad(r, "layer line after the first record", NULL);
    if (r->n_layers >= TRACE_MAX_LAYERS) return bad(r, "too many layer lines", NULL);
    char kind[16], f[8][64];
    char tail;
    if (sscanf(text, "%15s %63s %63s %63s %63s %63s %63s %63s %63s %c", kind, f[0], f[1], f[2],
               f[3], f[4], f[5], f[6], f[7], &tail) != 9)
        return bad(r,
                   "malformed layer line (expected 'layer KIND FWD_FLOPS BWD_FLOPS FWD_BYTES "
                   "BWD_BYTES PARAM_BYTES KERNELS GEMM_N GEMM_K')",
                   NULL);
    sim_layer_cost l = {0};
    int k = -1;
    for (int i = 0; i < 3; i++)
        if (!strcmp(kind, layer_kind_names[i])) k = i;
    if (k < 0) return bad(r, "layer kind must be other, matmul or norm, not ", kind);
    l.kind = (sim_layer_kind)k;
    double *v[7] = {&l.fwd_flops,   &l.bwd_flops, &l.fwd_bytes, &l.bwd_bytes,
                    &l.param_bytes, &l.gemm_n,    &l.gemm_k};
    const int col[7] = {0, 1, 2, 3, 4, 6, 7};
    for (int i = 0; i < 7; i++)
        if (number_parse_double(f[col[i]], v[i]) || !(*v[i] >= 0) || !isfinite(*v[i]))
            return bad(r, "layer values must be finite numbers >= 0, not ", f[col[i]]);
    long kernels;
    if (number_parse_long(f[5], 0, 1000000, &kernels))
        return bad(r, "layer kernels must be an integer from 0 to 1000000, not ", f[5]);
    l.kernels = (int)kernels;
    r->layers = realloc(r->layers, sizeof *r->layers * (size_t)(r->n_layers + 1));
    SS_ASSERT(r->layers);
    r->layers[r->n_layers++] = l;
    return SS_OK;
}

static int header_line(reader *r, char *text) {
    char *key, *value;
    char why[160];
    if (!strncmp(text, "meta ", 5)) {
        if (split_kv(text + 5, &key, &value)) return bad(r, "malformed meta line", NULL);
        double d;
        if (!strcmp(key, "source"))
            snprintf(r->meta.source, sizeof r->meta.source, "%s", value);
        else if (!strcmp(key, "model"))
            snprintf(r->meta.model, sizeof r->meta.model, "%s", value);
        else if (!strcmp(key, "param_count") || !strcmp(key, "param_bytes") ||
                 !strcmp(key, "sample_bytes")) {
            if (number_parse_double(value, &d) || d < 0)
                return bad(r, "meta value must be a number >= 0: ", key);
            if (!strcmp(key, "param_count")) r->meta.param_count = d;
            if (!strcmp(key, "param_bytes")) r->meta.param_bytes = d;
            if (!strcmp(key, "sample_bytes")) r->meta.sample_bytes = d;
        }
        return SS_OK; /* unknown meta keys are allowed (newer writers) */
    }
    if (!strncmp(text, "policy ", 7)) {
        if (r->t) return bad(r, "policy line after the first record", NULL);
        if (split_kv(text + 7, &key, &value)) return bad(r, "malformed policy line", NULL);
        int i = policy_codec_parse(key, value, &r->pc, why, sizeof why);
        if (i == POLICY_CODEC_UNKNOWN) return bad(r, "unknown policy key: ", key);
        if (i < 0) return bad(r, why, NULL);
        if (!strcmp(key, "slowdown")) {
            free(r->slowdown_text);
            r->slowdown_text = strdup(value);
            SS_ASSERT(r->slowdown_text);
        }
        r->policy_seen[i] = 1;
        return SS_OK;
    }
    if (!strncmp(text, "config ", 7)) {
        if (split_kv(text + 7, &key, &value)) return bad(r, "malformed config line", NULL);
        if (strlen(key) >= sizeof r->config[0].key || strlen(value) >= sizeof r->config[0].value)
            return bad(r, "config key or value too long", NULL);
        if (r->n_config == r->cap_config) {
            r->cap_config = r->cap_config ? 2 * r->cap_config : 64;
            if (r->cap_config > 4096) return bad(r, "too many config lines", NULL);
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
            return bad(r, "unexpected columns (expected '" TRACE_COLUMNS "')", NULL);
        r->columns_seen = 1;
        return SS_OK;
    }
    if (!strncmp(text, "result ", 7)) {
        if (split_kv(text + 7, &key, &value) || strcmp(key, "sim_time_s") ||
            number_parse_double(value, &r->sim_time_s) || r->sim_time_s < 0)
            return bad(r, "malformed result line (expected 'result sim_time_s = T')", NULL);
        return SS_OK;
    }
    if (!strncmp(text, "end ", 4)) {
        if (split_kv(text + 4, &key, &value) || strcmp(key, "records") ||
            number_parse_long(value, 0, 4000000000000000000L, &r->end_records))
            return bad(r, "malformed end line (expected 'end records = K')", NULL);
        r->end_seen = 1;
        return SS_OK;
    }
    return SS_OK; /* a comment */
}

/* The header is complete: every policy line, the columns, sizes that make sense. */
static int check_header(reader *r) {
    for (int i = 0; i < policy_codec_count(); i++)
        if (policy_codec_required(i) && !r->policy_seen[i])
            return bad(r, "the header lacks the policy line for ", policy_codec_key(i));
    if (!r->columns_seen) return bad(r, "the header lacks the '# columns:' line", NULL);
    if (r->pc.workers < 1 || r->pc.workers > TRACE_MAX_WORKERS || r->pc.steps < 1)
        return bad(r, "policy workers and steps must be positive", NULL);
    if (!(r->meta.param_bytes > 0)) return bad(r, "meta param_bytes must be > 0", NULL);
    return SS_OK;
}

/* Allocates the cells once the header is complete (at the first record or the end line). */
static int start_records(reader *r) {
    int hc = check_header(r);
    if (hc != SS_OK) return hc;
    r->pc.slowdown = NULL;
    int rc = trace_alloc(&r->pc, r->pc.workers, r->pc.steps, &r->t);
    if (rc != SS_OK) {
        /* the message is both an argument and the destination: copy it first */
        char why[512];
        snprintf(why, sizeof why, "%s", ss_error_message());
        return ss_error_set(SS_EINPUT, "%s:%ld: %s", r->name, r->line, why);
    }
    if (r->slowdown_text && strcmp(r->slowdown_text, "none")) {
        double *f = ss_malloc(sizeof(double) * (size_t)r->pc.workers);
        r->t->slowdown = f;
        char *p = r->slowdown_text;
        for (int w = 0; w < r->pc.workers; w++) {
            char *end;
            errno = 0;
            f[w] = strtod(p, &end);
            if (end == p || errno || !isfinite(f[w]) || f[w] <= 0 ||
                (*end != ',' && *end != '\0') || (*end == '\0' && w < r->pc.workers - 1))
                return bad(r, "policy slowdown must list one factor > 0 per worker", NULL);
            p = *end ? end + 1 : end;
        }
        if (*p) return bad(r, "policy slowdown lists more factors than workers", NULL);
    }
    return SS_OK;
}

/* Parses and checks one record line (version 2) against the header's workers and steps. */
static int parse_record(const reader *r, char *text, step_record *rec) {
    char *f[14];
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(text, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (n == 13) return bad(r, "more than 13 fields in a record", NULL);
        f[n++] = tok;
    }
    if (n != 13) return bad(r, "a record has 13 fields (truncated line?)", NULL);
    long step, worker, decision, samples;
    double v[9]; /* start comm wait ... parsed below */
    if (number_parse_long(f[0], 1, r->pc.steps, &step))
        return bad(r, "step out of range (1..policy steps): ", f[0]);
    if (number_parse_long(f[1], 0, r->pc.workers - 1, &worker))
        return bad(r, "worker out of range (0..policy workers - 1): ", f[1]);
    const int dcol[9] = {2, 3, 4, 5, 6, 7, 8, 11, 12};
    for (int i = 0; i < 9; i++)
        if (number_parse_double(f[dcol[i]], &v[i]))
            return bad(r, "not a finite number: ", f[dcol[i]]);
    /* start_s compute_s comm_s wait_s flops : non-negative */
    for (int i = 0; i < 5; i++)
        if (v[i] < 0) return bad(r, "times and FLOPs must be >= 0: ", f[dcol[i]]);
    if (number_parse_long(f[9], 0, 1, &decision)) return bad(r, "decision must be 0 or 1: ", f[9]);
    if (number_parse_long(f[10], 0, 1L << 30, &samples)) return bad(r, "bad samples: ", f[10]);
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

static int record_line(reader *r, char *text) {
    if (!r->t) {
        int rc = start_records(r);
        if (rc != SS_OK) return rc;
    }
    step_record rec = {0};
    int rc = parse_record(r, text, &rec);
    if (rc != SS_OK) return rc;
    trace_cell *c =
        &r->t->cells[(size_t)(rec.step - 1) * (size_t)r->t->workers + (size_t)rec.worker];
    if (c->recorded) {
        char what[64];
        snprintf(what, sizeof what, "step %ld worker %d", rec.step, rec.worker);
        return bad(r, "duplicate record of ", what);
    }
    c->compute_s = rec.compute_s;
    c->comm_s = rec.comm_s;
    c->flops = rec.flops;
    c->grad_norm = rec.grad_norm;
    c->loss = rec.loss;
    c->samples = rec.samples;
    c->decision = (int8_t)rec.decision;
    c->recorded = 1;
    r->t->records++;
    return SS_OK;
}

/* The first line: the magic and version. *version: TRACE_VERSION, or 1 for the old format
 * (no policy header; the caller decides whether it can use it). */
static int first_line(const reader *r, const char *buf, int *version) {
    int v = 0;
    char rest = 0;
    if (sscanf(buf, "# " TRACE_MAGIC " %d%c", &v, &rest) == 1) {
        if (v != TRACE_VERSION)
            return ss_error_set(
                SS_EINPUT, "%s:1: trace format version %d, this syncsim reads version %d; %s",
                r->name, v, TRACE_VERSION,
                v > TRACE_VERSION ? "it was written by a newer syncsim: upgrade syncsim"
                                  : "re-record it with this syncsim (syncsim train)");
        *version = v;
        return SS_OK;
    }
    if (!strncmp(buf, "# syncsim steps trace, format 1", 31)) {
        *version = 1;
        return SS_OK;
    }
    return bad(r, "not a syncsim trace (expected the first line '# " TRACE_MAGIC " 2')", NULL);
}

int trace_read(FILE *fp, const char *name, trace **out) {
    *out = NULL;
    reader r;
    memset(&r, 0, sizeof r);
    r.name = name;
    r.sim_time_s = -1;
    policy_config_default(&r.pc);
    char *buf = NULL;
    size_t cap = 0;
    int rc = SS_OK, nl = 1, got;
    while ((got = read_line(fp, &buf, &cap, &nl)) != 0) {
        r.line++;
        if (got == -1) {
            rc = bad(&r, "line too long (corrupt file?)", NULL);
            break;
        }
        if (got == -2) {
            rc = bad(&r, "NUL byte in a line (binary or corrupt file)", NULL);
            break;
        }
        if (r.line == 1) {
            int version = 0;
            rc = first_line(&r, buf, &version);
            if (rc == SS_OK && version == 1)
                rc = ss_error_set(SS_EINPUT,
                                  "%s:1: trace format version 1, this syncsim reads version %d; "
                                  "version 1 lacks the policy header that replay needs: "
                                  "re-record the run with this syncsim (syncsim train --config "
                                  "OUT/config.ini)",
                                  name, TRACE_VERSION);
            if (rc != SS_OK) break;
            continue;
        }
        if (r.end_seen) {
            rc = bad(&r, "text after the end line", NULL);
            break;
        }
        char *p = buf;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0') continue;
        if (*p == '#') {
            p++;
            while (*p == ' ')
                p++;
            rc = header_line(&r, p);
        } else {
            rc = record_line(&r, p);
        }
        if (rc != SS_OK) break;
    }
    free(buf);
    if (rc == SS_OK && r.line == 0) rc = ss_error_set(SS_EINPUT, "%s: empty file", name);
    if (rc == SS_OK && ferror(fp))
        rc = ss_error_set(SS_EIO, "%s: read error after line %ld", name, r.line);
    if (rc == SS_OK && !r.end_seen)
        rc = ss_error_set(SS_EINPUT,
                          "%s:%ld: truncated: the file ends without its '# end records = K' "
                          "line%s",
                          name, r.line, nl ? "" : " (the last line is cut)");
    if (rc == SS_OK && !r.t) rc = start_records(&r);
    if (rc == SS_OK && r.end_records != r.t->records)
        rc = ss_error_set(SS_EINPUT, "%s:%ld: the end line counts %ld records, the file holds %ld",
                          name, r.line, r.end_records, r.t->records);
    free(r.slowdown_text);
    if (rc == SS_OK && r.n_layers > 0) {
        double params = 0;
        for (int i = 0; i < r.n_layers; i++)
            params += r.layers[i].param_bytes;
        if (fabs(params - r.meta.param_bytes) > 1e-9 * r.meta.param_bytes)
            rc = ss_error_set(SS_EINPUT,
                              "%s: the layer lines hold %.17g parameter bytes, meta param_bytes "
                              "says %.17g",
                              name, params, r.meta.param_bytes);
    }
    if (rc != SS_OK) {
        trace_free(r.t);
        free(r.config);
        free(r.layers);
        return rc;
    }
    trace *t = r.t;
    t->meta = r.meta;
    t->layers = r.layers;
    t->n_layers = r.n_layers;
    t->config = r.config;
    t->n_config = r.n_config;
    t->sim_time_s = r.sim_time_s;
    trace_finish(t);
    *out = t;
    return SS_OK;
}

int trace_load(const char *path, trace **out) {
    FILE *fp = fopen(path, "r");
    if (!fp) return ss_error_set(SS_EINPUT, "cannot open trace %s: %s", path, strerror(errno));
    int rc = trace_read(fp, path, out);
    fclose(fp);
    return rc;
}

/* ---- reading record by record ---- */

#define STREAM_MAX_COLUMNS 32

struct trace_stream {
    FILE *fp;
    reader r;
    char name[1024];
    char *buf;
    size_t cap;
    int version, nl;
    int pending; /* buf holds the first record line, read by open */
    int at_end;
    long records;
    int n_cols;
    char col[STREAM_MAX_COLUMNS][24];
};

/* A record's field by its column name, for reading (as a double) and for version 1 (setting). */
static double *record_double(step_record *rec, const char *column) {
    static const struct {
        const char *name;
        size_t offset;
    } doubles[] = {{"start_s", offsetof(step_record, start_s)},
                   {"compute_s", offsetof(step_record, compute_s)},
                   {"comm_s", offsetof(step_record, comm_s)},
                   {"wait_s", offsetof(step_record, wait_s)},
                   {"flops", offsetof(step_record, flops)},
                   {"grad_norm", offsetof(step_record, grad_norm)},
                   {"delta", offsetof(step_record, delta)},
                   {"bytes_sent", offsetof(step_record, bytes_sent)},
                   {"loss", offsetof(step_record, loss)}};
    for (size_t i = 0; i < sizeof doubles / sizeof doubles[0]; i++)
        if (!strcmp(column, doubles[i].name)) return (double *)((char *)rec + doubles[i].offset);
    return NULL;
}

double trace_record_value(const step_record *rec, const char *column) {
    if (!strcmp(column, "step")) return (double)rec->step;
    if (!strcmp(column, "worker")) return rec->worker;
    if (!strcmp(column, "decision")) return rec->decision;
    if (!strcmp(column, "samples")) return rec->samples;
    const double *d = record_double((step_record *)rec, column);
    return d ? *d : NAN;
}

static void record_set(step_record *rec, const char *column, double v) {
    double *d = record_double(rec, column);
    if (d) *d = v;
    if (!strcmp(column, "step")) rec->step = (long)v;
    if (!strcmp(column, "worker")) rec->worker = (int)v;
    if (!strcmp(column, "decision")) rec->decision = (int)v;
    if (!strcmp(column, "samples")) rec->samples = (int)v;
}

static int stream_set_columns(trace_stream *s, const char *names) {
    char text[1024];
    snprintf(text, sizeof text, "%s", names);
    s->n_cols = 0;
    char *save = NULL;
    for (char *tok = strtok_r(text, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
        if (s->n_cols == STREAM_MAX_COLUMNS) return bad(&s->r, "more than 32 columns", NULL);
        snprintf(s->col[s->n_cols++], sizeof s->col[0], "%s", tok);
    }
    if (!s->n_cols) return bad(&s->r, "no column names on the '# columns:' line", NULL);
    return SS_OK;
}

/* A version-1 record: one number per named column. */
static int stream_record_v1(trace_stream *s, char *text, step_record *rec) {
    if (!s->n_cols) return bad(&s->r, "a record before the '# columns:' line", NULL);
    memset(rec, 0, sizeof *rec);
    char *save = NULL, *tok = strtok_r(text, " \t", &save);
    for (int c = 0; c < s->n_cols; c++, tok = strtok_r(NULL, " \t", &save)) {
        double v;
        if (!tok) return bad(&s->r, "a record has fewer fields than columns (truncated?)", NULL);
        if (number_parse_double(tok, &v)) return bad(&s->r, "not a finite number: ", tok);
        record_set(rec, s->col[c], v);
    }
    if (tok) return bad(&s->r, "a record has more fields than columns", NULL);
    return SS_OK;
}

/* Reads lines until a record (1, in s->buf) or the end of the file (0); header and trailer
 * lines on the way are taken in. */
static int stream_advance(trace_stream *s, int *record) {
    int got;
    *record = 0;
    while ((got = read_line(s->fp, &s->buf, &s->cap, &s->nl)) != 0) {
        s->r.line++;
        if (got < 0)
            return bad(&s->r,
                       got == -1 ? "line too long (corrupt file?)"
                                 : "NUL byte in a line (binary or corrupt file)",
                       NULL);
        if (s->r.line == 1) {
            int rc = first_line(&s->r, s->buf, &s->version);
            if (rc != SS_OK) return rc;
            continue;
        }
        if (s->r.end_seen) return bad(&s->r, "text after the end line", NULL);
        char *p = s->buf;
        while (*p == ' ' || *p == '\t')
            p++;
        if (*p == '\0') continue;
        if (*p != '#') {
            *record = 1;
            return SS_OK;
        }
        for (p++; *p == ' ';)
            p++;
        if (s->version == 1) {
            if (!strncmp(p, "columns:", 8) && stream_set_columns(s, p + 8) != SS_OK)
                return SS_EINPUT;
            continue;
        }
        int rc = header_line(&s->r, p);
        if (rc != SS_OK) return rc;
    }
    if (ferror(s->fp))
        return ss_error_set(SS_EIO, "%s: read error after line %ld", s->name, s->r.line);
    return SS_OK;
}

int trace_stream_open(const char *path, trace_stream **out) {
    *out = NULL;
    FILE *fp = fopen(path, "r");
    if (!fp) return ss_error_set(SS_EINPUT, "cannot open trace %s: %s", path, strerror(errno));
    trace_stream *s = ss_calloc(1, sizeof *s);
    s->fp = fp;
    snprintf(s->name, sizeof s->name, "%s", path);
    s->r.name = s->name;
    s->r.sim_time_s = -1;
    s->nl = 1;
    policy_config_default(&s->r.pc);
    int rc = stream_advance(s, &s->pending);
    if (rc == SS_OK && s->r.line == 0) rc = ss_error_set(SS_EINPUT, "%s: empty file", path);
    if (rc == SS_OK && s->version == TRACE_VERSION) {
        rc = check_header(&s->r);
        if (rc == SS_OK) rc = stream_set_columns(s, TRACE_COLUMNS);
    }
    if (rc != SS_OK) {
        trace_stream_close(s);
        return rc;
    }
    *out = s;
    return SS_OK;
}

/* At the end of the file: a version-2 trace must end with its end line, counting its records. */
static int stream_finish(trace_stream *s) {
    s->at_end = 1;
    if (s->version != TRACE_VERSION) return SS_OK;
    if (!s->r.end_seen)
        return ss_error_set(SS_EINPUT,
                            "%s:%ld: truncated: the file ends without its '# end records = K' "
                            "line%s",
                            s->name, s->r.line, s->nl ? "" : " (the last line is cut)");
    if (s->r.end_records != s->records)
        return ss_error_set(SS_EINPUT,
                            "%s:%ld: the end line counts %ld records, the file holds %ld", s->name,
                            s->r.line, s->r.end_records, s->records);
    return SS_OK;
}

int trace_stream_next(trace_stream *s, step_record *rec, int *got) {
    *got = 0;
    if (s->at_end) return SS_OK;
    int record = s->pending, rc = SS_OK;
    s->pending = 0;
    if (!record && (rc = stream_advance(s, &record)) != SS_OK) return rc;
    if (!record) return stream_finish(s);
    char *p = s->buf;
    while (*p == ' ' || *p == '\t')
        p++;
    rc = s->version == 1 ? stream_record_v1(s, p, rec) : parse_record(&s->r, p, rec);
    if (rc != SS_OK) return rc;
    s->records++;
    *got = 1;
    return SS_OK;
}

int trace_stream_version(const trace_stream *s) {
    return s->version;
}

int trace_stream_n_columns(const trace_stream *s) {
    return s->n_cols;
}

const char *trace_stream_column(const trace_stream *s, int i) {
    return i >= 0 && i < s->n_cols ? s->col[i] : NULL;
}

void trace_stream_close(trace_stream *s) {
    if (!s) return;
    if (s->fp) fclose(s->fp);
    free(s->buf);
    free(s->r.config);
    free(s->r.slowdown_text);
    free(s);
}

/* ---- CSV import ---- */

enum csv_col {
    CSV_STEP,
    CSV_WORKER,
    CSV_COMPUTE_S,
    CSV_SYNC_S,
    CSV_DECISION,
    CSV_FLOPS,
    CSV_SAMPLES,
    CSV_GRAD_NORM,
    CSV_LOSS,
    CSV_COLS
};
static const char *csv_names[CSV_COLS] = {"step",  "worker",  "compute_s", "sync_s", "decision",
                                          "flops", "samples", "grad_norm", "loss"};
#define CSV_REQUIRED    5  /* the first five */
#define CSV_MAX_COLUMNS 64 /* of a log */

typedef struct csv_row {
    long step;
    int worker;
    double v[CSV_COLS];
} csv_row;

/* One import: the reader, the header's column of each known name, the rows read so far. */
typedef struct csv_import {
    csv_reader r;
    const char *name;
    int col[CSV_COLS]; /* -1: absent */
    int n_fields;      /* of the header; 0 until it is read */
    csv_row *rows;
    size_t n_rows, cap_rows;
    long max_step;
    int max_worker;
} csv_import;

/* Fields are compared and parsed without the spaces and tabs around them. */
static void trim_fields(csv_reader *r) {
    for (int i = 0; i < r->n_fields; i++) {
        char *f = r->field[i];
        while (*f == ' ' || *f == '\t')
            f++;
        size_t l = strlen(f);
        while (l > 0 && (f[l - 1] == ' ' || f[l - 1] == '\t'))
            f[--l] = '\0';
        r->field[i] = f;
    }
}

/* The header: maps each known column to its field; other columns are ignored. */
static int import_header(csv_import *im) {
    const csv_reader *r = &im->r;
    im->n_fields = r->n_fields;
    for (int i = 0; i < r->n_fields; i++)
        for (int c = 0; c < CSV_COLS; c++)
            if (!strcmp(r->field[i], csv_names[c])) {
                if (csv_find(r, csv_names[c]) < i)
                    return ss_error_set(SS_EINPUT, "%s:%ld: column '%s' appears twice", im->name,
                                        r->line, r->field[i]);
                im->col[c] = i;
            }
    for (int c = 0; c < CSV_REQUIRED; c++)
        if (im->col[c] < 0)
            return ss_error_set(SS_EINPUT,
                                "%s:%ld: the header lacks the column '%s' (required: step, "
                                "worker, compute_s, sync_s, decision)",
                                im->name, r->line, csv_names[c]);
    return SS_OK;
}

/* One value of a row other than step and worker, into *v. */
static int import_value(const csv_import *im, int c, const char *s, double *v) {
    if (c == CSV_DECISION) {
        if (!strcmp(s, "sync") || !strcmp(s, "1"))
            *v = 1;
        else if (!strcmp(s, "local") || !strcmp(s, "0"))
            *v = 0;
        else
            return ss_error_set(SS_EINPUT,
                                "%s:%ld: decision must be sync, local, 1 or 0, not '%.32s'",
                                im->name, im->r.line, s);
        return SS_OK;
    }
    if (number_parse_double(s, v) || *v < 0 ||
        (c == CSV_SAMPLES && (*v > (double)(1 << 30) || *v != floor(*v))))
        return ss_error_set(SS_EINPUT,
                            "%s:%ld: %s must be a finite number >= 0 (samples: an integer up to "
                            "2^30), not '%.32s'",
                            im->name, im->r.line, csv_names[c], s);
    return SS_OK;
}

/* One row of the log into a record appended to im->rows. */
static int import_row(csv_import *im) {
    const csv_reader *r = &im->r;
    char *const *f = r->field;
    if (r->n_fields != im->n_fields)
        return ss_error_set(SS_EINPUT, "%s:%ld: %d fields, the header has %d", im->name, r->line,
                            r->n_fields, im->n_fields);
    csv_row row;
    memset(&row, 0, sizeof row);
    row.v[CSV_SAMPLES] = -1; /* absent: the batch */
    long l;
    if (number_parse_long(f[im->col[CSV_STEP]], 1, 1000000000L, &row.step))
        return ss_error_set(SS_EINPUT, "%s:%ld: step must be an integer >= 1, not '%.32s'",
                            im->name, r->line, f[im->col[CSV_STEP]]);
    if (number_parse_long(f[im->col[CSV_WORKER]], 0, TRACE_MAX_WORKERS - 1, &l))
        return ss_error_set(SS_EINPUT, "%s:%ld: worker must be an integer in [0, %d), not '%.32s'",
                            im->name, r->line, TRACE_MAX_WORKERS, f[im->col[CSV_WORKER]]);
    row.worker = (int)l;
    for (int c = CSV_COMPUTE_S; c < CSV_COLS; c++) {
        int rc = im->col[c] < 0 ? SS_OK : import_value(im, c, f[im->col[c]], &row.v[c]);
        if (rc != SS_OK) return rc;
    }
    if (im->n_rows == im->cap_rows) {
        im->cap_rows = im->cap_rows ? 2 * im->cap_rows : 1024;
        im->rows = realloc(im->rows, im->cap_rows * sizeof *im->rows);
        SS_ASSERT(im->rows);
    }
    im->rows[im->n_rows++] = row;
    if (row.step > im->max_step) im->max_step = row.step;
    if (row.worker > im->max_worker) im->max_worker = row.worker;
    return SS_OK;
}

/* Reads the header and every row; blank lines and '#' lines are skipped. */
static int import_read(csv_import *im) {
    int got, rc;
    while ((rc = csv_next(&im->r, &got)) == SS_OK && got) {
        if (im->r.n_fields > CSV_MAX_COLUMNS)
            return ss_error_set(SS_EINPUT, "%s:%ld: more than %d columns", im->name, im->r.line,
                                CSV_MAX_COLUMNS);
        trim_fields(&im->r);
        rc = im->n_fields ? import_row(im) : import_header(im);
        if (rc != SS_OK) return rc;
    }
    if (rc != SS_OK) return rc;
    if (im->n_fields == 0 || im->n_rows == 0)
        return ss_error_set(SS_EINPUT,
                            "%s: no %s (expected a header line and one row per worker step)",
                            im->name, im->n_fields ? "rows" : "header");
    return SS_OK;
}

/* The rows into a trace of max_worker + 1 workers, cut after the last step all of them logged. */
static int import_build(const csv_import *im, const policy_config *pc, double param_bytes,
                        trace **out) {
    policy_config ipc = *pc;
    ipc.workers = im->max_worker + 1;
    ipc.steps = im->max_step;
    ipc.compute = (sim_compute_cfg){.mode = SIM_COMPUTE_TRACE, .scale = 1.0};
    trace *t;
    int rc = trace_alloc(&ipc, ipc.workers, ipc.steps, &t);
    if (rc != SS_OK) return rc;
    for (size_t i = 0; i < im->n_rows; i++) {
        const csv_row *row = &im->rows[i];
        trace_cell *c =
            &t->cells[(size_t)(row->step - 1) * (size_t)t->workers + (size_t)row->worker];
        if (c->recorded) {
            trace_free(t);
            return ss_error_set(SS_EINPUT, "%s: two rows for step %ld worker %d", im->name,
                                row->step, row->worker);
        }
        c->compute_s = row->v[CSV_COMPUTE_S];
        c->comm_s = row->v[CSV_SYNC_S];
        c->decision = (int8_t)row->v[CSV_DECISION];
        c->recorded = 1;
        c->flops = row->v[CSV_FLOPS];
        c->samples = row->v[CSV_SAMPLES] >= 0 ? (int)row->v[CSV_SAMPLES] : pc->batch;
        c->grad_norm = row->v[CSV_GRAD_NORM];
        c->loss = row->v[CSV_LOSS];
    }
    snprintf(t->meta.source, sizeof t->meta.source, "import");
    t->meta.param_bytes = param_bytes;
    t->meta.param_count = param_bytes / 4;
    trace_finish(t);
    if (t->steps_done < 1) {
        trace_free(t);
        return ss_error_set(SS_EINPUT, "%s: step 1 lacks a row for some worker (workers 0..%d)",
                            im->name, im->max_worker);
    }
    t->pc.steps = t->steps_done;
    *out = t;
    return SS_OK;
}

int trace_import_csv_stream(FILE *fp, const char *name, const policy_config *pc, double param_bytes,
                            trace **out) {
    *out = NULL;
    csv_import im;
    memset(&im, 0, sizeof im);
    csv_open_stream(&im.r, fp, name);
    im.r.skip_comments = 1;
    im.r.max_line = TRACE_MAX_LINE;
    im.name = name;
    im.max_worker = -1;
    for (int c = 0; c < CSV_COLS; c++)
        im.col[c] = -1;
    int rc = import_read(&im);
    if (rc == SS_OK && !(param_bytes > 0))
        rc = ss_error_set(SS_EUSAGE,
                          "%s: importing a log needs the size of an exchange: give "
                          "--param-bytes B or --profile NAME",
                          name);
    if (rc == SS_OK) rc = import_build(&im, pc, param_bytes, out);
    csv_close(&im.r);
    free(im.rows);
    return rc;
}

int trace_import_csv(const char *path, const policy_config *pc, double param_bytes, trace **out) {
    FILE *fp = fopen(path, "r");
    if (!fp) return ss_error_set(SS_EINPUT, "cannot open log %s: %s", path, strerror(errno));
    int rc = trace_import_csv_stream(fp, path, pc, param_bytes, out);
    fclose(fp);
    return rc;
}
