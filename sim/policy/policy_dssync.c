/* DS-Sync as a worker protocol: every step, compute and apply locally, then average the
 * parameters within a group of G workers; the groups change every step (a shuffle from the
 * shared seed, or the published code's alternation), the same on every worker. */
#include "common/status.h"
#include "sim/policy/policy_internal.h"
#include "sim/policy/policy_workers.h"

#include <stdlib.h>

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

void policy_dssync_worker(void *arg) {
    worker_arg *wa = arg;
    policy_state *st = wa->st;
    const int w = wa->rank;
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
            exchange_group *g = all ? st->world : st->ex->ops->group(st->ex->self, members, m);
            const long id = policy_sync_id(step, 1);
            policy_exchange(st, w, id, step, AGGREGATE_PARAMS, g, me, all ? NULL : members, m, m,
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
