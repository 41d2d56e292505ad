/* The training runners: one emulated run (N workers under a policy on a simulated cluster) and
 * the single-worker run (real training of one replica, no simulation). Each takes the resolved
 * configuration (common/run_request.h), writes OUT/{config.ini, metrics.csv, summary.json} (the
 * emulation also platform.xml and steps.trace), prints its progress and result on stdout and
 * fills a run_summary (common/summary.h).
 *
 *     run_request rq = {.cfg = &cfg, .config_ini = ini, .lr = lr};
 *     run_summary sum;
 *     int rc = run_train_emulated(&rq, &sum, NULL);   // once per process: it starts SimGrid
 */
#ifndef SS_EMU_RUN_H
#define SS_EMU_RUN_H

#include "common/run_request.h"
#include "common/summary.h"
#include "emu/dataset.h"
#include "kernels/model.h"
#include "common/isolate.h"

#include <stdio.h>

/* One point of the accuracy curve, as compare needs it. */
typedef struct run_curve_point {
    double sim_time_s;
    double test_accuracy;
} run_curve_point;

/* What every training command opens first: the device (--device; a fallback to the CPU is
 * announced on stderr), the data set (--dataset, --data-dir) and the model's spec for its shape
 * (--model). On failure nothing stays open: *dev is NULL and the data sets are empty. */
int run_open_data(const run_config *cfg, device **dev, dataset *train, dataset *test,
                  model_spec *spec);

/* Runs in the current process (which must not have started SimGrid yet): epochs to steps, the
 * partition, the injection batch, the PS learning-rate scale, the platform (generated or
 * --platform), the policy. If curve is not NULL, the evaluations are appended to it as
 * run_curve_point records. SS_EDIVERGED / SS_EINTERRUPT with complete outputs. */
int run_train_emulated(const run_request *rq, run_summary *sum, isolate_blob *curve);
/* Checks everything the options of an emulated run decide without loading data or creating
 * OUT/ (the policy's own rules, its options, the platform, the model's text, --dump-gradients):
 * run_train_emulated does it first; compare does it for every run before starting any. */
int run_check_emulated(const run_request *rq);
/* The checks of an emulated run that need its training set (loaded by the caller, once for
 * several runs): the policy's steps, the partition against the classes, --dump-gradients against
 * the last step. compare makes them before it touches its output directory. */
int run_check_emulated_data(const run_request *rq, const dataset *train);

/* syncsim real: this process is one MPI rank (mpirun -np N + servers) of a run of the same
 * policy code over a real network (emu/real.h): worker ranks train their own replica, server
 * ranks serve the parameter-server traffic, times are measured (monotonic clock, from when every
 * rank is ready). Rank 0 writes the outputs, with mode "real"; the others write nothing. Refused
 * outside mpirun, with a rank count that does not match, for DLCP and overlap. */
int run_train_real(const run_request *rq, run_summary *sum);

/* One worker, no policy, no simulation (emu/train_single.c): the numerical reference the
 * emulator builds on. SS_EDIVERGED / SS_EINTERRUPT with complete outputs. */
int run_train_single(const run_request *rq, run_summary *sum);

/* syncsim bench coupling (emu/bench_coupling.c): the same BSP training of rq->cfg->workers
 * workers for rq->cfg->epochs, with and without SimGrid, and the simulation alone; a table on
 * `out`. SS_EIO if the coupled and uncoupled runs end with different parameters. */
int bench_coupling(const run_request *rq, FILE *out);

/* syncsim bench emulation (emu/bench_emulation.c): the emulated run of rq->cfg (its policy, model,
 * workers, epochs) on one compute thread and on --threads threads, each in its own process; a
 * table of samples/s on `out`, and as CSV in csv_path when not NULL. SS_EIO if the two runs end
 * with different parameters. */
int bench_emulation(const run_request *rq, const char *csv_path, FILE *out);

#endif
