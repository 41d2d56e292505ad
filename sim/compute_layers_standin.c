/* STAND-IN for sim_compute_layers (sim/compute.h), to be replaced at merge by the per-layer
 * compute model: each layer's forward and backward time is its FLOPs / the host's speed, the
 * same rule as --compute flops charges a whole step, so that a step's layers add up to the time
 * flops mode gives it. The optimizer step costs nothing here, as flops mode counts no update
 * FLOPs. Bytes and kernel launches are ignored. */
#include "common/status.h"
#include "sim/compute.h"

#include <math.h>

#include <simgrid/host.h>

int sim_compute_layers(const sim_compute_cfg *cfg, const sim_layer_cost *layers, int n,
                       double *fwd_s, double *bwd_s, double *optimizer_s) {
    (void)cfg;
    if (n < 0 || (n > 0 && (!layers || !fwd_s || !bwd_s)))
        return ss_error_set(SS_EUSAGE, "compute: %d layers without their arrays", n);
    const double speed = sg_host_get_speed(sg_host_self());
    for (int i = 0; i < n; i++) {
        if (!(layers[i].fwd_flops >= 0) || !(layers[i].bwd_flops >= 0) ||
            !isfinite(layers[i].fwd_flops) || !isfinite(layers[i].bwd_flops))
            return ss_error_set(SS_EUSAGE, "compute: layer %d has FLOPs %g / %g", i,
                                layers[i].fwd_flops, layers[i].bwd_flops);
        fwd_s[i] = layers[i].fwd_flops / speed;
        bwd_s[i] = layers[i].bwd_flops / speed;
    }
    if (optimizer_s) *optimizer_s = 0;
    return SS_OK;
}
