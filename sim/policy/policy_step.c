/* The step helpers every worker protocol is written with: a step's start, compute and end, the
 * wait/comm split of a synchronization, and the synchronous exchanges with their DLCP-style
 * bounded-loss form. Messages go through the exchange (exchange.h) only.
 *
 * DLCP (Wang et al. 2020) lets a gradient exchange finish without the last fraction eps of its
 * data, sends the data in priority order (front layers first, or large values first), and spreads
 * packets over paths. syncsim models it at chunk level on SimGrid's flow model, which is an
 * approximation of a packet-level mechanism: the exchanged vector is cut into chunks of
 * `chunk_bytes`; the first ceil((1 - eps) K) chunks in priority order move as one collective (the
 * part that must arrive); with a deadline, further chunks follow one by one while the deadline
 * has not passed; the rest is never sent. What is not sent is really missing from the
 * aggregation: those entries keep the worker's own value or count as zero. Per-packet load
 * balancing has no flow-level counterpart and is not modelled.
 *
 * The members agree on every decision because the first member to reach it records it for the
 * others (a shortcut of the simulation: in DLCP the receiver decides and tells the sender). */
#include "common/status.h"
#include "common/jitter.h"
#include "sim/policy/policy_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double policy_now(const policy_state *st) {
    return st->ex->ops->now(st->ex->self);
}

void policy_begin_step(policy_state *st, int w, long step, step_acc *a) {
    memset(a, 0, sizeof *a);
    a->rec.step = step;
    a->rec.worker = w;
    a->rec.start_s = policy_now(st);
}

/* Multiplier of a step's compute time: lognormal with mean 1 and coefficient of variation cv, from
 * the stream of (worker, step) (common/jitter.h), so a draw does not depend on the order in which
 * the simulation schedules the workers. */
double policy_jitter(uint64_t seed, int w, long step, double cv) {
    return sim_jitter_lognormal(seed, sim_jitter_compute_stream(w, step), cv);
}

/* Stragglers (a fixed slowdown of some workers, and random slow steps: one draw a step) and the
 * step's jitter, all multiplying its compute time (every layer of it under overlap). */
static double step_slowdown(policy_state *st, int w, long step) {
    double slowdown = st->pc->slowdown ? st->pc->slowdown[w] : 1.0;
    if (st->pc->straggler_prob > 0 && rng_uniform(&st->straggler[w]) < st->pc->straggler_prob)
        slowdown *= st->pc->straggler_factor;
    return slowdown * policy_jitter(st->pc->seed, w, step, st->pc->compute_jitter);
}

/* The source computes the step (real gradient or recorded cost); returns the step's slowdown. */
static double compute_source(policy_state *st, int w, long step, int batch, step_cost *cost,
                             step_acc *a, step_stats *stats) {
    *cost = (step_cost){.trace_s = -1};
    memset(stats, 0, sizeof *stats);
    st->src->ops->compute(st->src->self, w, step, batch, cost, stats);
    a->rec.flops = cost->flops;
    a->rec.loss = stats->loss;
    a->rec.grad_norm = stats->grad_norm;
    a->rec.samples = stats->samples;
    return step_slowdown(st, w, step);
}

/* The step's computation takes its time through the exchange (the model's time in the
 * simulation; in real mode it took its real time, and a straggler waits the extra): from t0, when
 * the source began it, to now. */
static void compute_time(policy_state *st, int w, const sim_compute_cfg *cc,
                         const sim_step_cost *sc, double t0, step_acc *a) {
    int rc = st->ex->ops->compute(st->ex->self, w, cc, sc, t0);
    SS_ASSERT(rc == SS_OK);
    a->rec.compute_s += policy_now(st) - t0;
}

float *policy_buffer(const policy_state *st, int w, int what) {
    if (!st->src->ops->buffer) return NULL;
    return st->src->ops->buffer(st->src->self, w, what);
}

static float *policy_buffer_part(const policy_state *st, int w, int what, size_t offset,
                                 size_t count) {
    if (!st->src->ops->buffer_part) return policy_buffer(st, w, what);
    return st->src->ops->buffer_part(st->src->self, w, what, offset, count);
}

void policy_buffer_done(const policy_state *st, int w, int what) {
    if (st->src->ops->buffer_done) st->src->ops->buffer_done(st->src->self, w, what);
}

void policy_compute(policy_state *st, int w, long step, int batch, step_acc *a, step_stats *stats) {
    step_cost cost;
    const double t0 = policy_now(st);
    double slowdown = compute_source(st, w, step, batch, &cost, a, stats);
    sim_step_cost sc = {.flops = cost.flops,
                        .measured_s = cost.measured_s,
                        .trace_s = cost.trace_s,
                        .slowdown = slowdown,
                        .layers = cost.layers,
                        .n_layers = cost.n_layers};
    compute_time(st, w, &st->pc->compute, &sc, t0, a);
}

/* The slot of synchronization `id` among all workers (key -1) or in the group whose first member
 * is `key`. */
static sync_slot *sync_slot_of(policy_state *st, long id, int key) {
    return &st->slots[(size_t)(key + 1) * SYNC_SLOTS + (size_t)(id % SYNC_SLOTS)];
}

double policy_sync_enter(policy_state *st, long id, int key) {
    double now = policy_now(st);
    sync_slot *s = sync_slot_of(st, id, key);
    if (s->id != id) {
        s->id = id;
        s->max_entry = now;
    } else if (now > s->max_entry) {
        s->max_entry = now;
    }
    return now;
}

void policy_sync_leave(policy_state *st, long id, int key, double entry_s, double bytes,
                       step_acc *a) {
    double now = policy_now(st);
    const sync_slot *s = sync_slot_of(st, id, key);
    SS_ASSERT(s->id == id);
    double wait = s->max_entry - entry_s;
    if (wait < 0) wait = 0;
    if (wait > now - entry_s) wait = now - entry_s;
    a->rec.wait_s += wait;
    a->rec.comm_s += (now - entry_s) - wait;
    a->rec.bytes_sent += bytes;
    st->counters.bytes_sent += bytes;
}

void policy_end_step(policy_state *st, int w, step_acc *a) {
    st->compute_s[w] += a->rec.compute_s;
    st->comm_s[w] += a->rec.comm_s;
    st->wait_s[w] += a->rec.wait_s;
    if (st->record) st->record(st->record_ctx, &a->rec);
    st->src->ops->step_done(st->src->self, w, a->rec.step, policy_now(st));
}

void policy_bsp_step(policy_state *st, int w, long step) {
    step_acc a;
    step_stats stats;
    policy_begin_step(st, w, step, &a);
    if (policy_overlap_on(st)) {
        policy_overlap_step(st, w, step, &a, &stats);
    } else {
        policy_compute(st, w, step, st->pc->batch, &a, &stats);
        policy_sync_world(st, w, policy_sync_id(step, 1), step, AGGREGATE_GRADS, &a);
    }
    st->src->ops->apply_local(st->src->self, w, step);
    a.rec.decision = 1;
    if (w == 0) st->counters.sync_steps++;
    policy_end_step(st, w, &a);
}

/* ---- overlap: bucketed all-reduce during the backward pass ----
 *
 * As PyTorch DDP does it (Li et al., VLDB 2020): the gradients fill buckets of at most
 * bucket_mb MiB in reverse layer order (the order the backward pass produces them); a bucket is
 * closed when it reaches the cap or holds the last gradient, and its all-reduce starts at that
 * moment, while the backward pass goes on. The step ends when every bucket is reduced and the
 * optimizer step is done. The arithmetic is unchanged: the source averages the whole gradient
 * once, when the last bucket completes, so the parameters are the same bit for bit as without
 * overlap. */

#define OVERLAP_IN_FLIGHT 16 /* the exchange's limit of non-blocking calls per group */

int policy_overlap_on(const policy_state *st) {
    const policy_config *pc = st->pc;
    return pc->overlap == POLICY_OVERLAP_ON && !st->has_ps && pc->loss_tolerance <= 0;
}

/* Charges `s` seconds of the modelled compute to worker w. */
static void charge_s(policy_state *st, int w, double s, step_acc *a) {
    static const sim_compute_cfg as_sleep = {.mode = SIM_COMPUTE_TRACE, .scale = 1.0};
    const sim_step_cost sc = {.trace_s = s, .slowdown = 1.0};
    compute_time(st, w, &as_sleep, &sc, policy_now(st), a);
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

/* The backward pass, last layer first, starting each bucket's all-reduce once its gradients are
 * produced; then the wait for the buckets (the exposed communication). */
static void overlap_backward(policy_state *st, int w, long id, const sim_layer_cost *layers, int n,
                             const double *bwd_s, double slowdown, step_acc *a) {
    const double cap = st->pc->bucket_mb * 1024.0 * 1024.0;
    int lowest = 0; /* the first layer with a gradient: it closes the last bucket */
    while (lowest < n - 1 && !(layers[lowest].param_bytes > 0))
        lowest++;
    bucket_queue q = {.head = 0};
    double segment_s = 0, bucket = 0;
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
    double slowdown = compute_source(st, w, step, st->pc->batch, &cost, a, stats);
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
    charge_s(st, w, fwd_s * slowdown, a);
    const long id = policy_sync_id(step, 1);
    const int workers = st->pc->workers;
    overlap_backward(st, w, id, cost.layers, n, bwd, slowdown, a);
    policy_aggregate(st, w, id, AGGREGATE_GRADS, NULL, workers, workers);
    charge_s(st, w, opt_s * slowdown, a);
    free(fwd);
}

/* ---- synchronous exchanges and DLCP ---- */

typedef struct dlcp_slot {
    long id;         /* exchange id (-1: free slot) */
    int key;         /* first member of the group (-1: all workers) */
    int pending;     /* workers that have not aggregated the result yet */
    int n_chunks;    /* K */
    int need;        /* chunks that must arrive: ceil((1 - eps) K) */
    int *order;      /* (K) chunk indices in priority order */
    signed char *go; /* (K) for chunks beyond `need`: -1 undecided, 0 stop, 1 send */
    int sent;        /* chunks sent, once final */
    int final;
    uint8_t *mask;  /* (P) 1 for the entries that arrived */
    double start_s; /* the first member's entry */
} dlcp_slot;

static int group_key(const int *members) {
    return members ? members[0] : -1;
}

/* Slots are allocated one by one: members hold a slot across the collectives they wait in,
 * while other members may add slots. */
static dlcp_slot *dlcp_find(policy_state *st, long id, int key) {
    for (int i = 0; i < st->n_dlcp; i++)
        if (st->dlcp[i]->id == id && st->dlcp[i]->key == key) return st->dlcp[i];
    return NULL;
}

static size_t chunk_floats(const policy_state *st) {
    size_t cf = (size_t)(st->pc->chunk_bytes / sizeof(float));
    return cf < 1 ? 1 : cf;
}

static double chunk_bytes_of(const policy_state *st, int c) {
    size_t cf = chunk_floats(st), p = st->src->param_count;
    size_t lo = (size_t)c * cf, hi = lo + cf < p ? lo + cf : p;
    return (double)(hi - lo) * sizeof(float);
}

/* The slot of an exchange, made by its first member: K chunks, their priority order. */
static dlcp_slot *dlcp_get(policy_state *st, long id, const int *members, int m, int callers,
                           aggregate_what what) {
    int key = group_key(members);
    dlcp_slot *s = dlcp_find(st, id, key);
    if (s) return s;
    for (int i = 0; i < st->n_dlcp && !s; i++)
        if (st->dlcp[i]->id < 0) s = st->dlcp[i];
    if (!s) {
        st->dlcp = realloc(st->dlcp, sizeof(dlcp_slot *) * (size_t)(st->n_dlcp + 1));
        SS_ASSERT(st->dlcp);
        s = ss_calloc(1, sizeof *s);
        st->dlcp[st->n_dlcp++] = s;
    }
    const size_t p = st->src->param_count, cf = chunk_floats(st);
    const int k = (int)((p + cf - 1) / cf);
    s->id = id;
    s->key = key;
    s->pending = callers;
    s->n_chunks = k;
    s->need = (int)ceil((1.0 - st->pc->loss_tolerance) * k - 1e-9);
    if (s->need < 1) s->need = 1;
    if (s->need > k) s->need = k;
    s->order = realloc(s->order, sizeof(int) * (size_t)k);
    s->go = realloc(s->go, (size_t)k);
    s->mask = realloc(s->mask, p);
    SS_ASSERT(s->order && s->go && s->mask);
    for (int c = 0; c < k; c++)
        s->order[c] = c;
    if (st->pc->priority == DLCP_PRIORITY_MAGNITUDE && st->src->ops->chunk_order)
        st->src->ops->chunk_order(st->src->self, what, members, m, cf, k, s->order);
    memset(s->go, -1, (size_t)k);
    s->sent = 0;
    s->final = 0;
    s->start_s = policy_now(st);
    return s;
}

static void dlcp_finish(policy_state *st, dlcp_slot *s, int sent) {
    if (s->final) {
        SS_ASSERT(s->sent == sent); /* every member follows the same decisions */
        return;
    }
    s->final = 1;
    s->sent = sent;
    const size_t p = st->src->param_count, cf = chunk_floats(st);
    memset(s->mask, 0, p);
    for (int i = 0; i < sent; i++) {
        size_t lo = (size_t)s->order[i] * cf, hi = lo + cf < p ? lo + cf : p;
        memset(s->mask + lo, 1, hi - lo);
    }
}

/* Moves `bytes` among the group: all-reduce, or push (and pull of the full parameters) via PS.
 * In the simulation the data stay with the step source (aggregate): no buffer is passed; in
 * real mode the worker's own vector is (the whole of it: DLCP's partial exchanges are not
 * available there), and holds the sum over the members when this returns. */
static double move(policy_state *st, int w, long step, aggregate_what what, exchange_group *g,
                   int me, double bytes, int pull_full) {
    const exchange *ex = st->ex;
    float *buf = policy_buffer(st, w, what);
    const size_t count = buf ? st->src->param_count : (size_t)(bytes / sizeof(float));
    exchange_result r;
    int rc;
    double sent;
    if (st->has_ps) {
        if (pull_full && bytes < st->src->param_bytes) {
            rc = ex->ops->ps_push(ex->self, w, NULL, count, bytes, step, &r);
            SS_ASSERT(rc == SS_OK);
            sent = r.bytes_sent;
            rc = ex->ops->ps_pull(ex->self, w, NULL, st->src->param_count, st->src->param_bytes,
                                  step, &r);
        } else {
            rc = ex->ops->ps_push_pull(ex->self, w, buf, count, bytes, step, &r);
            sent = 0;
        }
        SS_ASSERT(rc == SS_OK);
        if (buf) policy_buffer_done(st, w, what);
        /* the servers' replies are bytes on the network too: counted once, at the receiver */
        return sent + r.bytes_sent + r.bytes_recv;
    }
    rc = ex->ops->allreduce(ex->self, g, me, buf, count, bytes, &r);
    SS_ASSERT(rc == SS_OK);
    if (buf) policy_buffer_done(st, w, what);
    return r.bytes_sent;
}

void policy_exchange(policy_state *st, int w, long id, long step, aggregate_what what,
                     exchange_group *g, int me, const int *members, int m, int callers,
                     step_acc *a) {
    const policy_config *pc = st->pc;
    SS_ASSERT(!st->has_ps || members == NULL); /* the servers serve all workers */
    const int key = group_key(members);
    double entry = policy_sync_enter(st, id, key);
    if (pc->loss_tolerance <= 0) {
        policy_sync_leave(st, id, key, entry,
                          move(st, w, step, what, g, me, st->src->param_bytes, 0), a);
        return;
    }
    dlcp_slot *s = dlcp_get(st, id, members, m, callers, what);
    double must = 0;
    for (int i = 0; i < s->need; i++)
        must += chunk_bytes_of(st, s->order[i]);
    double bytes = move(st, w, step, what, g, me, must, 1);
    int sent = s->need;
    if (pc->deadline_s > 0 && !st->has_ps) {
        while (sent < s->n_chunks) {
            if (s->go[sent] < 0) s->go[sent] = policy_now(st) < s->start_s + pc->deadline_s;
            if (!s->go[sent]) break;
            bytes += move(st, w, step, what, g, me, chunk_bytes_of(st, s->order[sent]), 0);
            sent++;
        }
    }
    dlcp_finish(st, s, sent);
    double sent_bytes = 0;
    for (int i = 0; i < sent; i++)
        sent_bytes += chunk_bytes_of(st, s->order[i]);
    double dropped = st->src->param_bytes - sent_bytes;
    double took = policy_now(st) - entry;
    st->res->dlcp_bytes_total += st->src->param_bytes;
    st->res->dlcp_bytes_dropped += dropped;
    if (sent_bytes > 0) st->res->dlcp_time_saved_s += took * dropped / sent_bytes / pc->workers;
    policy_sync_leave(st, id, key, entry, bytes, a);
}

void policy_aggregate(policy_state *st, int w, long id, aggregate_what what, const int *members,
                      int m, int callers) {
    dlcp_slot *s = st->pc->loss_tolerance > 0 ? dlcp_find(st, id, group_key(members)) : NULL;
    long seq = st->agg_seq[w]++;
    const uint8_t *mask = s && s->sent < s->n_chunks ? s->mask : NULL;
    st->src->ops->aggregate(st->src->self, w, seq, members, m, callers, what, mask,
                            st->pc->drop_keep_local);
    if (s && --s->pending == 0) s->id = -1;
}

void policy_sync_world(policy_state *st, int w, long id, long step, aggregate_what what,
                       step_acc *a) {
    const int n = st->pc->workers;
    policy_exchange(st, w, id, step, what, st->world, w, NULL, n, n, a);
    policy_aggregate(st, w, id, what, NULL, n, n);
}

void policy_dlcp_free(policy_state *st) {
    for (int i = 0; i < st->n_dlcp; i++) {
        free(st->dlcp[i]->order);
        free(st->dlcp[i]->go);
        free(st->dlcp[i]->mask);
        free(st->dlcp[i]);
    }
    free(st->dlcp);
    st->dlcp = NULL;
    st->n_dlcp = 0;
}
