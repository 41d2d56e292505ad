/* Internal to traces/trace*.c: the format's limits, and the line parser that the whole-file reader
 * (trace_read.c) and the record-by-record one (trace_stream.c) share (trace_parse.c). Nothing
 * outside traces/trace*.c includes it. */
#ifndef SS_TRACES_TRACE_INTERNAL_H
#define SS_TRACES_TRACE_INTERNAL_H

#include "sim/policy/policy_codec.h"
#include "traces/trace.h"

#include <stdio.h>

#define TRACE_COLUMNS                                                                              \
    "step worker start_s compute_s comm_s wait_s flops grad_norm delta decision samples "          \
    "bytes_sent loss"
#define TRACE_MAX_LINE    65536 /* bytes of one line */
#define TRACE_MAX_WORKERS (1 << 20)
/* what --trace takes, for the message refusing another kind of file */
#define TRACE_VALID_FILE                                                                           \
    "a trace is a steps.trace file written by syncsim train or replay --record (traces/FORMAT.md)"

/* sim_layer_kind's names in "# layer" lines, indexed by the kind */
extern const char *const trace_layer_kind_names[SIM_LAYER_KIND_COUNT];

/* What has been read of a trace's header and trailer so far. */
typedef struct trace_parser {
    const char *name;
    long line;
    trace *t; /* trace_read only: the cells, allocated at the first record */
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
} trace_parser;

/* Reads one line into *buf (without the newline). 1 line read, 0 end of file, -1 too long, -2 a
 * NUL byte inside. */
int trace_parse_line(FILE *fp, char **buf, size_t *cap, int *had_newline);
/* SS_EINPUT "NAME:LINE: fmt detail". */
int trace_parse_error(const trace_parser *r, const char *fmt, const char *detail);
/* The first line: the magic and version. *version: TRACE_VERSION, or 1 for the old format
 * (no policy header; the caller decides whether it can use it). */
int trace_parse_first_line(const trace_parser *r, const char *buf, int *version);
/* A '#' line (text after the '#' and its spaces): meta, policy, config, layer, columns, result,
 * end; other comments are ignored. */
int trace_parse_header_line(trace_parser *r, char *text);
/* The header is complete: every policy line, the columns, sizes that make sense. */
int trace_parse_check_header(trace_parser *r);
/* A record's number: a finite decimal (0), or, where non_finite is set (the columns a diverged
 * step leaves without a value: grad_norm, delta and loss), also printf's "nan", "-nan", "inf" or
 * "-inf", as the writer's %.17g writes them; -1 otherwise. */
int trace_parse_value(const char *text, int non_finite, double *out);
/* 1 for the columns that may hold "nan" or "inf" (grad_norm, delta, loss) */
int trace_column_may_be_non_finite(const char *column);
/* Parses and checks one record line (version 2) against the header's workers and steps. */
int trace_parse_record(const trace_parser *r, char *text, step_record *rec);

#endif
