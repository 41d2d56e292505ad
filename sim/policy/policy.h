/* Synchronization policies, each the protocol of one worker actor written against the step
 * source (sim/policy/step_source.h), so that emulation and replay share them unchanged.
 *
 *     policy_config pc; policy_config_default(&pc); pc.kind = POLICY_SELSYNC; pc.delta = 0.3; ...
 *     policy_result res;
 *     policy_run(&pc, ex, &source, record_fn, record_ctx, &res);  // ex: the simulation or MPI
 *
 * Definitions:
 * - BSP: compute, all-reduce the gradients (ring/tree/halving-doubling, or a PS), apply the mean.
 * - SSP(s): a PS applies each pushed gradient when it arrives; a worker pulls the parameters as
 * they are then; a worker that has completed c steps starts step c+1 only while c - min_j c_j <= s.
 *   ASP is s = infinity.
 * - FedAvg / local SGD: rounds of H local steps by a sampled fraction C of the workers, then
 *   parameter averaging among them and a broadcast of the result; post-local SGD runs BSP until
 *   step t' first.
 * - SelSync: local update, EWMA of the gradient norm, relative change Delta, flags all-gathered
 *   every step, and parameter (or gradient) averaging on the steps where any flag is set.
 */
#ifndef SS_SIM_POLICY_H
#define SS_SIM_POLICY_H

#include "sim/compute/compute.h"
#include "sim/exchange/exchange.h"
#include "sim/net/coll/coll_opts.h"
#include "sim/policy/step_source.h"

#include <stdint.h>

typedef enum policy_kind {
    POLICY_BSP = 0,
    POLICY_SSP = 1,
    POLICY_ASP = 2,
    POLICY_FEDAVG = 3,
    POLICY_SELSYNC = 4,
    POLICY_DSSYNC = 5,
    POLICY_KIND_COUNT /* policies in the registry (sim/policy/policy_registry.h) */
} policy_kind;

typedef enum dssync_grouping {
    DSSYNC_GROUPING_SHUFFLE = 0,  /* new random groups every step, from the shared seed */
    DSSYNC_GROUPING_ALTERNATE = 1 /* the published 4-worker code: {0,1},{2,3} then {0,3},{1,2} */
} dssync_grouping;

typedef enum dlcp_priority {
    DLCP_PRIORITY_NONE = 0,     /* chunks in index order, no priority meant */
    DLCP_PRIORITY_LAYER = 1,    /* front layers first (the parameter vector's own order) */
    DLCP_PRIORITY_MAGNITUDE = 2 /* chunks of larger mean |value| first */
} dlcp_priority;

typedef enum selsync_variant {
    SELSYNC_VARIANT_PAPER = 0, /* Delta on the global norm, signed, EWMA factor N/100 */
    SELSYNC_VARIANT_CODE = 1   /* public code: |Delta| on the sum of per-layer norms, factor 0.01,
                                  Delta smoothed by a second EWMA */
} selsync_variant;

typedef enum selsync_order {
    SELSYNC_ORDER_STEP_THEN_AVERAGE = 0, /* paper: local update, then average parameters */
    SELSYNC_ORDER_AVERAGE_THEN_STEP = 1  /* public code: average, then apply own gradient on top */
} selsync_order;

/* Overlap of the backward pass with bucketed all-reduces (sim/policy/policy_step.c). */
typedef enum policy_overlap {
    POLICY_OVERLAP_AUTO = 0, /* on in replays of profiles (per-layer times, all-reduce
                                exchanges); off in emulation and for recorded traces, whose replay
                                must reproduce the recorded times */
    POLICY_OVERLAP_ON = 1,
    POLICY_OVERLAP_OFF = 2
} policy_overlap;

typedef struct policy_config {
    policy_kind kind;
    int workers;     /* N */
    long steps;      /* global steps (every worker's step count; FedAvg: local steps) */
    int batch;       /* b: per-worker mini-batch */
    uint64_t seed;   /* shared draws: client sampling, injection choices */
    long eval_every; /* K: the source evaluates at multiples of K and at the last step */

    /* exchange */
    int use_ps;              /* 1: synchronize through parameter servers instead of all-reduce */
    int ps_servers;          /* K servers (shards) when a PS is used */
    sim_coll_opts coll;      /* all-reduce algorithm and segmentation */
    sim_compute_cfg compute; /* compute-time model */
    double compute_jitter;   /* CV of a step's compute time (lognormal, mean 1); 0: none */
    const double *slowdown;  /* (N) multiplies each worker's compute time (stragglers); NULL: 1 */

    /* SSP / ASP */
    long staleness;         /* s >= 0; < 0 = infinity (ASP) */
    double comm_jitter;     /* CV of each server message's time on the wire (common/jitter.h) */
    double server_lr_scale; /* the server applies a gradient with lr x this (0: 1/N) */

    /* FedAvg / local SGD */
    long local_steps;       /* H >= 1 */
    double local_epochs;    /* E > 0: H from E passes over a worker's share (0: H as given) */
    double client_fraction; /* C in (0, 1] */
    long post_local_after;  /* t': BSP for steps <= t', then local SGD (0: local from the start) */

    /* SelSync */
    double delta;      /* delta: synchronize when Delta >= delta; < 0: auto, aiming at the
                          local-step ratio -delta (policy_selsync.c) */
    long delta_every;  /* auto: 0 keeps the calibration's delta; K > 0 chooses it again every K
                          steps from the largest Delta of the last K (Deltas all-gathered) */
    int ewma_window;   /* steps that always synchronize while the EWMA warms up (25) */
    double ewma_alpha; /* smoothing factor; 0 = variant default (N/100 or 0.01) */
    selsync_variant variant;
    aggregate_what aggregation; /* AGGREGATE_PARAMS (PA, default) or AGGREGATE_GRADS (GA) */
    selsync_order order;
    double flag_bytes;   /* bytes of one worker's flag in the all-gather (1) */
    double inject_alpha; /* data injection: fraction of workers that share (0: off) */
    double inject_beta;  /* fraction of its batch a sharing worker sends to each other */

    /* DS-Sync */
    int group_size; /* G: workers averaging together each step */
    dssync_grouping grouping;

    /* DLCP-style bounded loss on the synchronous exchanges (BSP, SelSync, FedAvg, DS-Sync) */
    double loss_tolerance; /* eps: fraction of the data an exchange may finish without (0: off) */
    double deadline_s;     /* > 0: beyond the (1 - eps) part, send chunks until this long */
    double chunk_bytes;    /* chunk size of the prioritized data */
    dlcp_priority priority;
    int drop_keep_local; /* dropped entries: 1 keep the worker's own value, 0 count as zero */

    /* overlap of backward and all-reduce (BSP, FedAvg's post-local BSP steps) */
    policy_overlap overlap;
    double bucket_mb; /* gradient bucket cap, MiB (PyTorch DDP's bucket_cap_mb, default 25) */

    /* stragglers */
    double straggler_prob;   /* p: chance that a worker's step is slowed */
    double straggler_factor; /* f: the slowdown of such a step */

    /* cross traffic */
    double background_load; /* fraction of link capacity taken by seeded random flows (0: none) */
} policy_config;

/* The defaults: those of the policy options (sim/policy/policy_registry.h) and of the run. */
void policy_config_default(policy_config *pc);
/* The exchange of synchronous steps, as banners and summary.json name it: "auto", "ring, 4
 * channels", "tree, protocol LL", "ps". */
void policy_describe_exchange(const policy_config *pc, char *buf, size_t n);
/* A policy by its registry name (SS_EUSAGE listing the valid names otherwise). */
int policy_kind_parse(const char *text, policy_kind *out);
const char *policy_kind_name(policy_kind k);
/* The per-worker local batch b' = round(b / (1 + alpha beta N)) under data injection (b if off). */
/* SelSync: the steps whose Delta is not yet defined (they synchronize: the warm-up), and, with
 * --delta auto:R, the steps after them that also synchronize while the threshold is calibrated
 * (policy_selsync.c); 0 for other policies. */
long policy_selsync_warmup_steps(const policy_config *pc);
long policy_selsync_calibration_steps(const policy_config *pc);
int policy_local_batch(const policy_config *pc);
/* The largest mini-batch a worker computes: b' plus the samples others may inject (b if off). */
int policy_max_batch(const policy_config *pc);
/* Whether the policy's workers run asynchronously against parameter servers (SSP, ASP): its
 * registry row's needs_ps. Synchronous policies may still exchange through servers (use_ps). */
int policy_is_async(const policy_config *pc);

/* One worker step, as recorded in steps.trace. Times are simulated seconds. */
typedef struct step_record {
    long step; /* 1-based global step */
    int worker;
    double start_s;    /* simulated clock at the start of the step */
    double compute_s;  /* compute time charged */
    double comm_s;     /* time in messages once every peer had arrived */
    double wait_s;     /* time waiting for peers (collective entry, staleness bound) */
    double flops;      /* FLOPs of the step */
    double grad_norm;  /* ||g|| */
    double delta;      /* SelSync's Delta (0 for other policies) */
    int decision;      /* 1: the step synchronized, 0: local */
    int samples;       /* samples computed (local + injected) */
    double bytes_sent; /* by this worker in this step */
    double loss;       /* training loss of the mini-batch */
} step_record;

typedef void (*policy_record_fn)(void *ctx, const step_record *r);

#define POLICY_STALENESS_BINS 64

typedef struct policy_result {
    double sim_time_s; /* simulated clock when the last worker finished */
    long steps;        /* global steps done */
    long sync_steps;   /* global steps that synchronized */
    double lssr;       /* local-step-to-step ratio = 1 - sync_steps / steps */
    double bytes_sent; /* all workers and servers */
    double compute_s;  /* per worker, mean over workers */
    double comm_s;     /* per worker, mean over workers */
    double wait_s;     /* per worker, mean over workers */
    /* SSP/ASP: how far ahead of the slowest worker a worker was when it started a step
     * (clock gap; bounded by s), and how many updates of others the PS applied between a
     * worker's pull and its push (update staleness). Last bin collects everything above. */
    long clock_gap_hist[POLICY_STALENESS_BINS];
    long update_staleness_hist[POLICY_STALENESS_BINS];
    long max_clock_gap;
    long max_update_staleness;
    /* DLCP: bytes of the exchanges' data (all workers) and the part dropped; the time the dropped
     * chunks would have taken at the rate the sent part went (an estimate, per worker, mean) */
    double dlcp_bytes_total;
    double dlcp_bytes_dropped;
    double dlcp_time_saved_s;
    /* SelSync with --delta auto:R: the threshold its calibration chose (with --delta-every, the
     * last one chosen), the smallest and largest chosen, and how many times it was chosen */
    double delta_chosen;
    double delta_chosen_min, delta_chosen_max;
    long delta_choices;
} policy_result;

/* Runs the policy over the exchange `ex` (opened by the caller: exchange_simgrid_open for the
 * simulation, exchange_mpi_open for real mode), with the given step source: starts the parameter
 * servers when the policy uses them and runs one protocol per worker the exchange hosts (every
 * worker in the simulation, this rank's in real mode; a server rank serves). `record` (may be
 * NULL) receives every step record in the order the steps complete. *res: the run's totals,
 * with compute_s, comm_s and wait_s the mean over the workers hosted here (a real rank: its own;
 * the caller combines the ranks). A source whose vectors the exchange moves (real mode) refuses
 * DLCP's partial exchanges (SS_EUSAGE). */
int policy_run(const policy_config *pc, exchange *ex, step_source *src, policy_record_fn record,
               void *record_ctx, policy_result *res);

#endif
