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

#endif
