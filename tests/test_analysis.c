/* analysis/: statistics over seeds (GSL) against known values, run directories read back, the
 * report's groups, TTA and speedup, diverged runs counted, and the figures as non-empty PNG and
 * SVG files. */
#include "analysis/compare.h"
#include "analysis/gradient_dump.h"
#include "analysis/plots.h"
#include "analysis/report.h"
#include "analysis/runs.h"
#include "analysis/stats.h"
#include "analysis/tta.h"
#include "analysis/validate_real.h"
#include "common/afile.h"
#include "common/status.h"
#include "ss_test.h"
#include "traces/trace.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static int suite_init(void) {
    snprintf(root, sizeof root, "/tmp/ss_test_analysis.%d", (int)getpid());
    return ss_mkdir_p(root) == SS_OK ? 0 : 1;
}

static int suite_clean(void) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : 1;
}

/* ---- stats ---- */

static void test_stats_summarize_known(void) {
    /* stats_summarize: mean 3, sd sqrt(2.5), CI half-width t(0.975, 4) sd / sqrt(5) */
    const double x[] = {1, 2, 3, 4, 5};
    stats_summary s = stats_summarize(x, 5);
    CU_ASSERT_EQUAL(s.n, 5);
    SS_CHECK_CLOSE(s.mean, 3.0, 1e-12, 0);
    SS_CHECK_CLOSE(s.sd, 1.5811388300841898, 1e-12, 0);
    SS_CHECK_CLOSE(s.ci95, 1.963243161477557, 1e-9, 0);
    /* three accuracies: t(0.975, 2) = 4.3027 */
    const double y[] = {0.81, 0.83, 0.80};
    s = stats_summarize(y, 3);
    SS_CHECK_CLOSE(s.mean, 0.8133333333333334, 1e-12, 0);
    SS_CHECK_CLOSE(s.ci95, 0.037945830337394536, 1e-9, 0);
}

static void test_stats_summarize_edges(void) {
    /* stats_summarize: NaNs skipped; one value has no CI; none has no mean */
    const double x[] = {NAN, 2, NAN, 4};
    stats_summary s = stats_summarize(x, 4);
    CU_ASSERT_EQUAL(s.n, 2);
    SS_CHECK_CLOSE(s.mean, 3.0, 1e-12, 0);
    const double one[] = {0.7};
    s = stats_summarize(one, 1);
    CU_ASSERT_EQUAL(s.n, 1);
    SS_CHECK_CLOSE(s.mean, 0.7, 1e-12, 0);
    CU_ASSERT(isnan(s.sd) && isnan(s.ci95));
    s = stats_summarize(NULL, 0);
    CU_ASSERT(s.n == 0 && isnan(s.mean));
}

static void test_stats_kde(void) {
    /* stats_silverman_bandwidth: 0.9 min(sd, IQR/1.34) n^-1/5 */
    const double x[] = {1, 2, 3, 4, 5};
    SS_CHECK_CLOSE(stats_silverman_bandwidth(x, 5), 0.9735846228506357, 1e-9, 0);
    /* stats_kde: one point, h = 1, is the standard normal density */
    const double zero = 0, g[] = {0, 1};
    double d[2];
    stats_kde(&zero, 1, 1.0, g, d, 2);
    SS_CHECK_CLOSE(d[0], 1 / sqrt(2 * M_PI), 1e-12, 0);
    SS_CHECK_CLOSE(d[1], exp(-0.5) / sqrt(2 * M_PI), 1e-12, 0);
    /* stats_kde integrates to 1 (trapezoid on a wide grid) */
    enum { M = 2001 };
    static double grid[M], dens[M];
    for (int j = 0; j < M; j++)
        grid[j] = -10 + 25.0 * j / (M - 1);
    const double h = stats_silverman_bandwidth(x, 5);
    stats_kde(x, 5, h, grid, dens, M);
    double area = 0;
    for (int j = 1; j < M; j++)
        area += 0.5 * (dens[j] + dens[j - 1]) * (grid[j] - grid[j - 1]);
    SS_CHECK_CLOSE(area, 1.0, 1e-6, 0);
}

/* ---- synthetic run directories ---- */

static void write_file(const char *dir, const char *name, const char *text) {
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fputs(text, fp);
    fclose(fp);
}

/* A run: accuracy rises linearly to final_acc at time t_end (10 evaluations). */
static void make_run(const char *name, const char *policy, const char *delta, int seed,
                     const char *status, double final_acc, double t_end, char *dir, size_t n) {
    snprintf(dir, n, "%s/sweep/points/%s", root, name);
    CU_ASSERT_EQUAL_FATAL(ss_mkdir_p(dir), SS_OK);
    char text[2048];
    snprintf(text, sizeof text,
             "[train]\nseed = %d\nout = %s\nmodel = logreg\ndataset = synthetic\npolicy = "
             "%s\nworkers = 4\n"
             "bandwidth = 5Gbps\ndelta = %s\nstaleness = 3\n",
             seed, dir, policy, delta);
    write_file(dir, "config.ini", text);
    snprintf(text, sizeof text,
             "{\"status\": \"%s\", \"policy\": \"%s\", \"workers\": 4, \"platform\": \"x\", "
             "\"test_accuracy\": %.6f, \"sim_time_s\": %g, \"lssr\": %g, \"bytes_sent\": %g, "
             "\"steps\": 100, \"sync_steps\": 50, \"compute_s\": %g, \"comm_s\": %g, "
             "\"wait_s\": 0.1, \"seed\": %d, \"batch\": 32}",
             status, policy, final_acc, t_end, strcmp(policy, "bsp") ? 0.5 : 0.0,
             1e6 * (strcmp(policy, "bsp") ? 1 : 2), 0.4 * t_end, 0.5 * t_end, seed);
    write_file(dir, "summary.json", text);
    size_t len = (size_t)snprintf(
        text, sizeof text,
        "step,epoch,sim_time_s,train_loss,test_loss,test_accuracy,sync_steps,bytes_sent\n");
    for (int k = 1; k <= 10; k++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%d,%g,%g,1,1,%.6f,0,0\n", 10 * k,
                                0.1 * k, t_end * k / 10, final_acc * k / 10);
    write_file(dir, "metrics.csv", text);
    /* steps.trace with the columns in another order than the emulator's: read by name */
    FILE *fp;
    char path[1100];
    snprintf(path, sizeof path, "%s/steps.trace", dir);
    fp = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    fprintf(fp, "# syncsim steps trace, format 1\n# columns: worker step start_s compute_s "
                "comm_s wait_s delta decision\n");
    for (int s = 1; s <= 100; s++)
        for (int w = 0; w < 4; w++)
            fprintf(fp, "%d %d %g %g %g %g %g %d\n", w, s, t_end * (s - 1) / 100, 0.4 * t_end / 100,
                    (s % 3 == 0) ? 0.5 * t_end / 100 : 0, 0.0,
                    0.6 * exp(-s / 30.0) * (1 + 0.3 * sin(s)) * (1 + 0.1 * w), (s % 3 == 0));
    fclose(fp);
}

static int key_applies(const char *key, const char *policy) {
    if (!strcmp(key, "delta")) return !strcmp(policy, "selsync");
    if (!strcmp(key, "staleness")) return !strcmp(policy, "ssp");
    return 1;
}

static run_record runs[8];
static int n_runs;

/* Writes the runs once per process: every test that reads them calls it first, so that each runs
 * alone (SS_TEST) or in any order. */
static void make_runs(void) {
    char dir[512];
    if (n_runs == 6) return;
    n_runs = 0;
    /* BSP: final accuracy 0.80 at t = 10, 12, 14 s (seeds 1, 2, 3) */
    for (int s = 1; s <= 3; s++) {
        char name[64];
        snprintf(name, sizeof name, "policy=bsp,seed=%d", s);
        make_run(name, "bsp", "0.3", s, "ok", 0.80, 8 + 2 * s, dir, sizeof dir);
        CU_ASSERT_EQUAL_FATAL(run_record_read(dir, &runs[n_runs++]), SS_OK);
    }
    /* SelSync (delta 0.05 in config): final 0.79 at half BSP's time; seed 3 diverged */
    for (int s = 1; s <= 3; s++) {
        char name[64];
        snprintf(name, sizeof name, "policy=selsync,delta=0.05,seed=%d", s);
        make_run(name, "selsync", "0.05", s, s == 3 ? "diverged" : "ok", s == 3 ? 0.1 : 0.79,
                 (8 + 2 * s) / 2.0, dir, sizeof dir);
        CU_ASSERT_EQUAL_FATAL(run_record_read(dir, &runs[n_runs++]), SS_OK);
    }
}

static void test_runs_read(void) {
    /* run_record_read, run_dirs_find, run_record_complete */
    make_runs();
    CU_ASSERT_STRING_EQUAL(runs[0].policy, "bsp");
    CU_ASSERT_STRING_EQUAL(runs[5].status, "diverged");
    CU_ASSERT_EQUAL(runs[3].workers, 4);
    SS_CHECK_CLOSE(runs[3].test_accuracy, 0.79, 1e-12, 0);
    CU_ASSERT_STRING_EQUAL(run_record_get(&runs[3], "delta"), "0.05");
    CU_ASSERT(run_record_complete(runs[5].dir));
    char **dirs = NULL;
    int n = 0;
    char sweep[300];
    snprintf(sweep, sizeof sweep, "%s/sweep", root);
    CU_ASSERT_EQUAL(run_dirs_find(sweep, &dirs, &n), SS_OK);
    CU_ASSERT_EQUAL(n, 6);
    run_dirs_free(dirs, n);
    dirs = NULL, n = 0;
    CU_ASSERT_EQUAL(run_dirs_find(root, &dirs, &n), SS_EINPUT);
    run_dirs_free(dirs, n);
    /* trace_table_read: columns by the '# columns:' line */
    char path[1100];
    snprintf(path, sizeof path, "%s/steps.trace", runs[0].dir);
    trace_table t;
    CU_ASSERT_EQUAL_FATAL(trace_table_read(path, 0, &t), SS_OK);
    CU_ASSERT_EQUAL(t.n_rows, 400);
    int cs = trace_table_column(&t, "step"), cw = trace_table_column(&t, "worker");
    CU_ASSERT(cs == 1 && cw == 0);
    CU_ASSERT_EQUAL(t.cells[5 * t.n_cols + cs], 2); /* row 5: step 2, worker 1 */
    CU_ASSERT_EQUAL(t.cells[5 * t.n_cols + cw], 1);
    trace_table_free(&t);
    /* run_curve_tta_s */
    double tt[] = {1, 2, 3}, aa[] = {0.5, 0.7, 0.9};
    SS_CHECK_CLOSE(run_curve_tta_s(tt, aa, 3, 0.7), 2, 0, 0);
    SS_CHECK_CLOSE(run_curve_tta_s(tt, aa, 3, 0.95), -1, 0, 0);
}

/* A version-2 steps.trace of 2 workers x 3 steps; `cut`: without its end line. */
static void write_trace_v2(const char *path, int cut) {
    FILE *fp = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    policy_config pc;
    policy_config_default(&pc);
    pc.workers = 2;
    pc.steps = 3;
    trace_meta meta = {.source = "emulation", .param_count = 10, .param_bytes = 40};
    trace_writer w;
    trace_writer_begin(&w, fp, &meta, &pc, NULL);
    for (long s = 1; s <= 3; s++)
        for (int k = 0; k < 2; k++) {
            step_record r = {.step = s,
                             .worker = k,
                             .start_s = 0.5 * (double)(s - 1),
                             .compute_s = 0.25,
                             .delta = 0.1 * (double)s,
                             .decision = s != 2,
                             .samples = 8};
            trace_writer_record(&w, &r);
        }
    if (!cut) trace_writer_end(&w, 1.5);
    fclose(fp);
}

/* A sweep directory whose points/ is empty (a sweep killed before its first point): no run, a
 * message, and no qsort on the NULL list (UBSan in the sanitizer build). */
static void test_runs_empty_points(void) {
    char dir[400], points[420];
    snprintf(dir, sizeof dir, "%s/empty-sweep", root);
    snprintf(points, sizeof points, "%s/points", dir);
    CU_ASSERT_EQUAL_FATAL(ss_mkdir_p(points), SS_OK);
    char **dirs = NULL;
    int n = 0;
    CU_ASSERT_EQUAL(run_dirs_find(dir, &dirs, &n), SS_EINPUT);
    CU_ASSERT_EQUAL(n, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(ss_error_message(), "no run found"));
    run_dirs_free(dirs, n);
}

static void test_readers_checked(void) {
    /* trace_table_read through traces/trace.h: version 2 by the format's columns, truncation
     * and a malformed metrics.csv reported with file and line; tta_* */
    char path[400];
    snprintf(path, sizeof path, "%s/v2.trace", root);
    write_trace_v2(path, 0);
    trace_table t;
    CU_ASSERT_EQUAL_FATAL(trace_table_read(path, 0, &t), SS_OK);
    CU_ASSERT_EQUAL(t.n_rows, 6);
    const int cd = trace_table_column(&t, "delta"), cx = trace_table_column(&t, "decision");
    CU_ASSERT(cd >= 0 && cx >= 0);
    SS_CHECK_CLOSE(t.cells[5 * t.n_cols + cd], 0.3, 1e-15, 0);
    CU_ASSERT_EQUAL(t.cells[2 * t.n_cols + cx], 0);
    trace_table_free(&t);
    write_trace_v2(path, 1);
    CU_ASSERT_EQUAL(trace_table_read(path, 0, &t), SS_EINPUT);
    CU_ASSERT(strstr(ss_error_message(), "truncated") != NULL);
    CU_ASSERT_EQUAL(trace_table_read(path, 4, &t), SS_OK); /* the first rows only */
    CU_ASSERT_EQUAL(t.n_rows, 4);
    trace_table_free(&t);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/badcsv", root);
    CU_ASSERT_EQUAL_FATAL(ss_mkdir_p(dir), SS_OK);
    write_file(dir, "metrics.csv", "sim_time_s,test_accuracy\n1,0.5\n2,\"0.6\n");
    double *tt, *aa;
    size_t m;
    CU_ASSERT_EQUAL(run_curve_read(dir, &tt, &aa, &m), SS_EINPUT);
    CU_ASSERT(strstr(ss_error_message(), "metrics.csv:3: unterminated quoted field") != NULL);
    CU_ASSERT(isnan(tta_of_run(dir, 0.5)));
    SS_CHECK_CLOSE(tta_target(0.8, TTA_DEFAULT_MARGIN), 0.795, 1e-15, 0);
    SS_CHECK_CLOSE(tta_speedup(4, 2), 2, 0, 0);
    CU_ASSERT(isnan(tta_speedup(NAN, 2)) && isnan(tta_speedup(4, 0)));
}

static void test_report_analyze(void) {
    /* report_analyze: groups over seeds, TTA at BSP's final accuracy - 0.5 points, speedup,
     * diverged runs counted and not averaged */
    report_options o = {.out_dir = NULL, .target_margin = 0.005, .key_applies = key_applies};
    report_group *g;
    int ng, gid[8];
    tta_result t[8];
    double tta[8], speed[8];
    make_runs();
    CU_ASSERT_EQUAL_FATAL(report_analyze(runs, n_runs, &o, &g, &ng, gid, t), SS_OK);
    for (int i = 0; i < n_runs; i++)
        tta[i] = t[i].tta_s, speed[i] = t[i].speedup;
    CU_ASSERT_EQUAL_FATAL(ng, 2);
    CU_ASSERT_STRING_EQUAL(g[0].label, "bsp");
    CU_ASSERT_STRING_EQUAL(g[1].label, "selsync");
    CU_ASSERT_EQUAL(g[0].runs, 3);
    CU_ASSERT_EQUAL(g[0].ok, 3);
    CU_ASSERT_EQUAL(g[1].runs, 3);
    CU_ASSERT_EQUAL(g[1].ok, 2);
    CU_ASSERT_EQUAL(g[1].diverged, 1);
    SS_CHECK_CLOSE(g[0].accuracy.mean, 0.80, 1e-9, 0);
    SS_CHECK_CLOSE(g[1].accuracy.mean, 0.79, 1e-9, 0);
    /* target 0.795: BSP reaches it at its last evaluation (t_end); SelSync (0.79) never */
    SS_CHECK_CLOSE(tta[0], 10, 1e-9, 0);
    SS_CHECK_CLOSE(g[0].tta_s.mean, 12, 1e-9, 0);
    SS_CHECK_CLOSE(g[0].tta_s.ci95, 4.302652729911275 * 2 / sqrt(3), 1e-6, 0);
    SS_CHECK_CLOSE(g[0].speedup.mean, 1, 1e-12, 0);
    CU_ASSERT_EQUAL(g[1].tta_reached, 0);
    CU_ASSERT(isnan(speed[3]));
    /* with a 2-point margin (target 0.78) both reach it at their last evaluation: SelSync's
     * time is half of BSP's, speedup 2 */
    o.target_margin = 0.02;
    free(g);
    make_runs();
    CU_ASSERT_EQUAL_FATAL(report_analyze(runs, n_runs, &o, &g, &ng, gid, t), SS_OK);
    for (int i = 0; i < n_runs; i++)
        tta[i] = t[i].tta_s, speed[i] = t[i].speedup;
    CU_ASSERT_EQUAL(g[1].tta_reached, 2);
    SS_CHECK_CLOSE(speed[3], 2, 1e-9, 0);
    SS_CHECK_CLOSE(g[1].speedup.mean, 2, 1e-9, 0);
    CU_ASSERT(isnan(tta[5])); /* the diverged run */
    free(g);
}

static int file_has(const char *path, const char *text) {
    FILE *fp = fopen(path, "r");
    if (!fp) return 0;
    static char buf[1 << 16];
    size_t m = fread(buf, 1, sizeof buf - 1, fp);
    buf[m] = '\0';
    fclose(fp);
    return strstr(buf, text) != NULL;
}

static long file_size(const char *dir, const char *name) {
    char path[700];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void test_report_write_figures(void) {
    /* report_write: tables, and every figure as non-empty PNG and SVG */
    if (system("gnuplot --version > /dev/null 2>&1") != 0)
        SS_SKIP("gnuplot missing: figures not checked");
    make_runs();
    /* gradient samples of two steps for the density plot */
    float grads[5000];
    for (int step = 1; step <= 2; step++) {
        for (int i = 0; i < 5000; i++)
            grads[i] = (float)(sin(i * 0.37) * 0.01 / step);
        CU_ASSERT_EQUAL(analysis_dump_gradients(grads, 5000, step * 10, 0, runs[3].dir), SS_OK);
        CU_ASSERT_EQUAL(analysis_dump_gradients(grads, 5000, step * 10, 1, runs[3].dir), SS_OK);
    }
    char out[300];
    snprintf(out, sizeof out, "%s/report", root);
    FILE *term = fopen("/dev/null", "w");
    report_options o = {.out_dir = out,
                        .target_margin = 0.005,
                        .key_applies = key_applies,
                        .terminal = term,
                        .max_run_figures = 4};
    CU_ASSERT_EQUAL(report_write(runs, n_runs, &o), SS_OK);
    fclose(term);
    /* figures named after their group or run, not numbered */
    static const char *const files[] = {"report.md",
                                        "report.csv",
                                        "runs.csv",
                                        "accuracy.png",
                                        "accuracy.svg",
                                        "accuracy.txt",
                                        "breakdown.png",
                                        "breakdown.svg",
                                        "delta-selsync.png",
                                        "delta-selsync.svg",
                                        "timeline-bsp.png",
                                        "timeline-bsp.svg",
                                        "timeline-selsync.png",
                                        "scaling.png",
                                        "scaling.svg",
                                        "kde-policy-selsync_delta-0.05_seed-1.png",
                                        "kde-policy-selsync_delta-0.05_seed-1.svg",
                                        "replot.sh",
                                        "accuracy.gp",
                                        NULL};
    for (int i = 0; files[i]; i++) {
        long size = file_size(out, files[i]);
        if (size <= 0) fprintf(stderr, "\n  %s/%s: size %ld\n", out, files[i], size);
        CU_ASSERT(size > 0);
    }
    /* the diverged run is in the table */
    char path[400];
    snprintf(path, sizeof path, "%s/report.csv", out);
    FILE *fp = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    char line[1024];
    int found = 0;
    while (fgets(line, sizeof line, fp))
        found |= !strncmp(line, "selsync,selsync,3,2,1,0,", 24);
    fclose(fp);
    CU_ASSERT(found);
    CU_ASSERT(!file_has(path, "perplexity")); /* image models: the table's form as it was */
    CU_ASSERT(file_size(out, "perplexity.png") < 0);
    /* Delta: per step the largest over the workers (the decision's quantity): worker 3's, 1.3
     * times worker 0's; step 3 synchronized */
    snprintf(path, sizeof path, "%s/delta-selsync.csv", out);
    fp = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    int rows = 0;
    while (fgets(line, sizeof line, fp)) {
        int step, sync;
        double d;
        if (sscanf(line, "%d,%lf,%d", &step, &d, &sync) != 3) continue;
        rows++;
        SS_CHECK_CLOSE(d, 0.6 * exp(-step / 30.0) * (1 + 0.3 * sin(step)) * 1.3, 1e-6, 1e-12);
        CU_ASSERT_EQUAL(sync, step % 3 == 0);
    }
    fclose(fp);
    CU_ASSERT_EQUAL(rows, 100);
    /* breakdown per step of a worker: bsp's compute 0.4 t_end over 100 steps, t_end 10, 12, 14
     * s: 48 ms; communication 0.5 t_end: 60 ms */
    snprintf(path, sizeof path, "%s/breakdown.csv", out);
    fp = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    found = 0;
    while (fgets(line, sizeof line, fp)) {
        double c, m, w;
        if (strncmp(line, "bsp,", 4) || sscanf(line + 4, "%lf,%lf,%lf", &c, &m, &w) != 3) continue;
        found = 1;
        SS_CHECK_CLOSE(c, 48, 1e-9, 0);
        SS_CHECK_CLOSE(m, 60, 1e-9, 0);
    }
    fclose(fp);
    CU_ASSERT(found);
    /* titles name the setting; each policy in its own colour (bsp black, selsync vermillion) */
    snprintf(path, sizeof path, "%s/replot.sh", out);
    CU_ASSERT(
        file_has(path, "logreg, synthetic, partition defdp/seldp, 4 workers, batch 32, 5Gbps"));
    CU_ASSERT(file_has(path, "'#000000:B:1 #D55E00:S:1'"));
}

static void test_gradient_dump(void) {
    /* gradient_dump_create: step lists; analysis_dump_gradients: a strided sample */
    gradient_dump *gd = NULL;
    CU_ASSERT_EQUAL(gradient_dump_create("", root, &gd), SS_OK);
    CU_ASSERT_PTR_NULL(gd);
    CU_ASSERT_EQUAL(gradient_dump_create("1,x", root, &gd), SS_EUSAGE);
    CU_ASSERT_EQUAL(gradient_dump_create("0", root, &gd), SS_EUSAGE);
    CU_ASSERT_EQUAL_FATAL(gradient_dump_create("5,100", root, &gd), SS_OK);
    CU_ASSERT(gradient_dump_wants(gd, 5) && gradient_dump_wants(gd, 100));
    CU_ASSERT(!gradient_dump_wants(gd, 6));
    gradient_dump_destroy(gd);
    static float g[10000];
    for (int i = 0; i < 10000; i++)
        g[i] = (float)i;
    CU_ASSERT_EQUAL_FATAL(analysis_dump_gradients(g, 10000, 7, 2, root), SS_OK);
    char path[400];
    snprintf(path, sizeof path, "%s/gradients/step-7-worker-2.txt", root);
    FILE *fp = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(fp);
    char line[128];
    int values = 0;
    double last = -1;
    while (fgets(line, sizeof line, fp))
        if (line[0] != '#') values++, last = strtod(line, NULL);
    fclose(fp);
    CU_ASSERT_EQUAL(values, 3334); /* stride 3 */
    SS_CHECK_CLOSE(last, 9999, 0, 0);
}

/* ---- one TTA definition: compare, report, sweep ---- */

/* A run as compare, train or replay writes it: config.ini with `config` (policy keys included),
 * summary.json, and (accuracy >= 0) a metrics.csv whose accuracy rises linearly to `accuracy`
 * at t_end; accuracy < 0: a replay, no accuracy recorded and no metrics.csv. */
static void make_run_cfg(const char *dir, const char *policy, const char *config, double accuracy,
                         double t_end) {
    CU_ASSERT_EQUAL_FATAL(ss_mkdir_p(dir), SS_OK);
    char text[2048];
    snprintf(text, sizeof text, "[train]\nseed = 1\nout = %s\npolicy = %s\nworkers = 8\n%s", dir,
             policy, config);
    write_file(dir, "config.ini", text);
    char acc[32] = "null";
    if (accuracy >= 0) snprintf(acc, sizeof acc, "%.6f", accuracy);
    snprintf(text, sizeof text,
             "{\"status\": \"ok\", \"policy\": \"%s\", \"workers\": 8, \"test_accuracy\": %s, "
             "\"sim_time_s\": %g, \"lssr\": 0.5, \"bytes_sent\": 1e9, \"steps\": 100, "
             "\"compute_s\": 1, \"comm_s\": 2, \"wait_s\": 0.5, \"seed\": 1}",
             policy, acc, t_end);
    write_file(dir, "summary.json", text);
    if (accuracy < 0) return;
    size_t len = (size_t)snprintf(text, sizeof text, "step,epoch,sim_time_s,test_accuracy\n");
    for (int k = 1; k <= 10; k++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%d,%g,%g,%.6f\n", 10 * k, 0.1 * k,
                                t_end * k / 10, accuracy * (0.5 + 0.05 * k));
    write_file(dir, "metrics.csv", text);
}

/* overlap and bucket-mb apply to bsp only, delta to selsync only (as the option table says) */
static int compare_key_applies(const char *key, const char *policy) {
    if (!strcmp(key, "delta")) return !strcmp(policy, "selsync");
    if (!strcmp(key, "overlap") || !strcmp(key, "bucket-mb")) return !strcmp(policy, "bsp");
    return 1;
}

static int read_dir_runs(const char *dir, run_record **out) {
    char **dirs = NULL;
    int n = 0;
    CU_ASSERT_EQUAL_FATAL(run_dirs_find(dir, &dirs, &n), SS_OK);
    run_record *r = calloc((size_t)n, sizeof *r);
    for (int i = 0; i < n; i++)
        CU_ASSERT_EQUAL(run_record_read(dirs[i], &r[i]), SS_OK);
    run_dirs_free(dirs, n);
    *out = r;
    return n;
}

static void test_tta_one_definition(void) {
    /* A compare's directory: its bsp run's config.ini has overlap and bucket-mb, its selsync
     * run's has delta instead. report must find the bsp run as the reference (it did not: "-"
     * and "reached 0/1") and give compare's numbers. */
    char cmp[300], bsp[400], sel[400];
    snprintf(cmp, sizeof cmp, "%s/cmp", root);
    snprintf(bsp, sizeof bsp, "%s/runs/bsp-5Gbps", cmp);
    snprintf(sel, sizeof sel, "%s/runs/selsync-5Gbps", cmp);
    make_run_cfg(bsp, "bsp", "bandwidth = 5Gbps\nmodel = mlp\noverlap = auto\nbucket-mb = 25\n",
                 0.88, 7.2);
    make_run_cfg(sel, "selsync", "bandwidth = 5Gbps\nmodel = mlp\ndelta = 0.05\n", 0.878, 2.7);
    compare_row rows[2] = {{.policy = "bsp", .network = "5Gbps", .reference = 1},
                           {.policy = "selsync", .network = "5Gbps"}};
    snprintf(rows[0].dir, sizeof rows[0].dir, "%.300s", bsp);
    snprintf(rows[1].dir, sizeof rows[1].dir, "%.300s", sel);
    for (int i = 0; i < 2; i++)
        compare_row_read(&rows[i]);
    compare_rows_tta(rows, 2, TTA_DEFAULT_MARGIN);
    CU_ASSERT(isfinite(rows[1].tta_s) && rows[1].speedup > 1);

    run_record *r;
    const int n = read_dir_runs(cmp, &r);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT_STRING_EQUAL(r[1].policy, "selsync");
    for (int with_table = 0; with_table < 2; with_table++) { /* also without key_applies */
        report_options o = {.target_margin = TTA_DEFAULT_MARGIN,
                            .key_applies = with_table ? compare_key_applies : NULL};
        report_group *g;
        int ng, gid[2];
        tta_result t[2];
        CU_ASSERT_EQUAL_FATAL(report_analyze(r, n, &o, &g, &ng, gid, t), SS_OK);
        CU_ASSERT_EQUAL(t[1].status, TTA_REACHED);
        SS_CHECK_CLOSE(t[1].tta_s, rows[1].tta_s, 1e-12, 0);
        SS_CHECK_CLOSE(t[1].speedup, rows[1].speedup, 1e-12, 0);
        SS_CHECK_CLOSE(t[0].tta_s, rows[0].tta_s, 1e-12, 0);
        CU_ASSERT_EQUAL(g[1].tta_reached, 1);
        CU_ASSERT_EQUAL(g[1].tta_measured, 1);
        free(g);
    }
    /* the reference the one function finds is the bsp run; a key both policies have that
     * differs (model) makes it not comparable, with the key named */
    char why[1200];
    CU_ASSERT_EQUAL(tta_reference_find(r, n, 1, compare_key_applies, why, sizeof why), 0);
    char *model = (char *)run_record_get(&r[1], "model");
    CU_ASSERT_PTR_NOT_NULL_FATAL(model);
    snprintf(model, RUN_RECORD_TEXT, "cnn");
    CU_ASSERT_EQUAL(tta_reference_find(r, n, 1, compare_key_applies, why, sizeof why), -1);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "model=cnn vs mlp"));
    free(r);
}

static void test_tta_no_reference_and_replays(void) {
    /* a selsync run on 100Gbps beside a bsp run on 5Gbps: no BSP run to measure against, said
     * in a warning that names the differing key; replays (no accuracy): n/a, not "0/N" */
    if (system("gnuplot --version > /dev/null 2>&1") != 0)
        SS_SKIP("gnuplot missing: report not written");
    char dir[300], a[400], b[400], c[400], d[400];
    snprintf(dir, sizeof dir, "%s/noref", root);
    snprintf(a, sizeof a, "%s/points/policy=bsp,bandwidth=5Gbps", dir);
    snprintf(b, sizeof b, "%s/points/policy=selsync,bandwidth=100Gbps", dir);
    snprintf(c, sizeof c, "%s/points/replay=bsp", dir);
    snprintf(d, sizeof d, "%s/points/replay=selsync", dir);
    make_run_cfg(a, "bsp", "bandwidth = 5Gbps\n", 0.88, 7);
    make_run_cfg(b, "selsync", "bandwidth = 100Gbps\ndelta = 0.05\n", 0.87, 1);
    make_run_cfg(c, "bsp", "bandwidth = 1Gbps\nprofile = resnet101\n", -1, 30);
    make_run_cfg(d, "selsync", "bandwidth = 1Gbps\nprofile = resnet101\n", -1, 20);
    run_record *r;
    const int n = read_dir_runs(dir, &r);
    CU_ASSERT_EQUAL_FATAL(n, 4);
    char out[400];
    snprintf(out, sizeof out, "%s/report", dir);
    FILE *term = fopen("/dev/null", "w");
    report_options o = {.out_dir = out,
                        .target_margin = TTA_DEFAULT_MARGIN,
                        .key_applies = compare_key_applies,
                        .terminal = term,
                        .max_run_figures = 2};
    report_group *g;
    int ng, gid[4];
    tta_result t[4];
    CU_ASSERT_EQUAL_FATAL(report_analyze(r, n, &o, &g, &ng, gid, t), SS_OK);
    int sel = -1, rep = -1;
    for (int i = 0; i < n; i++) {
        if (strstr(r[i].dir, "policy=selsync")) sel = i;
        if (strstr(r[i].dir, "replay=selsync")) rep = i;
    }
    CU_ASSERT_FATAL(sel >= 0 && rep >= 0);
    CU_ASSERT_EQUAL(t[sel].status, TTA_NO_REFERENCE);
    CU_ASSERT_EQUAL(t[rep].status, TTA_NO_ACCURACY);
    CU_ASSERT_EQUAL(g[gid[rep]].no_accuracy, 1);
    CU_ASSERT_EQUAL(g[gid[rep]].tta_measured, 0);
    free(g);
    CU_ASSERT_EQUAL(report_write(r, n, &o), SS_OK);
    fclose(term);
    char path[500];
    snprintf(path, sizeof path, "%s/report.md", out);
    CU_ASSERT(file_has(path, "## Warnings"));
    CU_ASSERT(file_has(path, "bandwidth=100Gbps vs 5Gbps"));
    CU_ASSERT(file_has(path, "| n/a | n/a | n/a |"));
    CU_ASSERT(file_has(path, "| no BSP | no BSP | no BSP |"));
    CU_ASSERT(!file_has(path, " 0/1 |"));
    snprintf(path, sizeof path, "%s/runs.csv", out);
    CU_ASSERT(file_has(path, ",n/a\n"));
    CU_ASSERT(file_has(path, ",no_bsp\n"));
    free(r);
}

/* A language model's run: next-token accuracy and perplexity at evaluations k = 1..10 at time
 * k x dt; the summary's final perplexity is the last one. */
static void make_lm_run(const char *dir, const char *policy, const double *ppl, double acc_end,
                        double dt) {
    CU_ASSERT_EQUAL_FATAL(ss_mkdir_p(dir), SS_OK);
    char text[2048];
    snprintf(text, sizeof text,
             "[train]\nseed = 1\nout = %s\npolicy = %s\nworkers = 8\nmodel = gpt:wlm\n"
             "dataset = web-bible\nbandwidth = 5Gbps\n%s",
             dir, policy, strcmp(policy, "selsync") ? "" : "delta = 0.3\n");
    write_file(dir, "config.ini", text);
    snprintf(text, sizeof text,
             "{\"status\": \"ok\", \"policy\": \"%s\", \"workers\": 8, \"test_accuracy\": %.6f, "
             "\"test_loss\": %.9g, \"test_perplexity\": %.9g, \"sim_time_s\": %g, \"lssr\": "
             "0.5, \"bytes_sent\": 1e9, \"steps\": 100, \"compute_s\": 1, \"comm_s\": 2, "
             "\"wait_s\": 0.5, \"seed\": 1}",
             policy, acc_end, log(ppl[9]), ppl[9], 10 * dt);
    write_file(dir, "summary.json", text);
    size_t len = (size_t)snprintf(text, sizeof text,
                                  "step,epoch,sim_time_s,train_loss,test_loss,test_accuracy,"
                                  "sync_steps,bytes_sent,test_perplexity\n");
    for (int k = 1; k <= 10; k++)
        len += (size_t)snprintf(text + len, sizeof text - len, "%d,%g,%g,1,%.9g,%.6f,0,0,%.9g\n",
                                10 * k, 0.1 * k, dt * k, log(ppl[k - 1]), acc_end * k / 10,
                                ppl[k - 1]);
    write_file(dir, "metrics.csv", text);
}

static void test_tta_perplexity(void) {
    /* A language model is measured on perplexity, lower is better: BSP ends at 100, so the
     * target is 100 x 1.005 = 100.5. BSP (an evaluation every 2 s, falling linearly from 400)
     * reaches it at its last point, 20 s; selsync's curve is at 101 at 5 s and 100.4 at 6 s:
     * TTA 6 s, speedup 20 / 6. Read as accuracy (higher is better) the first point, 350 s at
     * 1 s, would pass; on next-token accuracy selsync (0.2 at the end) would never reach BSP's
     * 0.25 - 0.005. */
    char cmp[300], bsp[400], sel[400];
    snprintf(cmp, sizeof cmp, "%s/lm", root);
    snprintf(bsp, sizeof bsp, "%s/runs/bsp-5Gbps", cmp);
    snprintf(sel, sizeof sel, "%s/runs/selsync-5Gbps", cmp);
    double bsp_ppl[10];
    for (int k = 0; k < 10; k++)
        bsp_ppl[k] = 400 - 300.0 * k / 9;
    const double sel_ppl[10] = {350, 250, 180, 120, 101, 100.4, 99, 98.5, 98.2, 98};
    make_lm_run(bsp, "bsp", bsp_ppl, 0.25, 2.0);
    make_lm_run(sel, "selsync", sel_ppl, 0.2, 1.0);
    SS_CHECK_CLOSE(tta_target_perplexity(100, TTA_DEFAULT_MARGIN), 100.5, 1e-12, 0);
    SS_CHECK_CLOSE(
        run_curve_tta_below_s((const double[]){1, 2, 3}, (const double[]){NAN, 120, 90}, 3, 100), 3,
        1e-12, 0);

    /* compare's rows */
    compare_row rows[2] = {{.policy = "bsp", .network = "5Gbps", .reference = 1},
                           {.policy = "selsync", .network = "5Gbps"}};
    snprintf(rows[0].dir, sizeof rows[0].dir, "%.300s", bsp);
    snprintf(rows[1].dir, sizeof rows[1].dir, "%.300s", sel);
    for (int i = 0; i < 2; i++)
        compare_row_read(&rows[i]);
    SS_CHECK_CLOSE(rows[1].perplexity, 98, 1e-9, 0);
    compare_rows_tta(rows, 2, TTA_DEFAULT_MARGIN);
    CU_ASSERT_EQUAL(rows[1].tta, TTA_REACHED);
    SS_CHECK_CLOSE(rows[0].tta_s, 20, 1e-12, 0);
    SS_CHECK_CLOSE(rows[1].tta_s, 6, 1e-12, 0);
    SS_CHECK_CLOSE(rows[1].speedup, 20.0 / 6, 1e-12, 0);

    /* report: the same numbers, the perplexity in its tables */
    run_record *r;
    const int n = read_dir_runs(cmp, &r);
    CU_ASSERT_EQUAL_FATAL(n, 2);
    CU_ASSERT(run_record_is_language(&r[0]) && run_record_is_language(&r[1]));
    report_options o = {.target_margin = TTA_DEFAULT_MARGIN, .key_applies = compare_key_applies};
    report_group *g;
    int ng, gid[2];
    tta_result t[2];
    CU_ASSERT_EQUAL_FATAL(report_analyze(r, n, &o, &g, &ng, gid, t), SS_OK);
    CU_ASSERT(t[1].perplexity);
    SS_CHECK_CLOSE(t[1].target, 100.5, 1e-12, 0);
    CU_ASSERT_EQUAL(t[1].status, TTA_REACHED);
    SS_CHECK_CLOSE(t[1].tta_s, 6, 1e-12, 0);
    SS_CHECK_CLOSE(t[1].reference_tta_s, 20, 1e-12, 0);
    SS_CHECK_CLOSE(g[gid[1]].perplexity.mean, 98, 1e-9, 0);
    free(g);
    /* a target below what a run reaches: never (not its first point) */
    CU_ASSERT(isnan(tta_of_run_perplexity(sel, 97)));

    if (system("gnuplot --version > /dev/null 2>&1") == 0) {
        char out[400], path[500];
        snprintf(out, sizeof out, "%s/report", cmp);
        FILE *term = fopen("/dev/null", "w");
        o.out_dir = out;
        o.terminal = term;
        CU_ASSERT_EQUAL(report_write(r, n, &o), SS_OK);
        fclose(term);
        snprintf(path, sizeof path, "%s/report.md", out);
        CU_ASSERT(file_has(path, "| perplexity |"));
        CU_ASSERT(file_has(path, "| 98.00 |"));
        snprintf(path, sizeof path, "%s/runs.csv", out);
        CU_ASSERT(file_has(path, ",tta,test_perplexity\n"));
        CU_ASSERT(file_has(path, ",reached,98\n"));
        CU_ASSERT(file_size(out, "perplexity.png") > 0);
        CU_ASSERT(file_size(out, "accuracy.png") < 0); /* no image model's curve */
        snprintf(path, sizeof path, "%s/perplexity.csv", out);
        CU_ASSERT(file_has(path, "\n6,100.400000\n"));
    }
    free(r);
}

static void test_delta_figure_auto(void) {
    /* a selsync run with --delta auto:R: its Delta figure draws the delta it chose (gnuplot was
     * given "auto:0.9" as the threshold and the report failed) */
    if (system("gnuplot --version > /dev/null 2>&1") != 0)
        SS_SKIP("gnuplot missing: report not written");
    char dir[512], moved[400];
    make_run("auto-run", "selsync", "auto:0.9", 1, "ok", 0.8, 10, dir, sizeof dir);
    snprintf(moved, sizeof moved, "%s/auto/points/selsync", root);
    char parent[400];
    snprintf(parent, sizeof parent, "%s/auto/points", root);
    CU_ASSERT_EQUAL_FATAL(ss_mkdir_p(parent), SS_OK);
    CU_ASSERT_EQUAL_FATAL(rename(dir, moved), 0);
    write_file(moved, "summary.json",
               "{\"status\": \"ok\", \"policy\": \"selsync\", \"workers\": 4, \"test_accuracy\": "
               "0.8, \"sim_time_s\": 10, \"lssr\": 0.5, \"steps\": 100, \"seed\": 1, "
               "\"delta_chosen\": 0.0123}");
    run_record r;
    CU_ASSERT_EQUAL_FATAL(run_record_read(moved, &r), SS_OK);
    char out[500], path[600];
    snprintf(out, sizeof out, "%s/auto/report", root);
    report_options o = {.out_dir = out, .target_margin = TTA_DEFAULT_MARGIN, .max_run_figures = 1};
    CU_ASSERT_EQUAL(report_write(&r, 1, &o), SS_OK);
    CU_ASSERT(file_size(out, "delta-selsync.png") > 0);
    snprintf(path, sizeof path, "%s/replot.sh", out);
    CU_ASSERT(file_has(path, "'0.0123'"));
}

static void test_natural_order(void) {
    /* run_name_compare: numbers by value, so a report lists 1Gbps, 10Gbps, 100Gbps and 4, 16,
     * 64 workers in that order (strcmp put 100Gbps before 10Gbps before 1Gbps) */
    CU_ASSERT(run_name_compare("bsp-1Gbps", "bsp-10Gbps") < 0);
    CU_ASSERT(run_name_compare("bsp-10Gbps", "bsp-100Gbps") < 0);
    CU_ASSERT(run_name_compare("workers=4,seed=2", "workers=16,seed=1") < 0);
    CU_ASSERT(run_name_compare("workers=64", "workers=16") > 0);
    CU_ASSERT(run_name_compare("delta=0.05", "delta=0.3") < 0);
    CU_ASSERT(run_name_compare("bsp-5Gbps", "selsync-5Gbps") < 0);
    CU_ASSERT_EQUAL(run_name_compare("a=1", "a=1"), 0);
    char dir[300];
    snprintf(dir, sizeof dir, "%s/natural", root);
    static const char *const names[] = {"workers=64", "workers=16", "workers=4", NULL};
    for (int i = 0; names[i]; i++) {
        char d[400];
        snprintf(d, sizeof d, "%s/points/%s", dir, names[i]);
        make_run_cfg(d, "bsp", "bandwidth = 5Gbps\n", 0.8, 1);
    }
    char **dirs = NULL;
    int n = 0;
    CU_ASSERT_EQUAL_FATAL(run_dirs_find(dir, &dirs, &n), SS_OK);
    CU_ASSERT_EQUAL_FATAL(n, 3);
    CU_ASSERT(strstr(dirs[0], "workers=4") && strstr(dirs[1], "workers=16") &&
              strstr(dirs[2], "workers=64"));
    run_dirs_free(dirs, n);
}

static void test_policy_colours(void) {
    /* one colour per policy whatever the set of policies run (the colour cycled with the
     * position before); groups of one policy differ by dash type; -dlcp keeps its base colour */
    const char *a[] = {"bsp", "ssp", "selsync"}, *b[] = {"selsync"}, *c[] = {"selsync", "selsync"};
    char sa[200], sb[200], sc[200];
    plots_styles(a, 3, sa, sizeof sa);
    plots_styles(b, 1, sb, sizeof sb);
    plots_styles(c, 2, sc, sizeof sc);
    CU_ASSERT_STRING_EQUAL(sa, "#000000:B:1 #CC79A7:P:1 #D55E00:S:1");
    CU_ASSERT_STRING_EQUAL(sb, "#D55E00:S:1");
    CU_ASSERT_STRING_EQUAL(sc, "#D55E00:S:1 #D55E00:S:2");
    CU_ASSERT_STRING_EQUAL(plots_policy_colour("selsync-dlcp"), plots_policy_colour("selsync"));
    CU_ASSERT_EQUAL(plots_policy_mark("bsp-dlcp"), 'b');
}

static void test_validate_real_fit_host(void) {
    /* validate real's default case on a host with fewer cores than ranks: a core per rank, and
     * what changed said (4 workers and an SSP server on 2 cores exited 1 there) */
    char pol[256], why[1024];
    int w;
    CU_ASSERT_EQUAL(
        validate_real_fit_host(2, "bsp,selsync,ssp", 4, pol, sizeof pol, &w, why, sizeof why), 1);
    CU_ASSERT_STRING_EQUAL(pol, "bsp,selsync");
    CU_ASSERT_EQUAL(w, 2);
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "2 cores for up to 5 ranks"));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "ssp left out"));
    /* a command that runs: --policy takes one policy, --workers alone the default list */
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "--workers 4 runs the requested case"));
    CU_ASSERT_PTR_NULL(strstr(why, "--policy bsp,"));
    /* enough cores: as requested */
    CU_ASSERT_EQUAL(
        validate_real_fit_host(16, "bsp,selsync,ssp", 4, pol, sizeof pol, &w, why, sizeof why), 0);
    CU_ASSERT_STRING_EQUAL(pol, "bsp,selsync,ssp");
    CU_ASSERT_EQUAL(w, 4);
    CU_ASSERT_STRING_EQUAL(why, "");
    /* 4 cores: ssp's server and 3 workers fit, every policy on 3 workers */
    CU_ASSERT_EQUAL(validate_real_fit_host(4, "bsp,selsync,ssp", 4, pol, sizeof pol, &w, NULL, 0),
                    1);
    CU_ASSERT_STRING_EQUAL(pol, "bsp,selsync,ssp");
    CU_ASSERT_EQUAL(w, 3);
    /* nothing fits */
    CU_ASSERT_EQUAL(validate_real_fit_host(2, "ssp", 4, pol, sizeof pol, &w, NULL, 0), -1);
    CU_ASSERT(validate_real_host_cores() >= 1);
}

static void test_validate_real_eager_limit(void) {
    /* the real runs send the whole parameter vector eagerly: the mlp's 269,322 floats and
     * OpenMPI's headers, in 4 KiB */
    CU_ASSERT_EQUAL(validate_real_eager_limit(1077288.0), 1081344u);
    CU_ASSERT(validate_real_eager_limit(1077288.0) > 1077288u + 64u);
    CU_ASSERT_EQUAL(validate_real_eager_limit(31400.0), VALIDATE_REAL_EAGER_MIN); /* logreg */
    CU_ASSERT_EQUAL(validate_real_eager_limit(VALIDATE_REAL_EAGER_MAX), 0u);      /* too large */
    CU_ASSERT_EQUAL(validate_real_eager_limit(0.0), VALIDATE_REAL_EAGER_MIN);
}

static CU_TestInfo stats_tests[] = {
    {"stats_summarize: mean, sd, 95% CI of known data", test_stats_summarize_known},
    {"stats_summarize: NaN, one value, none", test_stats_summarize_edges},
    {"stats_kde and Silverman's bandwidth", test_stats_kde},
    CU_TEST_INFO_NULL};

static CU_TestInfo report_tests[] = {
    {"run_record_read, run_dirs_find, trace_table_read", test_runs_read},
    {"run_dirs_find on an empty points/ directory", test_runs_empty_points},
    {"trace_table_read (version 2, truncated), run_curve_read errors, tta", test_readers_checked},
    {"report_analyze: groups, TTA, speedup, diverged", test_report_analyze},
    {"report_write: tables and PNG/SVG figures", test_report_write_figures},
    {"gradient_dump: step lists and samples", test_gradient_dump},
    {"one TTA: compare and report agree when policy keys differ", test_tta_one_definition},
    {"TTA: no BSP run warned, replays n/a", test_tta_no_reference_and_replays},
    {"TTA of a language model: perplexity, lower is better", test_tta_perplexity},
    {"report: the Delta figure of --delta auto:R draws the delta chosen", test_delta_figure_auto},
    {"natural order of run directories", test_natural_order},
    {"one colour per policy in every figure", test_policy_colours},
    {"validate real: the default case fitted to the host's cores", test_validate_real_fit_host},
    {"validate real: the eager limit of the real runs", test_validate_real_eager_limit},
    CU_TEST_INFO_NULL};

int main(void) {
    CU_SuiteInfo suites[] = {{"stats", NULL, NULL, NULL, NULL, stats_tests},
                             {"report", suite_init, suite_clean, NULL, NULL, report_tests},
                             CU_SUITE_INFO_NULL};
    return ss_test_main(suites);
}
