/* What a simulated worker does besides messages: read the clock, compute, send non-blocking
 * point-to-point messages, and wait on the clocks of SSP's staleness bound.
 *
 *     double t = sim_now();
 *     sim_actor_compute(flops, seconds);          // the calling actor runs, then sleeps
 *     sim_p2p_request *m = sim_p2p_send_start(comm, me, peer, bytes);
 *     ... sim_p2p_test(m) ...; sim_p2p_wait(m, &r);
 *     sim_clocks *k = sim_clocks_create(n);       // before the actors run
 *     sim_clocks_wait(k, w, s); sim_clocks_advance(k, w, c, &rounds);
 */
#ifndef SS_SIM_NET_ACTORS_H
#define SS_SIM_NET_ACTORS_H

#include "sim/net/coll/collective.h"

/* The simulated clock, seconds. */
double sim_now(void);
/* The calling actor executes `flops` on its host (sharing its speed with whatever else runs
 * there), then sleeps `seconds`. */
void sim_actor_compute(double flops, double seconds);
/* The calling actor lets every other actor ready at this instant run first; no time passes. */
void sim_actor_yield(void);

/* A non-blocking message between two members of a group: one SimGrid put or get, on mailboxes
 * of its own per group and ordered pair, so that messages started together are concurrent flows
 * (matched in start order per pair). An invalid call (member or peer out of range, peer the
 * member, bytes < 0) completes at once with SS_EUSAGE. */
typedef struct sim_p2p_request sim_p2p_request; /* opaque */
sim_p2p_request *sim_p2p_send_start(sim_group *c, int member, int dst, double bytes);
sim_p2p_request *sim_p2p_recv_start(sim_group *c, int member, int src, double bytes);
/* 1 once complete (never blocks); the time it is observed complete is its end. */
int sim_p2p_test(sim_p2p_request *m);
/* Blocks until complete, fills r (may be NULL: start, end, bytes), frees the message and returns
 * its status. */
int sim_p2p_wait(sim_p2p_request *m, sim_coll_result *r);

/* The workers' clocks of SSP's staleness bound (steps completed, 0 at the start), shared by the
 * actors of one simulation. */
typedef struct sim_clocks sim_clocks;         /* opaque */
sim_clocks *sim_clocks_create(int n_workers); /* inside the simulation (after sim_cluster_open) */
void sim_clocks_destroy(sim_clocks *k);
/* Blocks worker w while its clock - min_j clock_j > staleness (< 0: never); returns that gap
 * when it goes on. */
long sim_clocks_wait(sim_clocks *k, int w, long staleness);
/* Sets worker w's clock and wakes the waiting workers; when the slowest clock becomes `clock`,
 * increments *rounds (may be NULL: a finished worker's clock counts no round) first. */
void sim_clocks_advance(sim_clocks *k, int w, long clock, long *rounds);

#endif
