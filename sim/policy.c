/* Policy names, defaults and the local batch under data injection. The runner is policy_run.c,
 * the protocols policy_<name>.c. */
#include "sim/policy.h"
#include "common/status.h"

#include <math.h>
#include <string.h>

static const char *policy_names[] = {"bsp", "ssp", "asp", "fedavg", "selsync", "dssync"};

void policy_config_default(policy_config *pc) {
    memset(pc, 0, sizeof *pc);
    pc->kind = POLICY_BSP;
    pc->workers = 1;
    pc->steps = 1;
    pc->batch = 32;
    pc->eval_every = 0;
    pc->ps_servers = 1;
    pc->coll.algo = SIM_ALLREDUCE_RING;
    pc->compute.mode = SIM_COMPUTE_FLOPS;
    pc->compute.scale = 1.0;
    pc->staleness = 3;
    pc->local_steps = 8;
    pc->client_fraction = 1.0;
    pc->delta = 0.05;
    pc->ewma_window = 25;
    pc->variant = SELSYNC_VARIANT_PAPER;
    pc->aggregation = AGGREGATE_PARAMS;
    pc->order = SELSYNC_ORDER_STEP_THEN_AVERAGE;
    pc->flag_bytes = 1.0;
    pc->group_size = 2;
    pc->grouping = DSSYNC_GROUPING_SHUFFLE;
    pc->chunk_bytes = 16384;
    pc->priority = DLCP_PRIORITY_LAYER;
    pc->straggler_factor = 1.0;
}

int policy_kind_parse(const char *text, policy_kind *out) {
    for (int i = 0; i < (int)(sizeof policy_names / sizeof policy_names[0]); i++)
        if (!strcmp(text, policy_names[i])) {
            *out = (policy_kind)i;
            return SS_OK;
        }
    return ss_error_set(SS_EUSAGE,
                        "--policy: unknown policy '%s' (valid: bsp, ssp, asp, fedavg, "
                        "selsync, dssync)",
                        text);
}

const char *policy_kind_name(policy_kind k) {
    return (unsigned)k < sizeof policy_names / sizeof policy_names[0] ? policy_names[k] : "?";
}

int policy_local_batch(const policy_config *pc) {
    if (pc->kind != POLICY_SELSYNC || pc->inject_alpha <= 0 || pc->inject_beta <= 0)
        return pc->batch;
    double b = pc->batch / (1.0 + pc->inject_alpha * pc->inject_beta * pc->workers);
    int lb = (int)lround(b);
    return lb < 1 ? 1 : lb;
}
