/* Step traces: the versioned text format of OUT/steps.trace (traces/FORMAT.md), its writer, its
 * reader, and the two other ways to get a trace: synthesized from a model profile
 * (traces/profile.h) or imported from a CSV of real per-step logs.
 *
 *     trace_writer tw; trace_writer_begin(&tw, fp, &meta, &pc, config_ini);   // emulation
 *     ... trace_writer_record(&tw, &rec) for every step_record ...
 *     trace_writer_end(&tw, sim_time_s);
 *
 *     trace *t; if (trace_load("out/steps.trace", &t) != SS_OK) ... ss_error_message() names
 *     the file and line; trace_cell_at(t, step, worker) ...; trace_free(t);
 *
 * A loaded trace holds what replay needs of each (step, worker) record, indexed by step and
 * worker whatever the order of the lines (records appear in completion order).
 */
#ifndef SS_TRACES_TRACE_H
#define SS_TRACES_TRACE_H

#include "sim/policy/policy.h"

#include <stdint.h>
#include <stdio.h>

#define TRACE_MAGIC   "syncsim-trace" /* first line: "# syncsim-trace 2" */
#define TRACE_VERSION 2
/* A trace holds at most this many (step, worker) cells in memory (48 bytes each, 800 MB; the
 * memory of cells without a record is never touched). Scale-out replays need only the recorded
 * workers' cells. */
#define TRACE_MAX_CELLS (1L << 24)
/* "# layer" lines a trace may hold */
#define TRACE_MAX_LAYERS 100000

/* What the trace says about the run as a whole ("# meta key = value" lines). */
typedef struct trace_meta {
    char source[16];     /* emulation | real | profile | import | replay */
    char model[64];      /* model name (emulation: --model; profile: its name) */
    double param_count;  /* P: parameters of the model */
    double param_bytes;  /* bytes of every exchange (4 P) */
    double sample_bytes; /* bytes of one training sample on the wire (data injection) */
    double state_bytes;  /* bytes that travel with every exchange besides (batch norm's running
                            statistics under --bn-stats average; 0: none, no meta line) */
    /* writer only: one step's layers at the policy's batch, "# layer" lines (NULL: none); a
     * loaded trace has them in trace.layers */
    const sim_layer_cost *layers;
    int n_layers;
} trace_meta;

/* What replay needs of one worker step. */
typedef struct trace_cell {
    double flops;     /* FLOPs of the step (flops mode re-executes them) */
    double compute_s; /* simulated compute seconds charged (measured/trace mode replays them) */
    double comm_s;    /* communication seconds recorded (import: the real sync_s) */
    double grad_norm; /* ||g|| */
    double loss;      /* training loss of the mini-batch */
    int samples;      /* samples computed */
    int8_t decision;  /* 1 sync, 0 local */
    uint8_t recorded; /* 1: the trace has this record (cells start zeroed: none) */
} trace_cell;

/* One "# config key = value" line: the train configuration the run had (config.ini). */
typedef struct trace_kv {
    char key[64];
    char value[256];
} trace_kv;

typedef struct trace {
    int version; /* TRACE_VERSION */
    trace_meta meta;
    policy_config pc; /* the run's policy: pc.workers = N, pc.steps = S */
    trace_kv *config; /* (n_config) */
    int n_config;
    int workers;       /* recorded workers (columns of cells): N, or 1 for a synthesized trace */
    long steps;        /* rows of cells (S) */
    trace_cell *cells; /* (steps, workers) row-major; recorded 0 where no record */
    int8_t *decisions; /* (steps) global decision of each step: 1 if it synchronized, 0 if local,
                          -1 if no record */
    long records;      /* records read */
    long steps_done;   /* steps 1..steps_done have a record of every worker */
    double sim_time_s; /* "# result sim_time_s": simulated time of the recorded run (< 0: none) */
    double *slowdown;  /* (pc.workers) fixed per-worker compute slowdown recorded (NULL: none);
                          pc.slowdown is NULL in a loaded trace */
    sim_layer_cost *layers; /* (n_layers) one step's layers (a profile's, or "# layer" lines;
                               NULL: none recorded) */
    int n_layers;
} trace;

/* ---- writer ---- */

typedef struct trace_writer {
    FILE *fp;
    long records;
} trace_writer;

/* Writes the header: magic and version, meta, the policy, the config lines (config_ini: the text
 * of config.ini, may be NULL), the column names. */
void trace_writer_begin(trace_writer *w, FILE *fp, const trace_meta *meta, const policy_config *pc,
                        const char *config_ini);
/* One record line; every number is written so that it reads back bit for bit. */
void trace_writer_record(trace_writer *w, const step_record *r);
/* The trailer: "# result sim_time_s = T" (when sim_time_s >= 0) and "# end records = K". A trace
 * without its end line is truncated. */
void trace_writer_end(trace_writer *w, double sim_time_s);

/* ---- reader ---- */

/* Reads a trace from a file. SS_EINPUT with "PATH:LINE: problem" for a malformed, truncated or
 * corrupt file; a version mismatch says which version was found and what to do. */
int trace_load(const char *path, trace **out);
/* The same from an open stream; `name` appears in messages. */
int trace_read(FILE *fp, const char *name, trace **out);
void trace_free(trace *t);

/* ---- reading record by record ----
 *
 * For analyses that go through every record (the report's Delta(g) and timeline figures) without
 * holding the cells:
 *
 *     trace_stream *s; if (trace_stream_open("out/steps.trace", &s) != SS_OK) ...;
 *     step_record rec; int got, rc;
 *     while ((rc = trace_stream_next(s, &rec, &got)) == SS_OK && got) ... rec.delta ...;
 *     trace_stream_close(s);
 *
 * A version-2 file is checked as trace_read checks it (header, ranges, and at the end the end
 * line and its record count; duplicates are not looked for). Version 1 (run directories of
 * older syncsim: no policy header, columns named by its '# columns:' line in any order, no end
 * line) is read too: its records have the fields its columns name, the others 0. */
typedef struct trace_stream trace_stream;

/* Opens a trace and reads its header. SS_EINPUT "PATH:LINE: ..." as trace_load. */
int trace_stream_open(const char *path, trace_stream **out);
/* The next record: *got = 1, or 0 after the last (the file then checked complete). */
int trace_stream_next(trace_stream *s, step_record *rec, int *got);
/* The columns of the file, in its order (version 2: the 13 of the format). */
int trace_stream_n_columns(const trace_stream *s);
const char *trace_stream_column(const trace_stream *s, int i);
void trace_stream_close(trace_stream *s);
/* The field of a record named as its trace column ("delta", "start_s"); NaN for another name. */
double trace_record_value(const step_record *rec, const char *column);

/* The cell of (step 1..steps, worker 0..workers-1). */
static inline const trace_cell *trace_cell_at(const trace *t, long step, int worker) {
    return &t->cells[(size_t)(step - 1) * (size_t)t->workers + (size_t)worker];
}
/* The value of a "# config" key (the last line of that key), or NULL. */
const char *trace_config_get(const trace *t, const char *key);
/* Fraction of the recorded steps that synchronized (0 with no record). */
double trace_sync_fraction(const trace *t);

/* An empty trace of `workers` x `steps` cells (every cell without record) for `pc`, to be filled
 * by a synthesizer or an importer. SS_EUSAGE if it is too large. */
int trace_alloc(const policy_config *pc, int workers, long steps, trace **out);
/* Recomputes decisions, records and steps_done from the cells. */
void trace_finish(trace *t);

/* ---- real logs ---- */

/* Imports a CSV of per-step logs of a real cluster (FORMAT.md "Real logs"): a header line naming
 * at least the columns step, worker, compute_s, sync_s, decision (any order; optional flops,
 * samples, grad_norm, loss), then one row per worker step. `pc` gives the policy to replay under
 * (workers and steps come from the file); the compute mode becomes "trace" (the logged seconds).
 * SS_EINPUT naming the file and line on bad input. */
int trace_import_csv(const char *path, const policy_config *pc, double param_bytes, trace **out);
int trace_import_csv_stream(FILE *fp, const char *name, const policy_config *pc, double param_bytes,
                            trace **out);

#endif
