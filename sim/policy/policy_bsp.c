/* BSP: every step, compute, average the gradients among all workers (all-reduce, or push/pull
 * through the parameter servers), apply the mean. */
#include "sim/policy/policy_internal.h"
#include "sim/policy/policy_workers.h"

void policy_bsp_worker(void *arg) {
    worker_arg *wa = arg;
    for (long step = 1; policy_go(wa->st, step); step++)
        policy_bsp_step(wa->st, wa->rank, step);
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
