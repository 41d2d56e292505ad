/* Internal to emu/: one emulated run's state and the steps of its runner (emu/run.c), shared
 * with real mode's runner (emu/real.c), which runs the same steps over MPI ranks. */
#ifndef SS_EMU_RUN_INTERNAL_H
#define SS_EMU_RUN_INTERNAL_H

#include "analysis/gradient_dump.h"
#include "common/outputs.h"
#include "emu/emulation.h"
#include "emu/real.h"
#include "emu/run.h"
#include "sim/net/cluster.h"
#include "sim/platform/platform_gen.h"
#include "sim/policy/policy.h"
#include "traces/trace.h"

typedef struct run_context {
    const run_config *cfg;
    afile metrics;   /* metrics.csv, one row per evaluation */
    afile trace;     /* steps.trace, one record per worker step */
    trace_writer tw; /* writes steps.trace in the trace format (traces/FORMAT.md) */
    int tracing;
    double tta_s;
    isolate_blob *curve;
    progress bar;
    long total_steps;
    /* SelSync: Delta of every worker's steps after the warm-up, and worker 0's decisions after
     * the calibration (--delta auto) */
    long warmup_steps, calibrated_from;
    double *deltas;
    size_t n_deltas, cap_deltas;
    long steps_after, syncs_after;
} run_context;

/* Everything one emulated run holds open, released by run_close(). */
typedef struct emu_run {
    const run_request *rq;
    const run_config *cfg;
    lr_schedule sched;
    partition_kind part_kind;
    double partition_param; /* noniid's k, dirichlet's alpha */
    char partition[64];     /* as given, or the policy's default */
    sim_network_model net_model;
    dataset train, test;
    device *dev;
    model_spec spec;
    long steps_per_epoch;
    policy_config pc;
    policy_result pr;
    char platform[1024];
    char memory_line[160]; /* the memory estimate, for the banner (memory_check_run) */
    sim_cluster *cluster;
    emulation *em;
    run_context ctx;
    double worker_accuracy; /* mean of the replicas' own final accuracies */
    /* real mode (syncsim real): this process's rank; rank 0 writes the outputs; stopped: an
     * interruption ended the run early on some rank */
    int real, rank, ranks, stopped;
    int threads;              /* --threads, resolved */
    double train_wall_s;      /* wall time of the simulation's training loop (run_simulate) */
    double train_eval_s;      /* of it, the evaluations of the consensus model */
    int skip_worker_accuracy; /* bench emulation: no evaluation of each replica at the end */
    exchange *ex;
    real_records recs;
} emu_run;

/* A policy_record_fn: one step record into steps.trace (and the Delta table). */
void run_on_record(void *ctx, const step_record *r);
/* The parameter servers a policy's run uses (0 without). */
int run_servers_of(const policy_config *pc);
/* Opens what the run needs: options, data, platform and cluster (not in real mode), emulation,
 * outputs (rank 0 in real mode). */
int run_open(emu_run *r);
/* The resolved configuration and the seed, printed at the start. */
void run_print_banner(const emu_run *r);
/* The policy on the cluster, then the final evaluations. */
int run_simulate(emu_run *r);
/* summary.json and the closing lines. */
int run_finish(emu_run *r, run_summary *sum, double wall0);
/* Releases what run_open opened (real mode closes its exchange and records first). */
void run_close(emu_run *r);

#endif
