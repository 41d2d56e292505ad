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
#include "sim/policy_internal.h"

#include <limits.h>

static long min_clock(const policy_state *st) {
    long m = st->clock[0];
    for (int i = 1; i < st->pc->workers; i++)
        if (st->clock[i] < m) m = st->clock[i];
    return m;
}

static void hist_add(long *hist, long *max, long v) {
    if (v < 0) v = 0;
    if (v > *max) *max = v;
    hist[v < POLICY_STALENESS_BINS - 1 ? v : POLICY_STALENESS_BINS - 1]++;
}

static void on_push(void *ctx, int server, int worker, int64_t round, const void *payload,
                    double now_s) {
    (void)payload;
    (void)now_s;
    policy_state *st = ctx;
    if (server == 0) {
        hist_add(st->res->update_staleness_hist, &st->res->max_update_staleness,
                 st->ps_version - st->pulled_version[worker]);
        st->ps_version++;
    }
    st->src->ops->ps_apply(st->src->self, worker, (long)round, server, st->pc->ps_servers);
}

static void on_pull(void *ctx, int server, int worker, int64_t round, double now_s) {
    (void)round;
    (void)now_s;
    policy_state *st = ctx;
    if (server == 0) st->pulled_version[worker] = st->ps_version;
    st->src->ops->ps_pull(st->src->self, worker, server, st->pc->ps_servers);
}

void policy_ssp_hooks(sim_ps_hooks *hooks, policy_state *st) {
    hooks->ctx = st;
    hooks->on_push = on_push;
    hooks->on_pull = on_pull;
    hooks->pull_ready = NULL;
}

void policy_worker_ssp(void *arg) {
    worker_arg *wa = arg;
    policy_state *st = wa->st;
    const policy_config *pc = st->pc;
    const int w = wa->rank;
    const long s = pc->kind == POLICY_ASP ? -1 : pc->staleness;
    for (long step = 1; policy_go(st, step); step++) {
        step_acc a;
        step_stats stats;
        policy_begin_step(st, w, step, &a);

        double t0 = policy_now();
        sg_mutex_lock(st->mutex);
        if (s >= 0)
            while (st->clock[w] - min_clock(st) > s)
                sg_cond_wait(st->clock_advanced, st->mutex);
        hist_add(st->res->clock_gap_hist, &st->res->max_clock_gap, st->clock[w] - min_clock(st));
        sg_mutex_unlock(st->mutex);
        a.rec.wait_s += policy_now() - t0;

        policy_compute(st, w, step, pc->batch, &a, &stats);

        sim_coll_result r;
        double t1 = policy_now();
        int rc = sim_ps_push(st->ps, w, st->src->param_bytes, step, NULL, &r);
        SS_ASSERT(rc == SS_OK);
        a.rec.bytes_sent += r.bytes_sent;
        rc = sim_ps_pull(st->ps, w, st->src->param_bytes, step, &r);
        SS_ASSERT(rc == SS_OK);
        /* request bytes from the worker, and the servers' replies */
        a.rec.bytes_sent += r.bytes_sent + r.bytes_recv;
        a.rec.comm_s += policy_now() - t1;
        st->counters.bytes_sent += a.rec.bytes_sent;
        a.rec.decision = 1;

        sg_mutex_lock(st->mutex);
        st->clock[w] = step;
        if (min_clock(st) == step) st->counters.sync_steps++;
        sg_cond_notify_all(st->clock_advanced);
        sg_mutex_unlock(st->mutex);
        policy_end_step(st, w, &a);
    }
    /* A worker that ends early (the run stopped) no longer holds the others back. */
    sg_mutex_lock(st->mutex);
    st->clock[w] = LONG_MAX / 2;
    sg_cond_notify_all(st->clock_advanced);
    sg_mutex_unlock(st->mutex);
}
