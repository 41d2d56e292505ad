/* syncsim validate network|compute|scaling: predictions against public measurements. The runners
 * are sim/validate_network.c, traces/validate_compute.c and traces/validate_scaling.c; each exits
 * 1 past its bounds. */
#include "cli/commands.h"
#include "common/status.h"
#include "sim/validate_network.h"
#include "traces/validate_compute.h"
#include "traces/validate_scaling.h"

#include <stdio.h>

int cmd_validate(const run_config *cfg) {
    validate_opts o = {.root = cfg->validate_refs,
                       .max_large = cfg->validate_max_large,
                       .max_small = cfg->validate_max_small};
    return validate_network(&o, stdout);
}

int cmd_validate_compute(const run_config *cfg) {
    validate_compute_result r;
    int rc = validate_compute(cfg->validate_throughputs[0] ? cfg->validate_throughputs : NULL,
                              cfg->validate_max_error, stdout, &r);
    if (rc != SS_OK) return rc;
    return r.within_bound ? SS_OK
                          : ss_error_set(SS_EINPUT, "validate compute: the median error "
                                                    "exceeds the bound (--max-error)");
}

int cmd_validate_scaling(const run_config *cfg) {
    validate_scaling_result r;
    int rc = validate_scaling(cfg->validate_scaling[0] ? cfg->validate_scaling : NULL,
                              cfg->validate_scaling_max_error, stdout, &r);
    if (rc != SS_OK) return rc;
    return r.within_bound ? SS_OK
                          : ss_error_set(SS_EINPUT, "validate scaling: the median error exceeds "
                                                    "the bound (--max-scaling-error)");
}
