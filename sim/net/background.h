/* Cross traffic: seeded random flows between the cluster's hosts that take a given fraction of
 * the link capacity, so that collectives meet contention, tail latency and incast as on a shared
 * production network (DLCP's setting).
 *
 *     sim_background *bg; sim_background_start(hosts, n, 0.3, seed, &bg);  // before the run
 *     ... sim_cluster_simulate() ...;  sim_background_free(bg);
 *
 * Every host of the list (a run uses its workers and parameter servers) runs a daemon sender: in
 * each period of SIM_BACKGROUND_PERIOD_S it picks a random other host and sends it load x B x
 * period bytes, B being the bandwidth of the route, then sleeps for the rest of the period. Alone
 * on its route a flow therefore occupies the fraction `load` of it; under contention it takes
 * longer and the next flow starts when it ends. Each host also runs a daemon receiver. The daemons
 * end with the simulation. */
#ifndef SS_SIM_BACKGROUND_H
#define SS_SIM_BACKGROUND_H

#include <simgrid/forward.h>
#include <stdint.h>

#define SIM_BACKGROUND_PERIOD_S 0.001

typedef struct sim_background sim_background;

/* Cross traffic among hosts[0..n-1] (n >= 2); load in (0, 1]; SS_EUSAGE otherwise. */
int sim_background_start(const sg_host_t *hosts, int n, double load, uint64_t seed,
                         sim_background **out);
void sim_background_free(sim_background *bg); /* NULL is fine */
/* Bytes the cross traffic has sent so far. */
double sim_background_bytes(const sim_background *bg);

#endif
