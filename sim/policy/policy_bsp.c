/* BSP: every step, compute, average the gradients among all workers (all-reduce, or push/pull
 * through the parameter servers), apply the mean. */
#include "sim/policy/policy_internal.h"
#include "sim/policy/policy_workers.h"

void policy_bsp_worker(void *arg) {
    worker_arg *wa = arg;
    for (long step = 1; policy_go(wa->st, step); step++)
        policy_bsp_step(wa->st, wa->rank, step);
}
