/* Time to accuracy (TTA) and speedup: the one definition behind `compare`, `report` and the
 * sweep's sweep.csv. The target of a run is the final accuracy of its reference run (BSP) less a
 * margin; a run's TTA is the first simulated time of its metrics.csv at which test accuracy
 * reaches the target; its speedup is TTA(reference) / TTA(run).
 *
 * A language model (run_record_is_language: its summary has a test perplexity) is measured on
 * perplexity, where lower is better: the target is the reference's final perplexity times
 * (1 + margin), and its TTA the first simulated time at which test_perplexity <= the target.
 *
 * The reference of a run is the BSP run of the same configuration and seed
 * (tta_reference_find): every config.ini key that both runs have and that applies to both
 * policies holds the same value. Keys that describe one policy only (delta for selsync, overlap
 * for bsp) are not compared, so a compare's selsync run finds the bsp run of its network. A run
 * whose test accuracy is not recorded (a replay: no tensors) has no TTA: "n/a", not "never".
 *
 *     int ref = tta_reference_find(runs, n, i, key_applies, why, sizeof why);
 *     tta_result t = tta_measure(&runs[i], ref >= 0 ? &runs[ref] : NULL, TTA_DEFAULT_MARGIN);
 *     printf("%s\n", tta_cell(&t, buf, sizeof buf));        // "1.80 s", "never", "n/a"...
 */
#ifndef SS_ANALYSIS_TTA_H
#define SS_ANALYSIS_TTA_H

#include "analysis/runs.h"

#include <stddef.h>

/* 0.5 accuracy points below the reference's final accuracy; a language model: 0.5 % above the
 * reference's final perplexity */
#define TTA_DEFAULT_MARGIN 0.005

typedef enum tta_status {
    TTA_REACHED,      /* tta_s (and speedup, when the reference reached it too) defined */
    TTA_NEVER,        /* the run never reached the target */
    TTA_NO_ACCURACY,  /* the run or its reference records no test accuracy (replay): n/a */
    TTA_NO_REFERENCE, /* no BSP run of the same configuration and seed finished (ok) */
    TTA_UNFINISHED,   /* the run itself did not finish ok (diverged, interrupted, failed) */
} tta_status;

typedef struct tta_result {
    tta_status status;
    double target;          /* NaN unless a reference with an accuracy was found */
    double tta_s;           /* NaN unless TTA_REACHED */
    double reference_tta_s; /* the reference's own TTA at the same target */
    double speedup;         /* reference_tta_s / tta_s; NaN unless both are > 0 */
    int perplexity;         /* 1: target and TTA are on perplexity (a language model) */
} tta_result;

/* The accuracy a run must reach: reference_accuracy - margin. */
double tta_target(double reference_accuracy, double margin);
/* The perplexity a language model must get down to: reference_perplexity x (1 + margin). */
double tta_target_perplexity(double reference_perplexity, double margin);
/* TTA of the run in dir (s); NaN if it never reaches target or has no readable metrics.csv. */
double tta_of_run(const char *dir, double target);
/* TTA on the test_perplexity column: the first time at or below target (NaN: never). */
double tta_of_run_perplexity(const char *dir, double target);
/* reference_tta_s / tta_s; NaN unless both are > 0. */
double tta_speedup(double reference_tta_s, double tta_s);

/* 1 if the run recorded a test accuracy (emulations do, replays do not). */
int tta_has_accuracy(const run_record *r);
/* TTA and speedup of `run` against `reference` (NULL: none found). */
tta_result tta_measure(const run_record *run, const run_record *reference, double margin);
/* The index in runs[0..n) of run i's reference: the BSP run that finished ok with the same seed
 * and the same value of every config key both have that applies to both policies (key_applies
 * NULL: every key applies; seed, out, progress, trace, config, data-dir, dump-gradients never
 * count). A BSP run is its own reference. -1 if none, with the reason in why (the closest BSP
 * run and the keys where it differs, or that there is none). */
int tta_reference_find(const run_record *runs, int n, int i,
                       int (*key_applies)(const char *key, const char *policy), char *why,
                       size_t why_size);
/* The TTA as a table shows it: "1.80 s" (precision decimals), "never", "n/a" (no accuracy
 * recorded), "no BSP" (no reference), "-" (unfinished). */
const char *tta_cell(const tta_result *t, int precision, char *buf, size_t n);
/* The status as one word of a CSV: reached, never, n/a, no_bsp, unfinished. */
const char *tta_status_word(tta_status s);

#endif
