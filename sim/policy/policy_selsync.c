/* SelSync as a worker protocol: local update, EWMA of the gradient norm, relative change Delta,
 * flags all-gathered every step, and parameter (or gradient) averaging on the steps where any
 * flag is set; with data injection, some workers share part of their batch with the others
 * before computing. The injecting workers come from a random stream seeded identically on every
 * worker; the decision from the all-gathered flags, so every worker takes the same. */
#include "common/sorted.h"
#include "common/status.h"
#include "sim/policy/policy_inject.h"
#include "sim/policy/policy_internal.h"
#include "sim/policy/policy_workers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The EWMA of SelSync: a weighted mean of the last `window` values, the value of age k (1 for the
 * newest) weighted by (1 - alpha)^k, as the public code computes it. It is defined once the
 * window has filled. */
#define SELSYNC_MAX_WINDOW      1024
#define SELSYNC_MIN_CALIBRATION 10 /* --delta auto: at least this many calibration steps */
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

long policy_selsync_warmup_steps(const policy_config *pc) {
    if (pc->kind != POLICY_SELSYNC || pc->ewma_window <= 0) return 0;
    /* the norm's window fills at step W, Delta needs the previous smoothed norm: defined from
     * step W + 1; the code variant smooths |Delta| over W more values */
    const long w = pc->ewma_window;
    return pc->variant == SELSYNC_VARIANT_CODE ? 2 * w - 1 : w;
}

long policy_selsync_calibration_steps(const policy_config *pc) {
    if (pc->kind != POLICY_SELSYNC || pc->delta >= 0) return 0;
    return pc->ewma_window > SELSYNC_MIN_CALIBRATION ? pc->ewma_window : SELSYNC_MIN_CALIBRATION;
}

/* --delta auto:R (syncsim's extension, not the paper's method): during the calibration steps the
 * workers all-gather their Delta (8 bytes each instead of the 1-byte flag) and synchronize; the
 * step synchronizes later when any Delta >= delta, i.e. when the step's largest Delta reaches it,
 * so delta is the R-quantile of the largest Delta of the calibration steps: a share R of steps
 * like those would have stayed local. Every worker sees the same values and picks the same delta.
 */
typedef struct selsync_auto {
    double target;     /* R */
    long first, end;   /* calibration steps [first, end) */
    double *max_delta; /* the calibration's largest Delta per step, then (--delta-every K) those
                          of the steps since delta was last chosen */
    long n;
    double delta;   /* chosen at step `end`, and with K every K steps after it */
    double *sorted; /* scratch for the quantile */
} selsync_auto;

static double auto_quantile(selsync_auto *au) {
    if (au->n == 0) return 0.0;
    memcpy(au->sorted, au->max_delta, sizeof(double) * (size_t)au->n);
    sorted_doubles(au->sorted, (size_t)au->n);
    long k = (long)ceil(au->target * (double)au->n) - 1;
    if (k < 0) k = 0;
    if (k >= au->n) k = au->n - 1;
    /* strictly above the k-th value: k + 1 of n calibration steps would have stayed local */
    return nextafter(au->sorted[k], INFINITY);
}

/* Records a newly chosen delta in the result (worker 0 only: every worker chooses the same). */
static void auto_record(policy_state *st, int w, const selsync_auto *au) {
    if (w != 0) return;
    policy_result *r = st->res;
    r->delta_chosen = au->delta;
    if (r->delta_choices == 0 || au->delta < r->delta_chosen_min) r->delta_chosen_min = au->delta;
    if (r->delta_choices == 0 || au->delta > r->delta_chosen_max) r->delta_chosen_max = au->delta;
    r->delta_choices++;
}

/* Chooses delta from the values gathered since the last choice, records it, and starts a new
 * window. */
static void auto_choose(policy_state *st, int w, selsync_auto *au) {
    au->delta = auto_quantile(au);
    auto_record(st, w, au);
    au->n = 0;
}

/* The largest of the workers' values. */
static double largest(const double *all, int n) {
    double m = all[0];
    for (int i = 1; i < n; i++)
        m = all[i] > m ? all[i] : m;
    return m;
}

/* All-gathers one double per worker, charged as `bytes` each (a gather keeps one size per group,
 * so with auto even the flags travel as doubles in memory; they are charged as flags). */
static void gather_doubles(policy_state *st, int w, long step, double mine, double bytes,
                           double *all, step_acc *a) {
    const long fid = policy_sync_id(step, 0);
    exchange_result cr;
    double entry = policy_sync_enter(st, fid, -1);
    int rc =
        st->ex->ops->allgather(st->ex->self, st->world, w, &mine, all, sizeof(double), bytes, &cr);
    SS_ASSERT(rc == SS_OK);
    policy_sync_leave(st, fid, -1, entry, cr.bytes_sent, a);
}

/* Everybody's Delta all-gathered, the step's largest added to the window; returns 1 (a
 * calibration step synchronizes). */
static int auto_calibrate(policy_state *st, int w, long step, double delta, selsync_auto *au,
                          double *all, step_acc *a) {
    gather_doubles(st, w, step, delta, (double)sizeof(double), all, a);
    au->max_delta[au->n++] = largest(all, st->pc->workers);
    return 1;
}

/* --delta-every K after the calibration: everybody's Delta, as in the calibration, decides the
 * step against the current delta and joins the K values the next delta is chosen from. */
static int auto_track(policy_state *st, int w, long step, double delta, selsync_auto *au,
                      double *all, step_acc *a) {
    const long k = st->pc->delta_every;
    if (step > au->end && (step - au->end) % k == 0) auto_choose(st, w, au);
    auto_calibrate(st, w, step, delta, au, all, a);
    return au->max_delta[au->n - 1] >= au->delta;
}

/* Whether the step synchronizes: the flags all-gathered (charged every step), or with auto the
 * calibration's exchange of Delta; with auto, delta is chosen at the calibration's end. */
static int selsync_decide(policy_state *st, int w, long step, double delta, int defined,
                          selsync_auto *au, uint8_t *flags, double *all_delta, step_acc *a) {
    const policy_config *pc = st->pc;
    const int automatic = pc->delta < 0; /* its chosen delta may be any real */
    if (automatic && step == au->end) auto_choose(st, w, au);
    if (automatic && step >= au->first && step < au->end)
        return auto_calibrate(st, w, step, delta, au, all_delta, a);
    if (automatic && pc->delta_every > 0 && step >= au->end)
        return auto_track(st, w, step, delta, au, all_delta, a);
    /* delta = 0 is BSP by definition; steps before Delta is defined synchronize (warm-up),
     * unless the window is 0; auto synchronizes until delta is chosen. */
    const int flag = (!automatic && pc->delta == 0) || (!defined && pc->ewma_window > 0) ||
                     (automatic && step < au->end) || delta >= au->delta;
    int sync = 0;
    if (automatic) {
        gather_doubles(st, w, step, flag, pc->flag_bytes, all_delta, a);
        for (int i = 0; i < pc->workers; i++)
            sync |= all_delta[i] != 0;
        return sync;
    }
    const uint8_t mine = (uint8_t)flag;
    const long fid = policy_sync_id(step, 0);
    exchange_result cr;
    double entry = policy_sync_enter(st, fid, -1);
    int rc =
        st->ex->ops->allgather(st->ex->self, st->world, w, &mine, flags, 1, pc->flag_bytes, &cr);
    SS_ASSERT(rc == SS_OK);
    policy_sync_leave(st, fid, -1, entry, cr.bytes_sent, a);
    for (int i = 0; i < pc->workers; i++)
        sync |= flags[i];
    return sync;
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
    selsync_auto au = {.target = -pc->delta, .delta = pc->delta};
    double *all_delta = NULL;
    if (pc->delta < 0) {
        au.first = policy_selsync_warmup_steps(pc) + 1;
        au.end = au.first + policy_selsync_calibration_steps(pc);
        long n = au.end - au.first;
        if (pc->delta_every > n) n = pc->delta_every < pc->steps ? pc->delta_every : pc->steps;
        au.max_delta = ss_malloc(sizeof(double) * (size_t)n);
        au.sorted = ss_malloc(sizeof(double) * (size_t)n);
        all_delta = ss_malloc(sizeof(double) * (size_t)pc->workers);
    }

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
        a.rec.delta = delta;
        int sync = selsync_decide(st, w, step, delta, defined, &au, flags, all_delta, &a);
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
    free(au.max_delta);
    free(au.sorted);
    free(all_delta);
    free(inject_order);
    free(inject_chosen);
    free(flags);
}
