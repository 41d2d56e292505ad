/* Overlap: the backward pass with bucketed all-reduces.
 *
 * As PyTorch DDP does it (Li et al., VLDB 2020): the gradients fill buckets of at most
 * bucket_mb MiB in reverse layer order (the order the backward pass produces them); a bucket is
 * closed when it reaches the cap or holds the last gradient, and its all-reduce starts at that
 * moment, while the backward pass goes on. The step ends when every bucket is reduced and the
 * optimizer step is done. The arithmetic is unchanged: the source averages the whole gradient
 * once, when the last bucket completes, so the parameters are the same bit for bit as without
 * overlap. */
#include "common/status.h"
#include "sim/policy/policy_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OVERLAP_IN_FLIGHT 16 /* the exchange's limit of non-blocking calls per group */

int policy_overlap_on(const policy_state *st) {
    const policy_config *pc = st->pc;
    return pc->overlap == POLICY_OVERLAP_ON && !st->has_ps && pc->loss_tolerance <= 0;
}

/* Charges `s` seconds of the modelled compute to worker w. */
static void charge_s(policy_state *st, int w, double s, step_acc *a) {
    static const sim_compute_cfg as_sleep = {.mode = SIM_COMPUTE_TRACE, .scale = 1.0};
    const sim_step_cost sc = {.trace_s = s, .slowdown = 1.0};
    policy_compute_time(st, w, &as_sleep, &sc, policy_now(st), a);
}

/* The buckets in flight of one worker's step, oldest first. */
typedef struct bucket_queue {
    exchange_request *rq[OVERLAP_IN_FLIGHT];
    int head, count;
    double bytes_sent;
} bucket_queue;

static void bucket_wait_oldest(policy_state *st, bucket_queue *q) {
    exchange_result r;
    int rc = st->ex->ops->wait(st->ex->self, q->rq[q->head], &r);
    SS_ASSERT(rc == SS_OK);
    q->bytes_sent += r.bytes_sent;
    q->head = (q->head + 1) % OVERLAP_IN_FLIGHT;
    q->count--;
}

/* Starts a bucket's all-reduce: of `buf` in place (real mode: the bucket's slice of the
 * gradient), or of `bytes` alone (the simulation, where the source averages the whole gradient
 * at the end). */
static void bucket_start(policy_state *st, int w, bucket_queue *q, float *buf, double bytes) {
    if (q->count == OVERLAP_IN_FLIGHT) bucket_wait_oldest(st, q);
    exchange_request *rq = st->ex->ops->allreduce_start(st->ex->self, st->world, w, buf,
                                                        (size_t)(bytes / sizeof(float)), bytes);
    SS_ASSERT(rq != NULL);
    q->rq[(q->head + q->count) % OVERLAP_IN_FLIGHT] = rq;
    q->count++;
}

/* The forward and backward passes with the buckets in closed form (exchange.h,
 * allreduce_buckets): at the start of the step the member says when its buckets will be ready
 * and how large they are, then lets the passes and the exposed communication pass as one wait
 * (two simulated activities a step instead of one per bucket and pass). 0 where the exchange
 * has no closed form for them (nothing done then). */
static int overlap_closed(policy_state *st, int w, long id, const sim_layer_cost *layers, int n,
                          double fwd_s, const double *bwd_s, double slowdown, step_acc *a) {
    if (!st->ex->ops->allreduce_buckets) return 0;
    const double cap = st->pc->bucket_mb * 1024.0 * 1024.0;
    int lowest = 0; /* the first layer with a gradient: it closes the last bucket */
    while (lowest < n - 1 && !(layers[lowest].param_bytes > 0))
        lowest++;
    /* more buckets than may be in flight block the backward pass (bucket_start): messages */
    double ready[OVERLAP_IN_FLIGHT], bytes[OVERLAP_IN_FLIGHT];
    int nb = 0;
    const double t0 = policy_now(st);
    double t = fwd_s * slowdown, bucket = st->src->state_bytes; /* the state: first bucket */
    for (int i = n - 1; i >= 0; i--) {
        t += bwd_s[i] * slowdown;
        bucket += layers[i].param_bytes;
        if (bucket > 0 && (bucket >= cap || i == lowest)) {
            if (nb == OVERLAP_IN_FLIGHT) return 0;
            ready[nb] = t0 + t;
            bytes[nb++] = bucket;
            bucket = 0;
        }
    }
    double end_s, sent;
    int rc =
        st->ex->ops->allreduce_buckets(st->ex->self, st->world, w, nb, ready, bytes, &end_s, &sent);
    if (rc == EXCHANGE_NOT_CLOSED) return 0;
    SS_ASSERT(rc == SS_OK);
    /* the passes ran while the member waited for the others' ready times; it enters the
     * synchronization when they end (every member enters before anyone leaves: right after the
     * others' ready times are known) */
    const double compute_end = t0 + t;
    a->rec.compute_s += compute_end - t0;
    double entry = policy_sync_enter_at(st, id, -1, compute_end);
    const double until = fmax(compute_end, end_s), now = policy_now(st);
    if (until > now) policy_pass_until(st, w, until);
    policy_sync_leave(st, id, -1, entry, sent, a);
    return 1;
}

/* The backward pass, last layer first, starting each bucket's all-reduce once its gradients are
 * produced; then the wait for the buckets (the exposed communication). */
static void overlap_backward(policy_state *st, int w, long id, const sim_layer_cost *layers, int n,
                             const double *bwd_s, double slowdown, step_acc *a) {
    const double cap = st->pc->bucket_mb * 1024.0 * 1024.0;
    int lowest = 0; /* the first layer with a gradient: it closes the last bucket */
    while (lowest < n - 1 && !(layers[lowest].param_bytes > 0))
        lowest++;
    bucket_queue q = {.head = 0};
    double segment_s = 0, bucket = st->src->state_bytes; /* the state: first bucket */
    for (int i = n - 1; i >= 0; i--) {
        segment_s += bwd_s[i];
        bucket += layers[i].param_bytes;
        if (bucket > 0 && (bucket >= cap || i == lowest)) {
            charge_s(st, w, segment_s * slowdown, a);
            segment_s = 0;
            bucket_start(st, w, &q, NULL, bucket);
            bucket = 0;
        }
    }
    charge_s(st, w, segment_s * slowdown, a);
    double entry = policy_sync_enter(st, id, -1);
    while (q.count > 0)
        bucket_wait_oldest(st, &q);
    policy_sync_leave(st, id, -1, entry, q.bytes_sent, a);
}

/* The part [offset, offset + count) of the vector policy_buffer gives, which the exchange moves
 * while kernels still write the rest. */
static float *policy_buffer_part(const policy_state *st, int w, int what, size_t offset,
                                 size_t count) {
    if (!st->src->ops->buffer_part) return policy_buffer(st, w, what);
    return st->src->ops->buffer_part(st->src->self, w, what, offset, count);
}

/* A source whose vectors the exchange moves (real mode): the backward pass calls back as each
 * layer's gradient is written (step_source.grad_ready); a bucket that closes starts its
 * all-reduce on its slice of the gradient, in place, while the backward pass goes on (the
 * exchange progresses it meanwhile). The buckets are those of the modelled form below: reverse
 * layer order, closed at the cap or at the first layer with parameters. */
typedef struct real_buckets {
    policy_state *st;
    int w;
    double cap;    /* bytes */
    double bucket; /* bytes of the open bucket */
    size_t end;    /* floats: where the open bucket ends; it starts at its last layer's offset */
    int lowest;    /* the first layer with parameters (-1: not known yet) */
    bucket_queue q;
} real_buckets;

static void real_grad_ready(void *ctx, int layer, const step_cost *cost) {
    real_buckets *b = ctx;
    const sim_layer_cost *l = cost->layers;
    size_t offset = 0; /* the layer's first parameter: the layers' parameters follow each other */
    for (int i = 0; i < layer; i++)
        offset += (size_t)(l[i].param_bytes / sizeof(float));
    if (b->lowest < 0) {
        b->lowest = 0;
        while (b->lowest < cost->n_layers - 1 && !(l[b->lowest].param_bytes > 0))
            b->lowest++;
    }
    b->bucket += l[layer].param_bytes;
    if (b->bucket > 0 && (b->bucket >= b->cap || layer == b->lowest)) {
        float *g = policy_buffer_part(b->st, b->w, AGGREGATE_GRADS, offset, b->end - offset);
        SS_ASSERT(g != NULL && offset < b->end);
        bucket_start(b->st, b->w, &b->q, g + offset, (double)(b->end - offset) * sizeof(float));
        b->end = offset;
        b->bucket = 0;
    }
}

static void overlap_step_real(policy_state *st, int w, long step, step_acc *a, step_stats *stats) {
    real_buckets b = {.st = st,
                      .w = w,
                      .cap = st->pc->bucket_mb * 1024.0 * 1024.0,
                      .end = st->src->param_count, /* the first bucket ends with the vector */
                      .lowest = -1};
    st->src->grad_ready = real_grad_ready;
    st->src->grad_ready_ctx = &b;
    policy_compute(st, w, step, st->pc->batch, a, stats);
    st->src->grad_ready = NULL;
    st->src->grad_ready_ctx = NULL;
    SS_ASSERT(b.lowest >= 0 && b.end == 0); /* every bucket started */
    const long id = policy_sync_id(step, 1);
    double entry = policy_sync_enter(st, id, -1);
    while (b.q.count > 0)
        bucket_wait_oldest(st, &b.q);
    policy_buffer_done(st, w, AGGREGATE_GRADS);
    policy_sync_leave(st, id, -1, entry, b.q.bytes_sent, a);
    policy_aggregate(st, w, id, AGGREGATE_GRADS, NULL, st->pc->workers, st->pc->workers);
}

/* A recorded step (a trace's compute seconds, replayed): its time, split over the layers'
 * passes as their FLOPs split it (sim_compute_layers' times outside the model mode), so that
 * the step computes for what it took without overlap. A step recorded under --compute model
 * had the model's split, which this approximates. */
static void split_recorded(const sim_compute_cfg *cc, const step_cost *cost, double *fwd,
                           double *bwd, int n, double *opt_s) {
    const double total_s = cc->mode == SIM_COMPUTE_TRACE ? cost->trace_s : -1;
    if (!(total_s >= 0)) return;
    double sum = *opt_s;
    for (int i = 0; i < n; i++)
        sum += fwd[i] + bwd[i];
    const double f = sum > 0 ? total_s / sum : 0;
    for (int i = 0; i < n; i++) {
        fwd[i] *= f;
        bwd[i] *= f;
    }
    *opt_s *= f;
    if (!(sum > 0)) fwd[0] = total_s; /* no FLOPs to split by: all of it before the buckets */
}

void policy_overlap_step(policy_state *st, int w, long step, step_acc *a, step_stats *stats) {
    if (st->src->ops->buffer) {
        overlap_step_real(st, w, step, a, stats);
        return;
    }
    step_cost cost;
    double slowdown = policy_compute_source(st, w, step, st->pc->batch, &cost, a, stats);
    const int n = cost.n_layers;
    SS_ASSERT(n > 0 && cost.layers); /* checked before the run: the source has per-layer data */
    double *fwd = ss_malloc(sizeof(double) * 2 * (size_t)n), *bwd = fwd + n, opt_s = 0;
    int rc = st->ex->ops->layer_times(st->ex->self, w, &st->pc->compute, cost.layers, n, fwd, bwd,
                                      &opt_s);
    SS_ASSERT(rc == SS_OK);
    split_recorded(&st->pc->compute, &cost, fwd, bwd, n, &opt_s);
    double fwd_s = 0;
    for (int i = 0; i < n; i++)
        fwd_s += fwd[i];
    const long id = policy_sync_id(step, 1);
    const int workers = st->pc->workers;
    if (!overlap_closed(st, w, id, cost.layers, n, fwd_s, bwd, slowdown, a)) {
        charge_s(st, w, fwd_s * slowdown, a);
        overlap_backward(st, w, id, cost.layers, n, bwd, slowdown, a);
    }
    policy_aggregate(st, w, id, AGGREGATE_GRADS, NULL, workers, workers);
    charge_s(st, w, opt_s * slowdown, a);
    free(fwd);
}
