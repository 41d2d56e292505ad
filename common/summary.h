/* OUT/summary.json of every run mode (emulation, single worker, replay): one record, one writer,
 * one reader, the same keys in every mode. A value a mode lacks is written as null: a NaN number,
 * a negative count, an empty string, a histogram of no bins. The first key is "schema" (
 * SUMMARY_SCHEMA); files written before it had none and named the single worker's wall time
 * "wall_time_s", which the reader still accepts. Keys added since (worker_test_accuracy_mean, the
 * delta_* keys, lssr_after_calibration, delta_choices) read as null from files that lack them: the
 * schema number is unchanged because every reader accepts both.
 *
 *     run_summary s; run_summary_init(&s);
 *     snprintf(s.mode, sizeof s.mode, "replay"); s.sim_time_s = ...;
 *     summary_write(cfg, &s);                       // OUT/summary.json, atomically
 *     run_summary back; summary_read("OUT/summary.json", &back);
 */
#ifndef SS_COMMON_SUMMARY_H
#define SS_COMMON_SUMMARY_H

#include "common/run_config.h"

#include <stdint.h>

#define SUMMARY_SCHEMA    1
#define SUMMARY_HIST_BINS 64 /* staleness histograms: the last bin collects everything above */

typedef struct run_summary {
    char status[16]; /* ok | diverged | interrupted */
    char mode[16];   /* emulation | single | replay */
    char policy[16];
    int workers;
    char platform[1024];              /* as the user named it, or how it was generated */
    double test_accuracy;             /* final, consensus model */
    double test_loss;                 /* -1: not finite (diverged) */
    double test_perplexity;           /* language models: exp(test_loss); null otherwise */
    double worker_test_accuracy_mean; /* emulation: mean of the workers' own final accuracies */
    double sim_time_s;                /* simulated time of the whole run */
    double tta_s; /* first simulated time at the target accuracy; < 0: never / no target */
    double target_accuracy;
    double target_perplexity;
    double lssr;
    /* SelSync: Delta over the steps after the warm-up (all workers), and with --delta auto:R the
     * target R, the delta chosen (the last one with --delta-every), the smallest and largest
     * chosen, how many times it was chosen, and the LSSR of the steps after the calibration */
    double delta_p50, delta_p90, delta_p99, delta_max;
    double delta_target_lssr, delta_chosen, lssr_after_calibration;
    double delta_chosen_min, delta_chosen_max;
    long delta_choices;
    long steps;
    long sync_steps;
    double bytes_sent;
    double compute_s, comm_s, wait_s; /* per worker, mean */
    double dropped_fraction;          /* DLCP: of the exchanges' bytes */
    double dlcp_time_saved_s;         /* DLCP: per worker, mean (an estimate) */
    double epochs;
    uint64_t seed; /* a number in JSON: exact up to 2^53 */
    char device[128];
    int threads; /* emulation: the compute engine's threads (common/engine.h) */
    char model[RUN_CONFIG_TEXT];
    char dataset[RUN_CONFIG_TEXT];
    char partition[64];  /* of the training set over the workers */
    char collective[64]; /* the exchange of synchronous steps (--collective, --channels) */
    char precision[16];  /* --compute model's precision (null in the other modes) */
    char framework[16];  /* --compute model's framework (null in the other modes) */
    int batch;
    double lr;
    /* the training recipe (emu/recipe.h) */
    char recipe[64]; /* the model's default recipe, or "" for none */
    double momentum, weight_decay, lr_warmup_epochs, clip_norm;
    int nesterov;         /* 0 or 1 */
    char lr_schedule[64]; /* as resolved */
    char augment[8];      /* yes | no */
    char bn_stats[16];    /* average | local (emulated runs of models with batch norm) */
    int local_batch;
    double params;
    double flops_per_sample, forward_flops_per_sample, backward_flops_per_sample;
    /* SSP/ASP (sim/policy/policy.h): clock gap and update staleness histograms, and their maxima */
    long clock_gap_hist[SUMMARY_HIST_BINS];
    int clock_gap_bins; /* entries of clock_gap_hist written (0: null) */
    long update_staleness_hist[SUMMARY_HIST_BINS];
    int update_staleness_bins;
    long max_clock_gap, max_update_staleness;
    /* replay (traces/FORMAT.md) */
    char source[16]; /* emulation | profile | import | replay: what the trace came from */
    int recorded_workers;
    char scale_out[16];
    double recorded_sim_time_s;
    double relative_difference; /* of the replayed simulated time to the recorded one */
    double param_bytes;         /* of one exchange */
    double samples_per_s;       /* single worker: training throughput */
    double wall_s;              /* wall time; null where it would make identical runs differ */
} run_summary;

/* Every value absent (null): NaN numbers, counts and tta_s -1, empty strings, no histogram bins,
 * seed 0. */
void run_summary_init(run_summary *s);
/* SSP/ASP: the histograms of n bins (the last collects everything above) up to their last
 * non-empty bin, and their maxima. */
void run_summary_set_staleness(run_summary *s, const long *clock_gap_hist,
                               const long *update_staleness_hist, int n, long max_clock_gap,
                               long max_update_staleness);

/* Writes OUT/summary.json (cfg->out_dir) atomically. */
int summary_write(const run_config *cfg, const run_summary *s);
/* Reads a summary.json file into *s (absent and null values as run_summary_init sets them).
 * SS_EINPUT when the file is missing, is not a JSON object or has a newer schema. */
int summary_read(const char *path, run_summary *s);

#endif
