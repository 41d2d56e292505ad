/* syncsim validate network|compute|scaling|real: predictions against public measurements and
 * local testbed runs (cli/validate_network.c, traces/validate_compute.c,
 * traces/validate_scaling.c, analysis/validate_real.c); each exits 1 past its bounds. */
#include "analysis/validate_real.h"
#include "cli/commands.h"
#include "cli/options.h"
#include "common/outputs.h"
#include "common/status.h"
#include "cli/validate_network.h"
#include "traces/validate_compute.h"
#include "traces/validate_scaling.h"

#include <stdio.h>

/* A runner's status, or SS_EINPUT when its figures are past the bound `what` names. */
static int within_bound(int rc, int within, const char *what) {
    if (rc != SS_OK || within) return rc;
    return ss_error_set(SS_EINPUT, "validate %s exceeds the bound", what);
}

/* SIGINT/SIGTERM stop a validation as they stop a run: the simulation running is killed (no
 * process is left), no further one starts, and the exit code is 130. */
static int interruptible(int rc) {
    if (rc == SS_OK && outputs_interrupted())
        rc = ss_error_set(SS_EINTERRUPT, "interrupted: the validation is incomplete");
    if (rc == SS_EINTERRUPT) fprintf(stderr, "syncsim: validate %s\n", ss_error_message());
    return rc;
}

int cmd_validate(const run_config *cfg) {
    validate_opts o = {.root = cfg->validate_refs,
                       .max_large = cfg->validate_max_large,
                       .max_small = cfg->validate_max_small};
    outputs_install_interrupt_handler();
    return interruptible(validate_network(&o, stdout));
}

int cmd_validate_compute(const run_config *cfg) {
    validate_compute_result r = {0};
    int rc = validate_compute(cfg->validate_throughputs[0] ? cfg->validate_throughputs : NULL,
                              cfg->validate_max_error, stdout, &r);
    return within_bound(rc, r.within_bound, "compute: the median error (--max-error)");
}

int cmd_validate_scaling(const run_config *cfg) {
    validate_scaling_result r = {0};
    outputs_install_interrupt_handler();
    int rc = interruptible(validate_scaling(cfg->validate_scaling[0] ? cfg->validate_scaling : NULL,
                                            cfg->validate_scaling_max_error, stdout, &r));
    return within_bound(rc, r.within_bound, "scaling: the median error (--max-scaling-error)");
}

int cmd_validate_real(const run_config *cfg) {
    validate_real_result r = {0};
    /* the default case is fitted to the host's cores (and, without --bandwidth, to a rate the
     * testbed shapes as the predictions' links); a case given with --workers or --policy runs
     * as given */
    int fit = 0;
    if (!options_was_set(cfg, "workers") && !options_was_set(cfg, "policy"))
        fit = VALIDATE_REAL_FIT_CASE |
              (options_was_set(cfg, "bandwidth") ? 0 : VALIDATE_REAL_FIT_RATE);
    int rc = validate_real_run_on_host(cfg, fit, stdout, &r);
    return within_bound(rc, r.within, "real: a prediction's error (10 %) or accuracy's (0.3 pp)");
}
