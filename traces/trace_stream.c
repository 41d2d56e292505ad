/* Reading a trace record by record (trace.h "reading record by record"), version 2 checked as
 * trace_read checks it, version 1 read by its column names. */
#include "traces/trace_internal.h"
#include "traces/input_file.h"
#include "common/number.h"
#include "common/status.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_MAX_COLUMNS 32

struct trace_stream {
    FILE *fp;
    trace_parser r;
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
        if (s->n_cols == STREAM_MAX_COLUMNS)
            return trace_parse_error(&s->r, "more than 32 columns", NULL);
        snprintf(s->col[s->n_cols++], sizeof s->col[0], "%s", tok);
    }
    if (!s->n_cols)
        return trace_parse_error(&s->r, "no column names on the '# columns:' line", NULL);
    return SS_OK;
}

/* A version-1 record: one number per named column. */
static int stream_record_v1(trace_stream *s, char *text, step_record *rec) {
    if (!s->n_cols) return trace_parse_error(&s->r, "a record before the '# columns:' line", NULL);
    memset(rec, 0, sizeof *rec);
    char *save = NULL, *tok = strtok_r(text, " \t", &save);
    for (int c = 0; c < s->n_cols; c++, tok = strtok_r(NULL, " \t", &save)) {
        double v;
        if (!tok)
            return trace_parse_error(&s->r, "a record has fewer fields than columns (truncated?)",
                                     NULL);
        if (trace_parse_value(tok, trace_column_may_be_non_finite(s->col[c]), &v))
            return trace_parse_error(&s->r, "not a finite number: ", tok);
        record_set(rec, s->col[c], v);
    }
    if (tok) return trace_parse_error(&s->r, "a record has more fields than columns", NULL);
    return SS_OK;
}

/* Reads lines until a record (1, in s->buf) or the end of the file (0); header and trailer
 * lines on the way are taken in. */
static int stream_advance(trace_stream *s, int *record) {
    int got;
    *record = 0;
    while ((got = trace_parse_line(s->fp, &s->buf, &s->cap, &s->nl)) != 0) {
        s->r.line++;
        if (got < 0)
            return trace_parse_error(&s->r,
                                     got == -1 ? "line too long (corrupt file?)"
                                               : "NUL byte in a line (binary or corrupt file)",
                                     NULL);
        if (s->r.line == 1) {
            int rc = trace_parse_first_line(&s->r, s->buf, &s->version);
            if (rc != SS_OK) return rc;
            continue;
        }
        if (s->r.end_seen) return trace_parse_error(&s->r, "text after the end line", NULL);
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
        int rc = trace_parse_header_line(&s->r, p);
        if (rc != SS_OK) return rc;
    }
    if (ferror(s->fp))
        return ss_error_set(SS_EIO, "%s: read error after line %ld", s->name, s->r.line);
    return SS_OK;
}

int trace_stream_open(const char *path, trace_stream **out) {
    *out = NULL;
    FILE *fp;
    int rc = traces_input_open(path, "trace", TRACE_VALID_FILE, 0, &fp);
    if (rc != SS_OK) return rc;
    trace_stream *s = ss_calloc(1, sizeof *s);
    s->fp = fp;
    snprintf(s->name, sizeof s->name, "%s", path);
    s->r.name = s->name;
    s->r.sim_time_s = -1;
    s->nl = 1;
    policy_config_default(&s->r.pc);
    rc = stream_advance(s, &s->pending);
    if (rc == SS_OK && s->r.line == 0) rc = ss_error_set(SS_EINPUT, "%s: empty file", path);
    if (rc == SS_OK && s->version == TRACE_VERSION) {
        rc = trace_parse_check_header(&s->r);
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
    rc = s->version == 1 ? stream_record_v1(s, p, rec) : trace_parse_record(&s->r, p, rec);
    if (rc != SS_OK) return rc;
    s->records++;
    *got = 1;
    return SS_OK;
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
    free(s->r.layers); /* the header's layer lines: a stream keeps no trace to hand them to */
    free(s);
}
