/* The report over runs: groups runs that differ only by seed, and computes per group, with GSL,
 * the mean and 95 % confidence interval of final accuracy, time to accuracy (TTA), speedup over
 * BSP, LSSR and bytes. The TTA target of a run is the final accuracy of the BSP run with the same
 * configuration (platform, workers, model, data, seed...) less a margin; speedup = TTA(BSP) /
 * TTA(run). A language model's TTA is on perplexity (BSP's final perplexity x (1 + margin),
 * reached at or below it: tta.h), and its groups' perplexity is tabled and plotted. Diverged runs
 * are counted as such, never dropped. Outputs in OUT/: report.md, report.csv, runs.csv, and figures
 * (PNG, SVG; a terminal version of the main ones).
 *
 *     report_options o = {.out_dir = "rep", .target_margin = 0.005, .terminal = stdout};
 *     report_write(runs, n, &o);
 */
#ifndef SS_ANALYSIS_REPORT_H
#define SS_ANALYSIS_REPORT_H

#include "analysis/runs.h"
#include "analysis/stats.h"
#include "analysis/tta.h"

#include <stdio.h>

typedef struct report_options {
    const char *out_dir;
    double target_margin; /* TTA target = BSP's final accuracy - this (0.005: 0.5 points); a
                           * language model's: BSP's final perplexity x (1 + this) */
    /* 1 if config key `key` applies to runs of `policy` (NULL: every key applies). Keys that do
     * not apply (delta for bsp) neither split groups nor name them. */
    int (*key_applies)(const char *key, const char *policy);
    FILE *terminal;      /* terminal plots of the main figures here (NULL: none) */
    int max_run_figures; /* per-run figures (Delta, timeline, KDE): at most this many of each */
} report_options;

/* One group of runs (the same configuration over seeds) and its statistics. */
typedef struct report_group {
    char label[512]; /* "policy=selsync delta=0.05 bandwidth=5Gbps": the keys that vary */
    char policy[16];
    int runs, ok, diverged, failed; /* failed: interrupted or without summary.json */
    int tta_reached;                /* ok runs whose TTA target was reached */
    int tta_measured; /* ok runs with an accuracy and a BSP reference (reached or never) */
    int no_accuracy;  /* ok runs without a test accuracy (replays): TTA n/a */
    int no_reference; /* ok runs with an accuracy but no BSP run of their configuration */
    stats_summary accuracy, tta_s, speedup, lssr, bytes_sent, sim_time_s;
    stats_summary perplexity; /* language models' final test perplexity (none for others) */
    stats_summary compute_s, comm_s, wait_s;
    stats_summary compute_step_s, comm_step_s, wait_step_s; /* per step of a worker */
    int first; /* index of its run with the lowest seed */
} report_group;

/* Groups runs and computes the statistics: *groups (malloc'ed) and *n_groups; per run, its group
 * and its TTA against its BSP reference (tta.h) in the arrays given (n entries each, may be
 * NULL). */
int report_analyze(const run_record *runs, int n, const report_options *o, report_group **groups,
                   int *n_groups, int *run_group, tta_result *run_tta);
/* report_analyze, then the tables and figures in o->out_dir. */
int report_write(const run_record *runs, int n, const report_options *o);
/* `syncsim report`: the runs found in dirs[0..n_dirs-1] (runs, sweeps, compares), read and
 * reported into o->out_dir (NULL: FIRST_DIR/report); prints a line, then report.md and the list
 * of outputs on o->terminal. */
int report_dirs(char *const *dirs, int n_dirs, const report_options *o);

#endif
