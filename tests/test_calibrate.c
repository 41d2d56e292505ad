/* calibrate network: the fit recovers the parameters of logs that syncsim itself synthesized, the
 * written configuration re-runs bench network to the fitted times, and bad logs, bad arguments
 * and a fit that does not converge are refused with their messages and nothing written. */
#include "ss_test.h"

#include "cli/bench_network.h"
#include "cli/calibrate_network.h"
#include "cli/options.h"
#include "common/status.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR "calibrate_tmp"

/* The cluster the logs come from: 1 NIC of 25 Gb/s and 4 us per node, PCIe 4 nodes whose links
 * run at 10 GB/s; the fit starts from 50 Gb/s, 1 us and pcie4's 31.5 GB/s. */
#define TRUE_OPTS                                                                                  \
    "--nics-per-node 1 --fabric infiniband --intra pcie4 --bandwidth 25Gbps --latency 4us "        \
    "--intra-bandwidth 10GBps"
#define START_OPTS                                                                                 \
    "--nics-per-node 1 --fabric infiniband --intra pcie4 --bandwidth 50Gbps --latency 1us"

static const double sizes[] = {4096, 1048576, 16777216, 67108864};
#define N_SIZES 4

static int run_syncsim(const char *args, char **output) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "%s/syncsim %s 2>&1", SS_BINARY_DIR, args);
    return ss_test_shell(cmd, output);
}

static void expect(const char *args, int code, const char *frag1, const char *frag2) {
    char *out = NULL;
    int rc = run_syncsim(args, &out);
    int ok = rc == code && (!frag1 || strstr(out, frag1)) && (!frag2 || strstr(out, frag2));
    if (!ok)
        fprintf(stderr, "\n  syncsim %s\n  exit %d (expected %d), output:\n%s\n", args, rc, code,
                out);
    CU_ASSERT(ok);
    free(out);
}

static int exists(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

/* An all_reduce_perf log of `nodes` x `gpus` ranks, the times simulated by syncsim on the true
 * cluster; `srun` prefixes every line with "0: " and leaves out the root column (older tables).
 * `step` >= 0: that size takes STEP_FACTOR x its simulated time (a step no description of links
 * reproduces, as real logs have at 4 KiB to 1 MiB). 0 on success. */
#define STEP_FACTOR 4.0
static int synthesize(const char *path, int nodes, int gpus, int srun, int step) {
    char cmd[1024], xml[256];
    snprintf(xml, sizeof xml, DIR "/true-%d.xml", nodes);
    snprintf(cmd, sizeof cmd,
             "%s/syncsim platform --nodes %d --gpus-per-node %d " TRUE_OPTS " > %s", SS_BINARY_DIR,
             nodes, gpus, xml);
    if (ss_test_shell(cmd, NULL) != 0) return -1;
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    const char *p = srun ? "0: " : "";
    fprintf(f, "%s# nThread 1 nGpus 1 minBytes 4096 maxBytes 67108864 step: 16(factor)\n", p);
    fprintf(f, "%s#\n%s# Using devices\n", p, p);
    for (int r = 0; r < nodes * gpus; r++)
        fprintf(f, "%s#  Rank %2d Group  0 Pid %6d on  node%03d device %2d [0x01] GPU\n", p, r,
                1000 + r, r / gpus, r % gpus);
    fprintf(f, "%s#\n", p);
    if (srun)
        fprintf(f,
                "%s#       size         count      type   redop     time   algbw   busbw  "
                "error     time   algbw   busbw  error\n",
                p);
    else
        fprintf(f, "#       size         count      type   redop    root     time   algbw   busbw "
                   "#wrong     time   algbw   busbw #wrong\n");
    fprintf(f, "%snode000:1000:1000 [0] NCCL INFO Channel 00/02 : 0 1\n", p);
    int n = nodes * gpus, st = 0;
    for (int i = 0; i < N_SIZES && !st; i++) {
        double sim_s, wall_s;
        st =
            bench_network_allreduce_protocol(xml, n, sizes[i], SIM_NETWORK_LV08, SIM_ALLREDUCE_AUTO,
                                             SIM_PROTOCOL_AUTO, &sim_s, &wall_s, NULL);
        double t = 1e6 * sim_s * (i == step ? STEP_FACTOR : 1), alg = sizes[i] / t / 1e3,
               bus = alg * 2 * (n - 1) / n;
        fprintf(f,
                "%s%12.0f %12.0f     float     sum %s %8.2f %7.2f %7.2f %s %8.2f %7.2f %7.2f %s\n",
                p, sizes[i], sizes[i] / 4, srun ? "" : "     -1", t, alg, bus, srun ? "0e+00" : "0",
                t, alg, bus, srun ? "0e+00" : "0");
    }
    fprintf(f, "%s# Out of bounds values : 0 OK\n", p);
    fclose(f);
    return st;
}

/* The value of `key = VALUE` in an INI text, parsed with the generator's units. */
/* The file at path into ini (size bytes), after a newline, so that every key follows one. */
static void read_ini(const char *path, char *ini, size_t size) {
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    ini[0] = '\n';
    size_t len = fread(ini + 1, 1, size - 2, f);
    ini[len + 1] = '\0';
    fclose(f);
}

static double ini_value(const char *text, const char *key, int bandwidth) {
    char want[64];
    snprintf(want, sizeof want, "\n%s = ", key);
    const char *at = strstr(text, want);
    if (!at) return NAN;
    char value[64];
    if (sscanf(at + strlen(want), "%63s", value) != 1) return NAN;
    double v = NAN;
    if (bandwidth ? platform_parse_bandwidth(key, value, &v)
                  : platform_parse_latency(key, value, &v))
        return NAN;
    return v;
}

/* The time bench network prints for `size` (its table's fourth column). */
static double table_time(const char *out, double size) {
    for (const char *l = out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        double s, count, t;
        char type[16];
        if (*l != '#' && sscanf(l, "%lf %lf %15s %lf", &s, &count, type, &t) == 4 && s == size)
            return t;
    }
    return NAN;
}

/* The fitted time of `size` in the residual table of the log `log` that calibrate prints. */
static double fitted_time(const char *out, const char *log, double size) {
    char head[256];
    snprintf(head, sizeof head, "## %s:", log);
    const char *l = strstr(out, head);
    for (; l && *l && (l = strchr(l, '\n')); l++) {
        double s, meas, fit;
        if (l[1] == '#') break;
        if (sscanf(l + 1, "%lf %lf %lf", &s, &meas, &fit) == 3 && s == size) return fit;
    }
    return NAN;
}

static void test_recovers(void) {
    mkdir(DIR, 0755);
    CU_ASSERT_EQUAL_FATAL(synthesize(DIR "/two.txt", 2, 2, 0, -1), 0);
    CU_ASSERT_EQUAL_FATAL(synthesize(DIR "/three.txt", 3, 2, 1, -1), 0);
    CU_ASSERT_EQUAL_FATAL(synthesize(DIR "/four.txt", 4, 2, 0, -1), 0);
    remove(DIR "/fit/cluster.ini");
    char *out = NULL;
    int rc = run_syncsim("calibrate network " DIR "/two.txt " DIR "/three.txt " START_OPTS
                         " --check " DIR "/four.txt --out " DIR "/fit",
                         &out);
    if (rc != 0) fprintf(stderr, "\n%s\n", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "## " DIR "/three.txt: 3 nodes x 2 GPUs (6 ranks)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "median |error|"));
    /* the held-out four nodes, predicted with the fitted values: the cluster's own times */
    const char *held = strstr(out, "# held out (--check)");
    CU_ASSERT_PTR_NOT_NULL_FATAL(held);
    CU_ASSERT_PTR_NOT_NULL(strstr(held, "## " DIR "/four.txt: 4 nodes x 2 GPUs (8 ranks)"));
    CU_ASSERT_PTR_NULL(strstr(held, "## " DIR "/three.txt")); /* only the held-out logs */
    calib_log four;
    CU_ASSERT_EQUAL_FATAL(calib_log_parse(DIR "/four.txt", &four), SS_OK);
    for (int i = 1; i < N_SIZES; i++)
        SS_CHECK_CLOSE(fitted_time(held, DIR "/four.txt", sizes[i]), four.time_us[i], 0, 0.03);
    char ini[4096];
    read_ini(DIR "/fit/cluster.ini", ini, sizeof ini);
    /* the parameters the logs were made with */
    SS_CHECK_CLOSE(ini_value(ini, "bandwidth", 1), 25e9 / 8, 0, 0.01);
    SS_CHECK_CLOSE(ini_value(ini, "latency", 0), 4e-6, 0, 0.03);
    SS_CHECK_CLOSE(ini_value(ini, "intra-bandwidth", 1), 10e9, 0, 0.02);
    CU_ASSERT_PTR_NOT_NULL(strstr(ini, "\ngpus-per-node = 2\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ini, "\nfabric = infiniband\n"));
    /* no single-node log: the intra-node latency is kept, and said so */
    CU_ASSERT_PTR_NOT_NULL(strstr(ini, "; intra-latency kept"));
    /* the configuration re-runs bench network to the fitted times */
    for (int i = 1; i < N_SIZES; i++) {
        char args[512], *bench = NULL;
        snprintf(args, sizeof args,
                 "bench network --config " DIR
                 "/fit/cluster.ini --nodes 3 --workers 6 --sizes %.0f",
                 sizes[i]);
        CU_ASSERT_EQUAL(run_syncsim(args, &bench), 0);
        SS_CHECK_CLOSE(table_time(bench, sizes[i]), fitted_time(out, DIR "/three.txt", sizes[i]),
                       0.01, 1e-4);
        free(bench);
    }
    /* compare takes the fitted bandwidth as its one network when --networks is not given */
    char *cmp = NULL;
    CU_ASSERT_EQUAL(run_syncsim("compare --config " DIR "/fit/cluster.ini --nodes 1 --workers 2 "
                                "--dataset synthetic --epochs 0.01 --policies bsp --partitions iid "
                                "--out " DIR "/cmp",
                                &cmp),
                    0);
    CU_ASSERT_TRUE(exists(DIR "/cmp/runs/bsp-25Gbps"));
    free(cmp);
    free(out);
}

/* A step in one log: three nodes' 4 KiB row takes 4 x what the cluster gives it. The robust fit
 * (Cauchy's loss on log(predicted / measured)) treats it as the outlier it is and still recovers
 * the parameters the logs were made with (24.94 Gb/s, 4.083 us, 10.1 GB/s), leaving the step in
 * the residual table at -75 %; least squares on the relative errors let that one size pull them
 * to 23.34 Gb/s, 5.97 us and 14 GB/s (-7 %, +49 %, +40 %) to shrink it to -71 %. */
static void test_robust_to_step(void) {
    mkdir(DIR, 0755);
    if (!exists(DIR "/two.txt")) CU_ASSERT_EQUAL_FATAL(synthesize(DIR "/two.txt", 2, 2, 0, -1), 0);
    CU_ASSERT_EQUAL_FATAL(synthesize(DIR "/three-step.txt", 3, 2, 1, 0), 0);
    remove(DIR "/step/cluster.ini");
    char *out = NULL;
    int rc = run_syncsim("calibrate network " DIR "/two.txt " DIR "/three-step.txt " START_OPTS
                         " --out " DIR "/step",
                         &out);
    if (rc != 0) fprintf(stderr, "\n%s\n", out);
    CU_ASSERT_EQUAL_FATAL(rc, 0);
    char ini[4096];
    read_ini(DIR "/step/cluster.ini", ini, sizeof ini);
    SS_CHECK_CLOSE(ini_value(ini, "bandwidth", 1), 25e9 / 8, 0, 0.01);
    SS_CHECK_CLOSE(ini_value(ini, "latency", 0), 4e-6, 0, 0.05);
    SS_CHECK_CLOSE(ini_value(ini, "intra-bandwidth", 1), 10e9, 0, 0.02);
    /* the step stays in the residuals: the fitted 4 KiB time is the cluster's, a quarter of the
     * log's */
    char *bench = NULL;
    CU_ASSERT_EQUAL(run_syncsim("bench network --nodes 3 --gpus-per-node 2 --workers 6 " TRUE_OPTS
                                " --sizes 4096",
                                &bench),
                    0);
    SS_CHECK_CLOSE(fitted_time(out, DIR "/three-step.txt", 4096), table_time(bench, 4096), 0, 0.05);
    free(bench);
    free(out);
}

/* Bad logs: the message names the file (and line), the exit code is 1, nothing is written. */
static void test_bad_logs(void) {
    mkdir(DIR, 0755);
    write_text(DIR "/garbled.txt", "#  Rank  0 Group  0 Pid 1 on a device 0 [0x01] GPU\n"
                                   "#  Rank  1 Group  0 Pid 2 on b device 0 [0x01] GPU\n"
                                   "        1024   256  float  sum  -1   20.00  0.05  0.05  0  "
                                   "20.00  0.05  0.05  0\n"
                                   "        2048   512  float  sum  -1   2x.00  0.10  0.10  0\n");
    write_text(DIR "/empty.txt", "# nThread 1 nGpus 1 minBytes 8\n"
                                 "#  Rank  0 Group  0 Pid 1 on a device 0 [0x01] GPU\n"
                                 "#  Rank  1 Group  0 Pid 2 on b device 0 [0x01] GPU\n"
                                 "srun: error: node a: task 0: Killed\n");
    write_text(DIR "/liar.txt", "#  Rank  0 Group  0 Pid 1 on a device 0 [0x01] GPU\n"
                                "#  Rank  1 Group  0 Pid 2 on b device 0 [0x01] GPU\n"
                                "     1048576   262144  float  sum  -1   100.0  50.00  50.00  0\n");
    write_text(DIR "/norank.txt",
               "     1048576   262144  float  sum  -1   100.0  10.49  10.49  0\n");
    remove(DIR "/bad/cluster.ini");
    expect("calibrate network " DIR "/garbled.txt --out " DIR "/bad", 1,
           DIR "/garbled.txt:4:", "not a row of all_reduce_perf's table");
    expect("calibrate network " DIR "/empty.txt --out " DIR "/bad", 1,
           DIR "/empty.txt: no result table", NULL);
    expect("calibrate network " DIR "/liar.txt --out " DIR "/bad", 1,
           DIR "/liar.txt:3:", "algbw 50.00");
    expect("calibrate network " DIR "/norank.txt --out " DIR "/bad", 1, "no '# Rank", "@NxG");
    expect("calibrate network " DIR "/missing.txt --out " DIR "/bad", 1, "cannot open", NULL);
    expect("calibrate network " DIR "/norank.txt@1x2 --check " DIR "/missing.txt --out " DIR "/bad",
           1, "cannot open", NULL);
    expect("calibrate network " DIR "/norank.txt@1x2 --check " DIR "/norank.txt@1x4 --out " DIR
           "/bad",
           1, "--check " DIR "/norank.txt", "GPUs per node");
    expect("calibrate network " DIR "/norank.txt@1x2 --check", 2, "option --check", "LOG");
    CU_ASSERT_FALSE(exists(DIR "/bad/cluster.ini"));
    /* the parser on its own */
    calib_log log;
    CU_ASSERT_EQUAL(calib_log_parse(DIR "/norank.txt@1x2", &log), SS_OK);
    CU_ASSERT_EQUAL(log.ranks, 2);
    CU_ASSERT_EQUAL(log.n, 1);
    CU_ASSERT_EQUAL(log.time_us[0], 100.0);
    CU_ASSERT_EQUAL(calib_log_parse(DIR "/liar.txt@1x2", &log), SS_EINPUT);
}

/* The shipped public series parse as their logs say: every rank line and every row of the
 * table, the first and last out-of-place times (Alps: srun's "0: " before each line; ABCI: the
 * older table without the root column, an error column instead of #wrong). */
static void test_shipped_series(void) {
    static const struct {
        const char *log;
        int ranks, nodes, sizes;
        double first_us, last_us;
    } series[] = {
        {"alps-gh200-slingshot/logs/N1.out", 4, 1, 30, 7.75, 19015},
        {"abci-a100-hdr/logs/N2.nccl", 16, 2, 24, 33.50, 1887.3},
        {"abci-a100-hdr/logs/N16.nccl", 128, 16, 24, 67.85, 2500.7},
    };
    for (size_t i = 0; i < sizeof series / sizeof *series; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/traces/reference/nccl-series/%s", SS_SOURCE_DIR,
                 series[i].log);
        calib_log log;
        CU_ASSERT_EQUAL_FATAL(calib_log_parse(path, &log), SS_OK);
        CU_ASSERT_EQUAL(log.ranks, series[i].ranks);
        CU_ASSERT_EQUAL(log.nodes, series[i].nodes);
        CU_ASSERT_EQUAL(log.n, series[i].sizes);
        SS_CHECK_CLOSE(log.time_us[0], series[i].first_us, 0, 1e-12);
        SS_CHECK_CLOSE(log.time_us[log.n - 1], series[i].last_us, 0, 1e-12);
    }
}

static void test_usage(void) {
    expect("calibrate network --out " DIR "/bad", 2, "no log given", NULL);
    expect("calibrate nework x.txt", 2, "calibrate needs a target: network", NULL);
    expect("calibrate network x.txt --nodes 4", 2, "--nodes", NULL);
    expect("calibrate network x.txt --workers 4", 2, "--workers", NULL);
    expect("calibrate network x.txt@2y8", 2, "@NxG", NULL);
    expect("calibrate network x.txt --bandwidth fast", 2, "--bandwidth", NULL);
    expect("calibrate network --help", 0, "calibrate network LOG", "cluster.ini");
}

/* A fit stopped after one iteration has not converged: SS_EINPUT saying so. */
static void test_no_convergence(void) {
    mkdir(DIR, 0755);
    if (!exists(DIR "/two.txt")) CU_ASSERT_EQUAL_FATAL(synthesize(DIR "/two.txt", 2, 2, 0, -1), 0);
    char *argv[] = {"--nodes", "1",     "--nics-per-node", "1",       "--fabric",  "infiniband",
                    "--intra", "pcie4", "--bandwidth",     "400Gbps", "--latency", "100ns"};
    run_config cfg;
    CU_ASSERT_EQUAL_FATAL(options_parse(CMD_BENCH, 12, argv, &cfg), SS_OK);
    calib_log log;
    CU_ASSERT_EQUAL_FATAL(calib_log_parse(DIR "/two.txt", &log), SS_OK);
    CU_ASSERT_EQUAL(log.nodes, 2);
    CU_ASSERT_EQUAL(log.gpus_per_node, 2);
    calib_fit f;
    CU_ASSERT_EQUAL_FATAL(calib_fit_init(&f, &cfg, &log, 1), SS_OK);
    f.max_iter = 1;
    FILE *null = fopen("/dev/null", "w");
    CU_ASSERT_EQUAL(calib_fit_run(&f, null), SS_EINPUT);
    fclose(null);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "did not converge"));
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "nothing written"));
    calib_fit_free(&f);
}

int main(void) {
    CU_TestInfo tests[] = {{"recovers synthesized parameters", test_recovers},
                           {"robust to a step", test_robust_to_step},
                           {"bad logs", test_bad_logs},
                           {"the shipped series parse", test_shipped_series},
                           {"usage", test_usage},
                           {"no convergence", test_no_convergence},
                           CU_TEST_INFO_NULL};
    CU_SuiteInfo suites[] = {{"calibrate", NULL, NULL, NULL, NULL, tests}, CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}
