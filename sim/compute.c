/* Compute time of a step (see compute.h). */
#include "sim/compute.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>

#include "common/status.h"

int sim_compute_parse(const char *option, const char *text, sim_compute_cfg *out) {
    SS_ASSERT(out != NULL);
    const char *valid = "valid: flops, measured, measured:SCALE with SCALE > 0, trace";
    if (!text) return ss_error_set(SS_EUSAGE, "%s: missing value (%s)", option, valid);
    if (strcmp(text, "flops") == 0) {
        *out = (sim_compute_cfg){SIM_COMPUTE_FLOPS, 1.0};
        return SS_OK;
    }
    if (strcmp(text, "trace") == 0) {
        *out = (sim_compute_cfg){SIM_COMPUTE_TRACE, 1.0};
        return SS_OK;
    }
    if (strncmp(text, "measured", 8) == 0) {
        double scale = 1.0;
        if (text[8] == ':') {
            char *end;
            scale = strtod(text + 9, &end);
            if (end == text + 9 || *end != '\0' || !(scale > 0) || !isfinite(scale))
                return ss_error_set(SS_EUSAGE, "%s: bad scale in '%s' (%s)", option, text, valid);
        } else if (text[8] != '\0') {
            return ss_error_set(SS_EUSAGE, "%s: unknown compute mode '%s' (%s)", option, text,
                                valid);
        }
        *out = (sim_compute_cfg){SIM_COMPUTE_MEASURED, scale};
        return SS_OK;
    }
    return ss_error_set(SS_EUSAGE, "%s: unknown compute mode '%s' (%s)", option, text, valid);
}

void sim_compute_format(const sim_compute_cfg *cfg, char *buf, unsigned long buf_bytes) {
    switch (cfg->mode) {
    case SIM_COMPUTE_FLOPS:
        snprintf(buf, buf_bytes, "flops");
        break;
    case SIM_COMPUTE_TRACE:
        snprintf(buf, buf_bytes, "trace");
        break;
    case SIM_COMPUTE_MEASURED:
        if (cfg->scale == 1.0)
            snprintf(buf, buf_bytes, "measured");
        else
            snprintf(buf, buf_bytes, "measured:%.17g", cfg->scale);
        break;
    default:
        snprintf(buf, buf_bytes, "?");
        break;
    }
}

static double slowdown_of(const sim_step_cost *cost) {
    return cost->slowdown > 0 ? cost->slowdown : 1.0;
}

double sim_compute_duration_s(const sim_compute_cfg *cfg, const sim_step_cost *cost,
                              double host_speed_flops) {
    SS_ASSERT(cfg != NULL && cost != NULL);
    double s;
    switch (cfg->mode) {
    case SIM_COMPUTE_FLOPS:
        s = cost->flops / host_speed_flops;
        break;
    case SIM_COMPUTE_MEASURED:
        s = cost->measured_s * cfg->scale;
        break;
    default:
        s = cost->trace_s;
        break;
    }
    return s * slowdown_of(cost);
}

int sim_compute_step(const sim_compute_cfg *cfg, const sim_step_cost *cost, double *elapsed_s) {
    SS_ASSERT(cfg != NULL && cost != NULL);
    double v = cfg->mode == SIM_COMPUTE_FLOPS      ? cost->flops
               : cfg->mode == SIM_COMPUTE_MEASURED ? cost->measured_s
                                                   : cost->trace_s;
    if (!(v >= 0) || !isfinite(v) || !(cost->slowdown >= 0) || !isfinite(cost->slowdown))
        return ss_error_set(SS_EUSAGE,
                            "compute: step cost %g (slowdown %g) must be finite and >= 0", v,
                            cost->slowdown);
    double t0 = simgrid_get_clock();
    if (cfg->mode == SIM_COMPUTE_FLOPS) {
        /* The slowdown stretches the work, so a straggler also shares its host longer. */
        double flops = v * slowdown_of(cost);
        if (flops > 0) sg_actor_execute(flops);
    } else {
        double s = sim_compute_duration_s(cfg, cost, 0);
        if (s > 0) sg_actor_sleep_for(s);
    }
    if (elapsed_s) *elapsed_s = simgrid_get_clock() - t0;
    return SS_OK;
}
