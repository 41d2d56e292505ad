/* The synchronous family as worker protocols: BSP, FedAvg / local SGD (with client sampling and
 * post-local SGD) and SelSync (with data injection). Every worker runs the same code; decisions
 * that must agree (clients of a round, injecting workers) come from a random stream seeded
 * identically on every worker, and SelSync's decision from the all-gathered flags. */
#include "common/status.h"
#include "sim/policy_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Synchronization ids: two per global step (flags, then the exchange), so ids grow. */
static long sync_id(long step, int which) {
    return 2 * step + which;
}

/* ---- BSP ---- */

static void bsp_step(policy_state *st, int w, long step) {
    step_acc a;
    step_stats stats;
    policy_begin_step(st, w, step, &a);
    policy_compute(st, w, step, st->pc->batch, &a, &stats);
    policy_sync_world(st, w, sync_id(step, 1), step, AGGREGATE_GRADS, &a);
    st->src->ops->apply_local(st->src->self, w, step);
    a.rec.decision = 1;
    if (w == 0) st->counters.sync_steps++;
    policy_end_step(st, w, &a);
}

/* ---- FedAvg / local SGD ---- */

/* The clients of a round: m = max(1, round(C N)) workers, sorted. Same on every worker. */
static int draw_clients(const policy_config *pc, rng *r, int *clients) {
    int n = pc->workers;
    int m = (int)lround(pc->client_fraction * n);
    if (m < 1) m = 1;
    if (m >= n) {
        for (int i = 0; i < n; i++)
            clients[i] = i;
        return n;
    }
    int *all = ss_malloc(sizeof(int) * (size_t)n);
    for (int i = 0; i < n; i++)
        all[i] = i;
    rng_shuffle(r, all, (size_t)n);
    memcpy(clients, all, sizeof(int) * (size_t)m);
    free(all);
    for (int i = 1; i < m; i++) /* insertion sort: member order = rank order */
        for (int j = i; j > 0 && clients[j - 1] > clients[j]; j--) {
            int t = clients[j];
            clients[j] = clients[j - 1];
            clients[j - 1] = t;
        }
    return m;
}

static void fedavg_worker(policy_state *st, int w) {
    const policy_config *pc = st->pc;
    const long t_switch = pc->post_local_after;
    long step = 1;
    for (; step <= t_switch && policy_go(st, step); step++)
        bsp_step(st, w, step);

    rng r;
    rng_seed(&r, pc->seed, RNG_STREAM_POLICY + 1);
    int *clients = ss_malloc(sizeof(int) * (size_t)pc->workers);
    sim_comm *world = st->world;
    while (policy_go(st, step)) {
        const long round_first = step;
        long round_last = step + pc->local_steps - 1;
        if (round_last > pc->steps) round_last = pc->steps;
        const int m = draw_clients(pc, &r, clients);
        int me = -1; /* my index among the clients, -1 if not sampled */
        for (int i = 0; i < m; i++)
            if (clients[i] == w) me = i;
        step_acc a;
        step_stats stats;
        if (me >= 0) {
            for (step = round_first; step < round_last; step++) {
                policy_begin_step(st, w, step, &a);
                policy_compute(st, w, step, pc->batch, &a, &stats);
                st->src->ops->apply_local(st->src->self, w, step);
                policy_end_step(st, w, &a);
            }
            /* The last step of the round: local update, then averaging among the clients. */
            policy_begin_step(st, w, step, &a);
            policy_compute(st, w, step, pc->batch, &a, &stats);
            st->src->ops->apply_local(st->src->self, w, step);
        } else {
            step = round_last;
            policy_begin_step(st, w, step, &a);
        }
        const long id = sync_id(step, 1);
        const int all = m == pc->workers;
        sim_coll_result cr;
        if (me >= 0) {
            sim_comm *group = all ? world : sim_cluster_group(st->cluster, clients, m);
            policy_exchange(st, w, id, step, AGGREGATE_PARAMS, group, me, all ? NULL : clients, m,
                            pc->workers, &a);
        }
        if (m < pc->workers) {
            /* The new model reaches the workers that sat the round out. */
            double entry = policy_now();
            int rc = sim_broadcast(world, w, clients[0], st->src->param_bytes, &cr);
            SS_ASSERT(rc == SS_OK);
            a.rec.comm_s += policy_now() - entry;
            a.rec.bytes_sent += cr.bytes_sent;
            st->counters.bytes_sent += cr.bytes_sent;
        }
        policy_aggregate(st, w, id, AGGREGATE_PARAMS, all ? NULL : clients, m, pc->workers);
        a.rec.decision = 1;
        if (w == clients[0]) st->counters.sync_steps++;
        if (me < 0) {
            /* Steps sat out still count, so that evaluations find every worker at the step. */
            for (long s = round_first; s < round_last; s++) {
                step_acc idle;
                policy_begin_step(st, w, s, &idle);
                policy_end_step(st, w, &idle);
            }
        }
        policy_end_step(st, w, &a);
        step = round_last + 1;
    }
    free(clients);
}

/* ---- SelSync ---- */

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

/* SelSync's relative gradient change (SEEDS.md). Paper: Delta = (E_i - E_{i-1}) / E_{i-1} of the
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
 * round(beta b') samples of their batch to every other worker, point to point. The exchanges run
 * sender by sender in rank order, which every worker follows, so no send waits on a cycle. */
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
    const double bytes = share * st->src->sample_bytes;
    for (int s = 0; s < n; s++) {
        if (!chosen[s]) continue;
        sim_coll_result cr;
        double t0 = policy_now();
        if (s == w) {
            for (int d = 0; d < n; d++) {
                if (d == w) continue;
                int rc = sim_send(st->world, w, d, bytes, &cr);
                SS_ASSERT(rc == SS_OK);
                a->rec.bytes_sent += cr.bytes_sent;
                st->counters.bytes_sent += cr.bytes_sent;
            }
            a->rec.comm_s += policy_now() - t0;
        } else {
            int rc = sim_recv(st->world, w, s, bytes, &cr);
            SS_ASSERT(rc == SS_OK);
            a->rec.wait_s += policy_now() - t0;
            st->src->ops->inject(st->src->self, s, w, share);
        }
    }
}

static void selsync_worker(policy_state *st, int w) {
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
    const int local_batch = policy_local_batch(pc);
    const int injecting = pc->inject_alpha > 0 && pc->inject_beta > 0;
    rng inject_rng;
    rng_seed(&inject_rng, pc->seed, RNG_STREAM_POLICY + 2);
    int *inject_order = ss_malloc(sizeof(int) * (size_t)pc->workers);
    uint8_t *inject_chosen = ss_malloc((size_t)pc->workers);
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
        uint8_t *flags = st->flags[step & 1];
        flags[w] = (uint8_t)flag;
        const long fid = sync_id(step, 0);
        sim_coll_result cr;
        double entry = policy_sync_enter(st, fid, -1);
        int rc = sim_allgather(st->world, w, pc->flag_bytes, &cr);
        SS_ASSERT(rc == SS_OK);
        policy_sync_leave(st, fid, -1, entry, cr.bytes_sent, &a);
        int sync = 0;
        for (int i = 0; i < pc->workers; i++)
            sync |= flags[i];
        int forced = ops->forced_decision ? ops->forced_decision(st->src->self, step) : -1;
        if (forced >= 0) sync = forced;

        if (sync) {
            policy_sync_world(st, w, sync_id(step, 1), step, pc->aggregation, &a);
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
}

/* ---- DS-Sync ---- */

/* The groups of a step, the same on every worker: a shuffle of the workers from the shared seed
 * (or the published code's alternation), cut into consecutive groups of G. Writes this worker's
 * group, sorted, and returns its size. */
static int dssync_group(const policy_config *pc, rng *r, long step, int w, int *perm,
                        int *members) {
    const int n = pc->workers;
    int g = pc->group_size < 1 ? 1 : pc->group_size > n ? n : pc->group_size;
    if (pc->grouping == DSSYNC_GROUPING_SHUFFLE) {
        for (int i = 0; i < n; i++)
            perm[i] = i;
        rng_shuffle(r, perm, (size_t)n);
    } else {
        /* {0,1},{2,3},... on odd steps, the pairs shifted by G/2 on even ones ({1,2},{3,0}) */
        int offset = step % 2 == 1 ? 0 : g / 2;
        for (int i = 0; i < n; i++)
            perm[i] = (i + offset) % n;
    }
    int pos = 0;
    while (perm[pos] != w)
        pos++;
    int first = pos / g * g, m = 0;
    for (int i = first; i < first + g && i < n; i++)
        members[m++] = perm[i];
    for (int i = 1; i < m; i++) /* member order = rank order */
        for (int j = i; j > 0 && members[j - 1] > members[j]; j--) {
            int t = members[j];
            members[j] = members[j - 1];
            members[j - 1] = t;
        }
    return m;
}

static void dssync_worker(policy_state *st, int w) {
    const policy_config *pc = st->pc;
    const int n = pc->workers;
    rng r;
    rng_seed(&r, pc->seed, RNG_STREAM_POLICY + 3);
    int *perm = ss_malloc(sizeof(int) * (size_t)n), *members = ss_malloc(sizeof(int) * (size_t)n);
    for (long step = 1; policy_go(st, step); step++) {
        step_acc a;
        step_stats stats;
        policy_begin_step(st, w, step, &a);
        policy_compute(st, w, step, pc->batch, &a, &stats);
        st->src->ops->apply_local(st->src->self, w, step);
        int m = dssync_group(pc, &r, step, w, perm, members);
        if (m > 1) {
            int me = 0;
            while (members[me] != w)
                me++;
            const int all = m == n;
            sim_comm *comm = all ? st->world : sim_cluster_group(st->cluster, members, m);
            const long id = sync_id(step, 1);
            policy_exchange(st, w, id, step, AGGREGATE_PARAMS, comm, me, all ? NULL : members, m, m,
                            &a);
            policy_aggregate(st, w, id, AGGREGATE_PARAMS, all ? NULL : members, m, m);
        } else {
            st->agg_seq[w]++; /* a worker alone this step keeps its sequence in line */
        }
        a.rec.decision = 1;
        if (w == 0) st->counters.sync_steps++;
        policy_end_step(st, w, &a);
    }
    free(perm);
    free(members);
}

void policy_worker_sync(void *arg) {
    worker_arg *wa = arg;
    policy_state *st = wa->st;
    switch (st->pc->kind) {
    case POLICY_BSP:
        for (long step = 1; policy_go(st, step); step++)
            bsp_step(st, wa->rank, step);
        break;
    case POLICY_FEDAVG:
        fedavg_worker(st, wa->rank);
        break;
    case POLICY_SELSYNC:
        selsync_worker(st, wa->rank);
        break;
    case POLICY_DSSYNC:
        dssync_worker(st, wa->rank);
        break;
    default:
        SS_ASSERT(!"not a synchronous policy");
    }
}
