/* The compute model's time charged to SimGrid: the calling actor's host as the model sees it,
 * and a step's cost run or slept by the actor.
 *
 *     sim_compute_host h; sim_compute_host_of_self(&h);
 *     double dt_s; sim_compute_step(&cc, &cost, &dt_s);     // inside the worker actor
 */
#ifndef SS_SIM_NET_COMPUTE_CHARGE_H
#define SS_SIM_NET_COMPUTE_CHARGE_H

#include "sim/compute/compute.h"

/* The calling actor's host: its speed, and the GPU class its "gpu" property names (NULL when it
 * names none, or none that the table knows). */
void sim_compute_host_of_self(sim_compute_host *out);
/* Charges the step to the calling actor: executes its FLOPs on the actor's host (flops mode) or
 * sleeps its modelled time (sim_compute_charge); *elapsed_s (may be NULL) = the simulated time it
 * took. SS_EUSAGE as sim_compute_charge. */
int sim_compute_step(const sim_compute_cfg *cfg, const sim_step_cost *cost, double *elapsed_s);

#endif
