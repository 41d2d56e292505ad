/* The simulation backend of the exchange (sim/exchange/exchange.h): the workers are SimGrid actors
 * of an open cluster, collectives are sim/net/coll/collective.h's messages, the parameter servers
 * sim/net/ps.h's actors, the clock SimGrid's simulated clock. Buffers are never read or written:
 * the step source does the arithmetic (see exchange.h).
 *
 *     exchange_simgrid_opts o = {.coll = pc->coll, .background_load = 0.3, .seed = seed};
 *     exchange *ex;
 *     exchange_simgrid_open(cluster, &o, &ex);      // starts the cross traffic
 *     ex->ops->ps_start(ex->self, &pso);            // when servers are used
 *     ex->ops->run_workers(ex->self, n, worker, ctx, &hosted);   // the whole simulation
 *     exchange_simgrid_close(ex);
 */
#ifndef SS_SIM_EXCHANGE_SIMGRID_H
#define SS_SIM_EXCHANGE_SIMGRID_H

#include "sim/net/cluster.h"
#include "sim/net/coll/collective.h"
#include "sim/exchange/exchange.h"

#include <stdint.h>

typedef struct exchange_simgrid_opts {
    sim_coll_opts coll;     /* all-reduce algorithm and segmentation of every group */
    double background_load; /* > 0: cross traffic among the workers and servers (background.h) */
    uint64_t seed;          /* of the cross traffic and of the message jitter */
    double ps_wire_jitter;  /* > 0: CV of the parameter servers' messages (sim_ps_opts) */
} exchange_simgrid_opts;

/* An exchange among the cluster's workers (and its PS hosts, for ps_start). SS_EUSAGE if the
 * cross traffic cannot start. */
int exchange_simgrid_open(sim_cluster *cluster, const exchange_simgrid_opts *o, exchange **out);
/* After the simulation has ended; NULL is fine. */
void exchange_simgrid_close(exchange *ex);

#endif
