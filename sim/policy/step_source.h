/* The step source: what a policy actor asks of "the training" without knowing whether real
 * tensors stand behind it (emulation, emu/emulation.c) or a trace (replay, traces/).
 *
 * A policy (sim/policy/policy_*.c) is the protocol of one worker. It calls the source to
 * compute a step (real gradient, or a recorded cost), lets the cost's time pass through the
 * exchange (sim/exchange/exchange.h), exchanges messages through it, and, at the moment a
 * collective completes for this worker, calls aggregate() so that the real averaging happens then.
 *
 *     step_cost c; step_stats st;
 *     src->ops->compute(src->self, w, step, batch, &c, &st);       // real forward/backward
 *     ex->ops->compute(ex->self, w, &cfg, &cost_of_c, t0);          // its time passes
 *     ex->ops->allreduce(ex->self, world, w, NULL, n, bytes, &r);   // messages cross the network
 *     src->ops->aggregate(src->self, w, seq, NULL, n, n, AGGREGATE_GRADS, NULL, 0); // mean, now
 *     src->ops->apply_local(src->self, w, step);                    // optimizer step
 */
#ifndef SS_SIM_STEP_SOURCE_H
#define SS_SIM_STEP_SOURCE_H

#include "sim/compute/compute.h"

#include <stddef.h>
#include <stdint.h>

/* What one worker step costs, as the compute-time model needs it. */
typedef struct step_cost {
    double flops;      /* forward + backward + update FLOPs of the step (counted by the kernels) */
    double measured_s; /* real elapsed seconds of the step on this machine (0 if not measured) */
    double trace_s;    /* seconds supplied by a trace (< 0: none) */
    /* The step's layers in forward order, for --compute model and overlap (owned by the source,
     * valid until the worker's next compute); NULL / 0: no per-layer data. */
    const sim_layer_cost *layers;
    int n_layers;
} step_cost;

/* What one worker step observed, for the policies that decide from it (SelSync) and for output. */
typedef struct step_stats {
    double loss;           /* mean training loss of the mini-batch */
    double grad_norm;      /* ||g||_2 over the whole gradient */
    double layer_norm_sum; /* sum over layers of ||g_layer||_2 (SelSync public-code variant) */
    int samples;           /* samples in the mini-batch actually computed */
} step_stats;

typedef enum aggregate_what {
    AGGREGATE_PARAMS = 0, /* parameter aggregation (PA): replicas' parameters are averaged */
    AGGREGATE_GRADS = 1   /* gradient aggregation (GA): the gradients are averaged */
} aggregate_what;

/* step_source_ops.buffer's third kind of vector: the parameter server's parameters. */
#define STEP_BUFFER_PS 2

typedef struct step_source_ops {
    const char *name; /* "emulation", "replay" */
    /* Worker w computes the gradient of its next mini-batch of `batch` own samples, plus any
     * samples injected into it for this step (see inject). */
    void (*compute)(void *self, int worker, long step, int batch, step_cost *cost,
                    step_stats *stats);
    /* The worker applies the gradient it holds to its own replica (optimizer step). */
    void (*apply_local)(void *self, int worker, long step);
    /* Worker `worker` takes the mean over the `n` workers of `group` (NULL: workers 0..n-1) of
     * their parameters or gradients, into its own replica, at the moment its part of the
     * collective completes. All calls of one aggregation carry the same `seq`, and `callers`
     * workers make them (the members, plus any worker outside the group that receives the
     * result, as in FedAvg's broadcast). Every input is final when the first call comes (nobody
     * completes a collective before every member entered it), so the first call computes the
     * mean and the others reuse it. `mask` (NULL: all) marks the entries that arrived; for the
     * others `keep_local` keeps the worker's own value (1) or takes zero (0). */
    void (*aggregate)(void *self, int worker, long seq, const int *group, int n, int callers,
                      aggregate_what what, const uint8_t *mask, int keep_local);
    /* Parameter server sharded over n_shards servers (shard s holds the s-th contiguous slice of
     * the parameters): server `shard` applies worker w's gradient to its slice at the moment the
     * push arrives (SSP/ASP). */
    void (*ps_apply)(void *self, int worker, long step, int shard, int n_shards);
    /* Worker w's replica takes slice `shard` of the server's parameters as they are now. */
    void (*ps_pull)(void *self, int worker, int shard, int n_shards);
    /* Data injection: worker `from` shares `count` samples of its current batch with `to`; they
     * join `to`'s next compute(). */
    void (*inject)(void *self, int from, int to, int count);
    /* Worker w finished `step` at simulated time now_s: the source evaluates the consensus model
     * when every worker has reached an evaluation step. */
    void (*step_done)(void *self, int worker, long step, double now_s);
    /* DLCP's magnitude priority (may be NULL: index order): writes into order[0..n_chunks-1] the
     * chunk indices, largest mean |value| of the exchanged vectors of `group` first. */
    void (*chunk_order)(void *self, aggregate_what what, const int *group, int n,
                        size_t chunk_floats, int n_chunks, int *order);
    /* Real mode (may be NULL): the vector worker `worker` exchanges, for a backend that moves
     * data (sim/exchange/exchange.h): what = AGGREGATE_GRADS its gradient, AGGREGATE_PARAMS its
     * parameters, STEP_BUFFER_PS the parameter server's parameters (worker ignored). P floats. */
    float *(*buffer)(void *self, int worker, int what);
    /* Real mode (may be NULL: buffer()): the same vector, of which the backend touches only
     * floats [offset, offset + count) until buffer_done (overlap's buckets, while kernels still
     * write the rest). */
    float *(*buffer_part)(void *self, int worker, int what, size_t offset, size_t count);
    /* Real mode (may be NULL): the backend is done with the vector that buffer() gave; kernels
     * use it next. */
    void (*buffer_done)(void *self, int worker, int what);
    /* Replay only: the recorded global decision for `step` (1 sync, 0 local), or -1 when the
     * policy decides itself (emulation). */
    int (*forced_decision)(void *self, long step);
} step_source_ops;

/* Counters the policy keeps up to date, so that the source can report them with each evaluation. */
typedef struct step_counters {
    long sync_steps;   /* global steps that synchronized */
    double bytes_sent; /* all workers (and servers), all messages so far */
} step_counters;

typedef struct step_source {
    const step_source_ops *ops;
    void *self;
    size_t param_count; /* P: parameters of the model (the size of every exchange) */
    double param_bytes; /* 4 P */
    /* Bytes of state that travels with every synchronization beside the parameters or gradients
     * (batch normalization's running statistics under --bn-stats average; 0: none): the first
     * bucket, the chunks DLCP never drops, the pushes and pulls of a parameter server. */
    double state_bytes;
    double sample_bytes;           /* bytes of one training sample on the wire (data injection) */
    const step_counters *counters; /* set by the policy runner before the simulation starts */
    /* Set by the source when the run must end early (a diverged loss, an interruption): the step
     * during which it happened. Every worker finishes that step and starts no later one (FedAvg:
     * no later round), so no collective is left with members missing: a synchronous worker can
     * only start the next step after a collective that waited for the one that raised it. 0: the
     * run goes on. */
    long stop_after;
    /* Real mode: asked at the start of every step after the first by every worker (policy_go);
     * returns 1 when the run stops before `step` (an interruption that every worker learns at
     * the same step: policy_go then sets stop_after to step - 1). NULL in the simulation. */
    int (*stop_check)(void *ctx, long step);
    void *stop_ctx;
    /* Real mode's overlap: set by the policy around one compute() call (NULL otherwise). A source
     * with real tensors calls it as soon as its backward pass has written the gradient of layer
     * `layer` of cost->layers (filled in by then), last layer first, each once. */
    void (*grad_ready)(void *ctx, int layer, const step_cost *cost);
    void *grad_ready_ctx;
} step_source;

#endif
