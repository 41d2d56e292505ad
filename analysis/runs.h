/* Runs read back from their output directories (config.ini, summary.json, metrics.csv,
 * steps.trace), for sweeps and reports. A directory holds one run if it has a config.ini or a
 * summary.json; a sweep's or compare's output holds its runs under points/ or runs/.
 *
 *     run_record r; if (run_record_read("out/points/policy=bsp,seed=1", &r) == SS_OK) ...
 */
#ifndef SS_ANALYSIS_RUNS_H
#define SS_ANALYSIS_RUNS_H

#include <stddef.h>
#include <stdio.h>

#define RUN_RECORD_MAX_KEYS 128
#define RUN_RECORD_TEXT     256

typedef struct run_record {
    char dir[1024];
    char status[16]; /* ok | diverged | interrupted (summary.json) | failed (none) */
    char policy[16]; /* the policy that ran (the baseline for several workers without --policy) */
    char platform[RUN_RECORD_TEXT];
    int workers;
    int batch;
    double seed;
    double test_accuracy;   /* final, consensus model */
    double test_perplexity; /* language models: final exp(test loss) (NaN for other models) */
    double sim_time_s;
    double lssr;
    double bytes_sent;
    double steps, sync_steps;
    double compute_s, comm_s, wait_s; /* per worker, mean (s) */
    double epochs;
    double dropped_fraction; /* DLCP: fraction of the exchanged data dropped (0 without DLCP) */
    int n_keys;              /* config.ini, in its order */
    char key[RUN_RECORD_MAX_KEYS][40];
    char value[RUN_RECORD_MAX_KEYS][RUN_RECORD_TEXT];
} run_record;

/* Reads DIR; SS_EINPUT when it holds neither config.ini nor summary.json. */
int run_record_read(const char *dir, run_record *r);
/* 1 if summary.json is there, reads (common/summary.h), and its status is final (ok or
 * diverged). */
int run_record_complete(const char *dir);
/* The config.ini value of `key`, or NULL. */
const char *run_record_get(const run_record *r, const char *key);
/* 1 for a config key that says how a run was launched or recorded, not what it computes (seed,
 * out, progress, trace, config, data-dir, dump-gradients): it neither splits a report's groups
 * nor keeps a run from its BSP reference. */
int run_key_is_launch(const char *key);

/* The setting the runs share, for a figure's title: model (a replay's profile), data set,
 * partition (its policy's default where none was given), workers, GPU, batch per worker and
 * network (bandwidth, or the platform file's base name), each where every run has the same
 * ("mlp, fashion-mnist, partition defdp, 8 workers, v100, batch 64, 5Gbps"); a partition that
 * differs by policy shows its values ("defdp/seldp"). with_network 0 leaves the network out. */
void run_setting_text(const run_record *runs, int n, int with_network, char *buf, size_t size);

/* Names in natural order: digits compare as the numbers they spell, so "1Gbps" < "10Gbps" <
 * "100Gbps", "4" < "16" < "64", "0.05" < "0.3"; the rest byte by byte. strcmp's sign. */
int run_name_compare(const char *a, const char *b);
/* The run directories under DIR: DIR itself, or DIR/points/<*> and DIR/runs/<*> (in the natural
 * order of their names, run_name_compare).
 * Appends to *dirs (a malloc'ed array of malloc'ed strings) and *n. */
int run_dirs_find(const char *dir, char ***dirs, int *n);
void run_dirs_free(char **dirs, int n);

/* The accuracy curve of metrics.csv (common/csv.h; columns found by name in its header): n points
 * of (sim_time_s, test_accuracy), malloc'ed (NaN for an empty cell). SS_EINPUT if missing or
 * malformed ("FILE:LINE: ..."). */
int run_curve_read(const char *dir, double **time_s, double **accuracy, size_t *n);
/* run_curve_read of another column of metrics.csv ("test_perplexity"): (sim_time_s, column). */
int run_curve_read_column(const char *dir, const char *column, double **time_s, double **value,
                          size_t *n);
/* 1 if the run is a language model's: its summary records a test perplexity. Its TTA, report and
 * figures then use the perplexity curve (lower is better) in place of accuracy. */
int run_record_is_language(const run_record *r);
/* The run's metrics.csv and steps.trace, where there are, read whole: SS_EINPUT naming the file
 * and line of a malformed cell or a truncated trace (a report shows no blank for it). */
int run_record_check_files(const char *dir);
/* First simulated time at which the curve reaches target (accuracy >= target); -1 if never. */
double run_curve_tta_s(const double *time_s, const double *accuracy, size_t n, double target);
/* First simulated time at which a lower-is-better curve (perplexity) is at or below target; -1
 * if never (NaN points never reach it). */
double run_curve_tta_below_s(const double *time_s, const double *value, size_t n, double target);

/* steps.trace read through traces/trace.h (trace_stream: version and truncation checked; the
 * version-1 traces of older run directories too): the columns of the file, in its order, into a
 * table of doubles. */
typedef struct trace_table {
    int n_cols;
    char col[32][24];
    size_t n_rows;
    double *cells; /* (n_rows, n_cols) */
} trace_table;
/* Reads at most max_rows records (0: all; the end of the file is then checked). SS_EINPUT
 * "PATH:LINE: ..." if missing, malformed or truncated. */
int trace_table_read(const char *path, size_t max_rows, trace_table *t);
/* Index of a column, or -1. */
int trace_table_column(const trace_table *t, const char *name);
void trace_table_free(trace_table *t);

#endif
