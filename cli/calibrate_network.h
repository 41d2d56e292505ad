/* `syncsim calibrate network LOG...`: the generated description of a real cluster (platform_gen.h
 * node platforms) fitted to its nccl-tests all_reduce_perf logs, written as a --config file.
 *
 *     calib_log logs[2];
 *     calib_log_parse("2nodes.txt", &logs[0]);          // or "2nodes.txt@2x8": 2 nodes x 8 GPUs
 *     calib_fit f;  calib_fit_init(&f, &cfg, logs, 2);  // start values and bounds from cfg
 *     if (calib_fit_run(&f, stdout) == SS_OK) calib_fit_write_config(&f, "cluster.ini");
 *
 * The free parameters (few, each bounded, each fitted only where the logs can tell it):
 *   bandwidth        per-NIC link bandwidth: [start / 20, start x 4]; free when a log spans nodes
 *   latency          per-NIC link latency: [10 ns, max(100 us, 10 x start)]; free as bandwidth
 *   intra-bandwidth  per-GPU intra-node bandwidth: [start / 20, start x 4]; free when a log has
 *                    two GPUs or more on a node
 *   intra-latency    intra-node link latency: [10 ns, max(20 us, 10 x start)]; free when a log
 *                    has a single node of two GPUs or more (across nodes the NIC's latency
 *                    stands for both)
 * A free parameter whose change by a factor of 2 moves no prediction by 0.5 % is not
 * identifiable from the logs: it is kept at its start and said so. Everything else of the
 * description (GPUs and NICs per node, fabrics, topology, network model, collective, protocol)
 * is the command's options, as `platform` and `bench network` take them.
 *
 * Each evaluation predicts every size of every log by one simulated all-reduce
 * (bench_network_allreduce_channels, as `bench network` does), on the generated platform of
 * the log's node count. The fit is GSL's trust-region Levenberg-Marquardt
 * (gsl_multifit_nlinear) on the residuals s = log(predicted / measured) under Cauchy's robust
 * loss of scale CALIB_LOSS_SCALE (each residual sign(s) c sqrt(log(1 + s^2/c^2))): least squares
 * on the sizes the description reproduces within about c, the log of the error on the steps it
 * does not (sizes several times slower than their neighbours); each parameter mapped onto its
 * bounds through the log of its value and a tanh.
 */
#ifndef SS_CLI_CALIBRATE_NETWORK_H
#define SS_CLI_CALIBRATE_NETWORK_H

#include <stdio.h>

#include "common/run_config.h"
#include "sim/net/cluster.h"
#include "sim/net/coll/collective.h"
#include "sim/platform/platform_gen.h"

#define CALIB_MAX_LOGS   16
#define CALIB_MAX_SIZES  128
#define CALIB_LOSS_SCALE 0.1 /* Cauchy's scale c on log(predicted / measured): about 10 % */

typedef struct calib_log {
    char path[1024];
    int ranks;         /* from its "# Rank r ... on HOST device d" lines, or @NxG */
    int nodes;         /* distinct hosts of those lines, or N of @NxG */
    int gpus_per_node; /* ranks / nodes */
    int n;             /* sizes */
    double size_bytes[CALIB_MAX_SIZES];
    double time_us[CALIB_MAX_SIZES]; /* out-of-place time */
    long line[CALIB_MAX_SIZES];      /* where each row is */
} calib_log;

/* Reads an all_reduce_perf log. `arg` is PATH or PATH@NxG (N nodes of G GPUs each, for a log
 * without its "# Rank" lines; where it has them they must agree). SS_EINPUT naming the file and
 * line of a row that does not parse (or whose algbw disagrees with size / time), naming the file
 * when it has no result table or no ranks; SS_EUSAGE for a malformed @NxG. */
int calib_log_parse(const char *arg, calib_log *out);

enum { CALIB_BW, CALIB_LAT, CALIB_INTRA_BW, CALIB_INTRA_LAT, CALIB_NPARAM };

typedef struct calib_param {
    const char *key; /* the option it is written as */
    double start, lo, hi, value;
    int free;         /* fitted */
    const char *note; /* why it is fixed, or "" */
} calib_param;

typedef struct calib_fit {
    const run_config *cfg;
    const calib_log *logs;
    int n_logs;
    sim_network_model model;
    int algo;
    sim_nccl_protocol protocol;
    int channels;                           /* ring's channels (--channels) */
    platform_gen_spec spec[CALIB_MAX_LOGS]; /* each log's generated platform (params aside) */
    calib_param p[CALIB_NPARAM];
    int max_iter;    /* iterations of the solver (default 40) */
    int iterations;  /* taken */
    int evaluations; /* of every log's sizes */
    double *pred_us; /* per log and size, at the fitted values */
    char (*ran)[32];
    double last_x[CALIB_NPARAM], *last_res; /* the last point evaluated */
} calib_fit;

/* Start values, bounds and which parameters are free, from cfg's generator options (--bandwidth,
 * --latency, --intra, --intra-bandwidth, --intra-latency, --nics-per-node, --fabric, --topology),
 * --network-model, --collective, --protocol. SS_EUSAGE naming an option. */
int calib_fit_init(calib_fit *f, const run_config *cfg, const calib_log *logs, int n_logs);
/* Fits, then prints the residuals per log and size and the parameters to out. SS_EINPUT when the
 * fit does not converge within max_iter iterations (the message says what it reached). */
int calib_fit_run(calib_fit *f, FILE *out);
/* SS_OK, or SS_EINPUT naming the first of logs whose GPUs per node differ from fitted's. */
int calib_check_logs(const calib_log *fitted, const calib_log *logs, int n_logs);
/* Predicts the held-out logs (the same kind of node, other node counts) with f's fitted values
 * and prints their residuals per size and medians to out, as for the fitted logs. SS_EINPUT when
 * a log's GPUs per node differ from the fitted logs'. */
int calib_fit_check(const calib_fit *f, const calib_log *logs, int n_logs, FILE *out);
/* The fitted description as a --config file (temp name + rename). */
int calib_fit_write_config(const calib_fit *f, const char *path);
void calib_fit_free(calib_fit *f);

/* `syncsim calibrate network LOG... [options]` (argv after "calibrate"): exit code. */
int cmd_calibrate_main(int argc, char **argv);

#endif
