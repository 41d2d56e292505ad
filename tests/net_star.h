/* Helpers of the network-model suites (test_ns3.c, test_network_smpi.c): a generated star written
 * to a temporary file, and the simulated time of one collective on it. */
#ifndef SS_TESTS_NET_STAR_H
#define SS_TESTS_NET_STAR_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "common/status.h"
#include "cli/bench_network.h"
#include "sim/platform/platform_gen.h"
#include "ss_test.h"

/* A generated star of n workers and n_ps servers at bw_bps and lat_s a link, routed (the form
 * ns-3 loads) or as the <cluster> form, written to a temporary file named from `prefix`; the
 * path in buf. */
static inline int net_star_write(const char *prefix, int n, int n_ps, int routed, double bw_bps,
                                 double lat_s, char *buf, size_t len) {
    snprintf(buf, len, "/tmp/%s_XXXXXX", prefix);
    int fd = mkstemp(buf);
    if (fd < 0) return SS_EIO;
    close(fd);
    platform_gen_spec s = platform_gen_default();
    s.n_hosts = n;
    s.n_ps = n_ps;
    s.bandwidth_Bps = bw_bps / 8;
    s.latency_s = lat_s;
    s.routed = routed;
    return platform_generate_file(&s, buf);
}

/* Simulated time of one run (all-reduce `algo`, or BENCH_INCAST pushes) of `bytes` by n workers
 * under model m; a failure is reported and asserted. */
static inline double net_star_run_s(const char *platform, int n, double bytes, sim_network_model m,
                                    int algo) {
    double sim_s = NAN, wall_s = 0;
    int st = bench_network_allreduce(platform, n, bytes, m, algo, &sim_s, &wall_s);
    if (st) fprintf(stderr, "\n  run failed: %s\n", ss_error_message());
    CU_ASSERT_EQUAL(st, SS_OK);
    return sim_s;
}

#endif
