/* FedAvg / local SGD as a worker protocol: rounds of H local steps by a sampled fraction C of the
 * workers, then parameter averaging among them and a broadcast of the result to the others;
 * post-local SGD runs BSP steps until t' first. The clients of a round come from a random stream
 * seeded identically on every worker, so every worker draws the same ones. */
#include "common/status.h"
#include "sim/policy/policy_internal.h"
#include "sim/policy/policy_workers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* The new model reaches the workers that sat the round out: a broadcast from the first client. */
static void broadcast_model(policy_state *st, int w, int root, step_acc *a) {
    const exchange *ex = st->ex;
    exchange_result cr;
    double entry = policy_now(st);
    float *buf = policy_buffer(st, w, AGGREGATE_PARAMS); /* real mode: the clients' sum */
    int rc = ex->ops->broadcast(ex->self, st->world, w, root, buf, st->src->param_count,
                                st->src->param_bytes + st->src->state_bytes, &cr);
    SS_ASSERT(rc == SS_OK);
    if (buf) policy_buffer_done(st, w, AGGREGATE_PARAMS);
    a->rec.comm_s += policy_now(st) - entry;
    a->rec.bytes_sent += cr.bytes_sent;
    st->counters.bytes_sent += cr.bytes_sent;
}

void policy_fedavg_worker(void *arg) {
    worker_arg *wa = arg;
    policy_state *st = wa->st;
    const int w = wa->rank;
    const policy_config *pc = st->pc;
    const long t_switch = pc->post_local_after;
    long step = 1;
    for (; step <= t_switch && policy_go(st, step); step++)
        policy_bsp_step(st, w, step);

    rng r;
    rng_seed(&r, pc->seed, RNG_STREAM_POLICY + 1);
    int *clients = ss_malloc(sizeof(int) * (size_t)pc->workers);
    const exchange *ex = st->ex;
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
        const long id = policy_sync_id(step, 1);
        const int all = m == pc->workers;
        if (me >= 0) {
            exchange_group *group = all ? st->world : ex->ops->group(ex->self, clients, m);
            policy_exchange(st, w, id, step, AGGREGATE_PARAMS, group, me, all ? NULL : clients, m,
                            pc->workers, &a);
        }
        if (m < pc->workers) broadcast_model(st, w, clients[0], &a);
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
