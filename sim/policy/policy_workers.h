/* The worker protocols, one per policy file: each is the body of one worker's actor (arg: a
 * worker_arg of policy_internal.h) and runs until the run's steps are done.
 *
 *     sim_actor_spawn("worker", w, host, policy_bsp_worker, &args[w]);   // policy_run.c
 */
#ifndef SS_SIM_POLICY_WORKERS_H
#define SS_SIM_POLICY_WORKERS_H

#include "sim/exchange/exchange.h"

struct policy_state;

void policy_bsp_worker(void *arg);     /* policy_bsp.c */
void policy_fedavg_worker(void *arg);  /* policy_fedavg.c: FedAvg, local SGD, post-local SGD */
void policy_selsync_worker(void *arg); /* policy_selsync.c: SelSync, with data injection */
/* SelSync data injection: a worker's own mini-batch b' = b / (1 + alpha beta N), and the room it
 * needs for its own samples plus every other worker's share (policy_selsync.c). */
int policy_selsync_local_batch(const struct policy_config *pc);
int policy_selsync_max_batch(const struct policy_config *pc);
void policy_dssync_worker(void *arg); /* policy_dssync.c */
void policy_ssp_worker(void *arg);    /* policy_ssp.c: SSP, and ASP (no staleness bound) */

/* The parameter servers' side of SSP/ASP: applies each push as it arrives and notes the
 * version each pull hands out (policy_ssp.c). */
void policy_ssp_hooks(exchange_ps_hooks *hooks, struct policy_state *st);

#endif
