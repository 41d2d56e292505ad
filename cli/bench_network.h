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

#include "sim/net/cluster.h"
#include "sim/net/coll/collective.h"

#define BENCH_NETWORK_MAX_SIZES 16

typedef struct bench_network_opts {
    double bytes;                       /* all-reduce size M (default 100 MB = 1e8 bytes) */
    int n_sizes;                        /* entries of hosts[] used (default 4) */
    int hosts[BENCH_NETWORK_MAX_SIZES]; /* N values (default 16, 64, 256, 1024) */
    double bandwidth_Bps;               /* per link, bytes/s (default 25 Gbps) */
    double latency_s;                   /* per link (default 5 us) */
    sim_network_model model;            /* default CM02, also used for SMPI */
    int max_smpi_hosts;                 /* skip SMPI above this N (default 256) */
    const char *smpirun;                /* NULL: "smpirun" from PATH */
    const char *work_dir; /* platform and host files go here; NULL: a new directory in $TMPDIR
                             (/tmp), removed at the end */
} bench_network_opts;

bench_network_opts bench_network_default(void);
/* Runs the benchmark and prints the table to `out`; SS_EUSAGE for bad options, SS_EIO if a
 * simulation fails. */
int bench_network(const bench_network_opts *o, FILE *out);

/* ---- nccl-tests-like table: one platform, N workers, a list of message sizes ----
 *
 *     bench_sizes_opts o = {.platform = "p.xml", .n_workers = 16, .n_sizes = 2,
 *                           .sizes_bytes = {1024, 1 << 30}, .algo = SIM_ALLREDUCE_RING};
 *     bench_sizes_row rows[2];  bench_network_sizes(&o, rows);   bench_sizes_print(&o, rows,
 * stdout);
 *
 * Each size is one all-reduce by every worker of a fresh engine (its own process). algbw =
 * size / time and busbw = algbw x 2(n-1)/n, as nccl-tests defines them for all-reduce
 * (nccl-tests doc/PERFORMANCE.md, "Bus bandwidth": the factor makes busbw comparable with the
 * hardware's peak whatever the number of ranks). */
#define BENCH_SIZES_MAX 64
/* bench_sizes_opts.algo for `--collective ps`: instead of an all-reduce, every worker pushes
 * size bytes to parameter server 0 at once (incast); time = the last push received, algbw =
 * size / time, busbw = workers x size / time (the server's receive rate). The platform needs a
 * PS host (role=ps, or the host after the workers); the generated one gets one. */
#define BENCH_INCAST (-1)

typedef struct bench_sizes_opts {
    const char *platform; /* SimGrid platform file */
    int n_workers;        /* workers mapped on its hosts (cluster.h) */
    int n_sizes;
    double sizes_bytes[BENCH_SIZES_MAX];
    sim_network_model model;
    int algo;                   /* sim_allreduce_algo (collective.h), or BENCH_INCAST */
    sim_nccl_protocol protocol; /* the NCCL-style algorithms' protocol (0: auto) */
    int channels;               /* ring and auto's ring: rings run at once (0 or 1: one) */
} bench_sizes_opts;

/* Room for what an all-reduce ran ("hier/LL", "ring"). */
#define BENCH_RAN_LEN 32

typedef struct bench_sizes_row {
    double size_bytes;
    double time_us; /* simulated time of the all-reduce (last member done) */
    double algbw_GBps, busbw_GBps;
    double wall_s;           /* wall time of the simulation */
    char ran[BENCH_RAN_LEN]; /* the algorithm auto ran (and NCCL's protocol): "dbtree/LL" */
} bench_sizes_row;

/* Parses --sizes: a comma-separated list of byte sizes ("1KiB,1GiB", "4096"), or a range
 * "BEGIN:END:xF" (BEGIN, BEGIN*F, ... up to END, as nccl-tests -b -e -f) or "BEGIN:END:+STEP"
 * (BEGIN, BEGIN+STEP, ...). Units: none or B (bytes), K M G T (and KiB MiB GiB TiB) powers of
 * 1024, KB MB GB TB powers of 1000. SS_EUSAGE naming `option` otherwise. */
int bench_parse_sizes(const char *option, const char *text, double *sizes, int max, int *n);
/* Runs every size; rows[i] for sizes_bytes[i]. SS_EUSAGE for bad options, else the simulation's
 * status. */
int bench_network_sizes(const bench_sizes_opts *o, bench_sizes_row *rows);
/* The table as nccl-tests prints it (size, count of float32, time_us, algbw, busbw). */
void bench_sizes_print(const bench_sizes_opts *o, const bench_sizes_row *rows, FILE *out);
/* The table as CSV (size_bytes,collective,time_us,algbw_GBps,busbw_GBps), written atomically to
 * `path`. */
int bench_sizes_write_csv(const bench_sizes_opts *o, const bench_sizes_row *rows, const char *path);
/* One all-reduce of `bytes` by n workers on `platform` (algo BENCH_INCAST: n pushes of `bytes` to
 * server 0), in its own process: simulated time. */
int bench_network_allreduce(const char *platform, int n, double bytes, sim_network_model model,
                            int algo, double *sim_s, double *wall_s);
/* The same with the protocol of the NCCL-style algorithms (collective.h); `ran` (NULL, or
 * BENCH_RAN_LEN bytes): what the all-reduce ran, "algorithm[/protocol]". */
int bench_network_allreduce_protocol(const char *platform, int n, double bytes,
                                     sim_network_model model, int algo, sim_nccl_protocol protocol,
                                     double *sim_s, double *wall_s, char *ran);
/* The same with the ring's channels (sim_coll_opts.channels; 0 or 1: one ring); `ran` also says
 * the channels of a ring ("ringx4"). */
int bench_network_allreduce_channels(const char *platform, int n, double bytes,
                                     sim_network_model model, int algo, sim_nccl_protocol protocol,
                                     int channels, double *sim_s, double *wall_s, char *ran);

/* `syncsim bench network` from its options: --smpi runs bench_network() over --hosts-list at
 * --bytes; otherwise the table over --sizes on --platform FILE or the generated platform of
 * --bandwidth, --latency, --topology (and the generator's other options), with --workers
 * (default: every worker host of the file, 16 generated), --collective and --network-model;
 * --out DIR also writes DIR/bench_network.csv. */
struct run_request;
int bench_network_run(const struct run_request *rq, FILE *out);

#endif
