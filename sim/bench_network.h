/* `syncsim bench network`: all-reduce of M bytes on N hosts, message-level ring vs coarse ring vs
 * SMPI's MPI_Allreduce with its ring algorithm ("lr": ring reduce-scatter + ring all-gather), on
 * the same generated star platform and the same network model.
 *
 *     bench_network_opts o = bench_network_default();   o.max_smpi_hosts = 64;
 *     return bench_network(&o, stdout);
 *
 * Prints one row per N: simulated time and wall time of each form, and the ratios
 * (SMPI wall / message-level wall, coarse vs message-level and vs SMPI simulated time). Each
 * simulation runs in its own process (isolate.h). SMPI runs `smpirun` on the program built at
 * build time (bench_smpi_allreduce, see sim/CMakeLists.txt); when smpirun or the program is
 * missing, or N > max_smpi_hosts, the row says so and the SMPI columns are skipped.
 */
#ifndef SS_SIM_BENCH_NETWORK_H
#define SS_SIM_BENCH_NETWORK_H

#include <stdio.h>

#include "sim/cluster.h"

#define BENCH_NETWORK_MAX_SIZES 16

typedef struct bench_network_opts {
    double bytes;                       /* all-reduce size M (default 100 MB = 1e8 bytes) */
    int n_sizes;                        /* entries of hosts[] used (default 4) */
    int hosts[BENCH_NETWORK_MAX_SIZES]; /* N values (default 16, 64, 256, 1024) */
    double bandwidth_bps;               /* per link (default 25 Gbps) */
    double latency_s;                   /* per link (default 5 us) */
    sim_network_model model;            /* default CM02, also used for SMPI */
    int max_smpi_hosts;                 /* skip SMPI above this N (default 256) */
    const char *smpirun;                /* NULL: "smpirun" from PATH */
    const char *work_dir;               /* platform and host files go here; NULL: /tmp */
} bench_network_opts;

bench_network_opts bench_network_default(void);
/* Runs the benchmark and prints the table to `out`; SS_EUSAGE for bad options, SS_EIO if a
 * simulation fails. */
int bench_network(const bench_network_opts *o, FILE *out);

#endif
