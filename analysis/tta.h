/* Time to accuracy (TTA) and speedup, one definition for `report` and `compare`. The target of a
 * run is the final accuracy of its reference run (BSP) less a margin; a run's TTA is the first
 * simulated time of its metrics.csv at which test accuracy reaches the target; its speedup is
 * TTA(reference) / TTA(run). Which run is the reference is the caller's choice (report: the BSP
 * run of the same configuration and seed; compare: the BSP run on the same network).
 *
 *     const double target = tta_target(bsp->test_accuracy, TTA_DEFAULT_MARGIN);
 *     const double t = tta_of_run(run_dir, target);
 *     const double s = tta_speedup(tta_of_run(bsp->dir, target), t);   // NaN: undefined
 */
#ifndef SS_ANALYSIS_TTA_H
#define SS_ANALYSIS_TTA_H

#define TTA_DEFAULT_MARGIN 0.005 /* 0.5 accuracy points below the reference's final accuracy */

/* The accuracy a run must reach: reference_accuracy - margin. */
double tta_target(double reference_accuracy, double margin);
/* TTA of the run in dir (s); NaN if it never reaches target or has no readable metrics.csv. */
double tta_of_run(const char *dir, double target);
/* reference_tta_s / tta_s; NaN unless both are > 0. */
double tta_speedup(double reference_tta_s, double tta_s);

#endif
