/* The step helpers every worker protocol is written with: a step's start, compute and end, and
 * the wait/comm split of a synchronization. Messages go through the exchange (exchange.h) only;
 * the synchronous exchanges are policy_exchange.c, the overlapped step policy_overlap.c. */
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

double policy_compute_begin(policy_state *st, int w, long step, int batch, step_cost *cost,
                            step_acc *a, step_stats *stats) {
    *cost = (step_cost){.trace_s = -1};
    memset(stats, 0, sizeof *stats);
    const step_source_ops *ops = st->src->ops;
    if (ops->compute_begin)
        ops->compute_begin(st->src->self, w, step, batch, cost);
    else
        ops->compute(st->src->self, w, step, batch, cost, stats);
    a->rec.flops = cost->flops;
    return step_slowdown(st, w, step);
}

void policy_compute_end(policy_state *st, int w, step_cost *cost, step_acc *a, step_stats *stats) {
    const step_source_ops *ops = st->src->ops;
    if (ops->compute_begin) ops->compute_end(st->src->self, w, cost, stats);
    a->rec.loss = stats->loss;
    a->rec.grad_norm = stats->grad_norm;
    a->rec.samples = stats->samples;
}

void policy_yield(policy_state *st) {
    if (st->ex->ops->yield) st->ex->ops->yield(st->ex->self);
}

/* The step's computation takes its time through the exchange (the model's time in the
 * simulation; in real mode it took its real time, and a straggler waits the extra): from t0, when
 * the source began it, to now. */
void policy_compute_time(policy_state *st, int w, const sim_compute_cfg *cc,
                         const sim_step_cost *sc, double t0, step_acc *a) {
    int rc = st->ex->ops->compute(st->ex->self, w, cc, sc, t0);
    SS_ASSERT(rc == SS_OK);
    a->rec.compute_s += policy_now(st) - t0;
}

void policy_pass_until(policy_state *st, int w, double t) {
    static const sim_compute_cfg as_sleep = {.mode = SIM_COMPUTE_TRACE, .scale = 1.0};
    const double now = policy_now(st);
    if (!(t > now)) return;
    const sim_step_cost sc = {.trace_s = t - now, .slowdown = 1.0};
    int rc = st->ex->ops->compute(st->ex->self, w, &as_sleep, &sc, now);
    SS_ASSERT(rc == SS_OK);
}

float *policy_buffer(const policy_state *st, int w, int what) {
    if (!st->src->ops->buffer) return NULL;
    return st->src->ops->buffer(st->src->self, w, what);
}

void policy_buffer_done(const policy_state *st, int w, int what) {
    if (st->src->ops->buffer_done) st->src->ops->buffer_done(st->src->self, w, what);
}

/* The step's real work runs while its simulated time passes (the other workers submit theirs
 * meanwhile), and its result is taken after. A measured duration is known only once the work is
 * done: the workers starting at this instant all submit first, then each waits for its own. */
void policy_compute(policy_state *st, int w, long step, int batch, step_acc *a, step_stats *stats) {
    step_cost cost;
    const double t0 = policy_now(st);
    double slowdown = policy_compute_begin(st, w, step, batch, &cost, a, stats);
    const int measured = st->pc->compute.mode == SIM_COMPUTE_MEASURED;
    if (measured) {
        policy_yield(st);
        policy_compute_end(st, w, &cost, a, stats);
    }
    sim_step_cost sc = {.flops = cost.flops,
                        .measured_s = cost.measured_s,
                        .trace_s = cost.trace_s,
                        .slowdown = slowdown,
                        .layers = cost.layers,
                        .n_layers = cost.n_layers};
    policy_compute_time(st, w, &st->pc->compute, &sc, t0, a);
    if (!measured) policy_compute_end(st, w, &cost, a, stats);
}

/* The slot of synchronization `id` among all workers (key -1) or in the group whose first member
 * is `key`. */
static sync_slot *sync_slot_of(policy_state *st, long id, int key) {
    return &st->slots[(size_t)(key + 1) * SYNC_SLOTS + (size_t)(id % SYNC_SLOTS)];
}

double policy_sync_enter(policy_state *st, long id, int key) {
    return policy_sync_enter_at(st, id, key, policy_now(st));
}

double policy_sync_enter_at(policy_state *st, long id, int key, double now) {
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
