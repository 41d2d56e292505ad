/* SSP and ASP as worker protocols around asynchronous parameter servers.
 *
 * Worker w, step c+1 (it has completed c steps):
 *   1. waits while c - min_j c_j > s (the staleness bound; s < 0 is ASP: never waits);
 *   2. computes the gradient on its replica (the parameters it pulled last);
 *   3. pushes it: each server applies its shard at the simulated moment it arrives (on_push);
 *   4. pulls: each server's shard is copied into the replica at the moment the reply leaves the
 *      server (on_pull), so the parameters are those of that moment, with whatever other workers'
 *      updates arrived before;
 *   5. completes step c+1 and wakes the workers waiting on the bound.
 * Staleness is therefore whatever the simulated timing makes it. Two measures are kept: the
 * clock gap c - min_j c_j when a step starts (never above s), and the update staleness: how many
 * pushes of other workers server 0 applied between this worker's pull and its push. */
#include "common/status.h"
#include "sim/policy/policy_internal.h"
#include "sim/policy/policy_workers.h"

static void hist_add(long *hist, long *max, long v) {
    if (v < 0) v = 0;
    if (v > *max) *max = v;
    hist[v < POLICY_STALENESS_BINS - 1 ? v : POLICY_STALENESS_BINS - 1]++;
}

static void on_push(void *ctx, int server, int worker, int64_t round, const void *payload) {
    (void)payload;
    policy_state *st = ctx;
    if (server == 0) {
        hist_add(st->res->update_staleness_hist, &st->res->max_update_staleness,
                 st->ps_version - st->pulled_version[worker]);
        st->ps_version++;
    }
    policy_buffer_done(st, worker, AGGREGATE_GRADS); /* real mode: what the push brought */
    policy_buffer_done(st, worker, STEP_BUFFER_PS);
    st->src->ops->ps_apply(st->src->self, worker, (long)round, server, st->pc->ps_servers);
}

static void on_pull(void *ctx, int server, int worker, int64_t round) {
    (void)round;
    policy_state *st = ctx;
    if (server == 0) st->pulled_version[worker] = st->ps_version;
    st->src->ops->ps_pull(st->src->self, worker, server, st->pc->ps_servers);
}

/* Real mode, on a server rank: a push lands in the pushing worker's gradient there (ps_apply
 * reads it), a pull reply carries the server's parameters. */
static float *push_buffer(void *ctx, int server, int worker) {
    (void)server;
    const policy_state *st = ctx;
    return st->src->ops->buffer(st->src->self, worker, AGGREGATE_GRADS);
}

static float *pull_buffer(void *ctx, int server) {
    (void)server;
    const policy_state *st = ctx;
    return st->src->ops->buffer(st->src->self, 0, STEP_BUFFER_PS);
}

void policy_ssp_hooks(exchange_ps_hooks *hooks, struct policy_state *st) {
    hooks->ctx = st;
    hooks->on_push = on_push;
    hooks->on_pull = on_pull;
    if (st->src->ops->buffer) {
        hooks->push_buffer = push_buffer;
        hooks->pull_buffer = pull_buffer;
    }
}

/* Steps 2 to 4 of a step: gradient, push, pull. */
static void ssp_compute_push_pull(policy_state *st, int w, long step, step_acc *a) {
    const exchange *ex = st->ex;
    const step_source *src = st->src;
    step_stats stats;
    policy_compute(st, w, step, st->pc->batch, a, &stats);
    exchange_result r;
    double t1 = policy_now(st);
    /* real mode: the gradient goes out, the servers' parameters come back into the replica */
    int rc = ex->ops->ps_push(ex->self, w, policy_buffer(st, w, AGGREGATE_GRADS), src->param_count,
                              src->param_bytes + src->state_bytes, step, &r);
    SS_ASSERT(rc == SS_OK);
    a->rec.bytes_sent += r.bytes_sent;
    rc = ex->ops->ps_pull(ex->self, w, policy_buffer(st, w, AGGREGATE_PARAMS), src->param_count,
                          src->param_bytes + src->state_bytes, step, &r);
    SS_ASSERT(rc == SS_OK);
    policy_buffer_done(st, w, AGGREGATE_GRADS);
    policy_buffer_done(st, w, AGGREGATE_PARAMS);
    /* request bytes from the worker, and the servers' replies */
    a->rec.bytes_sent += r.bytes_sent + r.bytes_recv;
    a->rec.comm_s += policy_now(st) - t1;
    st->counters.bytes_sent += a->rec.bytes_sent;
}

void policy_ssp_worker(void *arg) {
    worker_arg *wa = arg;
    policy_state *st = wa->st;
    const exchange *ex = st->ex;
    const int w = wa->rank;
    const long s = st->pc->kind == POLICY_ASP ? -1 : st->pc->staleness;
    for (long step = 1; policy_go(st, step); step++) {
        step_acc a;
        policy_begin_step(st, w, step, &a);

        double t0 = policy_now(st);
        long gap = ex->ops->clock_wait(ex->self, w, s);
        hist_add(st->res->clock_gap_hist, &st->res->max_clock_gap, gap);
        a.rec.wait_s += policy_now(st) - t0;

        ssp_compute_push_pull(st, w, step, &a);
        a.rec.decision = 1;

        ex->ops->clock_advance(ex->self, w, step, &st->counters.sync_steps);
        policy_end_step(st, w, &a);
    }
    /* A worker that ends early (the run stopped) no longer holds the others back. */
    ex->ops->clock_advance(ex->self, w, EXCHANGE_CLOCK_DONE, NULL);
}
