/* Internal to sim/: state shared between the cluster set-up and the collectives. */
#ifndef SS_SIM_INTERNAL_H
#define SS_SIM_INTERNAL_H

/* A non-NULL payload for SimGrid messages (SimGrid refuses to send NULL). */
extern char sim_token;

/* Requests made by other operations (ps.c): new() gives a pending request; complete() stores the
 * result, calls fn (if any) and wakes the waiter. */
#include "sim/net/coll/collective.h"
sim_request *sim_request_new_internal(void);
void sim_request_complete_internal(sim_request *rq, int status, const sim_coll_result *r,
                                   sim_done_fn fn, void *ctx, int member);

/* Helper actors on one host, kept between calls (helpers.c): sim_helper_run() runs fn(arg) in an
 * idle helper (a new one when every helper is busy), starting at this simulated instant as a
 * freshly started actor would, and releases `done` (may be NULL) after it. Helpers are daemons:
 * the engine ends them with the simulation. Free the pool after the simulation, or inside it
 * once no job will be given. */
typedef struct sim_helper_pool sim_helper_pool;
sim_helper_pool *sim_helper_pool_create(sg_host_t host, const char *name);
void sim_helper_run(sim_helper_pool *p, void (*fn)(void *), void *arg, sg_sem_t done);
void sim_helper_pool_free(sim_helper_pool *p);

#endif
