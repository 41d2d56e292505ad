/* A policy run in the simulation (see simulate.h). */
#include "sim/simulate.h"

#include "common/status.h"
#include "sim/exchange/exchange_simgrid.h"

#include <string.h>

int sim_policy_run(const policy_config *pc, sim_cluster *cluster, step_source *src,
                   policy_record_fn record, void *record_ctx, policy_result *res) {
    memset(res, 0, sizeof *res);
    const exchange_simgrid_opts xo = {.coll = pc->coll,
                                      .background_load = pc->background_load,
                                      .seed = pc->seed,
                                      .ps_wire_jitter = pc->comm_jitter};
    exchange *ex = NULL;
    int rc = exchange_simgrid_open(cluster, &xo, &ex);
    if (rc == SS_OK) rc = policy_run(pc, ex, src, record, record_ctx, res);
    exchange_simgrid_close(ex);
    return rc;
}
