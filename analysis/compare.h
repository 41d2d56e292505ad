/* `syncsim compare`'s results, read back from its run directories: one row per (network,
 * policy), TTA and speedup against the reference run of the same network (analysis/tta.h), the
 * table, compare.csv and the figure (analysis/gnuplot/compare.gp).
 *
 *     compare_row rows[n] = {...policy, network, label, dir, panel, reference...};
 *     for each ended run: compare_row_read(&rows[i]);
 *     compare_rows_tta(rows, n, TTA_DEFAULT_MARGIN);
 *     compare_rows_print(stdout, rows, n);
 *     compare_rows_write_csv("out/compare.csv", rows, n, workers);
 *     compare_rows_plot("out", rows, n, n_networks, workers, stdout);
 */
#ifndef SS_ANALYSIS_COMPARE_H
#define SS_ANALYSIS_COMPARE_H

#include <stdio.h>

typedef struct compare_row {
    char policy[16];    /* as listed: "bsp", "selsync-dlcp" */
    char network[256];  /* bandwidth, or a platform file */
    char label[64];     /* network as shown: "5Gbps", or the file's base name */
    char partition[32]; /* "iid" (each policy's default) or a --partition value */
    char dir[352];      /* the run's directory */
    int panel;          /* its (network, partition)'s index (one figure panel each) */
    int reference;      /* 1: TTA target and speedup of its panel are measured against it */
    int started;        /* its process ran */
    int exit_code;
    /* read back */
    int ok; /* summary.json read (status ok, diverged or interrupted) */
    char status[16];
    double accuracy, sim_time_s, lssr, bytes_sent;
    double dropped;         /* DLCP: fraction of the exchanged data dropped */
    double worker_accuracy; /* mean of the workers' own final accuracies (NaN: not recorded) */
    double delta_q[4];      /* SelSync: Delta's p50, p90, p99 and max after the warm-up (NaN) */
    double perplexity;      /* language models: exp(test loss) (NaN for other models) */
    double tta_s, speedup;  /* NaN: undefined */
    int tta;                /* its tta_status (analysis/tta.h): why tta_s is undefined */
} compare_row;

/* Reads the run's summary back (ok = 0 when it has none, or failed). */
void compare_row_read(compare_row *r);
/* Per network: the target is the final accuracy of its reference row (ok) less margin; every
 * row of the network gets its TTA and speedup through tta_measure (analysis/tta.h), the
 * definition `report` uses too. */
void compare_rows_tta(compare_row *rows, int n, double margin);
/* The table: one line per row (not run, failed, or its numbers). */
void compare_rows_print(FILE *fp, const compare_row *rows, int n);
/* compare.csv: one line per row; empty cells where undefined. */
int compare_rows_write_csv(const char *path, const compare_row *rows, int n, int workers);
/* OUT/compare.png (and .svg, compare.gp, compare-curves.csv): accuracy against simulated time of
 * the ok rows, one panel per network; the terminal version to `terminal` (may be NULL). */
int compare_rows_plot(const char *out_dir, const compare_row *rows, int n, int n_panels,
                      int workers, FILE *terminal);

#endif
