/* Internal to the policies: the state shared by the worker actors of one run, and the step
 * helpers every protocol is written with (policy_step.c). Layering, one way only: the protocols
 * (policy_<name>.c) call the helpers; the helpers and the protocols reach the other workers only
 * through the exchange (exchange.h) and the training only through the step source; the runner
 * (policy_run.c) sets it all up and starts the protocols (policy_workers.h). */
#ifndef SS_SIM_POLICY_INTERNAL_H
#define SS_SIM_POLICY_INTERNAL_H

#include "common/rng.h"
#include "sim/exchange/exchange.h"
#include "sim/policy/policy.h"

/* Entry bookkeeping of the synchronizations in flight, to split a member's time in a collective
 * into waiting for the last peer to arrive (wait) and moving data after that (comm). A
 * synchronization is identified by an id that all its members agree on and that grows; no
 * member can enter id + SYNC_SLOTS while another is still inside id. */
#define SYNC_SLOTS 8
typedef struct sync_slot {
    long id;          /* synchronization occupying the slot (-1: none) */
    double max_entry; /* latest entry time of a member so far (simulated s) */
} sync_slot;

typedef struct policy_state {
    const policy_config *pc;
    exchange *ex;          /* every message of the run */
    exchange_group *world; /* all workers, member index = rank */
    int has_ps;            /* synchronous exchanges go through the parameter servers */
    step_source *src;
    policy_record_fn record;
    void *record_ctx;
    step_counters counters; /* read by the source at evaluations */
    policy_result *res;

    sync_slot *slots; /* (N + 1, SYNC_SLOTS): row 0 for all workers, row 1 + k for the group
                         whose first member is k (groups in flight at once are disjoint) */
    long *agg_seq;    /* (N) aggregations each worker has called; equal across members */
    double *compute_s, *comm_s, *wait_s; /* (N) totals per worker */

    /* SSP/ASP, kept by the servers' hooks */
    long ps_version;      /* updates applied by server 0 */
    long *pulled_version; /* (N) ps_version when the worker last pulled from server 0 */

    rng *straggler;          /* (N) each worker's draws of random slowdowns */
    struct dlcp_slot **dlcp; /* exchanges in flight under DLCP */
    int n_dlcp;
} policy_state;

/* What one worker's actor receives. */
typedef struct worker_arg {
    policy_state *st;
    int rank;
} worker_arg;

/* Per-step accumulator of one worker. */
typedef struct step_acc {
    step_record rec;
} step_acc;

/* Whether a worker may start `step`: the run has steps left and was not stopped before it. */
static inline int policy_go(const policy_state *st, long step) {
    step_source *src = st->src;
    if (src->ops->settle) src->ops->settle(src->self, step);
    if (src->stop_check && src->stop_after == 0 && step > 1 && src->stop_check(src->stop_ctx, step))
        src->stop_after = step - 1;
    return step <= st->pc->steps && (src->stop_after == 0 || step <= src->stop_after);
}

/* Synchronization ids of a global step: two per step (0: SelSync's flags, 1: the exchange), so
 * ids grow. */
static inline long policy_sync_id(long step, int which) {
    return 2 * step + which;
}

/* The exchange's clock (seconds: simulated, or real in real mode). */
double policy_now(const policy_state *st);
void policy_begin_step(policy_state *st, int w, long step, step_acc *a);
/* The vector worker w exchanges, for a source whose vectors the exchange moves (real mode:
 * step_source_ops.buffer; what: aggregate_what or STEP_BUFFER_PS); NULL for a source that
 * aggregates the replicas itself (the simulation). */
float *policy_buffer(const policy_state *st, int w, int what);
/* The exchange is done with policy_buffer(st, w, what), which kernels use next (a GPU's shared
 * memory goes back to the device, inside the exchange's time). */
void policy_buffer_done(const policy_state *st, int w, int what);
/* The source starts worker w's step (real gradient or recorded cost): *cost (FLOPs, layers) and
 * the record's FLOPs are known at once; *stats only after policy_compute_end (a source without
 * futures fills them now). Returns the step's slowdown (stragglers, jitter). Takes no time. */
double policy_compute_begin(policy_state *st, int w, long step, int batch, step_cost *cost,
                            step_acc *a, step_stats *stats);
/* Waits for the step's result: cost->measured_s, *stats and the record's loss, norm, samples. */
void policy_compute_end(policy_state *st, int w, step_cost *cost, step_acc *a, step_stats *stats);
/* Lets the other workers that are ready at this simulated instant run first (they submit their
 * computations before this one waits for its own); nothing where the exchange cannot. */
void policy_yield(policy_state *st);
/* The step's computation takes its time through the exchange (the model's in the simulation; in
 * real mode its real time, and a straggler's extra): from t0, when the source began it, to now,
 * added to the record. */
void policy_compute_time(policy_state *st, int w, const sim_compute_cfg *cc,
                         const sim_step_cost *sc, double t0, step_acc *a);
/* Computes the step through the source and lets its time pass through the exchange (the
 * simulation: the compute model's; real mode: the time it took, and a straggler's extra). */
void policy_compute(policy_state *st, int w, long step, int batch, step_acc *a, step_stats *stats);
/* The compute-time multiplier of worker w's step under --compute-jitter cv: lognormal, mean 1,
 * drawn from a stream of its own per (seed, w, step). 1 when cv is 0. */
double policy_jitter(uint64_t seed, int w, long step, double cv);
/* Lets time pass on worker w until time t (nothing if t is not ahead), not counted as compute:
 * the wait for a collective in closed form (exchange.h, allreduce_buckets). */
void policy_pass_until(policy_state *st, int w, double t);
/* A member enters synchronization `id` (call right before the collective) ... */
double policy_sync_enter(policy_state *st, long id, int key);
/* The same, entered at time t (<= now): when the member's compute ended while it was blocked. */
double policy_sync_enter_at(policy_state *st, long id, int key, double t);
/* ... and leaves it (right after): splits the time into wait and comm, adds the bytes. */
void policy_sync_leave(policy_state *st, long id, int key, double entry_s, double bytes,
                       step_acc *a);
/* One synchronous exchange: worker w, member `me` of the group `g` whose workers are
 * members[0..m-1] (NULL: all workers, g = world), moves the data of the parameters or gradients
 * (all-reduce, or push/pull through the PS when one is used) and, under DLCP
 * (loss_tolerance > 0), only the chunks that make it: the (1 - eps) first in priority order,
 * then more until the deadline. `callers` workers will aggregate the result. */
void policy_exchange(policy_state *st, int w, long id, long step, aggregate_what what,
                     exchange_group *g, int me, const int *members, int m, int callers,
                     step_acc *a);
/* Worker w takes the exchange's result (the mean over the members of what arrived) into its
 * replica: after policy_exchange, or, for a worker outside the group, after it has received it. */
void policy_aggregate(policy_state *st, int w, long id, aggregate_what what, const int *members,
                      int m, int callers);
/* Both, among all workers. */
void policy_sync_world(policy_state *st, int w, long id, long step, aggregate_what what,
                       step_acc *a);
/* One fully synchronous step: compute, average the gradients among all workers, apply (BSP's
 * step, and FedAvg's post-local prefix). */
void policy_bsp_step(policy_state *st, int w, long step);
/* Whether BSP's steps overlap the backward pass with bucketed all-reduces: --overlap on (the
 * runners resolve auto), over an all-reduce without DLCP. */
int policy_overlap_on(const policy_state *st);
/* One step's compute and gradient exchange under overlap (forward, backward with the buckets'
 * all-reduces, their wait, the mean, the optimizer's time); the caller then applies. */
void policy_overlap_step(policy_state *st, int w, long step, step_acc *a, step_stats *stats);
void policy_dlcp_free(policy_state *st);
void policy_end_step(policy_state *st, int w, step_acc *a);

#endif
