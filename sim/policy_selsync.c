/* SelSync as a worker protocol: local update, EWMA of the gradient norm, relative change Delta,
 * flags all-gathered every step, and parameter (or gradient) averaging on the steps where any
 * flag is set; with data injection, some workers share part of their batch with the others
 * before computing. The injecting workers come from a random stream seeded identically on every
 * worker; the decision from the all-gathered flags, so every worker takes the same. */
#include "common/status.h"
#include "sim/policy_inject.h"
#include "sim/policy_internal.h"
#include "sim/policy_workers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The EWMA of SelSync: a weighted mean of the last `window` values, the value of age k (1 for the
 * newest) weighted by (1 - alpha)^k, as the public code computes it. It is defined once the
 * window has filled. */
#define SELSYNC_MAX_WINDOW 1024
typedef struct selsync_ewma {
    double alpha;
    int window;                        /* W */
    double values[SELSYNC_MAX_WINDOW]; /* ring of the last W values */
    long count;                        /* values seen */
} selsync_ewma;

static void ewma_init(selsync_ewma *e, double alpha, int window) {
    memset(e, 0, sizeof *e);
    e->alpha = alpha;
    e->window = window < 1 ? 1 : window > SELSYNC_MAX_WINDOW ? SELSYNC_MAX_WINDOW : window;
}

/* Adds a value; returns 1 and the smoothed value once the window is full, else 0. */
static int ewma_add(selsync_ewma *e, double v, double *smoothed) {
    e->values[e->count % e->window] = v;
    e->count++;
    if (e->count < e->window) return 0;
    double sum = 0, weights = 0, w = 1.0;
    for (int age = 1; age <= e->window; age++) {
        w *= 1.0 - e->alpha;
        sum += w * e->values[(e->count - age) % e->window];
        weights += w;
    }
    *smoothed = weights > 0 ? sum / weights : v;
    return 1;
}

/* SelSync's relative gradient change. Paper: Delta = (E_i - E_{i-1}) / E_{i-1} of the
 * smoothed global norm. Public code: |Delta| of the smoothed sum of per-layer norms, smoothed by
 * a second EWMA. `defined` is 0 while the windows are still filling (the step synchronizes). */
typedef struct selsync_tracker {
    selsync_variant variant;
    selsync_ewma norm;  /* E||g|| */
    selsync_ewma delta; /* code variant: E|Delta| */
    double prev;        /* E||g|| of the previous step (0: none yet) */
} selsync_tracker;

static double selsync_delta(selsync_tracker *t, double norm, int *defined) {
    double e, d = 0.0;
    *defined = 0;
    if (!ewma_add(&t->norm, norm, &e)) return 0.0;
    double prev = t->prev;
    t->prev = e;
    if (prev <= 0) return 0.0;
    d = (e - prev) / prev;
    if (t->variant == SELSYNC_VARIANT_PAPER) {
        *defined = 1;
        return d;
    }
    double smoothed;
    *defined = ewma_add(&t->delta, fabs(d), &smoothed);
    return *defined ? smoothed : fabs(d);
}

/* Data injection (non-IID): round(alpha N) workers, drawn alike on every worker, each send
 * round(beta b') samples of their batch to every other worker, point to point. All the messages
 * of a step are in flight together (policy_inject.h), as real point-to-point exchanges are; the
 * received samples join the batch in rank order of their senders. A sender cannot have computed
 * the step before its messages arrive, so the samples taken are those of the step. */
static void selsync_inject(policy_state *st, int w, int local_batch, rng *r, int *order,
                           uint8_t *chosen, step_acc *a) {
    const policy_config *pc = st->pc;
    const int n = pc->workers;
    int k = (int)lround(pc->inject_alpha * n);
    int share = (int)lround(pc->inject_beta * local_batch);
    if (k < 1 || share < 1 || n < 2) return;
    for (int i = 0; i < n; i++)
        order[i] = i;
    rng_shuffle(r, order, (size_t)n);
    memset(chosen, 0, (size_t)n);
    for (int i = 0; i < k && i < n; i++)
        chosen[order[i]] = 1;
    /* the samples are taken before the messages: once they have arrived a sender may go on and
     * draw its next batch, and a receiver resumed after it would take those instead */
    for (int s = 0; s < n; s++)
        if (chosen[s] && s != w) st->src->ops->inject(st->src->self, s, w, share);
    const double bytes = share * st->src->sample_bytes;
    const size_t count = (size_t)(bytes / sizeof(float));
    inject_times t;
    int rc = policy_inject_exchange(st->ex, st->world, w, n, chosen, bytes, count, &t);
    SS_ASSERT(rc == SS_OK);
    a->rec.comm_s += t.send_s;
    a->rec.wait_s += t.recv_wait_s;
    a->rec.bytes_sent += t.bytes_sent;
    st->counters.bytes_sent += t.bytes_sent;
}

/* SelSync data injection: injected samples join a worker's own b' = b / (1 + alpha beta N). */
int policy_selsync_local_batch(const policy_config *pc) {
    if (pc->inject_alpha <= 0 || pc->inject_beta <= 0) return pc->batch;
    double b = pc->batch / (1.0 + pc->inject_alpha * pc->inject_beta * pc->workers);
    int lb = (int)lround(b);
    return lb < 1 ? 1 : lb;
}

/* Room for the own samples and every other worker's share. */
int policy_selsync_max_batch(const policy_config *pc) {
    if (pc->inject_alpha <= 0) return pc->batch;
    const int local_batch = policy_selsync_local_batch(pc);
    int share = (int)lround(pc->inject_beta * local_batch);
    return local_batch + share * (pc->workers - 1);
}

void policy_selsync_worker(void *arg) {
    worker_arg *wa = arg;
    policy_state *st = wa->st;
    const int w = wa->rank;
    const policy_config *pc = st->pc;
    const step_source_ops *ops = st->src->ops;
    double alpha = pc->ewma_alpha > 0                     ? pc->ewma_alpha
                   : pc->variant == SELSYNC_VARIANT_PAPER ? pc->workers / 100.0
                                                          : 0.01;
    if (alpha > 1.0) alpha = 1.0;
    selsync_tracker tracker;
    memset(&tracker, 0, sizeof tracker);
    tracker.variant = pc->variant;
    ewma_init(&tracker.norm, alpha, pc->ewma_window);
    ewma_init(&tracker.delta, alpha, pc->ewma_window);
    const int local_batch = policy_selsync_local_batch(pc);
    const int injecting = pc->inject_alpha > 0 && pc->inject_beta > 0;
    rng inject_rng;
    rng_seed(&inject_rng, pc->seed, RNG_STREAM_POLICY + 2);
    int *inject_order = ss_malloc(sizeof(int) * (size_t)pc->workers);
    uint8_t *inject_chosen = ss_malloc((size_t)pc->workers);
    uint8_t *flags = ss_malloc((size_t)pc->workers); /* everybody's flag of the step */
    const int step_first =
        pc->aggregation == AGGREGATE_PARAMS && pc->order == SELSYNC_ORDER_STEP_THEN_AVERAGE;

    for (long step = 1; policy_go(st, step); step++) {
        step_acc a;
        step_stats stats;
        policy_begin_step(st, w, step, &a);
        if (injecting)
            selsync_inject(st, w, local_batch, &inject_rng, inject_order, inject_chosen, &a);
        policy_compute(st, w, step, local_batch, &a, &stats);
        if (step_first) ops->apply_local(st->src->self, w, step);

        double norm = pc->variant == SELSYNC_VARIANT_CODE ? stats.layer_norm_sum : stats.grad_norm;
        int defined;
        double delta = selsync_delta(&tracker, norm, &defined);
        /* delta = 0 is BSP by definition; steps before Delta is defined synchronize (warm-up),
         * unless the window is 0. */
        int flag = pc->delta <= 0 || (!defined && pc->ewma_window > 0) || delta >= pc->delta;
        a.rec.delta = delta;

        /* The flags' all-gather is charged every step. */
        const uint8_t mine = (uint8_t)flag;
        const long fid = policy_sync_id(step, 0);
        exchange_result cr;
        double entry = policy_sync_enter(st, fid, -1);
        int rc = st->ex->ops->allgather(st->ex->self, st->world, w, &mine, flags, 1, pc->flag_bytes,
                                        &cr);
        SS_ASSERT(rc == SS_OK);
        policy_sync_leave(st, fid, -1, entry, cr.bytes_sent, &a);
        int sync = 0;
        for (int i = 0; i < pc->workers; i++)
            sync |= flags[i];
        int forced = ops->forced_decision ? ops->forced_decision(st->src->self, step) : -1;
        if (forced >= 0) sync = forced;

        if (sync) {
            policy_sync_world(st, w, policy_sync_id(step, 1), step, pc->aggregation, &a);
            if (!step_first) ops->apply_local(st->src->self, w, step);
            if (w == 0) st->counters.sync_steps++;
        } else if (!step_first) {
            ops->apply_local(st->src->self, w, step);
        }
        a.rec.decision = sync;
        policy_end_step(st, w, &a);
    }
    free(inject_order);
    free(inject_chosen);
    free(flags);
}
