/* A policy run in the simulation: the SimGrid exchange over an open cluster, with the policy's
 * collectives, cross traffic and message jitter, and policy_run over it.
 *
 *     sim_cluster *c; sim_cluster_open(&co, &c);
 *     policy_result res;
 *     sim_policy_run(&pc, c, src, record_fn, record_ctx, &res);
 */
#ifndef SS_SIM_SIMULATE_H
#define SS_SIM_SIMULATE_H

#include "sim/net/cluster.h"
#include "sim/policy/policy.h"

/* policy_run (sim/policy/policy.h) over exchange_simgrid_open(cluster, the policy's options);
 * the exchange is closed after the simulation. */
int sim_policy_run(const policy_config *pc, sim_cluster *cluster, step_source *src,
                   policy_record_fn record, void *record_ctx, policy_result *res);

#endif
