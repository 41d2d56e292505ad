/* syncsim validate network|compute|scaling|real: predictions against public measurements, and
 * against runs on the local testbed. The runners are sim/validate_network.c,
 * traces/validate_compute.c, traces/validate_scaling.c and analysis/validate_real.c; each exits
 * 1 past its bounds. */
#include "cli/commands.h"
#include "common/status.h"
#include "sim/units.h"
#include "sim/validate_network.h"
#include "analysis/validate_real.h"
#include "traces/validate_compute.h"
#include "traces/validate_scaling.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

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

int cmd_validate_real(const run_config *cfg) {
    char exe[1024];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return ss_error_set(SS_EIO, "validate real: cannot find the syncsim binary");
    exe[n] = 0;
    const char *testbed = getenv("SYNCSIM_TESTBED");
    validate_real_opts o = {.exe = exe,
                            .testbed = testbed ? testbed : SS_SOURCE_DIR "/scripts/testbed.sh",
                            .out_dir = cfg->out_dir,
                            .policies = cfg->policy[0] ? cfg->policy : "bsp,selsync,ssp",
                            .workers = cfg->workers,
                            .model = cfg->model,
                            .dataset = cfg->dataset,
                            .data_dir = cfg->data_dir,
                            .epochs = cfg->epochs,
                            .batch = cfg->batch,
                            .seed = cfg->seed,
                            .ns3 = 1,
                            .max_error = 0.10,
                            .max_acc_pp = 0.3};
    double bytes_per_s;
    int rc = units_parse_bandwidth(cfg->bandwidth, &bytes_per_s);
    if (rc == SS_OK) rc = units_parse_time(cfg->latency, &o.delay_s);
    if (rc != SS_OK) return rc;
    o.rate_bps = 8 * bytes_per_s;
    validate_real_result r;
    if ((rc = validate_real(&o, stdout, &r)) != SS_OK) return rc;
    return r.within ? SS_OK
                    : ss_error_set(SS_EINPUT, "validate real: a prediction or the accuracy is "
                                              "outside its bound");
}
