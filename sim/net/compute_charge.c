/* The compute model's time charged to SimGrid actors (see compute_charge.h). */
#include "sim/net/compute_charge.h"

#include "common/status.h"

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>

void sim_compute_host_of_self(sim_compute_host *out) {
    sg_host_t h = sg_host_self();
    const char *name = sg_host_get_property_value(h, "gpu");
    out->speed_flops = sg_host_get_speed(h);
    out->gpu = NULL;
    const gpu_class *g = NULL;
    if (name && gpu_table_find("gpu", name, &g) == SS_OK) out->gpu = g;
}

int sim_compute_step(const sim_compute_cfg *cfg, const sim_step_cost *cost, double *elapsed_s) {
    SS_ASSERT(cfg != NULL && cost != NULL);
    sim_compute_host host;
    sim_compute_host_of_self(&host);
    double flops = 0, seconds = 0;
    int rc = sim_compute_charge(cfg, cost, &host, &flops, &seconds);
    if (rc != SS_OK) return rc;
    double t0 = simgrid_get_clock();
    if (flops > 0) sg_actor_execute(flops);
    if (seconds > 0) sg_actor_sleep_for(seconds);
    if (elapsed_s) *elapsed_s = simgrid_get_clock() - t0;
    return SS_OK;
}
